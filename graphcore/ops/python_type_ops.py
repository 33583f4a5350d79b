"""A number shown as the Python or numpy type a run-time code names.

A graph value has one dtype, but the Python value it stands for may have a type that
depends on the path a run took: `total = 0; for v in x: total += v` is the int 0 when the
loop runs no iteration and an np.float64 otherwise. A caller that carries which one as a
small int tag (autograph does) gets the value back as that type from `as_type` (for the
values a function returns) or from an `AsPythonType` op (for what a Print op formats),
so that `print`, `str`, `repr` and format specs see the very object Python would.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..attr_schema import STR, opt
from ..registry import CHEAP, define_op, scalar_of

# The codes, in order: what each stands for, its name in messages, and the dtype a graph
# holds its values in without loss (a Python int is an int64 in a graph).
TYPES = (bool, int, float, np.bool_, np.int32, np.int64, np.float32, np.float64)
TYPE_NAMES = ("bool", "int", "float", "np.bool_", "np.int32", "np.int64", "np.float32", "np.float64")
TYPE_DTYPES = (dt.bool_, dt.int64, dt.float64, dt.bool_, dt.int32, dt.int64, dt.float32, dt.float64)


class InexactTypeError(OverflowError):
    """A value whose Python type depends on the path is held in a dtype that cannot hold it
    exactly on this run (an int beyond 2**53 in a float64, a Python float in a float32): the
    run fails instead of giving a rounded value. An OverflowError, as a Python int beyond
    int64 in a graph is."""


def as_type(value, code, what: str = "the value"):
    """`value` (a numpy value a graph computed) as the type of `code`. An int held in a
    float must be a whole number (the caller checked that it is the exact one where it was
    computed); anything else raises rather than give a wrong int."""
    T = TYPES[int(code)]
    a = np.asarray(value)
    if a.ndim:  # an array: numpy's, of the dtype the code names
        return a.astype(np.dtype(T) if T not in (bool, int, float) else a.dtype, copy=False)
    v = a.item()
    if T in (int, np.int32, np.int64) and isinstance(v, float):
        if not (math.isfinite(v) and v == int(v)):
            raise InexactTypeError(
                f"{what} is {TYPE_NAMES[int(code)]} in Python on this run, but the graph computed it as the float "
                f"{v!r}, which is not an int: make the type explicit with int() or float()")
        v = int(v)
    return T(v)


def _rule(value, code, *, what=""):
    """Opaque (variant): its value is a Python object (the int 0), not a numpy value of a
    dtype, so it goes to the ops that format it and nowhere else."""
    return dt.variant, value.shape


def _kernel(value, code, *, what=""):
    return as_type(value, code, what)


# stateful: never folded into a constant (a Python int is not a graph constant) nor merged
as_python_type_op = define_op("AsPythonType", own_kind=True, shape=_rule, kernel=_kernel, cost=CHEAP, stateful=True,
                              doc="A value as the Python or numpy type its code input names (TYPES), for "
                                  "formatting: the Python int 0, not 0.0", attrs={"what": opt(STR)})
as_python_type_op.not_differentiable("a formatted value, not a number to differentiate")


def as_python_type(value, code, what: str = "the value", name=None):
    """The AsPythonType op: `value` (a tensor) shown as the type of `code` (an int32 scalar
    tensor) when the graph runs; `what` names it in the error for an inexact int."""
    return as_python_type_op(value, code, what=str(what), name=name or "AsPythonType")


def _int_check_kernel(x):
    int(np.asarray(x).item())  # Python's own ValueError (NaN) / OverflowError (infinity); a big int is fine
    return np.True_


# stateful: kept in program order as an effect by its caller, never folded nor merged
int_check_op = define_op("IntCheck", own_kind=True, shape=scalar_of(dt.bool_), kernel=_int_check_kernel, cost=CHEAP,
                         stateful=True, doc="Raises what Python's int() raises for a float (NaN, an infinity); "
                                            "True otherwise: int(x) run for its errors, its value never read")
int_check_op.not_differentiable("a check, not a number to differentiate")


def int_check(x, name=None):
    """The IntCheck op: fails the run where Python's int(x) raises."""
    return int_check_op(x, name=name or "IntCheck")
