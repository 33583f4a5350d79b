"""Loop-invariant code motion: an op of a while body whose inputs are all loop
invariants (constant Enters of its loop) is computed once, outside the loop, through
`Graph.move_out_of_loop` (which keeps the pivot dependency that stops such values from
running in the loop's last, dead iteration). A constant subgraph in a loop then reaches
the top level, where constant folding folds it once.

Moved: only elementwise and shape-only ops that cannot fail (their op types declare
`fails=None`) on fully known shapes, since a loop that runs no iteration never ran them. Never moved: stateful ops, control-flow
primitives, ops with control inputs other than the loop's pivot or invariants (the
graph refuses those), and fetched ops.
"""
from __future__ import annotations

from ..errors import GraphError
from ..graph import Graph
from ..registry import registered_ops
from .state import PassState, Positions


def movable_types() -> frozenset[str]:
    """Only ops that cannot fail: a loop that runs no iteration never ran the op, and moved
    out it runs once in any case (an index error or a bad reshape would be new errors)."""
    return frozenset(t for t, d in registered_ops().items()
                     if (d.elementwise or d.shape_only) and d.fails is None and d.pure)


def _captures_intact(ctx, graph: Graph) -> bool:
    """Moving an op out builds it in the loop's outer context, which may capture through
    the Switches of enclosing conds: their predicates must still be in the graph (another
    pass may have replaced one by an equal tensor)."""
    c = ctx.outer
    while c is not None:
        pred = getattr(c, "pred", None)
        if pred is not None and pred.op not in graph:
            return False
        c = c.outer
    return True


def _is_a_predicate(op) -> bool:
    """An output of `op` is the predicate of a cond in the loop: its context names that
    tensor (compiled loops guard the branches' steps by it), which a move would leave
    naming an erased op (random programs under Control Flow v2, seed 1009, jit_compile)."""
    return any(u.type == "Switch" and u.inputs[1] is t for t in op.outputs for u in t.readers)


def run(graph: Graph, state: PassState) -> int:
    left = []  # the ops moved out, unused in the loop now
    protected = None
    position = Positions(graph)
    for op in state.walk_types(movable_types()):
        ctx = op.ctx
        if ctx is None or not ctx.is_while:
            continue
        # (the most selective test first: few ops read loop invariants only; an invariant is
        # an Enter, which most inputs are not: asked before the context's own test)
        if not op.inputs:
            continue
        for t in op.inputs:
            if t.op.type != "Enter" or not ctx.is_loop_invariant(t):
                break
        else:
            t = None
        if t is not None:
            continue
        d = op.op_def
        if d.stateful or d.uses_runtime:
            continue
        if protected is None:
            protected = state.protected()
        if op in protected:
            continue
        if any(t.dtype.np_dtype is None for t in op.outputs):
            continue
        if not all(t.shape.is_fully_defined() for t in op.inputs):
            continue
        if not any(t.readers for t in op.outputs):
            continue
        if _is_a_predicate(op):
            continue
        if not _captures_intact(ctx, graph):
            continue
        pivot = getattr(ctx, "_pivot", None)
        if pivot is None or position(pivot.op) > position(op):
            state.later(op)
            continue  # a pivot made now would stand before its Switch in the graph's order
        touched = [u for t in op.outputs for u in t.readers] + op.waiters  # (new lists)
        try:
            graph.move_out_of_loop(op, erase=False)
        except GraphError:
            state.later(op)
            continue
        state.touch(op, *touched)
        left.append(op)
    if left:
        state.erase_later(left)  # with pruning's: each erase walks the whole graph
    return len(left)
