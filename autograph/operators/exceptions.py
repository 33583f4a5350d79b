"""`assert` and `raise`: Python's own on Python values; on a graph path, an op that
fails the run when (and only when) it executes, and `@function` re-raises the user's
exception (AssertionError, or the raised one) rather than the executor's error.

`raise` inside an `if` / loop on a tensor cannot run while tracing (both branches are
traced); converted code calls `raise_stmt` there, which stages a failing Assert in the
branch and records which exception it stands for.
"""
from __future__ import annotations

import contextlib
from typing import Callable

import numpy as np

import graphcore as gc
from graphcore.errors import StagingError
from graphcore.function_graph import control_flow_scope
from graphcore.ops.logging_ops import FormattedString

from ..errors import UndefinedVariableError
from . import effects
from .staged_errors import guard_value, note, staged_for  # noqa: F401 (guard_value: its old home)
from .staging import as_test, in_dry_run, is_tensor, location

_NO_CAUSE = object()


def _stage_failure(test, message: str, exc: BaseException) -> gc.Operation:
    g = effects.graph_for(test) if is_tensor(test) else gc.get_default_graph()
    if exc.args and isinstance(exc.args[0], FormattedString):  # raise ValueError(f"... {x}"): x's value
        message = exc.args[0]
    elif exc.args and is_tensor(exc.args[0]) and exc.args[0].dtype is gc.pyobject:  # ("bad " + str(x)): its text
        message = FormattedString([(exc.args[0], "s", "", False)])
    with g.control_dependencies(effects.dependencies()):
        op = gc.Assert(test, [], message=message)
    effects.record(op)
    note(op, exc)
    return op


# Python exceptions that converted code raises while tracing a branch of an `if` on a
# tensor or a loop body on a tensor happen, in Python, only if that path runs: they are
# staged (see `staged_on_this_path`). Refusals (AutographError, TypeError on a tensor)
# are not: they say the program cannot be a graph at all.
STAGED_EXCEPTIONS = (UndefinedVariableError, ArithmeticError, LookupError, ValueError, AssertionError)


def _on_graph_path() -> bool:
    g = gc.get_default_graph()
    return g is not None and control_flow_scope(g) is not None


def assert_stmt(test, message: Callable):
    test = as_test(test)
    if not is_tensor(test):
        if not test and not in_dry_run():
            if _on_graph_path():  # a Python-false assert on a path that may not run
                msg = message()
                _stage_failure(gc.constant(np.bool_(False)), str(msg), AssertionError(msg))
                return None
            raise AssertionError(message())
        return None
    msg = message()
    return _stage_failure(test, str(msg), AssertionError(msg))


def raise_stmt(exc, cause=_NO_CAUSE):
    """`raise exc [from cause]`. Raises now, unless a graph cond branch or loop body is
    being traced: then the raise is staged to happen if this path runs."""
    if isinstance(exc, type) and issubclass(exc, BaseException):
        exc = exc()
    if cause is not _NO_CAUSE:
        exc.__cause__ = cause() if isinstance(cause, type) else cause
    g = gc.get_default_graph()
    if in_dry_run():
        return  # a path of the dry run of a loop body (staging.dry_running)
    if control_flow_scope(g) is None:
        raise exc
    _stage_failure(gc.constant(np.bool_(False)), f"{type(exc).__name__}: {exc}", exc)


def check(test, exc: BaseException) -> None:
    """Raise `exc` when the graph runs if the bool tensor `test` is false there (Python's
    own check, e.g. range()'s step, on a value known only then)."""
    _stage_failure(test, f"{type(exc).__name__}: {exc}", exc)


def stage_exception(exc: BaseException) -> None:
    """`exc`, raised while tracing a graph branch or loop body, happens when that path runs."""
    _stage_failure(gc.constant(np.bool_(False)), f"{type(exc).__name__}: {exc}", exc)


def reraise_staged(error: gc.InvalidArgumentError) -> None:
    """If `error` is a staged assert or raise failing, raise the user's exception."""
    op = error.op
    if op is None:
        return
    exc = staged_for(op)
    if exc is None:
        return
    args = exc.args
    formatted = getattr(error.original, "formatted", None)
    if formatted is not None and args and (isinstance(args[0], FormattedString) or
                                           (is_tensor(args[0]) and args[0].dtype is gc.pyobject)):
        args = (formatted, *args[1:])
    try:
        fresh = type(exc)(*args)
    except Exception:  # noqa: BLE001 (an exception class with another constructor: raise the original)
        fresh = exc
    fresh.__cause__ = exc.__cause__ if exc.__cause__ is not None else error
    where = getattr(op, "source", None)
    if where is not None:
        fresh.add_note(f"  raised by the graph at {where}")
    raise fresh.with_traceback(None)




@contextlib.contextmanager
def try_body(line: int):
    """The body of a `try` that has `except` clauses (converters/try_statements.py): refuse
    it if it built an op that can fail when the graph runs. (A Python exception raised while
    tracing leaves the body at once and is caught by the `except` as in Python.)"""
    g = gc.get_default_graph()
    before = len(g.get_operations()) if g is not None else 0
    yield
    if g is None:
        return
    # an op whose type declares `fails=None` cannot fail when the graph runs (numpy gives inf,
    # nan or wraps around instead); any other could raise where Python's `except` would catch it
    risky = [op for op in g.get_operations()[before:] if op.op_def.fails is not None]
    if risky:
        op = risky[0]
        raise StagingError(
            f"{location(line)}: a try/except around graph code: {op.type} (at {op.location()}) can fail when the "
            f"graph runs ({op.op_def.fails}), after this try has finished, so its except clause would never see "
            f"the error that Python would catch here. Test for the failing case before instead (e.g. `if x >= 0:`), or let the error "
            f"end the run.")
