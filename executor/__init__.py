"""The v1 dataflow executor: frames, iterations, tagged tokens, dead tensors, a worker pool."""
from .deadline import deadline
from .executor import ExecutorState
from .plan import ExecutionPlan
from .session import Session
from .stats import RunStats

__all__ = ["Session", "ExecutionPlan", "ExecutorState", "RunStats", "deadline"]
