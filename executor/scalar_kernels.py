"""Python operators as kernels on numpy scalars, with numpy's semantics kept.

`a + b` on two numpy scalars costs about a twentieth of `np.add(a, b)` (numpy's scalar
operators skip the ufunc machinery) and gives the same value of the same dtype, with one
difference: on integer overflow the operator warns (or raises, under
`np.errstate(over="raise")`) where the ufunc wraps around silently. So:

- comparisons, logical ops and float arithmetic use the operator whenever both inputs
  are numpy scalars of the op's dtype: no difference at all;
- integer +, - and * use it only when both inputs are small enough that the result
  cannot overflow, and // and % only for a positive divisor (no overflow, no division by
  zero); otherwise, and for anything that is not a numpy scalar of the op's dtype (an
  array, a Python number), the op's own kernel runs.

`scalar_kernel(op)` gives the faster kernel for an op, or None.
"""
from __future__ import annotations

import operator

import numpy as np

from graphcore.registry import registered_ops

# Python's binary operators, by the symbol an op type's scalar form writes (OpDef.expr:
# "({0} + {1})"); which ops are comparisons, logic or arithmetic is the op type's `family`
_OPERATORS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
              "!=": operator.ne, "&": operator.and_, "|": operator.or_, "+": operator.add, "-": operator.sub,
              "*": operator.mul, "/": operator.truediv, "//": operator.floordiv, "%": operator.mod}
_binary_forms: dict = {}  # op type -> (its OpDef, its operator's symbol) or None


def _binary_form(name: str):
    """(OpDef, symbol) of an op type written `{0} symbol {1}` on scalars, else None."""
    try:
        return _binary_forms[name]
    except KeyError:
        pass
    d = registered_ops().get(name)
    expr = d.expr if d is not None else None
    form = None
    if expr is not None and expr.startswith("({0} ") and expr.endswith(" {1})") and expr[5:-5] in _OPERATORS:
        form = (d, expr[5:-5])
    _binary_forms[name] = form
    return form

# graphcore's numeric dtypes
_FLOATS = (np.float32, np.float64)
_INTS = (np.int32, np.int64)


def scalar_kernel(op):
    """A kernel for `op` that runs a Python operator on numpy scalars (see the module
    docstring), falling back to the op's own kernel; None if the op has none such, or if an
    input is known to be an array (of rank 1 or more: the operator would never apply, and
    the test would only cost a call per run)."""
    if op.attrs or not op.inputs or op.op_def.uses_runtime:
        return None
    if any((x.shape.rank or 0) > 0 for x in op.inputs):
        return None
    return scalar_kernel_for(op.type, [x.dtype.np_dtype for x in op.inputs], op.op_def.kernel)


def _rule(name: str, input_dtypes: list):
    """(operator, numpy scalar type, kind, bound) for an op of type `name` on inputs of these
    dtypes, or None: kind "unary" / "exact" (both inputs of the type), "bounded" (and both
    within +-bound), "positive" (and a positive divisor)."""
    t = input_dtypes[0] if input_dtypes else None
    if t is None or any(d != t for d in input_dtypes):
        return None
    T = t.type
    if name == "LogicalNot" and T is np.bool_:
        return operator.invert, T, "unary", None   # ~ on a numpy bool is `not`
    if len(input_dtypes) != 2:
        return None
    form = _binary_form(name)
    if form is None:
        return None
    d, sym = form
    fast = _OPERATORS[sym]
    if d.family == "comparison":
        return fast, T, "exact", None
    if d.family == "logical":
        return (fast, T, "exact", None) if T is np.bool_ else None
    if d.family != "arithmetic":
        return None
    if T in _FLOATS:
        return fast, T, "exact", None
    if T in _INTS:
        bits = np.iinfo(T).bits
        if sym in ("+", "-"):  # |a|, |b| < 2**(bits - 2): |a ± b| < 2**(bits - 1)
            return fast, T, "bounded", 2 ** (bits - 2)
        if sym == "*":         # |a|, |b| < 2**((bits - 1) // 2): |a * b| < 2**(bits - 1)
            return fast, T, "bounded", 2 ** ((bits - 1) // 2)
        if sym in ("//", "%"):
            return fast, T, "positive", None
    return None


def scalar_kernel_for(name: str, input_dtypes: list, fallback):
    """The same for an op of type `name` without attributes whose inputs have these numpy
    dtypes and whose own kernel is `fallback` (a fused op's steps have no Operation)."""
    rule = _rule(name, input_dtypes)
    if rule is None:
        return None
    fast, T, kind, bound = rule
    if kind == "unary":
        return _unary(fast, fallback, T)
    if kind == "exact":
        return _exact(fast, fallback, T)
    if kind == "bounded":
        return _bounded(fast, fallback, T, bound)
    return _positive_divisor(fast, fallback, T)


_SYMBOLS = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=", operator.eq: "==",
            operator.ne: "!=", operator.and_: "&", operator.or_: "|", operator.add: "+", operator.sub: "-",
            operator.mul: "*", operator.truediv: "/", operator.floordiv: "//", operator.mod: "%",
            operator.invert: "~"}


def scalar_source(name: str, input_dtypes: list, args: list[str], fallback: str, type_name: str):
    """The same rule as Python source, for generated code: an expression of the variables
    `args` that applies the operator where scalar_kernel_for's kernel would and calls
    `fallback` (the op's own kernel) otherwise, `type_name` naming the numpy type; returns
    (expression, that type), or None."""
    rule = _rule(name, input_dtypes)
    if rule is None:
        return None
    fast, T, kind, bound = rule
    sym = _SYMBOLS[fast]
    expr = f"{sym}{args[0]}" if kind == "unary" else f"{args[0]} {sym} {args[1]}"
    checks = [f"type({a}) is {type_name}" for a in args]
    if kind == "bounded":
        checks += [f"{-bound} < {a} < {bound}" for a in args]
    elif kind == "positive":
        checks.append(f"{args[1]} > 0")
    return f"({expr}) if {' and '.join(checks)} else {fallback}({', '.join(args)})", T


def _exact(fast, fallback, T):
    def kernel(a, b):
        if type(a) is T and type(b) is T:
            return fast(a, b)
        return fallback(a, b)
    return kernel


def _unary(fast, fallback, T):
    def kernel(a):
        if type(a) is T:
            return fast(a)
        return fallback(a)
    return kernel


def _bounded(fast, fallback, T, bound):
    """Only for |a|, |b| < bound, where the result cannot overflow."""
    low = -bound

    def kernel(a, b):
        if type(a) is T and type(b) is T and low < a < bound and low < b < bound:
            return fast(a, b)
        return fallback(a, b)
    return kernel


def _positive_divisor(fast, fallback, T):
    def kernel(a, b):
        if type(a) is T and type(b) is T and b > 0:
            return fast(a, b)
        return fallback(a, b)
    return kernel
