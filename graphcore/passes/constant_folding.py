"""Constant folding: an op whose inputs are all constants, or whose result depends only
on a static shape (an op type declaring `shape_only`: Shape, Size, Rank, ZerosLike,
OnesLike, of a fully known shape), is computed now and becomes a Const.

Never folded: stateful ops and ops that read variables, control-flow primitives,
placeholders (nothing fed is ever constant), lists (variant values), and results
larger than MAX_ELEMENTS. An op directly in a while body is not folded here: the
loop-invariant pass moves a constant subgraph out of its loop, and it is folded there,
once. A folded op's replacement keeps its source line, its control inputs and those of
the constants it read, and its deadness: in a cond branch the new Const hangs on the
branch's pivot; at the top level nothing that may be dead (after a bare Switch) is folded.
"""
from __future__ import annotations

import numpy as np

from ..graph import Graph
from ..ops.array_ops import const_op
from ..shapes import TensorShape
from .state import UNTOUCHABLE, PassState, Positions, const_value

MAX_ELEMENTS = 10_000
NEVER = UNTOUCHABLE | {"Const", "Identity", "Assert", "Print"}


def _static_input(op):
    """For a shape-only op (its type declares `shape_only`), a stand-in value of its input's static shape (else None)."""
    x = op.inputs[0]
    if x.dtype.np_dtype is None:
        return None
    if op.type == "Rank":
        if x.shape.rank is None:
            return None
        return np.zeros((1,) * x.shape.rank, x.dtype.np_dtype)
    if not x.shape.is_fully_defined() or (x.shape.num_elements() or 0) > MAX_ELEMENTS:
        return None
    if op.type in ("Shape", "Size"):  # only its shape is read: a view of one zero, nothing allocated
        return np.broadcast_to(np.zeros((), x.dtype.np_dtype), x.shape.dims)
    return np.zeros(x.shape.dims, x.dtype.np_dtype)


def _evaluate(op):
    """The op's output values if it can be folded, else None."""
    if op.op_def.shape_only and len(op.inputs) == 1:
        v = _static_input(op)
        if v is None:
            return None
        values, extra = [v], []
    else:
        if not op.inputs:
            return None
        values, extra = [], []
        for t in op.inputs:
            v = const_value(t)
            if v is None:
                return None
            values.append(v)
            if t.op.control_inputs:
                extra.extend(t.op.control_inputs)
    try:
        out = op.op_def.kernel(*values, **op.attrs)  # (numpy's warnings are off: see run)
    except Exception:  # noqa: BLE001 (a failing op fails when it runs, as before)
        return None
    outs = list(out) if len(op.outputs) > 1 else [out]
    if len(outs) != len(op.outputs):
        return None
    checked = []
    for t, v in zip(op.outputs, outs):
        arr = np.asarray(v)
        if t.dtype.np_dtype is None or arr.dtype != t.dtype.np_dtype or arr.size > MAX_ELEMENTS:
            return None
        dims = t.shape.dims  # compatible with the static shape
        if dims is not None:
            if len(dims) != arr.ndim:
                return None
            for d, n in zip(dims, arr.shape):
                if d is not None and d != n:
                    return None
        checked.append(arr)
    return checked, extra


def _pivot_before(op, position: Positions) -> bool:
    """In a cond branch a new Const hangs on the branch's pivot: it must exist already and
    stand before `op` in the graph's order (graph files list an op after everything it
    waits for)."""
    pivot = getattr(op.ctx, "_pivot", None)
    return pivot is not None and position(pivot.op) < position(op)


def _constant(graph: Graph, op, arr: np.ndarray, dtype):
    """`constant(arr, dtype=dtype)` built right before `op`, the op being folded (`arr` has the
    dtype's numpy dtype; not in a while body, whose constants `constant` builds outside): the
    same Const op, built without the public builder's conversions and shape rule."""
    if arr.ndim == 0:
        arr = arr[()]  # a numpy scalar, as `constant` makes it
    return graph.create_op_without_inputs_before(op, const_op, {"value": arr, "dtype": dtype}, "Const",
                                                 [(dtype, TensorShape(arr.shape))]).outputs[0]


def run(graph: Graph, state: PassState) -> int:
    with np.errstate(all="ignore"):  # once for the run: entering it costs more than most folds
        return _run(graph, state)


def _run(graph: Graph, state: PassState) -> int:
    rewrites = 0
    position = Positions(graph)
    for op in state.walk_types(NEVER, excluding=True):  # (no shape-only op type is in NEVER)
        if op.op_def.shape_only:
            pass
        elif not op.inputs:
            continue
        else:
            for t in op.inputs:
                if t.op.type != "Const":
                    break
            else:
                t = None
            if t is not None:
                continue
        d = op.op_def
        if d.stateful or d.uses_runtime or d.kernel is None:
            continue
        ctx = op.ctx
        if ctx is not None and ctx.is_while:
            continue  # the loop-invariant pass moves it out first
        used = [t for t in op.outputs if t.readers or state.is_fetched(t)]
        if not used:
            continue
        if ctx is not None:
            if not _pivot_before(op, position):
                state.later(op)
                continue
        elif state.may_be_dead(op):
            state.later(op)
            continue
        folded = _evaluate(op)
        if folded is None:
            continue
        values, extra = folded
        controls = list(dict.fromkeys(list(op.control_inputs) + extra))
        new = []
        for t in used:
            new.append((t, _constant(graph, op, values[t.value_index], t.dtype)))
        for _, c in new:
            for d in controls:
                if d is not c.op:
                    graph.add_control_input(c.op, d)
                    state.touch(d)
        for t, c in new:
            state.replace(t, c)
        rewrites += 1
    return rewrites
