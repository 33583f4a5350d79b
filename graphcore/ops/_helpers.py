"""Pure helpers shared by the op modules (they build no ops): which values are weakly
typed Python numbers and the dtype two numeric tensors meet at, axis and shape rules."""
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


_WIDTH = {"int32": 32, "int64": 64, "float32": 32, "float64": 64}


def promote(a: dt.DType, b: dt.DType) -> dt.DType | None:
    """The dtype two strongly typed numeric tensors meet at, numpy's `result_type`: the
    wider of two floats or two ints wins, and a float meeting an int gives float64 (numpy
    does not trust float32 with an int's values: float32 * int64 is float64; JAX would say
    float32, and a program written against numpy would then compute something else).
    Bools and opaque values do not mix (None)."""
    if not (a.is_numeric and b.is_numeric):
        return None
    if a.is_floating != b.is_floating:
        return dt.float64
    return a if _WIDTH[a.name] >= _WIDTH[b.name] else b


def join_kinds(da: dt.DType, weak_a: bool, db: dt.DType, weak_b: bool, strong_promote: bool = True):
    """The dtype a value of dtype `da` and one of `db` meet at (the one rule of weak typing,
    for an op's operands and for a variable's values across branches and iterations). A
    weak value takes the other, strong value's dtype (a float meeting an integer gives
    float64), as numpy 2 and JAX do for Python numbers; two weak values promote; two
    strong ones promote for an op (`promote`) but not as one variable (strong_promote
    False: None). For an op, a bool meeting a number counts as that number's type, as in
    numpy (`c += x > 0`, `x * (x > 0)`); as one variable it does not (Python would keep a
    bool in one branch and a number in the other). Opaque values mix with nothing (None)."""
    if da == db:
        return da
    if strong_promote and (da.is_bool and db.is_numeric or db.is_bool and da.is_numeric):
        return db if da.is_bool else da
    if weak_a != weak_b and da.is_numeric and db.is_numeric:
        weak, strong = (da, db) if weak_a else (db, da)
        return dt.float64 if weak.is_floating and strong.is_integer else strong
    if weak_a and weak_b or strong_promote:
        return promote(da, db)
    return None


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
