"""Helpers gradient rules share: shapes of forward tensors seen from the backward pass,
zeros, undoing broadcasting, summing gradients.

A gradient rule runs in the backward context (the top level, or the body of a
backward loop). When it needs only the *shape* of a forward tensor, it asks
`fwd_shape(t)`: a constant when the shape is static, else a Shape op built next to
`t` in the forward pass, so a backward loop accumulates a few integers per
iteration instead of the whole tensor."""
from __future__ import annotations

import threading

import numpy as np

from .. import dtypes as dt
from ..graph import Tensor


def differentiable(t: Tensor) -> bool:
    """Gradients flow through floating tensors and tensor lists (variant); never ints or bools."""
    return t.dtype.is_floating or t.dtype is dt.variant


def _in_ctx_of(t: Tensor):
    """The control-flow context a new op reading `t` should be built in (next to t)."""
    return t.op.ctx


def fwd_shape(t: Tensor) -> Tensor:
    """The shape of `t` as an int64 vector usable from the current context."""
    from ..ops.array_ops import constant, shape_op  # noqa: PLC0415

    g = t.graph
    if t.shape.is_fully_defined():
        return constant(np.asarray(t.shape.dims, dtype=np.int64))
    cache = g.__dict__.setdefault("_grad_shape_cache", {})
    hit = cache.get(id(t))
    if hit is None or hit[0] is not t:
        with g._control_flow_context(_in_ctx_of(t)), g.control_dependencies(None):
            s = g.create_op(shape_op, [t], name="grad_shape").outputs[0]
        hit = cache[id(t)] = (t, s)
    return hit[1]


def fwd_size(t: Tensor, dtype) -> Tensor:
    """The number of elements of `t`, as a scalar of `dtype`."""
    from ..ops.array_ops import cast, constant, size_op  # noqa: PLC0415

    d = dt.as_dtype(dtype)
    n = t.shape.num_elements()
    if n is not None:
        return constant(np.asarray(n, dtype=d.np_dtype))
    g = t.graph
    with g._control_flow_context(_in_ctx_of(t)), g.control_dependencies(None):
        s = g.create_op(size_op, [t], name="grad_size").outputs[0]
    return cast(s, d)


def zeros_like_fwd(t: Tensor) -> Tensor:
    """Zeros shaped like the forward tensor `t`, built in the current context."""
    from ..ops.array_ops import constant, fill_op  # noqa: PLC0415
    from ..ops.grad_ops import list_zeros_like_op  # noqa: PLC0415

    g = t.graph
    if t.dtype is dt.variant:
        with g._control_flow_context(_in_ctx_of(t)), g.control_dependencies(None):
            z = g.create_op(list_zeros_like_op, [t], name="grad_zeros").outputs[0]
        return z
    if t.shape.is_fully_defined():
        return constant(np.zeros(t.shape.dims, dtype=t.dtype.np_dtype))
    return fill_op(fwd_shape(t), constant(np.zeros((), dtype=t.dtype.np_dtype)))


def zeros_like_bwd(t: Tensor) -> Tensor:
    """Zeros shaped like a tensor of the backward pass (same context)."""
    from ..ops.array_ops import constant, zeros_like_op  # noqa: PLC0415
    from ..ops.grad_ops import list_zeros_like_op  # noqa: PLC0415

    if t.dtype is dt.variant:
        return list_zeros_like_op(t)
    if t.shape.is_fully_defined():
        return constant(np.zeros(t.shape.dims, dtype=t.dtype.np_dtype))
    return zeros_like_op(t)


def unbroadcast(grad: Tensor | None, x: Tensor) -> Tensor | None:
    """Sum `grad` (shaped like a broadcast result) back to the shape of the input `x`."""
    from ..ops.array_ops import constant, reshape_op  # noqa: PLC0415
    from ..ops.grad_ops import unbroadcast_to_op  # noqa: PLC0415
    from ..ops.math_ops import sum_op  # noqa: PLC0415

    if grad is None:
        return None
    xs, gs = x.shape, grad.shape
    if xs.is_fully_defined() and gs.is_fully_defined():
        if xs.dims == gs.dims:
            return grad
        lead = len(gs.dims) - len(xs.dims)
        axes = list(range(lead)) + [lead + i for i, d in enumerate(xs.dims) if d == 1 and gs.dims[lead + i] != 1]
        out = sum_op(grad, axis=tuple(axes), keepdims=True) if axes else grad
        if out.shape.dims != xs.dims:
            out = reshape_op(out, constant(np.asarray(xs.dims, dtype=np.int64)))
        return out
    return unbroadcast_to_op(grad, fwd_shape(x))


def add_grads(parts: list[Tensor]) -> Tensor | None:
    """The sum of gradient contributions (AddN; TensorListAddN for lists)."""
    from ..ops.grad_ops import list_add_n_op  # noqa: PLC0415
    from ..ops.math_ops import add_n_op  # noqa: PLC0415

    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    if parts[0].dtype is dt.variant:
        return list_add_n_op(*parts)
    d = parts[0].dtype
    from ..ops.array_ops import cast  # noqa: PLC0415

    parts = [p if p.dtype == d else cast(p, d) for p in parts]
    return add_n_op(*parts)


# Which inputs of the op whose rule is running need a gradient. A rule may skip the
# others: inside a loop, every forward tensor a rule reads costs an accumulator.
_needed_inputs = threading.local()


def needs_grad(op, i: int) -> bool:
    """False when the reverse walk does not need the gradient of input `i` of `op`
    (a constant, an integer, or not on a path from the xs); rules use it to avoid
    reading forward tensors they would only need for that input."""
    cur = getattr(_needed_inputs, "value", None)
    if cur is None or cur[0] is not op:
        return True
    return cur[1][i]


def set_needed(op, mask) -> None:
    _needed_inputs.value = (op, mask) if op is not None else None
