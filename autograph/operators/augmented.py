"""`a op= b` in converted code: Python's in-place operator on Python values, a new value on
graph tensors, and a refusal where numpy would change an array that another variable also
names (see converters/augmented_assignments.py)."""
from __future__ import annotations

import operator
import os
import sys
import warnings

import numpy as np

import graphcore as gc
from graphcore.errors import StagingError

from .side_effects import SideEffectWarning
from .staging import is_tensor, location

_INPLACE = {"+": operator.iadd, "-": operator.isub, "*": operator.imul, "/": operator.itruediv,
            "//": operator.ifloordiv, "%": operator.imod, "**": operator.ipow, "@": operator.imatmul,
            "&": operator.iand, "|": operator.ior, "^": operator.ixor, "<<": operator.ilshift, ">>": operator.irshift}
_BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
           "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
           "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift}


class InPlaceAliasError(StagingError):
    """An in-place change to an array that another variable names: numpy changes both,
    the graph would change one."""


def augmented(current, value, op: str, name: str, param: bool, line: int, held_at: int = 0):
    """`current op= value` for the variable `name` (`param`: one of the function's
    parameters) at the user's `line`; `held_at`: a line where the function puts `name`'s value
    into a container or an object (0: nowhere)."""
    array_meets_tensor = isinstance(current, np.ndarray) and is_tensor(value)
    if not is_tensor(current) and not array_meets_tensor:
        return _INPLACE[op](current, value)  # Python's own semantics, in place where Python's are
    if array_meets_tensor or current.shape.rank != 0:  # an array (0-d values are scalars, never changed in place)
        other = _other_name_for(current, name, sys._getframe(1))
        if other is not None:
            raise InPlaceAliasError(
                f"{location(line)}: `{name} {op}= ...` changes the array in place in numpy, and '{other}' names the "
                f"same array, so in Python '{other}' changes too; in the graph arrays are values and '{other}' "
                f"would keep the old one. Write `{name} = {name} {op} ...` (a new array) or start from a copy "
                f"(`{name} = {other}.copy()`).")
        if held_at:
            raise InPlaceAliasError(
                f"{location(line)}: `{name} {op}= ...` changes the array in place in numpy, and line {held_at} puts '{name}' "
                f"into a list, dict or object, which in Python holds this very array, so what it holds changes too; "
                f"in the graph arrays are values and it would keep the old one. Write `{name} = {name} {op} ...` "
                f"(a new array).")
        if param:
            _warn_param(name, op, line)
        return _in_place_result(current, value, op)
    return _BINARY[op](current, value)


def _in_place_result(current, value, op: str):
    """numpy's in-place `a op= b` as a new value: the result keeps a's dtype and shape, so b
    must broadcast to a's shape and the result cast to a's dtype by numpy's 'same_kind' rule
    (an int array += a float raises). numpy itself is asked, on stand-in arrays of the same
    dtypes and shapes, so that the same exception with numpy's message comes out."""
    dtype, shape = _dtype_and_shape(current)
    value_dtype, value_shape = _dtype_and_shape(value)
    known = shape is not None and value_shape is not None
    stand_in = np.ones(shape if known else (), dtype=dtype)  # shapes only partly known: the dtypes are checked
    if is_tensor(value) and value.weak and value_shape == ():  # a Python number: weakly typed in numpy too
        other = {"b": True, "f": 1.0}.get(value_dtype.kind, 1)
    elif is_tensor(value):
        other = np.ones(value_shape if known else (), dtype=value_dtype)
    else:
        other = value  # a Python or numpy value: numpy sees the very value (an int beyond int64 raises)
    with np.errstate(all="ignore"):
        _INPLACE[op](stand_in, other)  # raises what numpy raises for these dtypes and shapes
    out = _BINARY[op](current, value)
    if is_tensor(out) and out.dtype.np_dtype != dtype:
        out = gc.cast(out, gc.as_dtype(dtype))
    return out


def _dtype_and_shape(v):
    if is_tensor(v):
        dims = v.shape.dims
        return v.dtype.np_dtype, (tuple(dims) if dims is not None and None not in dims else None)
    a = np.asarray(v)
    return a.dtype, a.shape


def _other_name_for(value, name: str, frame) -> str | None:
    """Another variable of the converted function (its frame and the frames of its loop
    bodies and branches, all in the generated file) bound to this array, as Python would
    see it: a loop variable in its first iteration, or a value passed into a branch, is
    the array it came from."""
    same = _origins(value) if is_tensor(value) else {id(value)}
    generated = frame.f_code.co_filename
    while frame is not None:
        if frame.f_code.co_filename == generated:
            for other, v in frame.f_locals.items():
                if id(v) in same and other != name and not other.startswith("ag__") and not other.endswith("_"):
                    return other
        frame = frame.f_back
    return None


# ops that pass a value on unchanged: into a loop (Enter, and Merge's entry input), into a
# branch (Switch), or as a copy of the same value (Identity)
_PASS_THROUGH = {"Identity", "Switch", "Enter", "RefEnter", "Merge"}


def _origins(t) -> set[int]:
    seen, todo = {id(t)}, [t]
    while todo and len(seen) < 64:
        op = todo.pop().op
        if op.type not in _PASS_THROUGH:
            continue
        for src in op.inputs[:1] if op.type != "Merge" else op.inputs:
            if src.op.type == "NextIteration" or id(src) in seen:
                continue
            seen.add(id(src))
            todo.append(src)
    return seen


def _warn_param(name: str, op: str, line: int) -> None:
    where = location(line)
    filename = where.rsplit(":", 1)[0]
    warnings.warn_explicit(
        f"{os.path.basename(where)}: `{name} {op}= ...` changes the caller's array in place in Python; the graph "
        f"makes a new array and leaves the caller's as it was. Write `{name} = {name} {op} ...` to say so.",
        SideEffectWarning, filename, line)
