"""Pruning: remove the ops that neither the fetches nor any effect need.

Kept: the ancestors (data and control) of the fetches, every stateful op (prints,
asserts, variable reads and updates: the effects chain stays in program order because
its token is fetched and each link waits for its effect), every placeholder and cond
predicate (state.anchor_ops), and, for
any while loop of which one op is kept, the whole loop (its variables' Enter, Merge,
Switch, NextIteration and Exit stay together, so a loop's lists stay aligned for
gradients and the executor's frame rules see the loop as it was built).
"""
from __future__ import annotations

from itertools import compress, filterfalse
from operator import attrgetter, not_

from ..graph import Graph, Tensor
from .state import PassState

_stateful = attrgetter("op_def.stateful")


def needed_ops(graph: Graph, state: PassState, ops: list | None = None) -> set:
    """The ops (a set of Operations: they hash by identity) the fetches, the effects and the
    anchors need; `ops` is the graph's order if the caller has it already."""
    if ops is None:
        ops = graph.get_operations()
    by_ctx: dict[int, list] = {}  # id(ctx) -> its ops (an Exit belongs to the loop it leaves)
    ctxs: dict[int, object] = {}
    for op in ops:
        ctx = op.inputs[0].op.ctx if op.type == "Exit" else op.ctx
        if ctx is not None:
            k = id(ctx)
            if k in by_ctx:
                by_ctx[k].append(op)
            else:
                by_ctx[k] = [op]
                ctxs[k] = ctx
    loops_of: dict[int, list] = {}  # id(ctx) -> the while contexts it is in
    members: dict[int, list] = {}  # id(loop ctx) -> the ops of every context inside it
    for k, ctx in ctxs.items():
        loops = loops_of[k] = []
        c = ctx
        while c is not None:
            if c.is_while:
                loops.append(c)
                members.setdefault(id(c), []).extend(by_ctx[k])
            c = c.outer
    stack = [f.op if isinstance(f, Tensor) else f for f in state.fetches]
    stack += compress(ops, map(_stateful, ops))
    stack += [op for op in state.anchors if op in graph]
    needed: set = set()  # (of ops: an Operation hashes by identity, which saves calling id())
    kept_loops: set[int] = set()
    seen_ctx: set[int] = set()  # the contexts whose loops are kept already
    push, extend = stack.append, stack.extend
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        for t in op.inputs:
            if t.op not in needed:
                push(t.op)
        if op.control_inputs:
            extend(op.control_inputs)
        ctx = op.ctx if op.type != "Exit" else op.inputs[0].op.ctx
        if ctx is not None and id(ctx) not in seen_ctx:
            seen_ctx.add(id(ctx))
            for w in loops_of[id(ctx)]:
                if id(w) not in kept_loops:
                    kept_loops.add(id(w))
                    extend(filterfalse(needed.__contains__, members[id(w)]))
    return needed


def run(graph: Graph, state: PassState) -> int:
    ops = graph.get_operations()
    needed = needed_ops(graph, state, ops)
    doomed = list(compress(ops, map(not_, map(needed.__contains__, ops))))  # (picked in C)
    # with what other passes left unused in loops it keeps (state.erase_later): one erase
    doomed += [op for op in state.take_leftovers() if op in needed]
    if doomed:
        state.erase(doomed)  # their users are unneeded too (else they would be needed)
    return 0
