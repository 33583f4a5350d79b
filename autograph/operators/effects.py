"""Side effects in a traced graph (Print, Assert) run in program order, once per run.

Each effect op is made to depend on a token tensor and a new token is made to depend
on the op, so effects form a chain. Branches of a graph cond and bodies of a graph loop
extend the chain through an extra output / loop variable; the traced function fetches
the final token. A chain with `token=None` (a dry run, or a branch traced before we
know it has effects) only counts the effects, so the caller can retrace with a token.
"""
from __future__ import annotations

import contextlib
import threading

import graphcore as gc

_local = threading.local()


class Chain:
    def __init__(self, token):
        self.token = token
        self.effects = 0


def _stack() -> list:
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def current() -> Chain | None:
    s = _stack()
    return s[-1] if s else None


@contextlib.contextmanager
def chain_scope(token):
    """Effects made inside are chained after `token` (or only counted if it is None)."""
    c = Chain(token)
    _stack().append(c)
    try:
        yield c
    finally:
        _stack().pop()


def graph_for(t):
    """The graph to build an effect reading tensor `t` in: the one being built when it is
    `t`'s or a function nested in it (a Control Flow v2 branch or body, which captures `t`),
    else `t`'s own."""
    g = gc.get_default_graph()
    return g if g is not None and g.within(t.graph) else t.graph


def dependencies() -> list:
    c = current()
    return [c.token] if c is not None and c.token is not None else []


def record(op) -> None:
    """Add an effect op (already built under `dependencies()`) to the current chain."""
    c = current()
    if c is None or op is None:
        return
    c.effects += 1
    if c.token is not None:
        g = c.token.graph
        with g.control_dependencies([op]):
            c.token = gc.identity(c.token)


# Variable reads and updates built while tracing join the chain, so they happen in
# program order and the traced function runs every update (graphcore asks these hooks).
if dependencies not in gc.eager.state_dependency_hooks:
    gc.eager.state_dependency_hooks.append(dependencies)
if record not in gc.eager.state_update_hooks:
    gc.eager.state_update_hooks.append(record)
