"""Op attribute values in a graph file, both ways: JSON cannot tell a tuple from a list,
a dtype from a string or a numpy scalar from a number, so those travel as tagged
objects with one key: {"ndarray": {...}}, {"scalar": {...}}, {"tuple": [...]},
{"dtype": ...}, {"shape": ...}, {"float": "nan"}, {"dict": {...}}, {"tensor_list": [...]}.

Reading checks every value (type, range, nesting depth) and raises GraphFileError
naming where it is, e.g. `ops[3].attrs.value.ndarray.data[2]`.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..errors import GraphError, GraphFileError
from ..shapes import TensorShape
from ..tensor_list import EMPTY, ListValue

MAX_DEPTH = 32          # lists, tuples and dicts inside one attribute value
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1

# the numpy dtypes an ndarray or scalar attribute may have, by kind
NP_KINDS = {"bool": "b", "int8": "i", "int16": "i", "int32": "i", "int64": "i", "uint8": "u", "uint16": "u",
            "uint32": "u", "uint64": "u", "float16": "f", "float32": "f", "float64": "f"}


def json_type(v) -> str:
    """How an error message names the JSON type of `v`."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true/false"
    return {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number"}.get(
        type(v), type(v).__name__)


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def int_text(v: int) -> str:
    """An integer for an error message, however many digits it has."""
    s = str(v)
    return s if len(s) <= 24 else f"{s[:8]}... ({len(s)} digits)"


# -- writing ------------------------------------------------------------------------------

def _encode_float(x: float):
    if math.isfinite(x):
        return x
    return {"float": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}


