"""What the reverse walk and the loop gradients share: which tensors are differentiated,
zeros standing in for a missing gradient, and summing gradients. (The helpers gradient
rules of ops use live with the ops: ops/array_ops.py `fwd_shape`, `zeros_shaped_like`,
ops/math_ops.py `unbroadcast`.)"""
from __future__ import annotations

from .. import dtypes as dt
from ..graph import Tensor
from ..ops.array_ops import cast, zeros_like_op, zeros_shaped_like
from ..ops.list_ops import list_add_n_op, list_zeros_like_fwd, list_zeros_like_op
from ..ops.math_ops import add_n_op


def differentiable(t: Tensor) -> bool:
    """Gradients flow through floating tensors and tensor lists (variant); never ints or bools."""
    return t.dtype.is_floating or t.dtype is dt.variant


def carries_value(t: Tensor) -> bool:
    """A run-time Python object (`pyobject`): it may hold numbers made from floats (a sorted
    list, a string), so a gradient through it exists but the graph cannot compute it. Ints
    and bools are truly not differentiable: their gradient is zero where it is defined."""
    return t.dtype is dt.pyobject


def zeros_like_fwd(t: Tensor) -> Tensor:
    """Zeros shaped like the forward tensor `t`, built in the current context."""
    return list_zeros_like_fwd(t) if t.dtype is dt.variant else zeros_shaped_like(t)


def zeros_like_in_loop(t: Tensor) -> Tensor:
    """Zeros computed from `t` (never a constant): inside a loop they are live exactly
    when `t` is, so a loop variable's next value made of them lets the loop end."""
    if t.dtype is dt.variant:
        return list_zeros_like_op(t)
    return zeros_like_op(t)


def add_grads(parts: list[Tensor]) -> Tensor | None:
    """The sum of gradient contributions (AddN; TensorListAddN for lists)."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    if parts[0].dtype is dt.variant:
        return list_add_n_op(*parts)
    d = parts[0].dtype
    parts = [p if p.dtype == d else cast(p, d) for p in parts]
    return add_n_op(*parts)
