"""The v1 dataflow executor: frames, iterations, tagged tokens, dead tensors, a worker pool."""
from .deadline import deadline
from .executor import ExecutorState
from .plan import ExecutionPlan
from .session import Session
from .stats import RunStats
from .warning_sources import install as _show_kernel_warnings_at_user_lines

_show_kernel_warnings_at_user_lines()

__all__ = ["Session", "ExecutionPlan", "ExecutorState", "RunStats", "deadline"]
