"""`with` in converted code. A context manager's __enter__ and __exit__ run while the graph
is built, not when it runs, so two kinds would silently differ from Python and are refused:
- `np.errstate(...)` that raises (or calls a function) around graph ops: the ops' kernels
  run later, outside it (Python raised FloatingPointError for `1.0 / x` at 0 under
  divide="raise"; the graph gave inf). One that only ignores or warns changes no value;
- any other context manager inside a loop or `if` on a tensor: it would enter and exit once
  per trace, not once per iteration, nor only when the branch is taken.
graphcore's own managers (device, name_scope, control_dependencies, ...) build the graph and
are what they are; `warnings.catch_warnings`, `contextlib.suppress` and `nullcontext` only
concern tracing."""
from __future__ import annotations

import contextlib
import warnings

import numpy as np

import graphcore as gc
from graphcore.errors import StagingError
from graphcore.function_graph import control_flow_scope

from .staging import location

# managers with no effect of their own when nothing raises while tracing (an error the graph
# raises when it runs is not suppressed: a loud difference, as with a `try` around graph ops)
_TRACE_ONLY = (warnings.catch_warnings, contextlib.suppress, contextlib.nullcontext)
_NO_CALL = getattr(np.errstate(), "_call", None)  # numpy's "call not given" marker


def _builds_the_graph(manager) -> bool:
    func = getattr(manager, "func", None)  # a @contextlib.contextmanager's function
    module = getattr(func, "__module__", None) or type(manager).__module__ or ""
    return module.split(".")[0] in ("graphcore", "autograph", "executor")


def _changes_values(errstate: np.errstate) -> bool:
    """Whether it raises or calls (numpy 2 keeps its arguments as _all, _divide, ...; a numpy
    that does not is taken to raise: refusing is the safe side)."""
    try:
        settings = (errstate._all, errstate._divide, errstate._over, errstate._under, errstate._invalid)
        calls = errstate._call is not _NO_CALL
    except AttributeError:
        return True
    return calls or any(s not in (None, "ignore", "warn") for s in settings)


def context_manager(manager, line: int, text: str):
    g = gc.get_default_graph()
    if g is None or _builds_the_graph(manager) or isinstance(manager, _TRACE_ONLY):
        return manager
    if isinstance(manager, np.errstate):
        return _ErrstateAroundNoOps(manager, g, line) if _changes_values(manager) else manager
    if control_flow_scope(g) is not None:
        raise StagingError(
            f"{location(line)}: `with {text}` inside a loop or `if` on a tensor: its enter and "
            "exit code would run once, while the graph is built, not each time the loop runs or only when the branch "
            "is taken. Put the `with` around the whole loop or `if` (it then runs once per call, as Python runs it), "
            "or outside the converted function.")
    return manager


class _ErrstateAroundNoOps(contextlib.AbstractContextManager):
    """np.errstate(divide="raise", ...) around no graph op works as in Python (it only
    concerns tracing); around graph ops it is refused: their kernels run when the graph
    runs, outside it."""

    def __init__(self, manager, graph, line: int):
        self.manager, self.graph, self.line = manager, graph, line

    def __enter__(self):
        self.ops_before = len(self.graph.get_operations())
        return self.manager.__enter__()

    def __exit__(self, *exc):
        suppressed = self.manager.__exit__(*exc)
        if exc[0] is None and len(self.graph.get_operations()) != self.ops_before:
            raise StagingError(
                f"{location(self.line)}: np.errstate(...) that raises around graph ops: numpy's error handling is set "
                "while the "
                "graph is built, but the ops' kernels run when the graph runs, outside it (under divide='raise', "
                "Python raises FloatingPointError for 1.0 / 0.0 where the graph would give inf). Check the values "
                "instead (e.g. `if x == 0: raise FloatingPointError(...)`), or call the function inside "
                "np.errstate if numpy's default of warning is what you need.")
        return suppressed
