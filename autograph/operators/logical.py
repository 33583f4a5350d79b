"""Lazy `and` / `or`, `not` and chained comparisons: Python semantics on Python values,
a graph cond (so the right side is only evaluated when needed) on tensors."""
from __future__ import annotations

import operator
from typing import Callable

import graphcore as gc

from .conditionals import if_exp
from .staging import is_tensor


def _as_bool(x):
    return x if x.dtype == gc.bool_ else gc.not_equal(x, 0)


def and_(*thunks: Callable):
    """`a and b and ...` with each operand a thunk."""
    v = thunks[0]()
    for i, f in enumerate(thunks[1:], 1):
        if is_tensor(v):
            rest = thunks[i:]
            return if_exp(_as_bool(v), lambda: _to_bool(and_(*rest)), lambda: False)
        if not v:
            return v
        v = f()
    return v


def or_(*thunks: Callable):
    """`a or b or ...` with each operand a thunk."""
    v = thunks[0]()
    for i, f in enumerate(thunks[1:], 1):
        if is_tensor(v):
            rest = thunks[i:]
            return if_exp(_as_bool(v), lambda: True, lambda: _to_bool(or_(*rest)))
        if v:
            return v
        v = f()
    return v


def _to_bool(v):
    return _as_bool(v) if is_tensor(v) else bool(v)


def not_(x):
    if is_tensor(x):
        return gc.logical_not(_as_bool(x))
    return not x


_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
        ">=": operator.ge, "is": operator.is_, "is not": operator.is_not,
        "in": lambda a, b: a in b, "not in": lambda a, b: a not in b}


def compare_chain(first: Callable, *ops_and_thunks):
    """`a < b <= c`: each operand evaluated once; stops at the first Python False."""
    left = first()
    result = None
    for i in range(0, len(ops_and_thunks), 2):
        op, thunk = ops_and_thunks[i], ops_and_thunks[i + 1]
        right = thunk()
        r = _OPS[op](left, right)
        if result is None:
            result = r
        elif is_tensor(result) or is_tensor(r):
            result = gc.logical_and(_as_bool(result) if is_tensor(result) else gc.constant(bool(result)),
                                    _as_bool(r) if is_tensor(r) else gc.constant(bool(r)))
        else:
            result = result and r
        if not is_tensor(result) and not result:
            return result
        left = right
    return result
