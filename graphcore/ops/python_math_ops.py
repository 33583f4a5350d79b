"""`math.sqrt(x)`, `math.floor(x)`, `round(x, 2)` and friends on a scalar tensor, computed
by Python's own functions when the graph runs.

numpy's versions differ from the `math` module's exactly where a program would notice:
`math.sqrt(-1.0)` and `math.log(0.0)` raise ValueError where numpy gives nan / -inf with a
warning, `math.exp(1000.0)` raises OverflowError, `math.floor` returns a Python int (and
raises for nan and inf), and `round(2.675, 2)` of a Python float rounds its exact decimal
value (2.67) where `np.round` scales first (2.68). A `PythonMath` op calls the very function
on the element, so the graph gives Python's value or Python's exception at the user's line.
Its result is a Python number (weakly typed); its gradient is the usual derivative.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import dtypes as dt
from ..attr_schema import DTYPE, one_of
from ..errors import GraphError
from ..registry import CHEAP, define_op, needs_grad
from ..shapes import TensorShape
from .array_ops import cast_op, zeros_like_op
from .math_ops import (add_op, cos_op, exp_op, log_op, mul_op, neg_op, realdiv_op, sign_op, sin_op, sqrt_op,
                       sub_op)

# name -> (function, number of arguments, kind of result: "float", "int" or "bool")
FUNCTIONS = {
    **{name: (getattr(math, name), 1, "float") for name in (
        "sqrt", "exp", "expm1", "log1p", "log10", "log2", "sin", "cos", "tan", "asin", "acos", "atan",
        "sinh", "cosh", "tanh", "fabs", "erf", "erfc")},
    "log": (math.log, 1, "float"),
    "log_base": (math.log, 2, "float"),
    "pow": (math.pow, 2, "float"),
    "atan2": (math.atan2, 2, "float"),
    "hypot": (math.hypot, 2, "float"),
    "copysign": (math.copysign, 2, "float"),
    "fmod": (math.fmod, 2, "float"),
    "floor": (math.floor, 1, "int"),
    "ceil": (math.ceil, 1, "int"),
    "trunc": (math.trunc, 1, "int"),
    "round": (builtins.round, 1, "int"),            # round(x): an int, ties to even
    "round_digits": (builtins.round, 2, "float"),   # round(x, n) of a Python float: its decimal value
    "round_int_digits": (builtins.round, 2, "int"),  # round(k, n) of a Python int
    "isnan": (math.isnan, 1, "bool"),
    "isinf": (math.isinf, 1, "bool"),
    "isfinite": (math.isfinite, 1, "bool"),
}
_DTYPES = {"float": dt.float64, "int": dt.int64, "bool": dt.bool_}


def _rule(*xs, fn):
    if fn not in FUNCTIONS:
        raise GraphError(f"PythonMath: no function {fn!r}")
    _, arity, kind = FUNCTIONS[fn]
    if len(xs) != arity:
        raise GraphError(f"PythonMath {fn}: takes {arity} inputs, got {len(xs)}")
    for x in xs:
        if not (x.dtype.is_numeric or x.dtype.is_bool):
            raise GraphError(f"PythonMath {fn}: needs numbers, got {x.dtype}")
        if x.shape.rank not in (0, None):
            raise GraphError(f"math.{fn}() takes one number, got a tensor of shape {x.shape}: use the numpy "
                             f"function (np.{fn}) for arrays")
    return _DTYPES[kind], TensorShape(())


def _kernel(*xs, fn):
    f, _, kind = FUNCTIONS[fn]
    args = []
    for x in xs:
        a = np.asarray(x)
        if a.size != 1:
            raise TypeError(f"math.{fn}() takes one number, got an array of shape {a.shape}")
        args.append(a.item())
    out = f(*args)
    if kind == "int":
        if not -2 ** 63 <= out < 2 ** 63:
            raise OverflowError(f"{fn}() is {out} in Python, beyond int64: a Python int in a graph is an int64, "
                                "which cannot hold it; keep the value a float")
        return np.int64(out)
    return np.float64(out) if kind == "float" else np.bool_(out)


python_math_op = define_op("PythonMath", own_kind=True, shape=_rule, kernel=_kernel, cost=CHEAP,
                           doc="A function of the math module (or round) on scalars, computed by Python: "
                               "Python's value, Python's exceptions", attrs={"fn": one_of(*FUNCTIONS)})


def _one_input_grad(fn, x, y, dy):
    """d fn(x) / dx * dy, for x and y float64."""
    one = lambda: add_op(zeros_like_op(x), np.float64(1.0))  # noqa: E731
    if fn == "sqrt":
        return realdiv_op(mul_op(dy, np.float64(0.5)), y)
    if fn == "exp":
        return mul_op(dy, y)
    if fn == "expm1":
        return mul_op(dy, add_op(y, np.float64(1.0)))
    if fn == "log":
        return realdiv_op(dy, x)
    if fn == "log1p":
        return realdiv_op(dy, add_op(x, np.float64(1.0)))
    if fn in ("log10", "log2"):
        return realdiv_op(dy, mul_op(x, np.float64(math.log(10.0 if fn == "log10" else 2.0))))
    if fn == "sin":
        return mul_op(dy, cos_op(x))
    if fn == "cos":
        return neg_op(mul_op(dy, sin_op(x)))
    if fn in ("tan", "tanh"):
        yy = mul_op(y, y)
        return mul_op(dy, add_op(one(), yy) if fn == "tan" else sub_op(one(), yy))
    if fn == "atan":
        return realdiv_op(dy, add_op(one(), mul_op(x, x)))
    if fn in ("asin", "acos"):
        g = realdiv_op(dy, sqrt_op(sub_op(one(), mul_op(x, x))))
        return g if fn == "asin" else neg_op(g)
    if fn in ("sinh", "cosh"):  # sinh' = cosh, cosh' = sinh
        e, f = exp_op(x), exp_op(neg_op(x))
        half = mul_op(add_op(e, f) if fn == "sinh" else sub_op(e, f), np.float64(0.5))
        return mul_op(dy, half)
    if fn == "fabs":
        return mul_op(dy, sign_op(x))
    if fn == "erf" or fn == "erfc":
        g = mul_op(dy, mul_op(exp_op(neg_op(mul_op(x, x))), np.float64(2.0 / math.sqrt(math.pi))))
        return g if fn == "erf" else neg_op(g)
    return None


def _two_input_grads(fn, x, z, y, dy):
    """(d/dx, d/dz) of fn(x, z) times dy, all float64."""
    if fn == "pow":  # x ** z: z x^(z-1), x^z log x
        return (mul_op(dy, mul_op(z, realdiv_op(y, x))), mul_op(dy, mul_op(y, log_op(x))))
    if fn == "hypot":
        return realdiv_op(mul_op(dy, x), y), realdiv_op(mul_op(dy, z), y)
    if fn == "atan2":  # atan2(x, z) = atan(x / z): d/dx z / (x^2 + z^2), d/dz -x / (x^2 + z^2)
        r = add_op(mul_op(x, x), mul_op(z, z))
        return realdiv_op(mul_op(dy, z), r), neg_op(realdiv_op(mul_op(dy, x), r))
    if fn == "log_base":  # log(x) / log(z)
        lz = log_op(z)
        return realdiv_op(dy, mul_op(x, lz)), neg_op(realdiv_op(mul_op(dy, y), mul_op(z, lz)))
    return None


@python_math_op.gradient
def _python_math_grad(op, dy):
    fn = op.attrs["fn"]
    xs = op.inputs
    wanted = [x.dtype.is_floating and needs_grad(op, i) for i, x in enumerate(xs)]
    if FUNCTIONS[fn][2] != "float" or fn == "round_digits" or not any(wanted):
        return [None] * len(xs)  # integer, bool and rounded results are piecewise constant
    as64 = [x if x.dtype == dt.float64 else cast_op(x, dtype=dt.float64) for x in xs]
    y = op.outputs[0]
    if len(xs) == 1:
        grads = [_one_input_grad(fn, as64[0], y, dy)]
    else:
        grads = list(_two_input_grads(fn, as64[0], as64[1], y, dy) or (None, None))
    out = []
    for x, g, want in zip(xs, grads, wanted):
        if want and g is None:
            raise GraphError(f"math.{fn}() has no gradient rule here; write it with numpy functions if you need "
                             "its gradient")
        out.append(None if not want else g if x.dtype == dt.float64 else cast_op(g, dtype=x.dtype))
    return out


def python_math(fn: str, *xs, name=None):
    """`fn(*xs)` of the math module (see FUNCTIONS) on scalar tensors, as a Python number."""
    out = python_math_op(*xs, fn=fn, name=name or f"math_{fn}")
    out.weak = True
    return out


# -- a Python number made a numpy scalar: np.float32(x), np.int32(k) of a Python number --------

def _as_scalar_rule(x, *, dtype):
    if x.shape.rank not in (0, None):
        raise GraphError(f"PythonToNumpy takes one number, got a tensor of shape {x.shape}")
    return dt.as_dtype(dtype), TensorShape(())


def _as_scalar_kernel(x, *, dtype):
    """numpy's own constructor on the Python number: its errors (np.int32(2**40) raises
    OverflowError, np.int64(nan) ValueError) and its rounding."""
    return dt.as_dtype(dtype).np_dtype.type(np.asarray(x).item())


python_to_numpy_op = define_op("PythonToNumpy", own_kind=True, shape=_as_scalar_rule, kernel=_as_scalar_kernel,
                               cost=CHEAP,
                               doc="np.float32(x) / np.int64(k) of a Python number, as numpy computes it",
                               attrs={"dtype": DTYPE})


@python_to_numpy_op.gradient
def _python_to_numpy_grad(op, dy):
    x = op.inputs[0]
    if not (x.dtype.is_floating and op.outputs[0].dtype.is_floating):
        return [None]
    return [dy if dy.dtype == x.dtype else cast_op(dy, dtype=x.dtype)]
