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


def needed_ops(graph: Graph, state: PassState) -> set[int]:
    ops = graph.get_operations()
    loops_of: dict[int, tuple] = {}  # id(ctx) -> the while contexts it is in, innermost first

    def loops(ctx) -> tuple:
        hit = loops_of.get(id(ctx))
        if hit is None:
            hit = loops_of[id(ctx)] = ((ctx,) if ctx.is_while else ()) + (loops(ctx.outer) if ctx.outer else ())
        return hit

    members: dict[int, list] = {}  # id(loop ctx) -> its ops (an Exit belongs to the loop it leaves)
    for op in ops:
        ctx = op.inputs[0].op.ctx if op.type == "Exit" else op.ctx
        if ctx is not None:
            for w in loops(ctx):
                members.setdefault(id(w), []).append(op)
    stack = [f.op if isinstance(f, Tensor) else f for f in state.fetches]
    stack += [op for op in ops if op.op_def.stateful] + [op for op in state.anchors if op in graph]
    needed: set[int] = set()
    kept_loops: set[int] = set()
    while stack:
        op = stack.pop()
        if id(op) in needed:
            continue
        needed.add(id(op))
        for t in op.inputs:
            stack.append(t.op)
        stack.extend(op.control_inputs)
        ctx = op.inputs[0].op.ctx if op.type == "Exit" else op.ctx
        if ctx is not None:
            for w in loops(ctx):
                if id(w) not in kept_loops:
                    kept_loops.add(id(w))
                    stack.extend(members.get(id(w), ()))
    return needed


def run(graph: Graph, state: PassState) -> int:
    needed = needed_ops(graph, state)
    doomed = [op for op in graph.get_operations() if id(op) not in needed]
    if doomed:
        graph.erase_ops(doomed)  # their users are unneeded too (else they would be needed)
    return 0
