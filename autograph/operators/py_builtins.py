"""Builtins with tensor overloads: `len`, `range`, `abs`, `min`, `max`, `int`, `float`,
`bool`, `enumerate`, `zip`, `reversed`, `isinstance`, `print`, `str`. On Python values each
is the builtin."""
from __future__ import annotations

import builtins

import numpy as np

import graphcore as gc
from graphcore.ops.array_ops import int_of_float

from . import effects
from .iterables import enumerate_, range_, reversed_, zip_
from .staged_lists import StagedList
from .staging import is_tensor
from .strings import str_


def _python_number(t):
    """A tensor standing for what Python gives as a Python number: weakly typed."""
    t.weak = True
    return t


def len_(x):
    if isinstance(x, StagedList):
        return _python_number(x.length())
    if is_tensor(x):
        if x.dtype == gc.variant:
            return _python_number(gc.tensor_list_length(x))
        dims = x.shape.dims
        if dims and dims[0] is not None:
            return dims[0]
        return _python_number(gc.shape(x)[0])
    return builtins.len(x)


def abs_(x):
    return gc.abs(x) if is_tensor(x) else builtins.abs(x)


def _minmax(args, kwargs, pair, reduce, py):
    if builtins.len(args) == 1 and is_tensor(args[0]):
        return reduce(args[0])
    if builtins.any(is_tensor(a) for a in args):
        out = args[0]
        for a in args[1:]:
            out = pair(out, a)
        return out
    return py(*args, **kwargs)


def min_(*args, **kwargs):
    return _minmax(args, kwargs, gc.minimum, gc.reduce_min, builtins.min)


def max_(*args, **kwargs):
    return _minmax(args, kwargs, gc.maximum, gc.reduce_max, builtins.max)


def _scalar(x, what: str):
    """`int(t)` / `float(t)` need one element, as Python's do on numpy arrays."""
    dims = x.shape.dims
    if dims is not None and None not in dims and int(np.prod(dims, dtype=np.int64)) != 1:
        raise TypeError(f"{what}() of a tensor of shape {list(dims)}: only a tensor of one element converts to a "
                        f"Python scalar; index it first, or use graphcore.cast for every element.")
    return x


def int_(x=0, *args):
    if not is_tensor(x):
        return builtins.int(x, *args)
    x = _scalar(x, "int")
    return _python_number(int_of_float(x) if x.dtype.is_floating else gc.cast(x, gc.int64))


def float_(x=0.0):
    return _python_number(gc.cast(_scalar(x, "float"), gc.float64)) if is_tensor(x) else builtins.float(x)


def bool_(x=False):
    if is_tensor(x):
        return x if x.dtype == gc.bool_ else gc.not_equal(x, 0)
    return builtins.bool(x)


def isinstance_(obj, classinfo):
    return builtins.isinstance(obj, classinfo)


def print_(*values, sep=" ", end="\n", file=None, flush=False):
    """While tracing, a Print op: it prints when the graph runs, on every call, in
    program order (a print of Python values only, run at trace time, would print once,
    and in both branches of an `if` on a tensor). Python's print otherwise."""
    g = gc.get_default_graph()
    if g is None or file is not None:
        return builtins.print(*values, sep=sep, end=end, file=file, flush=flush)
    with g.control_dependencies(effects.dependencies()):
        op = gc.print(*values, sep=sep if sep is not None else " ", end=end if end is not None else "\n")
    effects.record(op)
    return None


OVERLOADS = {
    builtins.len: len_, builtins.range: range_, builtins.abs: abs_, builtins.min: min_, builtins.max: max_,
    builtins.int: int_, builtins.float: float_, builtins.bool: bool_, builtins.enumerate: enumerate_,
    builtins.zip: zip_, builtins.reversed: reversed_, builtins.isinstance: isinstance_, builtins.print: print_,
    builtins.str: str_,
}