def encode_attr(v, where: str):
    """A Python/numpy attribute value as JSON data with its type kept."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, dt.DType):
        return {"dtype": v.name}
    if isinstance(v, TensorShape):
        return {"shape": None if v.dims is None else list(v.dims)}
    if isinstance(v, np.ndarray):
        if v.dtype.kind not in "biuf":
            raise GraphError(f"{where}: a numpy array of dtype {v.dtype} cannot be saved; use a numeric or "
                             "bool array")
        flat = v.ravel().tolist()
        if v.dtype.kind == "f":
            flat = [_encode_float(x) for x in flat]
        return {"ndarray": {"dtype": str(v.dtype), "shape": list(v.shape), "data": flat}}
    if isinstance(v, np.generic):
        if v.dtype.kind not in "biuf":
            raise GraphError(f"{where}: a numpy value of dtype {v.dtype} cannot be saved")
        item = v.item()
        return {"scalar": {"dtype": str(v.dtype), "value": _encode_float(item) if isinstance(item, float) else item}}
    if is_int(v):
        return v
    if isinstance(v, float):
        return _encode_float(v)
    if isinstance(v, tuple):
        return {"tuple": [encode_attr(x, f"{where}[{i}]") for i, x in enumerate(v)]}
    if isinstance(v, list):
        return [encode_attr(x, f"{where}[{i}]") for i, x in enumerate(v)]
    if isinstance(v, dict):
        if not all(isinstance(k, str) for k in v):
            raise GraphError(f"{where}: only dicts with str keys can be saved")
        return {"dict": {k: encode_attr(x, f"{where}.{k}") for k, x in v.items()}}
    if isinstance(v, ListValue):
        return {"tensor_list": [encode_attr(x, f"{where}[{i}]") for i, x in enumerate(v.items())]}
    raise GraphError(f"{where}: a value of type {type(v).__name__} cannot be saved in a graph file; attrs must "
                     "be numbers, strings, bools, None, numpy arrays, dtypes, shapes, or tuples/lists of these")


# -- reading ------------------------------------------------------------------------------

def decode_dtype(name, where: str) -> dt.DType:
    if not isinstance(name, str):
        raise GraphFileError(f"{where}: expected a dtype name, got {json_type(name)}")
    try:
        return dt.as_dtype(name)
    except TypeError:
        raise GraphFileError(f"{where}: unknown dtype {name!r}; use one of bool, int32, int64, float32, float64, "
                             "variant") from None


def decode_shape(v, where: str) -> TensorShape:
    """null (unknown rank) or a list of dimensions, each null or an int64 >= 0."""
    if v is None:
        return TensorShape(None)
    if not isinstance(v, list) or not all(d is None or (is_int(d) and 0 <= d <= INT64_MAX) for d in v):
        raise GraphFileError(f"{where}: a shape is null or a list of nulls and integers from 0 to 2**63-1")
    return TensorShape(v)


def _decode_float(v, where: str) -> float:
    if isinstance(v, dict) and set(v) == {"float"} and v["float"] in ("nan", "inf", "-inf"):
        return float(v["float"])
    if isinstance(v, float) or (is_int(v) and abs(v) <= 2 ** 1023):
        return float(v)
    raise GraphFileError(f"{where}: expected a number, got {json_type(v)}")


def decode_attr(v, where: str, depth: int = 0):
    """The inverse of encode_attr; raises GraphFileError naming `where`."""
    if depth > MAX_DEPTH:
        raise GraphFileError(f"{where}: attribute values nest lists, tuples and dicts at most {MAX_DEPTH} deep")
    if v is None or isinstance(v, (bool, str, float)):
        return v
    if is_int(v):
        if not INT64_MIN <= v <= INT64_MAX:
            raise GraphFileError(f"{where}: {int_text(v)} does not fit in 64 bits; integer attrs are int64")
        return v
    if isinstance(v, list):
        return [decode_attr(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v)]
    if not isinstance(v, dict) or len(v) != 1:
        raise GraphFileError(f"{where}: an attribute object must have exactly one key (ndarray, scalar, tuple, "
                             "dtype, shape, float, dict or tensor_list)")
    (tag, body), = v.items()
    decode = _TAGS.get(tag)
    if decode is None:
        raise GraphFileError(f"{where}: unknown attribute tag {tag!r}")
    return decode(body, f"{where}.{tag}", depth + 1)


def _list_body(body, where: str) -> list:
    if not isinstance(body, list):
        raise GraphFileError(f"{where}: expected a list, got {json_type(body)}")
    return body


def _decode_tuple(body, where, depth):
    return tuple(decode_attr(x, f"{where}[{i}]", depth) for i, x in enumerate(_list_body(body, where)))


def _decode_dict(body, where, depth):
    if not isinstance(body, dict):
        raise GraphFileError(f"{where}: expected an object, got {json_type(body)}")
    return {k: decode_attr(x, f"{where}.{k}", depth) for k, x in body.items()}


def _decode_tensor_list(body, where, depth):
    lst = EMPTY
    for i, x in enumerate(_list_body(body, where)):
        lst = lst.push(decode_attr(x, f"{where}[{i}]", depth))
    return lst


def _np_dtype(name, where: str) -> np.dtype:
    if not isinstance(name, str) or name not in NP_KINDS:
        raise GraphFileError(f"{where}: unsupported numpy dtype {name!r}; use one of {sorted(NP_KINDS)}")
    return np.dtype(name)


def _decode_scalar(body, where, depth):
    if not isinstance(body, dict) or set(body) != {"dtype", "value"}:
        raise GraphFileError(f"{where}: expected an object with keys 'dtype' and 'value'")
    npd = _np_dtype(body["dtype"], f"{where}.dtype")
    return _decode_elements([body["value"]], npd, f"{where}.value", scalar=True)[0]


def _decode_ndarray(body, where, depth):
    if not isinstance(body, dict) or set(body) != {"dtype", "shape", "data"}:
        raise GraphFileError(f"{where}: expected an object with keys 'dtype', 'shape' and 'data'")
    npd = _np_dtype(body["dtype"], f"{where}.dtype")
    shape = body["shape"]
    if not isinstance(shape, list) or not all(is_int(d) and 0 <= d <= INT64_MAX for d in shape):
        raise GraphFileError(f"{where}.shape: expected a list of integers from 0 to 2**63-1")
    data = _list_body(body["data"], f"{where}.data")
    n = math.prod(shape)
    if len(data) != n:
        raise GraphFileError(f"{where}.data: has {len(data)} values but the shape {shape} needs {n:.6g}")
    return _decode_elements(data, npd, f"{where}.data").reshape(shape)


def _decode_elements(data: list, npd: np.dtype, where: str, scalar: bool = False) -> np.ndarray:
    kind = npd.kind
    vals = []
    for i, x in enumerate(data):
        w = where if scalar else f"{where}[{i}]"
        if kind == "b":
            if not isinstance(x, bool):
                raise GraphFileError(f"{w}: expected true/false, got {json_type(x)}")
        elif kind in "iu":
            if not is_int(x):
                raise GraphFileError(f"{w}: expected an integer, got {json_type(x)}")
            info = np.iinfo(npd)
            if not info.min <= x <= info.max:
                raise GraphFileError(f"{w}: {int_text(x)} does not fit in {npd}")
        else:
            x = _decode_float(x, w)
            if math.isfinite(x) and abs(x) > np.finfo(npd).max:
                raise GraphFileError(f"{w}: {x:.3g} does not fit in {npd}")
        vals.append(x)
    return np.array(vals, dtype=npd)


def _decode_float_tag(body, where, depth):
    return _decode_float({"float": body}, where)


_TAGS = {
    "ndarray": _decode_ndarray,
    "scalar": _decode_scalar,
    "tuple": _decode_tuple,
    "dict": _decode_dict,
    "tensor_list": _decode_tensor_list,
    "float": _decode_float_tag,
    "dtype": lambda body, where, depth: decode_dtype(body, where),
    "shape": lambda body, where, depth: decode_shape(body, where),
}
