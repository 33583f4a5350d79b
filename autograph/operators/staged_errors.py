"""The exceptions a graph raises for the program: which Assert op stands for which Python
exception (`note`, `staged_for`), and `guard_value`. A leaf below `exceptions` (the
statements that stage them) and `path_types` / `data_structures` (checks of values), so
none of them imports another to reach this table."""
from __future__ import annotations

import threading

import graphcore as gc
from graphcore.side_tables import SideTable

_lock = threading.Lock()
# graph -> {op name: the exception to raise when that op fails}
_staged = SideTable("staged errors")


def note(op: gc.Operation, exc: BaseException) -> None:
    """When the Assert `op` fails, the program raises `exc` (exceptions.reraise_staged)."""
    with _lock:
        _staged.setdefault(op.graph, {})[op.name] = exc


def _follow_inlined(fop: gc.Operation, op: gc.Operation) -> None:
    """Control Flow v2's lowering copied `fop` out of a function into `op`: it stands for
    the same exception."""
    exc = staged_for(fop)
    if exc is not None:
        note(op, exc)


if _follow_inlined not in gc.function_graph.INLINE_HOOKS:
    gc.function_graph.INLINE_HOOKS.append(_follow_inlined)


def staged_for(op: gc.Operation) -> "BaseException | None":
    with _lock:
        return _staged.get(op.graph, {}).get(op.name)


def guard_value(value, test, exc: BaseException):
    """`value` (a tensor), valid only once an Assert of `test` passed: where the graph
    computes the value and the test is false, the run fails with `exc`. A check of the value
    itself rather than a step of the program: it runs where the value is computed, outside
    the chain of effects (prints keep their order among themselves)."""
    g = value.graph
    op = gc.Assert(test, [], message=f"{type(exc).__name__}: {exc}", name="exact_check")
    note(op, exc)
    with g.control_dependencies([op]):
        return gc.identity(value)
