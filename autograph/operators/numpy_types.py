"""numpy functions that numpy cannot dispatch to a graph tensor, in converted code: the
scalar types as constructors (`np.float32(x)`, `np.int64(k)`), `np.arange(n)`, and
`np.copy` (whose result is marked a fresh array). On Python and numpy values each is
numpy's own."""
from __future__ import annotations

import builtins

import numpy as np

import graphcore as gc
from graphcore.ops.python_math_ops import python_to_numpy_op

from .staging import is_tensor, mark_copy

_SCALAR_TYPES = (np.float64, np.float32, np.int64, np.int32, np.bool_)


def _scalar_type_overload(T):
    dtype = gc.as_dtype(T)

    def overload(*args, **kwargs):
        if builtins.len(args) != 1 or kwargs or not is_tensor(args[0]):
            return T(*args, **kwargs)
        x = args[0]
        if x.weak and x.shape.rank == 0:  # a Python number: numpy's constructor on it, with its errors
            out = python_to_numpy_op(x, dtype=dtype)
        else:  # a numpy value: a cast (numpy's astype: wrap-around, nan to int with a warning)
            out = gc.cast(x, dtype) if x.dtype != dtype else gc.identity(x)
        out.weak = False
        return out
    overload.__name__ = f"{T.__name__}_"
    overload.__doc__ = f"np.{T.__name__}(x) of a graph tensor, as numpy converts it."
    return overload


def arange_(*args, **kwargs):
    """`np.arange` with graph tensors among its (integer) bounds: a graph range, int64 as
    numpy makes it."""
    if not builtins.any(is_tensor(a) for a in args) or kwargs:
        return np.arange(*args, **kwargs)
    if not builtins.all(isinstance(a, (builtins.int, np.integer)) or is_tensor(a) and a.dtype.is_integer
                        for a in args) or builtins.len(args) > 3:
        raise TypeError("np.arange with a graph tensor takes integer start, stop and step (its length is decided "
                        "when the graph runs); for floats, scale an integer range: np.arange(n) * step + start")
    start, stop, step = (0, args[0], 1) if builtins.len(args) == 1 else (*args, 1)[:3]
    return gc.range(start, stop, step, dtype=gc.int64)


def copy_(a, *args, **kwargs):
    """np.copy of a graph tensor: a fresh array (see staging.mark_copy)."""
    return mark_copy(np.copy(a, *args, **kwargs)) if is_tensor(a) else np.copy(a, *args, **kwargs)


OVERLOADS = {T: _scalar_type_overload(T) for T in _SCALAR_TYPES}
OVERLOADS.update({np.arange: arange_, np.copy: copy_})
