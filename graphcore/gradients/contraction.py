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
tensors; op = optional transpose; `Factors` and MatMul's algebra live with the op in
ops/math_ops.py), or None when the op's gradient is not of that form (the ordinary rule
is used then). The walk asks for it only for an input that is a loop
invariant of the forward loop whose body it differentiates, when the op runs in every
iteration and the incoming gradient is live in every iteration (so each iteration
pushes exactly one pair). Everything built is ordinary ops (lists, stack, transpose,
reshape, matmul), so it can be differentiated again.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..graph import Operation, Tensor
from ..ops.array_ops import constant, getitem, reshape_op, transpose_op
from ..ops.list_ops import stack_op
from ..ops.math_ops import Factors, matmul_grad_factors, matmul_op

_FACTORIZERS: dict[str, Callable] = {}


def factorizer(op_type: str):
    """Register `fn(op, i, dy) -> Factors | None` for ops of `op_type`."""

    def register(fn):
        _FACTORIZERS[op_type] = fn
        return fn

    return register


def factorizer_for(op: Operation):
    return _FACTORIZERS.get(op.type)


@factorizer("MatMul")
def _matmul_factors(op, i, dy):
    """MatMul's own gradient algebra (math_ops.matmul_grad_factors), for matrices and
    vectors of static shapes: `contract` stacks them."""
    a, b = op.inputs
    if dy is None or any(t.shape.rank is None or t.shape.rank > 2 or not t.shape.is_fully_defined()
                         for t in (a, b, dy)):
        return None
    return matmul_grad_factors(op, i, dy)


def contract(lefts: Tensor, rights: Tensor, f: Factors, aligned: bool = True) -> Tensor:
    """sum_t op(L_t) @ op(R_t) from the list of the L_t and the list of the R_t; when
    not `aligned`, one list is in the reverse order of the other (one was pushed by the
    forward loop, the other by the backward loop)."""
    ls = stack_op(lefts, element_dtype=f.left.dtype, element_shape=f.left.shape.dims)      # [T, ...]
    rs = stack_op(rights, element_dtype=f.right.dtype, element_shape=f.right.shape.dims)   # [T, ...]
    if not aligned:
        rs = getitem(rs, slice(None, None, -1))
    if f.is_outer:  # two vectors: sum_t l_t r_t^T = [l_1 .. l_T] [r_1 .. r_T]^T
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
