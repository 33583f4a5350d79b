"""`math.*`, `round` and `divmod` in converted code: on Python values the functions
themselves; on a graph tensor an op that gives what Python gives when the graph runs
(graphcore.ops.python_math_ops runs the very function on the value, so its errors and its
rounding are Python's).

An op that may raise (`math.sqrt(-1.0)`, `math.floor(nan)`, `int` of a numpy nan) is an
effect (operators/effects.py): it runs in program order on every run, also when nothing
uses its value, as Python's call raises whether or not its result is read (the graph ran
only what the returned values needed: `z = math.floor(x)` never read gave a value for nan).
Functions that give a value for every number stay plain ops."""
from __future__ import annotations

import builtins
import math

import graphcore as gc
from graphcore.ops.array_ops import int_of_float
from graphcore.ops.python_math_ops import FUNCTIONS, python_math

from . import effects
from .staging import is_tensor, python_value

# functions with a value for every number: nothing to raise, so nothing to keep
_TOTAL = frozenset({"fabs", "tanh", "atan", "atan2", "isnan", "isinf", "isfinite", "copysign", "erf", "erfc",
                    "round_digits", "round_int_digits"})


def kept(build, *inputs):
    """Build an op that may fail the run as an effect: after the effects before it, and run
    even when its value is never read."""
    g = effects.graph_for(next(a for a in inputs if is_tensor(a)))
    with g.control_dependencies(effects.dependencies()):
        out = build()
    effects.record(out.op)
    return out


def _python_math(name: str, *args):
    if name in _TOTAL:
        return python_math(name, *args)
    return kept(lambda: python_math(name, *args), *args)


def _math_overload(name: str, fn):
    arity = FUNCTIONS[name][1]

    def overload(*args, **kwargs):
        if kwargs or not builtins.any(is_tensor(a) for a in args):
            return fn(*args, **kwargs)
        if name == "log" and builtins.len(args) == 2:
            return _python_math("log_base", *args)
        if builtins.len(args) != arity:
            return fn(*args)  # Python's own TypeError for a wrong number of arguments
        return _python_math(name, *args)
    overload.__name__ = f"{name}_"
    overload.__doc__ = f"math.{name} on a scalar tensor: Python's value (or exception) when the graph runs."
    return overload


def round_(number, ndigits=None):
    """Python's `round`: `round(x)` is an int (ties to even); `round(x, n)` keeps the type,
    numpy's rounding for numpy values and the exact decimal rounding for Python floats."""
    if not is_tensor(number):
        if is_tensor(ndigits):
            raise TypeError("round(x, n) with n a graph tensor: the number of digits must be a Python int")
        return builtins.round(number, ndigits)
    if ndigits is not None and not isinstance(ndigits, int):
        raise TypeError("round(x, n) with n a graph tensor: the number of digits must be a Python int")
    x = number
    if x.dtype.is_bool:
        x = gc.cast(x, gc.int64)
    if ndigits is None:
        if x.dtype.is_floating:
            return python_value(_python_math("round", x) if x.weak else kept(lambda: int_of_float(gc.round(x)), x))
        return python_value(gc.cast(x, gc.int64))
    if x.weak:  # a Python number: Python's own rounding of its exact value
        return python_math("round_digits" if x.dtype.is_floating else "round_int_digits", x,
                           gc.constant(ndigits, dtype=gc.int64))
    return gc.round(x, decimals=ndigits)  # numpy's own __round__ for numpy values


def divmod_(a, b):
    """`divmod(a, b)` is `(a // b, a % b)` (numpy's and Python's agree on both)."""
    if not (is_tensor(a) or is_tensor(b)):
        return builtins.divmod(a, b)
    return a // b, a % b


OVERLOADS = {getattr(math, name): _math_overload(name, getattr(math, name))
             for name, (_, _, _) in FUNCTIONS.items() if hasattr(math, name)}
OVERLOADS.update({builtins.round: round_, builtins.divmod: divmod_})
