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

from ..graph import Graph, Tensor
from .state import PassState



def needed_ops(graph: Graph, state: PassState, ops: list | None = None) -> set:
    """The ops (a set of Operations: they hash by identity) the fetches, the effects and the
    anchors need; `ops` is the graph's order if the caller has it already.

    A loop is kept whole when one of its ops is needed. The ancestors of what is needed are
    marked first (each op when it is first found, so each is looked at once); then an op left
    unmarked in a loop is needed if its outermost loop's LoopCond is (one of that loop's ops),
    with its ancestors, until none is. An unmarked op in a loop whose LoopCond is not marked
    (a loop nothing may need) takes the general way, `_needed_by_loops`."""
    if ops is None:
        ops = graph.get_operations()
    roots = [f.op if isinstance(f, Tensor) else f for f in state.fetches]
    roots += [op for op in ops if op.op_def.stateful]
    roots += [op for op in state.anchors if op in graph]
    needed = set(roots)
    stack = list(needed)
    outermost: dict = {}  # context -> the outermost while loop around it (None: none)
    while True:
        _mark_ancestors(needed, stack)
        for op in ops:
            if op in needed:
                continue
            ctx = op.ctx if op.type != "Exit" else op.inputs[0].op.ctx  # (an Exit: the loop it leaves)
            if ctx is None:
                continue
            loop = outermost.get(ctx, False)
            if loop is False:
                loop, c = None, ctx
                while c is not None:
                    if c.is_while:
                        loop = c
                    c = c.outer
                outermost[ctx] = loop
            if loop is None:
                continue
            cond = loop.loop_cond
            if cond is None or cond not in needed:
                return _needed_by_loops(graph, state, ops)
            needed.add(op)  # its loop is kept: all of it, with what it needs
            stack.append(op)
        if not stack:
            return needed


def _mark_ancestors(needed: set, stack: list) -> None:
    """Mark every producer and control input of the ops on `stack`, transitively."""
    mark, push = needed.add, stack.append
    while stack:
        op = stack.pop()
        for t in op.inputs:
            p = t.op
            if p not in needed:
                mark(p)
                push(p)
        for c in op.control_inputs:
            if c not in needed:
                mark(c)
                push(c)


def _needed_by_loops(graph: Graph, state: PassState, ops: list) -> set:
    """needed_ops the general way: each outermost loop with a needed op gets all its ops marked
    with their ancestors, until no other loop has one."""
    by_ctx: dict = {}  # context -> its ops (an Exit belongs to the loop it leaves)
    for op in ops:
        ctx = op.ctx if op.type != "Exit" else op.inputs[0].op.ctx
        if ctx is not None:
            its = by_ctx.get(ctx)
            if its is None:
                by_ctx[ctx] = [op]
            else:
                its.append(op)
    members: dict = {}  # outermost while context -> the ops of every context inside it
    for ctx, its in by_ctx.items():
        outermost, c = None, ctx
        while c is not None:
            if c.is_while:
                outermost = c
            c = c.outer
        if outermost is not None:
            members.setdefault(outermost, []).extend(its)
    stack = [f.op if isinstance(f, Tensor) else f for f in state.fetches]
    stack += [op for op in ops if op.op_def.stateful]
    stack += [op for op in state.anchors if op in graph]
    needed = set(stack)
    stack = list(needed)
    mark, push = needed.add, stack.append
    loops = list(members.values())
    while True:
        _mark_ancestors(needed, stack)
        left = []
        for its in loops:
            if any(map(needed.__contains__, its)):  # kept: all of it, with what it needs
                for m in its:
                    if m not in needed:
                        mark(m)
                        push(m)
            else:
                left.append(its)
        if not stack:
            return needed
        loops = left


def run(graph: Graph, state: PassState) -> int:
    ops = graph.get_operations()
    needed = needed_ops(graph, state, ops)
    doomed = [op for op in ops if op not in needed]
    # with what other passes left unused in loops it keeps (state.erase_later): one erase
    doomed += [op for op in state.take_leftovers() if op in needed]
    if doomed:
        # (checked: their users are unneeded too, else they would be needed; the leftovers
        # have none)
        state.erase(doomed, checked=True)
    return 0
