"""Conversions shared by the op modules: weak typing of Python numbers, axis rules."""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import GraphError
from ..graph import Tensor, get_default_graph, graph_of
from ..shapes import TensorShape


def is_python_number(x) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


def is_weak(x) -> bool:
    """Weakly typed: a Python number (not a bool), or a tensor computed from them only
    (`Tensor.weak`). A weak value takes the dtype of the strongly typed value it meets."""
    if isinstance(x, Tensor):
        return x.weak
    return isinstance(x, (int, float)) and not isinstance(x, (bool, np.generic))


def in_graph(*values) -> bool:
    return graph_of(values) is not None or get_default_graph() is not None


def weak_binary(op_name: str, x, y):
    """Make two operands of a binary op agree on a dtype the way numpy 2 does for Python
    numbers (they are weak: they take the tensor's dtype; a Python float next to an
    integer tensor promotes it to float64; a weak tensor does the same), promote two
    strongly typed numeric tensors (`promote`), and refuse bools and opaque values with
    a message that says how to fix it. Returns (x, y) ready to build."""
    from .array_ops import cast, constant  # noqa: PLC0415

    g = graph_of((x, y))
    if g is not None and g is not get_default_graph():
        with g.as_default():  # a tensor used after its graph's `with` block: build in its graph
            return weak_binary(op_name, x, y)
    tx, ty = isinstance(x, Tensor), isinstance(y, Tensor)
    if not tx and not ty:
        if not in_graph():
            return x, y
        x, tx = constant(x), True
    if tx and not ty:
        if x.dtype.is_integer and isinstance(y, float):
            x = cast(x, dt.float64)
        y = _weak_to(y, x.dtype)
    elif ty and not tx:
        if y.dtype.is_integer and isinstance(x, float):
            y = cast(y, dt.float64)
        x = _weak_to(x, y.dtype)
    if x.dtype != y.dtype and x.weak != y.weak and x.dtype.is_numeric and y.dtype.is_numeric:
        weak, strong = (x, y) if x.weak else (y, x)
        to = dt.float64 if weak.dtype.is_floating and strong.dtype.is_integer else strong.dtype
        x, y = (x if x.dtype == to else cast(x, to)), (y if y.dtype == to else cast(y, to))
    if x.dtype != y.dtype:
        common = promote(x.dtype, y.dtype)
        if common is None:
            raise GraphError(
                f"{op_name}: the operands have dtypes {x.dtype} ({x.name}) and {y.dtype} ({y.name}), which do "
                f"not mix; convert one with graphcore.cast so they match")
        x, y = cast(x, common), cast(y, common)
    return x, y


_WIDTH = {"int32": 32, "int64": 64, "float32": 32, "float64": 64}


def promote(a: dt.DType, b: dt.DType) -> dt.DType | None:
    """The dtype two numeric tensors meet at, as numpy and JAX agree on it: a float wins
    over an int (`x * k` with x float64 and k an int64 loop counter is float64), and the
    wider of two floats or two ints wins. Bools and opaque values do not mix (None)."""
    if not (a.is_numeric and b.is_numeric):
        return None
    if a.is_floating != b.is_floating:
        return a if a.is_floating else b
    return a if _WIDTH[a.name] >= _WIDTH[b.name] else b


def _weak_to(value, like: dt.DType):
    """A Python number next to a tensor of dtype `like` becomes a constant of that dtype;
    numpy values keep their own dtype (they are strongly typed, as in numpy 2)."""
    from .array_ops import constant  # noqa: PLC0415

    if is_python_number(value) and (like.is_numeric or isinstance(value, bool)):
        return constant(value, dtype=like)
    return constant(value)


def normalize_axis(axis, rank: int | None, op_name: str):
    """Axis attr -> tuple of non-negative ints, or None for all axes."""
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if rank is None:
        return tuple(int(a) for a in axes)
    out = []
    for a in axes:
        a = int(a)
        if not -rank <= a < rank:
            raise GraphError(f"{op_name}: axis {a} is out of range for a tensor of rank {rank}")
        out.append(a % rank)
    return tuple(out)


def reduced_shape(shape: TensorShape, axes, keepdims: bool) -> TensorShape:
    if shape.dims is None and axes is None and not keepdims:
        return TensorShape(())  # a full reduction is a scalar whatever the rank
    if shape.dims is None:
        return TensorShape(None)
    if axes is None:
        axes = tuple(range(len(shape.dims)))
    axes = {a % len(shape.dims) if shape.dims else a for a in axes}
    if keepdims:
        return TensorShape(1 if i in axes else d for i, d in enumerate(shape.dims))
    return TensorShape(d for i, d in enumerate(shape.dims) if i not in axes)
