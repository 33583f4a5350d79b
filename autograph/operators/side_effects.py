"""`python_side_effect`: warns when a statement that changes an object from outside the
function is traced inside graph control flow, where it runs once while the graph is
built instead of each time the graph runs (see converters/side_effects.py); refuses a
call, inside its caller's loop or branch on a tensor, that changes an object passed in
and returns nothing (the caller's loop state cannot see the change)."""
from __future__ import annotations

import contextlib
import os
import threading
import warnings
import weakref

import graphcore as gc
from graphcore import source_info
from graphcore.errors import StagingError


class SideEffectWarning(UserWarning):
    """A Python side effect inside a loop or `if` on a tensor runs only while tracing."""


_warned: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # graph -> {(file, line, what)}
_calls = threading.local()  # .stack: a _Call per active converted call


class _Call:
    """A converted function called while a graph is built: the control-flow context it
    was called in (its caller's loop or branch, or None), and the first change it made,
    outside any loop or branch of its own, to an object passed in."""

    __slots__ = ("context", "change")

    def __init__(self, context):
        self.context, self.change = context, None


@contextlib.contextmanager
def converted_call_scope():
    g = gc.get_default_graph()
    stack = _calls.__dict__.setdefault("stack", [])
    call = _Call(g.control_flow_context if g is not None else None)
    stack.append(call)
    try:
        yield call
    finally:
        stack.pop()


def check_call_result(call: _Call, result, fn_name: str) -> None:
    """A function that changed an object passed in, inside its caller's loop or branch on a
    tensor, and returns nothing: the caller's loop state cannot see the change (it would
    happen once, while the graph is built). Returning the object and assigning it in the
    caller (`acc = push(acc, v)`) makes it loop state; that is allowed (and warned)."""
    if call.change is None or result is not None:
        return
    what, line, filename = call.change
    raise StagingError(
        f"{os.path.basename(filename)}:{line}: '{what}' changes an object passed to {fn_name}, which is called inside "
        "a loop or `if` on a tensor and returns nothing: the caller's loop or branch would see the change once, "
        f"while the graph is built, not each time it runs. Return the object from {fn_name} and assign it in the "
        "caller (e.g. `acc = push(acc, v)`, push ending with `return acc`).")


def python_side_effect(what: str, passed_in: bool, line: int) -> None:
    g = gc.get_default_graph()
    if g is None or g.control_flow_context is None:
        return  # Python control flow, or the function's top level: runs as Python would
    where = source_info.user_location()
    filename = where.filename if where is not None else "<unknown>"
    stack = _calls.__dict__.get("stack")
    if passed_in and stack and g.control_flow_context is stack[-1].context and stack[-1].change is None:
        stack[-1].change = (what, line, filename)  # in the caller's loop or branch: see check_call_result
    seen = _warned.setdefault(g, set())
    if (filename, line, what) in seen:
        return
    seen.add((filename, line, what))
    owner = "an object passed to the function" if passed_in else "an object from outside the function"
    warnings.warn_explicit(
        f"{os.path.basename(filename)}:{line}: '{what}' changes {owner} inside a loop or `if` on a tensor. Python "
        "side effects there run while the graph is built, not each time the graph runs: the change happens once "
        "per trace (not once per iteration, nor only when the branch is taken), and the object may be left holding "
        "graph tensors. Return the value from the function instead, or keep it in a graphcore.Variable.",
        SideEffectWarning, filename, line)
