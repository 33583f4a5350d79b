"""Graph values that may have no value at run time, and the guarded read of them.

A variable first assigned inside a loop on a tensor (which may run zero times) or in
one branch of an `if` on a tensor is carried through the graph as a tensor (zeros where
it is unassigned) plus a bool 'defined' flag tensor. Nothing is checked until the
variable is read: `guard` then stages an Assert on the flag, so the run fails, naming
the variable, the statement that may leave it undefined and the reading line, only if
the read actually executes (Python raises UnboundLocalError at the same point).

The flag lives beside the tensor in a per-graph registry rather than in a wrapper
object, so the value flows through user code and graphcore builders as a plain Tensor;
only the operators that carry control-flow state (`flag_of`, `mark`) and the read
(`guard`) consult it. Variables that are only used inside a loop are never carried, so
they cost nothing.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

import graphcore as gc
from graphcore.errors import StagingError
from graphcore.ops.array_ops import constant_value
from graphcore.side_tables import SideTable

from . import effects
from .variables import PartialReturn, Undefined, UndefinedReturnValue, raise_undefined, reading_location

# The Assert message of a guarded read starts with this; `@function` turns the failure
# into an UndefinedVariableError.
MESSAGE_PREFIX = "undefined variable: "


@dataclass(frozen=True)
class MaybeDefined:
    """What the registry knows about one tensor: its flag, the variable and the line of
    the statement that may leave it undefined."""

    flag: gc.Tensor
    name: str
    line: int
    is_return: bool = False  # a function's result, None where the flag is false


_lock = threading.Lock()
# graph -> {id(tensor): (tensor, MaybeDefined)}; the tensor is held so its id stays unique
_registry = SideTable("maybe defined")


def mark(value, flag, name: str, line: int, is_return: bool = False):
    """Record that `value` (a tensor) is defined only when `flag` is true. Returns it."""
    with _lock:
        _registry.setdefault(value.graph, {})[id(value)] = (value, MaybeDefined(flag, name, line, is_return))
    return value


def lookup(value) -> MaybeDefined | None:
    if not isinstance(value, gc.Tensor):
        return None
    with _lock:
        entry = _registry.get(value.graph, {}).get(id(value))
    return entry[1] if entry is not None and entry[0] is value else None


def needs_flag(value) -> bool:
    """True when a state variable holding `value` must carry a defined flag."""
    return isinstance(value, Undefined) or lookup(value) is not None


def flag_of(value):
    """The 'defined' flag of a state value: False for an Undefined, its registered flag
    for a maybe-defined tensor, True otherwise. Built in the current control-flow
    context (a branch or loop body)."""
    if isinstance(value, (Undefined, UndefinedReturnValue, PartialReturn)):  # (PartialReturn: of None)
        return gc.constant(False)
    info = lookup(value)
    return info.flag if info is not None else gc.constant(True)


def _statically_false(flag) -> bool:
    value = constant_value(flag)
    return value is not None and not bool(np.all(value))


def ld(value):
    """Read a variable that may be undefined (`ag__.ld(x)`): returns it, raises naming it when
    it is certainly undefined, or (a graph value that may be undefined) guards the read with a
    run-time check (`guard`)."""
    if isinstance(value, Undefined):
        raise_undefined(value)
    return guard(value)


def guard(value):
    """Read a maybe-defined tensor: the same value, valid only after an Assert on its flag
    (chained with the other side effects so it runs where the read runs). Raises at
    once when the flag is a constant False."""
    info = lookup(value)
    if info is None:
        return value
    if _statically_false(info.flag):
        raise_undefined(Undefined(info.name, info.line))
    where = reading_location()
    message = (f"{MESSAGE_PREFIX}'{info.name}' is used at {where} but has no value in this run: the statement at "
               f"line {info.line} (a loop on a tensor that ran zero times, or an if on a tensor whose taken branch "
               f"does not assign it) left it undefined. Assign '{info.name}' before that statement.")
    g = effects.graph_for(value)
    with g.control_dependencies(effects.dependencies()):
        check = gc.Assert(info.flag, [], message=message, name="undefined_check")
    effects.record(check)
    with g.control_dependencies([check]):
        return gc.identity(value)


def retval(value, returned=True, fn_name: str = "the function", line: int = 0):
    """A function's result: None when no `return` ran. When whether one ran is known only
    at run time (`returned` is a tensor: a path through an `if` or loop on a tensor falls
    off the end or returns None), each tensor of the result is marked as defined only
    where a value was returned: `@function` gives None for such a run; a converted caller
    refuses such a result (conversion.converted_call), since it could not test it for
    None while the graph is built. Python values returned on some paths only
    (PartialReturn) are kept where every path returns them, refused otherwise."""
    if isinstance(value, UndefinedReturnValue) or (isinstance(value, PartialReturn) and value.value is None):
        return None  # no return ran, or `return None` on the paths where one did
    always = not isinstance(returned, gc.Tensor) or _statically_true(returned)
    value = _settle(value, always, fn_name, line)
    for leaf in _tensor_leaves(value):
        info = lookup(leaf)
        flag = returned
        if info is not None and not info.is_return:  # None was returned where its flag is false
            flag = info.flag if always else gc.logical_and(info.flag, returned)
        elif always:
            continue
        mark(leaf, flag, f"the value returned by {fn_name}", line, is_return=True)
    return value


def _settle(value, always: bool, fn_name: str, line: int):
    """`value` with its PartialReturn parts (Python values returned on some paths) replaced
    by what they hold when every path returns, refused otherwise."""
    if isinstance(value, PartialReturn):
        if always:
            return value.value
        raise StagingError(
            f"{fn_name} returns {value.value!r} on some paths and None (no return) on others, and which one is known "
            f"only when the graph runs (line {line}); a graph can leave out a tensor or a number there, not a "
            f"Python {type(value.value).__name__}. Return a number (e.g. a code), or return on every path.")
    if isinstance(value, (list, tuple)) and any(isinstance(v, (PartialReturn, list, tuple, dict)) for v in value):
        items = [_settle(v, always, fn_name, line) for v in value]
        return type(value)(items) if type(value) in (list, tuple) else type(value)(*items)  # (namedtuples)
    if isinstance(value, dict) and any(isinstance(v, (PartialReturn, list, tuple, dict)) for v in value.values()):
        return {k: _settle(v, always, fn_name, line) for k, v in value.items()}
    return value


def may_be_none(value) -> bool:
    """Whether a function's result (from `retval`) is None on paths chosen at run time."""
    for leaf in _tensor_leaves(value):
        info = lookup(leaf)
        if info is not None and info.is_return and not _statically_true(info.flag):
            return True
    return False


def _statically_true(flag) -> bool:
    value = constant_value(flag)
    return value is not None and bool(np.all(value))


def _tensor_leaves(value) -> list:
    if isinstance(value, gc.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensor_leaves(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensor_leaves(v)]
    return []
