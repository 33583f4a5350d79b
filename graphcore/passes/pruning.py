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

    A loop is kept whole when one of its ops is needed, which is when one of the ops of the
    outermost loop around it is: the ancestors of what is needed are marked first (each op
    when it is first found, so each is looked at once), then each outermost loop with a needed
    op gets all its ops marked with their ancestors, until no other loop has one."""
    if ops is None:
        ops = graph.get_operations()
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
        state.erase(doomed)  # their users are unneeded too (else they would be needed)
    return 0
