"""Element types of graph tensors, with numpy as the storage type of each."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tensor_list import ListValue


@dataclass(frozen=True)
class DType:
    """One tensor element type. `np_dtype` is None only for `variant` (opaque handles)."""

    name: str
    np_dtype: np.dtype | None

    @property
    def is_floating(self) -> bool:
        return self.np_dtype is not None and np.issubdtype(self.np_dtype, np.floating)

    @property
    def is_integer(self) -> bool:
        return self.np_dtype is not None and np.issubdtype(self.np_dtype, np.integer)

    @property
    def is_bool(self) -> bool:
        return self.name == "bool"

    @property
    def is_numeric(self) -> bool:
        return self.is_floating or self.is_integer

    @property
    def is_differentiable(self) -> bool:
        return self.is_floating

    def __eq__(self, other) -> bool:
        """A DType equals itself, and the numpy dtype it stores as (`t.dtype == np.float32`
        is what numpy code writes about an array's dtype)."""
        if isinstance(other, DType):
            return self.name == other.name
        if other is None or self.np_dtype is None or isinstance(other, (int, float)):
            return False
        try:
            return np.dtype(other) == self.np_dtype
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"gc.{self.name}"

    def __str__(self) -> str:
        return self.name


bool_ = DType("bool", np.dtype(np.bool_))
int32 = DType("int32", np.dtype(np.int32))
int64 = DType("int64", np.dtype(np.int64))
float32 = DType("float32", np.dtype(np.float32))
float64 = DType("float64", np.dtype(np.float64))
variant = DType("variant", None)

ALL = (bool_, int32, int64, float32, float64, variant)
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME["bool_"] = bool_
# A run-time Python object (graphcore/ops/py_function_ops.py): named, so that an in-process
# copy of a graph reads it back, but in no list of the graph's dtypes (no op but a Python call
# makes or takes one).
pyobject = DType("pyobject", None)
_BY_NAME["pyobject"] = pyobject
_BY_NP = {d.np_dtype: d for d in ALL if d.np_dtype is not None}


def as_dtype(value) -> DType:
    """Turn a DType, its name, a numpy dtype or a Python type into a DType."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        try:
            return _BY_NAME[value]
        except KeyError:
            raise TypeError(f"unknown dtype {value!r}; use one of {sorted(_BY_NAME)}") from None
    if value is bool:
        return bool_
    if value is int:
        return int64
    if value is float:
        return float64
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError(f"cannot interpret {value!r} as a dtype") from None
    if npd in _BY_NP:
        return _BY_NP[npd]
    if npd.kind in "iufc":
        raise TypeError(unsupported_numpy_dtype(npd, None))
    raise TypeError(f"numpy dtype {npd} has no graph dtype; cast to one of int32, int64, float32, float64, bool")


def unsupported_numpy_dtype(dtype, subject: str | None = "the value") -> str:
    """Why a numpy dtype without a graph dtype (uint8, int8, int16, float16, complex, ...)
    is refused rather than widened: numpy's arithmetic in it (an int8 that wraps at 127,
    a float16's rounding) would silently differ in the graph. `subject` names the value
    (None: the dtype itself was asked for)."""
    d = np.dtype(dtype)
    what = f"numpy dtype {d} has no graph dtype" if subject is None else \
        f"{subject} is a numpy {d} value, which a graph cannot hold"
    return (f"{what}: graphs hold bool, int32, int64, float32 and float64, and widening it would change what numpy "
            f"computes ({d} arithmetic wraps or rounds differently). Cast it first, e.g. value.astype(np.int64) or "
            "value.astype(np.float64).")


def dtype_of_value(value) -> DType:
    """The graph dtype a concrete Python or numpy value would have as a constant."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return float64
    if isinstance(value, (np.ndarray, np.generic)):
        if value.dtype not in _BY_NP:
            raise TypeError(unsupported_numpy_dtype(value.dtype))
        return as_dtype(value.dtype)
    if isinstance(value, (list, tuple)):
        return as_dtype(np.asarray(value).dtype)
    if isinstance(value, ListValue):
        return variant
    raise TypeError(f"cannot convert {type(value).__name__} {value!r} to a tensor")
