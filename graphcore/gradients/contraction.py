"""Gradients of loop invariants summed as one contraction after the backward loop.

The gradient of a loop invariant W is the sum over iterations of what each iteration
contributes. For `y_t = W @ h_t` that is `sum_t dy_t h_t^T`: built naively, every
backward iteration forms an outer product and adds it into a W-sized accumulator.
Both factors are per-iteration tensors the backward loop has anyway (dy_t is the
gradient flowing back, h_t is popped for the gradient of h), so instead the backward
loop pushes the two factors onto two lists, and after it one matmul of the stacked
factors forms the sum:

    sum_t L_t @ R_t  =  [L_1 .. L_T] (side by side)  @  [R_1; ..; R_T] (stacked)

A *factorizer* is registered per op type: `fn(op, i, dy) -> Factors | None`, the
contribution of one iteration to the gradient of input i as `op(L) @ op(R)` (rank-2
tensors; op = optional transpose), or None when the op's gradient is not of that form
(the ordinary rule is used then). The walk asks for it only for an input that is a loop
invariant of the forward loop whose body it differentiates, when the op runs in every
iteration and the incoming gradient is live in every iteration (so each iteration
pushes exactly one pair). Everything built is ordinary ops (lists, stack, transpose,
reshape, matmul), so it can be differentiated again.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..graph import Operation, Tensor


@dataclass(frozen=True)
class Factors:
    """One iteration's gradient contribution `op(left) @ op(right)`, both rank 2 (op: an
    optional transpose), or both rank 1: the outer product `left right^T`."""

    left: Tensor
    right: Tensor
    transpose_left: bool = False
    transpose_right: bool = False


_FACTORIZERS: dict[str, Callable] = {}


def factorizer(op_type: str):
    """Register `fn(op, i, dy) -> Factors | None` for ops of `op_type`."""

    def register(fn):
        _FACTORIZERS[op_type] = fn
        return fn

    return register


def factorizer_for(op: Operation):
    return _FACTORIZERS.get(op.type)


def _static2(t: Tensor) -> bool:
    return t.shape.rank == 2 and t.shape.is_fully_defined()


@factorizer("MatMul")
def _matmul_factors(op, i, dy):
    """y = op(a) @ op(b): the gradient of a (rank 2) is dy @ op(b)^T (transposed when a
    is), of b it is op(a)^T @ dy; a 1-D operand is a column (b) or a row (a), and then
    the contribution is an outer product of two vectors."""
    a, b = op.inputs
    ta, tb = op.attrs.get("transpose_a", False), op.attrs.get("transpose_b", False)
    if dy is None or a.shape.rank is None or b.shape.rank is None or a.shape.rank > 2 or b.shape.rank > 2:
        return None
    if not (a.shape.is_fully_defined() and b.shape.is_fully_defined() and dy.shape.is_fully_defined()):
        return None
    ra, rb = a.shape.rank, b.shape.rank
    if i == 0 and ra == 2:
        if rb == 1:  # y[m] = op(A)[m,k] b[k]: dA = dy b^T (b dy^T for A^T)
            return Factors(dy, b) if not ta else Factors(b, dy)
        if not ta:
            return Factors(dy, b, transpose_right=not tb)
        return Factors(b, dy, transpose_left=tb, transpose_right=True)
    if i == 1 and rb == 2:
        if ra == 1:  # y[n] = a[k] op(B)[k,n]: dB = a dy^T (dy a^T for B^T)
            return Factors(a, dy) if not tb else Factors(dy, a)
        if not tb:
            return Factors(a, dy, transpose_left=not ta)
        return Factors(dy, a, transpose_left=True, transpose_right=ta)
    return None


def contract(lefts: Tensor, rights: Tensor, f: Factors, aligned: bool = True) -> Tensor:
    """sum_t op(L_t) @ op(R_t) from the list of the L_t and the list of the R_t; when
    not `aligned`, one list is in the reverse order of the other (one was pushed by the
    forward loop, the other by the backward loop)."""
    from ..ops.array_ops import constant, getitem, reshape_op, transpose_op  # noqa: PLC0415
    from ..ops.list_ops import stack_op  # noqa: PLC0415
    from ..ops.math_ops import matmul_op  # noqa: PLC0415

    ls = stack_op(lefts, element_dtype=f.left.dtype, element_shape=f.left.shape.dims)      # [T, ...]
    rs = stack_op(rights, element_dtype=f.right.dtype, element_shape=f.right.shape.dims)   # [T, ...]
    if not aligned:
        rs = getitem(rs, slice(None, None, -1))
    if f.left.shape.rank == 1:  # sum_t l_t r_t^T = [l_1 .. l_T] [r_1 .. r_T]^T
        return matmul_op(ls, rs, transpose_a=True)
    ld, rd = f.left.shape.dims, f.right.shape.dims
    m = ld[1] if f.transpose_left else ld[0]
    k = rd[0] if f.transpose_right else rd[1]
    # [m, T, n] -> [m, T*n]: the L_t side by side
    lm = transpose_op(ls, perm=(2, 0, 1) if f.transpose_left else (1, 0, 2))
    lm = reshape_op(lm, constant(np.asarray([m, -1], dtype=np.int64)))
    # [T, n, k] -> [T*n, k]: the R_t stacked
    rm = transpose_op(rs, perm=(0, 2, 1)) if f.transpose_right else rs
    rm = reshape_op(rm, constant(np.asarray([-1, k], dtype=np.int64)))
    return matmul_op(lm, rm)
