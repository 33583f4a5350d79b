"""numpy functions that numpy cannot dispatch to a graph tensor, in converted code: the
scalar types as constructors (`np.float32(x)`, `np.int64(k)`), `np.arange(n)`,
`np.copy` (whose result is marked a fresh array), `np.array` / `np.asarray` of a list a
graph loop appended to (its elements stacked), and `np.zeros` / `np.ones` / `np.full` of a
shape a tensor decides. On Python and numpy values each is
numpy's own."""
from __future__ import annotations

import builtins

import numpy as np

import graphcore as gc
from graphcore.numpy_api import array_of, holds_tensor
from graphcore.ops.python_math_ops import python_to_numpy_op

from . import exceptions, path_types
from .staged_lists import StagedList
from .staging import is_tensor, mark_copy, to_tensor

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
        return path_types.anchor(out)  # this type on every path, whatever x's was
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


def _dims_in_graph(shape) -> bool:
    return is_tensor(shape) or (isinstance(shape, (tuple, list)) and builtins.any(is_tensor(d) for d in shape))


def _filled_overload(numpy_fn, value):
    """np.zeros / np.ones (value given) or np.full (value the second argument) with a
    shape a tensor decides: a graph Fill, numpy's dtype (float64 unless given; np.full
    takes the fill value's)."""
    def overload(shape, *args, **kwargs):
        names = ("dtype", "order") if value is not None else ("fill_value", "dtype", "order")
        given = dict(zip(names, args), **kwargs)
        fill_value = value if value is not None else given.get("fill_value")
        if (not (_dims_in_graph(shape) or is_tensor(fill_value)) or builtins.len(args) > builtins.len(names)
                or set(given) - set(names) or given.get("order", "C") != "C"):
            return numpy_fn(shape, *args, **kwargs)  # numpy's, or numpy's own error
        dtype = given.get("dtype")
        if dtype is None:
            dtype = gc.float64 if value is not None else (fill_value.dtype if is_tensor(fill_value) else
                                                          gc.dtypes.dtype_of_value(np.asarray(fill_value)))
        dims = [to_tensor(d, gc.int64) for d in (shape if isinstance(shape, (tuple, list)) else (shape,))]
        v = to_tensor(fill_value, gc.as_dtype(dtype))
        out = gc.fill(gc.stack(dims), v if v.dtype == gc.as_dtype(dtype) else gc.cast(v, gc.as_dtype(dtype)))
        out.weak = False
        return mark_copy(out)
    overload.__name__ = f"{numpy_fn.__name__}_"
    overload.__doc__ = f"np.{numpy_fn.__name__} with a shape decided by a graph tensor."
    return overload


def _array_overload(numpy_fn):
    def overload(*args, **kwargs):
        if args and holds_tensor(args[0]) and builtins.len(args) == 1 and not set(kwargs) - {"dtype"}:
            return array_of(args[0], f"np.{numpy_fn.__name__}", kwargs.get("dtype"))  # [x, 0.5]: stacked
        if not args or not isinstance(args[0], StagedList) or builtins.len(args) > 1 or set(kwargs) - {"dtype"}:
            return numpy_fn(*args, **kwargs)
        return _list_array(args[0], kwargs.get("dtype"))
    overload.__name__ = f"{numpy_fn.__name__}_"
    overload.__doc__ = f"np.{numpy_fn.__name__} of a list a graph loop appended to: its elements stacked."
    return overload


def _list_array(staged: StagedList, dtype=None):
    """np.array(acc): the elements stacked, as numpy stacks a list of equal-shaped arrays.
    An empty list is numpy's float64 array of shape (0,): the same as the stack only for
    float64 scalars, so for other elements an empty list fails the run, saying why."""
    out = staged.stacked()
    if staged.dtype != gc.float64 or staged.shape is None or builtins.len(staged.shape) != 0:
        element = f"{staged.dtype}{list(staged.shape) if staged.shape is not None else ''}"
        exceptions.check(gc.greater(staged.length(), gc.constant(np.int64(0))), ValueError(
            f"np.array of an empty list is numpy's float64 array of shape (0,), not an empty stack of this list's "
            f"{element} elements; test len(acc) first, or build the array with np.stack when the list is not empty"))
    return out if dtype is None else gc.cast(out, gc.as_dtype(dtype))


def _of_list_overload(numpy_fn):
    """A numpy function of an array given as a list or tuple holding graph tensors
    (`np.mean([x, y])`): numpy would make an array of it first, and so does the graph."""
    def overload(*args, **kwargs):
        if args and holds_tensor(args[0]):
            return numpy_fn(array_of(args[0], f"np.{numpy_fn.__name__}"), *args[1:], **kwargs)
        return numpy_fn(*args, **kwargs)
    overload.__name__ = f"{numpy_fn.__name__}_"
    overload.__doc__ = f"np.{numpy_fn.__name__} of a list holding graph tensors: of the array numpy would make."
    return overload


OVERLOADS = {T: _scalar_type_overload(T) for T in _SCALAR_TYPES}
OVERLOADS.update({f: _of_list_overload(f) for f in (np.sum, np.mean, np.max, np.min, np.amax, np.amin, np.prod,
                                                     np.std, np.var, np.any, np.all, np.argmax, np.argmin,
                                                     np.count_nonzero, np.linalg.norm)})
OVERLOADS.update({np.arange: arange_, np.copy: copy_, np.array: _array_overload(np.array),
                  np.asarray: _array_overload(np.asarray), np.zeros: _filled_overload(np.zeros, 0),
                  np.ones: _filled_overload(np.ones, 1), np.full: _filled_overload(np.full, None)})
