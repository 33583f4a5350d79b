"""The op library; importing it registers every op type."""
from . import (array_ops, compiled_ops, control_flow_ops, fused_ops, list_ops, logging_ops, math_ops,  # noqa: F401
               py_function_ops, python_math_ops, python_type_ops, sendrecv_ops)
