"""Arithmetic simplification: identities of arithmetic that hold exactly for the dtype.

  x * 1, 1 * x, x / 1, x - 0   -> x      (exact for floats too: nan*1 is nan, -0.0*1 is -0.0)
  x + 0, 0 + x                 -> x      (integers; for floats only with -0.0, since -0.0 + 0.0 is 0.0)
  -(-x), not (not p), ~(~n)    -> x, p, n
  (a + b) + c                  -> AddN(a, b, c)   (AddN adds left to right, so even floats round alike;
                                                   only when nothing else reads a + b)
  a * b + a * c                -> a * (b + c)     (integers: exact with wrap-around too; for floats the
                                                   rounding differs, so they are left alone)
  x == x, x <= x, x >= x       -> True, and x != x, x < x, x > x -> False (integers and bools: a float
                                  x may be nan; only for an x that is always live, of known shape,
                                  outside control flow, since the result is a constant)

The op types and their identities are facts their define_op blocks declare (`unit`,
`commutative`, `involution`, `family="comparison"`), not a list kept here.

Scalars are not broadcast "once" here: numpy broadcasts inside each kernel without making
the broadcast array, so there is no broadcast op to share.

A simplification applies only when the result certainly has x's shape and dtype (the
constant broadcasts into x, never x into it). The replacement is x itself or an op
reading x, so it is dead exactly when the original was.
"""
from __future__ import annotations

import numpy as np

from ..graph import Graph, Tensor
from ..ops.array_ops import constant
from ..ops.math_ops import add, add_n, multiply
from ..registry import registered_ops
from .state import PassState, all_equal, broadcast_keeps, const_value


def _is_int(t: Tensor) -> bool:
    return t.dtype.np_dtype is not None and t.dtype.np_dtype.kind in "iu"


def _is_const(t: Tensor, scalar, *, negative_zero: bool = False) -> bool:
    v = const_value(t)
    if v is None or t.op.control_inputs or not all_equal(v, scalar):
        return False
    if negative_zero and np.asarray(v).dtype.kind == "f":
        return bool(np.all(np.signbit(v)))
    return True


def _add_chain(op, state):
    """The inputs of AddN(a, b, c) standing for op = (a + b) + c, or None."""
    x, c = op.inputs
    inner = x.op
    out = op.outputs[0]
    if inner.type not in ("Add", "AddN") or inner.ctx is not op.ctx or inner.control_inputs:
        return None
    if inner.device != op.device or len(x.readers) != 1 or state.is_fetched(x):
        return None
    terms = list(inner.inputs) + [c]
    if any(t.dtype != out.dtype for t in terms):
        return None
    return terms


def _single_use(t: Tensor, op, state) -> bool:
    p = t.op
    return (p.ctx is op.ctx and not p.control_inputs and p.device == op.device and len(t.readers) == 1
            and not state.is_fetched(t))


def _common_factor(op, state):
    """(a, b, c) for op = a * b + a * c (either order in each product), integers only."""
    x, y = op.inputs
    if x.op.type != "Mul" or y.op.type != "Mul" or not (_is_int(x) and x.dtype == y.dtype == op.outputs[0].dtype):
        return None
    if not (_single_use(x, op, state) and _single_use(y, op, state)) or x.op is y.op:
        return None
    for a, b in (tuple(x.op.inputs), tuple(reversed(x.op.inputs))):
        for a2, c in (tuple(y.op.inputs), tuple(reversed(y.op.inputs))):
            if a is a2 and b.dtype == c.dtype == a.dtype:
                return a, b, c
    return None


def _self_comparison(op, dead: bool):
    """The constant `x == x` (and the like) is, or None."""
    x, y = op.inputs
    out = op.outputs[0]
    if x is not y or op.ctx is not None or dead or not out.shape.is_fully_defined():
        return None
    if not (_is_int(x) or x.dtype.np_dtype == np.bool_):
        return None
    # (what the comparison says of any number and itself: 0 == 0, not 0 < 0)
    return np.full(out.shape.as_list(), bool(op.op_def.python(0, 0)), dtype=np.bool_)


def _simplify(op, state=None):
    """('same', x) to replace op's output by x, ('addn', terms) by AddN(terms), or None.
    (x * 0 and x - x are left alone: a new op fed only by x took the wrong loop's pivot
    when x was a loop invariant, and a loop never ended.)"""
    t, ins = op.type, op.inputs
    d = op.op_def
    out = op.outputs[0] if op.outputs else None
    unit = d.unit
    if unit is not None and d.commutative and len(ins) == 2:
        for x, c in ((ins[0], ins[1]), (ins[1], ins[0])):
            if c.op.type != "Const" or not broadcast_keeps(x, c, out):
                continue
            if _is_const(c, unit, negative_zero=(t == "Add" and not _is_int(x))):
                return "same", x
    if t == "Add" and len(ins) == 2 and state is not None:
        a_type = ins[0].op.type  # (the two tests' first questions, asked here: most sums fail them)
        if a_type == "Add" or a_type == "AddN":
            terms = _add_chain(op, state)
            if terms is not None:
                return "addn", terms
        if a_type == "Mul" and ins[1].op.type == "Mul":
            factored = _common_factor(op, state)
            if factored is not None:
                return "factor", factored
    if unit is not None and not d.commutative and len(ins) == 2:  # (x - 0, x / 1: on the right only)
        x, c = ins
        if c.op.type == "Const" and broadcast_keeps(x, c, out) and _is_const(c, unit):
            return "same", x
    if d.involution and ins[0].op.type == t and not ins[0].op.control_inputs:
        x = ins[0].op.inputs[0]
        if x.dtype == out.dtype and x.shape.is_compatible_with(out.shape):
            return "same", x
    return None


def rewritten_types() -> frozenset[str]:
    """The op types with an identity here: a unit, an involution, or a comparison."""
    return frozenset(t for t, d in registered_ops().items()
                     if d.unit is not None or d.involution or d.family == "comparison")


def run(graph: Graph, state: PassState) -> int:
    rewrites = 0
    for op in state.walk_types(rewritten_types()):
        if op.control_inputs:
            continue
        for t in op.outputs:  # (a loop: a generator per op costs more than the test)
            if t.readers or state.is_fetched(t):
                break
        else:
            continue
        if op.op_def.family == "comparison":
            if op.inputs[0] is op.inputs[1]:
                dead = op.ctx is None and state.may_be_dead(op)
                if dead:
                    state.later(op)
                value = _self_comparison(op, dead)
                if value is not None:
                    with graph.inserting_before(op):
                        c = constant(value)
                    rewrites += state.replace(op.outputs[0], c)
            continue
        found = _simplify(op, state)
        if found is None:
            continue
        how, x = found
        if how == "factor":
            a, b, c = x
            with graph.inserting_before(op):
                x = multiply(a, add(b, c))
            if x.dtype != op.outputs[0].dtype or not x.shape.is_compatible_with(op.outputs[0].shape):
                continue
        if how == "addn":
            with graph.inserting_before(op):
                x = add_n(x)
            if not x.shape.is_compatible_with(op.outputs[0].shape):
                continue  # (left unused: pruning erases it)
        if state.replace(op.outputs[0], x):
            rewrites += 1
    return rewrites
