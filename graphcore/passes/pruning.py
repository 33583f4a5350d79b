"""Pruning: remove the ops that neither the fetches nor any effect need.

Kept: the ancestors (data and control) of the fetches, every stateful op (prints,
asserts, variable reads and updates: the effects chain stays in program order because
its token is fetched and each link waits for its effect), every placeholder, and, for
any while loop of which one op is kept, the whole loop (its variables' Enter, Merge,
Switch, NextIteration and Exit stay together, so a loop's lists stay aligned for
gradients and the executor's frame rules see the loop as it was built).
"""
from __future__ import annotations

from ..graph import Graph, Tensor
from .state import PassState


def _loops_of(op):
    """The while contexts `op` belongs to (an Exit belongs to the loop it leaves)."""
    ctx = op.inputs[0].op.ctx if op.type == "Exit" and op.inputs else op.ctx
    while ctx is not None:
        if ctx.is_while:
            yield ctx
        ctx = ctx.outer


def needed_ops(graph: Graph, state: PassState) -> set[int]:
    ops = graph.get_operations()
    roots = [f.op if isinstance(f, Tensor) else f for f in state.fetches]
    roots += [op for op in ops if op.op_def.stateful or op.type == "Placeholder"]
    members: dict[int, list] = {}  # id(loop ctx) -> its ops
    for op in ops:
        for w in _loops_of(op):
            members.setdefault(id(w), []).append(op)
    needed: set[int] = set()
    kept_loops: set[int] = set()
    stack = list(roots)
    while stack:
        op = stack.pop()
        if id(op) in needed:
            continue
        needed.add(id(op))
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
        for w in _loops_of(op):
            if id(w) not in kept_loops:
                kept_loops.add(id(w))
                stack.extend(members.get(id(w), ()))
    return needed


def run(graph: Graph, state: PassState) -> int:
    needed = needed_ops(graph, state)
    doomed = [op for op in graph.get_operations() if id(op) not in needed]
    for op in doomed:
        if op in graph:
            graph.erase_op(op, cascade=True)  # its users are unneeded too (else it would be needed)
    return 0
