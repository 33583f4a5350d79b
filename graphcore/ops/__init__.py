"""The op library; importing it registers every op type."""
from . import array_ops, control_flow_ops, fused_ops, list_ops, logging_ops, math_ops  # noqa: F401
