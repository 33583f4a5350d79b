"""The op library; importing it registers every op type."""
from . import (array_ops, compiled_ops, control_flow_ops, fused_ops, list_ops, logging_ops, math_ops,  # noqa: F401
               py_function_ops, python_math_ops, python_type_ops, sendrecv_ops)

# Ops that compute each element of their output from the same element of their inputs
# (broadcast), with no state: the optimizer fuses them, gradients may recompute them.
ELEMENTWISE = frozenset({
    "Add", "Sub", "Mul", "RealDiv", "FloorDiv", "Mod", "Maximum", "Minimum", "Pow", "AddN",
    "Neg", "Abs", "Square", "Exp", "Log", "Sqrt", "Tanh", "Sigmoid", "Relu", "Sin", "Cos", "Log1p", "Expm1",
    "Floor", "Ceil", "Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual",
    "LogicalAnd", "LogicalOr", "LogicalNot", "Select", "Cast"})
