"""What every pass shares: the fetches (which a pass may replace by an equal tensor),
the ops that must stay, and the small analyses passes ask about ops and tensors."""
from __future__ import annotations

import numpy as np

from ..graph import Graph, Operation, Tensor

# the v1 primitives (and LoopCond): their dead-token rules are not an ordinary op's
CONTROL_FLOW = frozenset({"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"})
# ops no value-level pass touches: inputs, effects, state, loop machinery, list handles
UNTOUCHABLE = CONTROL_FLOW | {"Placeholder", "NoOp", "VarHandleOp"}


class PassState:
    """The graph being optimized and the tensors / ops the caller fetches from it."""

    def __init__(self, graph: Graph, fetches):
        self.graph = graph
        self.fetches: list = list(fetches)
        self.anchors = anchor_ops(graph)

    # -- what must stay ----------------------------------------------------------
    def protected(self) -> set[int]:
        """ids of ops that are fetched (their tensors or themselves), fed (placeholders) or
        anchors of a control-flow context (see `anchor_ops`)."""
        out = {id(f.op if isinstance(f, Tensor) else f) for f in self.fetches}
        out.update(id(op) for op in self.anchors)
        return out

    def may_be_dead(self) -> set[int]:
        """`may_be_dead(graph)`, computed again only after the graph changed."""
        if getattr(self, "_dead_version", None) != self.graph.version:
            self._dead, self._dead_version = may_be_dead(self.graph), self.graph.version
        return self._dead

    def is_fetched(self, t: Tensor) -> bool:
        return any(f is t for f in self.fetches)

    # -- rewriting ---------------------------------------------------------------
    def replace(self, old: Tensor, new: Tensor) -> bool:
        """Make every reader of `old` read `new`, fetches included (a fetch only when `new`
        lives in the same frame). Returns True if anything was rewired."""
        g = self.graph
        changed = bool(g.replace_all_uses_with(old, new))
        if self.is_fetched(old) and new.op.frame_name == old.op.frame_name:
            self.fetches = [new if f is old else f for f in self.fetches]
            changed = True
        return changed


def anchor_ops(graph: Graph) -> list[Operation]:
    """Ops that stay whatever reads them: placeholders (they are fed) and the predicates
    of conds (a cond's context names its predicate; gradients built on the graph later
    read it there)."""
    out = {id(op): op for op in graph.get_operations() if op.type == "Placeholder"}
    seen: set[int] = set()
    for op in graph.get_operations():
        c = op.ctx
        while c is not None and id(c) not in seen:
            seen.add(id(c))
            pred = getattr(c, "pred", None)
            if isinstance(pred, Tensor) and pred.op in graph:
                out[id(pred.op)] = pred.op
            c = c.outer
    return list(out.values())


def is_used(op: Operation) -> bool:
    return bool(op.control_outputs) or any(t.consumers() for t in op.outputs)


def const_value(t: Tensor):
    """The value of `t` if its op is a Const, else None."""
    if t.op.type == "Const":
        v = t.op.attrs["value"]
        return v if t.dtype.np_dtype is not None else None
    return None


def may_be_dead(graph: Graph) -> set[int]:
    """ids of ops whose outputs may be dead tokens at run time (after a Switch, not joined
    by a Merge with a live input). Conservative: a pass that would replace such an op's
    output by an always-live constant must not."""
    dead: set[int] = set()
    for op in graph.get_operations():
        if op.type == "Switch":
            dead.add(id(op))
            continue
        if op.type == "Merge":
            ins = [t for t in op.inputs if t.op.type != "NextIteration"]
            if ins and all(id(t.op) in dead for t in ins):
                dead.add(id(op))
            continue
        if op.type == "Exit":
            loop = op.inputs[0].op.ctx
            enters = getattr(loop, "enters", None)
            if not enters or any(id(e.inputs[0].op) in dead for e in enters):
                dead.add(id(op))
            continue
        if any(id(t.op) in dead for t in op.inputs) or any(id(c) in dead for c in op.control_inputs):
            dead.add(id(op))
    return dead


def broadcast_keeps(x: Tensor, other: Tensor, out: Tensor) -> bool:
    """True if `op(x, other)` certainly has x's shape and dtype (other broadcasts into x)."""
    if out.dtype != x.dtype:
        return False
    xs, os_, rs = x.shape, other.shape, out.shape
    if xs.dims is None or os_.dims is None:
        return False
    if xs.is_fully_defined() and rs.is_fully_defined():
        return list(xs.dims) == list(rs.dims)
    # a value of size one with no more dims than x never changes x's shape
    return len(os_.dims) <= len(xs.dims) and all(d == 1 for d in os_.dims)


def all_equal(value, scalar) -> bool:
    arr = np.asarray(value)
    return arr.dtype != object and arr.size > 0 and bool(np.all(arr == scalar))
