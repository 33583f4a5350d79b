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
    def __init__(self, token, anchor=None):
        self.token = token
        self.effects = 0
        # with no token: makes, on an effect's first need, a tensor of the code being built for
        # the effect to hang on (a v1 loop's test: an op with no inputs cannot be put in it)
        self.anchor = anchor


def _stack() -> list:
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def current() -> Chain | None:
    s = _stack()
    return s[-1] if s else None


@contextlib.contextmanager
def chain_scope(token, anchor=None):
    """Effects made inside are chained after `token` (or only counted if it is None; then
    `anchor()`, if given, makes a tensor the first effect depends on)."""
    c = Chain(token, anchor)
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
    """What an effect about to be built waits for."""
    c = current()
    if c is not None and c.token is None and c.anchor is not None:
        c.token, c.anchor = c.anchor(), None
    return [c.token] if c is not None and c.token is not None else []


def _state_dependencies() -> list:
    """What a variable read waits for: the chain's token, if it has one (never an anchor)."""
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
if _state_dependencies not in gc.eager.state_dependency_hooks:
    gc.eager.state_dependency_hooks.append(_state_dependencies)
if record not in gc.eager.state_update_hooks:
    gc.eager.state_update_hooks.append(record)
