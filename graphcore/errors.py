"""The error hierarchy shared by every layer; each message says where and what to do."""
from __future__ import annotations


class AutographError(Exception):
    """Base class of every error this project raises on purpose."""


class GraphError(AutographError):
    """A graph is malformed or an op was built with bad arguments."""


class StagingError(AutographError):
    """User code could not be staged into a graph (wrong types, mismatched branches...)."""


class ExecutionError(AutographError):
    """An op failed while the graph ran. Carries the op, its frame and iteration and
    the user's source line that created the op."""

    def __init__(self, message: str, op=None, frame: str | None = None, iteration: int | None = None,
                 original: BaseException | None = None):
        super().__init__(message)
        self.op = op
        self.frame = frame
        self.iteration = iteration
        self.original = original


class DeadlineExceededError(ExecutionError):
    """A run went on past its deadline (Session.run's `timeout`, or executor.deadline);
    `frame` and `iteration` say where it was. The session stays usable."""

    def __init__(self, message: str, frame: str | None = None, iteration: int | None = None,
                 timeout: float | None = None):
        super().__init__(message, frame=frame, iteration=iteration)
        self.timeout = timeout


class InvalidArgumentError(ExecutionError):
    """An Assert failed or a kernel was given values it cannot work on."""


class GraphFileError(GraphError):
    """A graph file (JSON) is malformed; the message gives the location of the first problem."""


class NoGradientError(GraphError, LookupError):
    """A gradient that exists mathematically but that the graph cannot compute: an op on the
    path has no gradient rule, or a run-time Python object carries the value (a LookupError
    too, as TensorFlow's "No gradient defined for operation ...")."""


class GraphIndexError(GraphError, IndexError):
    """An index that is out of range, known while the graph is built: an IndexError too,
    as the same indexing raises in Python."""


# The Python exceptions a kernel error also is, so that `except IndexError:` around a call
# catches what it would catch around the plain Python function.
_PYTHON_TYPES = (IndexError, KeyError, ZeroDivisionError, OverflowError, FloatingPointError, ValueError, TypeError)
_combined: dict = {}


def execution_error_type(base: type, original: BaseException | None) -> type:
    """`base` (ExecutionError or a subclass), combined with the Python exception type of
    `original` when that is one user code catches (IndexError, ValueError, ...)."""
    kind = next((t for t in _PYTHON_TYPES if isinstance(original, t)), None)
    if kind is None:
        return base
    key = (base, kind)
    cls = _combined.get(key)
    if cls is None:
        cls = _combined[key] = type(f"{base.__name__}[{kind.__name__}]", (base, kind),
                                    {"__doc__": f"{base.__name__} that is also a {kind.__name__}.",
                                     "__module__": __name__})
    return cls


class CancelledError(ExecutionError):
    """A partition's run was ended because another device's failed (or the run was
    interrupted): no device keeps waiting for a value that will never come."""
