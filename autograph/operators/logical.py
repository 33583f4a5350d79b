"""Lazy `and` / `or`, `not`, chained comparisons and `in`: Python semantics on Python values,
a graph cond (so the right side is only evaluated when needed) on tensors."""
from __future__ import annotations

import builtins
import operator
from typing import Callable

import numpy as np

import graphcore as gc
from graphcore.errors import StagingError
from graphcore.ops.logging_ops import FormattedString
from graphcore.ops.py_function_ops import is_pyobject

from . import python_calls, side_effects
from .conditionals import if_exp
from .staging import TruthOnly, as_test, is_tensor, location, python_value, truth


def and_(*thunks: Callable):
    """`a and b and ...` with each operand a thunk: the first false operand, else the
    last, as in Python (a graph cond once an operand is a tensor)."""
    v = as_test(thunks[0]())
    for i, f in enumerate(thunks[1:], 1):
        if is_tensor(v):
            rest, first = thunks[i:], v
            return _select(v, lambda: and_(*rest), lambda: first, "and")
        if not v:
            return v
        v = as_test(f())
    return v


def or_(*thunks: Callable):
    """`a or b or ...` with each operand a thunk: the first true operand, else the last."""
    v = as_test(thunks[0]())
    for i, f in enumerate(thunks[1:], 1):
        if is_tensor(v):
            rest, first = thunks[i:], v
            return _select(v, lambda: first, lambda: or_(*rest), "or")
        if v:
            return v
        v = as_test(f())
    return v


def _select(v, if_true: Callable, if_false: Callable, keyword: str):
    """The operand Python's `and` / `or` gives, chosen by a graph cond on `v`. Operands
    that cannot be one graph value (a bool and a number) give a TruthOnly: their truth
    serves an `if` or `while`, any other use is refused; never a bool standing in for a
    number."""
    try:
        return if_exp(truth(v), if_true, if_false)
    except StagingError as e:
        if "in the if branch but" not in str(e):  # not the operands' dtypes: a refusal of its own
            raise
        message = (f"{location(0)}: `{keyword}` on a tensor gives one of its operands, and these cannot be one "
                   f"graph value ({str(e).split(': ', 1)[-1].split(';')[0]}); compare explicitly (e.g. "
                   f"`(a != 0) {keyword} (b != 0)`) or give both operands one dtype.")
    return TruthOnly(if_exp(truth(v), lambda: _truth_of(if_true), lambda: _truth_of(if_false)), message)


def _truth_of(thunk: Callable):
    value = as_test(thunk())
    return truth(value) if is_tensor(value) else bool(value)


def not_(x):
    x = as_test(x)
    if is_tensor(x):
        return python_value(gc.logical_not(truth(x)))  # `not` gives a Python bool
    return not x


def contains(item, container):
    """Python's `item in container` where a tensor takes part: an element that is the item
    or equals it (a tuple, list, set or dict of Python numbers), any equal element of an
    array (numpy's `in`). A tensor in a set or dict would be looked up by identity: the
    elements are compared instead, as Python's hash-then-equality does for numbers."""
    side_effects.check_advance(container, "`in`")  # (an iterator: `in` advances it)
    if is_pyobject(container) or isinstance(container, FormattedString) or \
            (is_pyobject(item) and isinstance(container, (str, bytes))):  # `"." in str(x)`: Python's `in`, run time
        return python_calls.stage(operator.contains, (container, item), None, gc.bool_, name="in")
    if is_tensor(container):
        return np.any(container == item)  # ndarray.__contains__: (a == item).any()
    if isinstance(container, (list, tuple, set, frozenset, dict)) and \
            (is_tensor(item) or builtins.any(is_tensor(v) for v in container)):
        if builtins.any(v is item for v in container):
            return True
        out = False
        for v in container:
            eq = v == item
            if not is_tensor(eq):
                if eq:
                    return True
                continue
            eq = truth(eq)
            out = eq if out is False else gc.logical_or(out, eq)
        return out
    return item in container


def _not_contains(item, container):
    found = contains(item, container)
    return python_value(gc.logical_not(found)) if is_tensor(found) else not found


def _contains(item, container):
    return python_value(contains(item, container))  # `in` gives a Python bool


_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
        ">=": operator.ge, "is": operator.is_, "is not": operator.is_not, "in": _contains, "not in": _not_contains}


def _and_value(a, b):
    """Python's `a and b` of a tensor `a`: b where a is true, else a, with the Python type
    of the one chosen (np.True_ and True is True: path_types)."""
    from . import path_types  # noqa: PLC0415

    test = truth(a)
    b_t = b if is_tensor(b) else gc.constant(b, dtype=a.dtype) if isinstance(b, (bool, np.bool_)) else b
    if not is_tensor(b_t) or b_t.dtype != a.dtype or b_t.shape.rank != a.shape.rank:
        return gc.logical_and(test, truth(b) if is_tensor(b) else gc.constant(bool(b)))
    out = gc.where(test, b_t, a)
    out.weak = bool(a.weak) and (isinstance(b, bool) or bool(getattr(b, "weak", False)))
    return path_types.chosen(out, a, [(test, b)])


def compare_chain(first: Callable, *ops_and_thunks):
    """`a < b <= c`: each operand evaluated once; stops at the first Python False."""
    left = first()
    result = None
    for i in range(0, len(ops_and_thunks), 2):
        op, thunk = ops_and_thunks[i], ops_and_thunks[i + 1]
        right = thunk()
        r = _OPS[op](left, right)
        if result is None or (not is_tensor(result) and result):
            result = r  # (`True and r` is r)
        elif is_tensor(result):
            result = _and_value(result, r)
        else:
            result = result and r
        if not is_tensor(result) and not result:
            return result
        left = right
    return result
