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

from . import arguments
from .data_structures import InPlaceAliasError, on_graph_path, originals, refuse_if_aliased
from .side_effects import SideEffectWarning
from .staged_lists import StagedList
from .staging import is_copy, is_tensor, location

_INPLACE = {"+": operator.iadd, "-": operator.isub, "*": operator.imul, "/": operator.itruediv,
            "//": operator.ifloordiv, "%": operator.imod, "**": operator.ipow, "@": operator.imatmul,
            "&": operator.iand, "|": operator.ior, "^": operator.ixor, "<<": operator.ilshift, ">>": operator.irshift}
_BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
           "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
           "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift}


def augmented(current, value, op: str, name: str, param: bool, line: int, held_at: int = 0,
              iterated_at: int = 0):
    """`current op= value` for the variable `name` (`param`: one of the function's
    parameters) at the user's `line`; `held_at`: a line where the function puts `name`'s value
    into a container or an object (0: nowhere); `iterated_at`: the line of an enclosing
    `for ... in name` (0: none)."""
    array_meets_tensor = isinstance(current, np.ndarray) and is_tensor(value)
    if isinstance(current, StagedList) and op == "+" and isinstance(value, (list, tuple)):
        for v in value:  # `acc += [v]` on a list a graph loop appends to: an append per item
            current = current.appended(v)
        return current
    if isinstance(current, list) and on_graph_path() and len(originals(current)) > 1:  # (a loop's or if's state)
        refuse_if_aliased(current, name, f"`{name} {op}= ...`", line, held_at, sys._getframe(1))
    if not is_tensor(current) and not array_meets_tensor:
        return _INPLACE[op](current, value)  # Python's own semantics, in place where Python's are
    # an array (0-d values are scalars, never changed in place, but for a 0-d array argument)
    if array_meets_tensor or current.shape.rank != 0 or arguments.is_zero_d_array_argument(current):
        _refuse_if_shared(current, name, f"`{name} {op}= ...`", line, held_at, sys._getframe(1),
                          f"Write `{name} = {name} {op} ...` (a new array)", iterated_at)
        out = _in_place_result(current, value, op)
        if arguments.changed_in_place(current, out, f"`{name} {op}= ...`", line) is None and param:
            _warn_param(name, op, line)  # (no trace writes arguments back)
        return out
    return _BINARY[op](current, value)


def setitem(container, key, value, op, name: str, param: bool, line: int, held_at: int = 0,
            iterated_at: int = 0):
    """`container[key] = value` (`op` None) or `container[key] op= value` for the variable
    `name`, returning the container to rebind it to: the same object for Python's containers
    and for numpy arrays changed with Python values (Python's own statement), a new graph
    array with the items replaced where a graph value takes part (numpy would change the array
    in place: what another name, a container or the caller would see is refused or warned
    about, as for `a op= b`)."""
    graph = is_tensor(container) or isinstance(container, np.ndarray) and (is_tensor(value) or has_tensor(key))
    if not graph and has_tensor(key):
        raise TypeError(f"{location(line)}: '{name}' is a Python {type(container).__name__} given an item at a graph "
                        f"tensor index, which is only known when the graph runs. Make it a numpy array "
                        f"(`{name} = np.zeros(n)`) to fill it in the graph, or collect values with append")
    if not graph:
        if op is None:
            container[key] = value
        else:
            container[key] = _INPLACE[op](container[key], value)
        return container
    if is_tensor(container) and container.shape.rank == 0 and not arguments.is_zero_d_array_argument(container):
        raise TypeError(f"{location(line)}: '{name}' is a number (a numpy scalar), which does not support item "
                        f"assignment")
    _refuse_if_shared(container, name, f"`{name}[...] {op or ''}= ...`", line, held_at, sys._getframe(1), "",
                      iterated_at)
    out = _set_item(container, key, value, op, name, line)
    if arguments.changed_in_place(container, out, f"`{name}[...] {op or ''}= ...`", line) is None and param:
        _warn_param(f"{name}[...]", op or "", line, f"Start from a copy (`{name} = {name}.copy()`) to say so.")
    return out


def _set_item(container, key, value, op, name: str, line: int):
    x = container if is_tensor(container) else gc.constant(container)
    if is_tensor(key) and key.dtype.is_bool:
        return _set_masked(x, key, value, op, name, line)
    if op is not None:  # numpy: x[k] = x[k] op v, in place on the view when x[k] is an array
        current = gc.strided_slice(x, key)
        value = _BINARY[op](current, value) if current.shape.rank == 0 else _in_place_result(current, value, op)
    return gc.set_item(x, key, value)


def _set_masked(x, mask, value, op, name: str, line: int):
    """`x[mask] = v` / `x[mask] op= v` with a bool array of x's shape and one value: numpy
    writes v (cast to x's dtype, as its item assignment casts) where the mask is true."""
    scalar = not is_tensor(value) and np.ndim(value) == 0 or is_tensor(value) and value.shape.rank == 0
    if not scalar or mask.shape.dims is None or x.shape.dims is None or \
            mask.shape.dims != x.shape.dims or None in mask.shape.dims:
        raise TypeError(f"{location(line)}: `{name}[mask] {op or ''}= ...` in the graph takes a bool mask of "
                        f"{name}'s own (known) shape and one value; here the mask is {mask.shape} and {name} "
                        f"{x.shape}. Write {name} = np.where(mask, new_values, {name})")
    new = value if op is None else _BINARY[op](x, value)
    new = gc.cast(new, x.dtype) if not is_tensor(new) or new.dtype != x.dtype else new
    return gc.where(mask, new, x)


def _refuse_if_shared(value, name: str, what: str, line: int, held_at: int, frame, fix: str,
                      iterated_at: int = 0) -> None:
    """Refuse an in-place change (`what`) to an array that, in Python, another variable shares,
    a container the function fills holds, or an enclosing `for` iterates over: they would see
    the change too, the graph's would not. `fix`: what else to write, if anything."""
    if iterated_at:
        raise InPlaceAliasError(
            f"{location(line)}: {what} changes the array in place in numpy, and the loop at line {iterated_at} "
            f"iterates over '{name}', so in Python its later iterations see the changed items; in the graph arrays "
            f"are values and the loop would go on over the old ones. " + (f"{fix}, or i" if fix else "I")
            + f"terate over a copy (`for ... in {name}.copy()`) if the old values are what it should see.")
    other = _other_name_for(value, name, frame)
    if other is not None:
        raise InPlaceAliasError(
            f"{location(line)}: {what} changes the array in place in numpy, and '{other}' shares its memory (the "
            f"same array, or a view of it), so in Python '{other}' changes too; in the graph arrays are values and "
            f"'{other}' would keep the old one. " + (f"{fix}, or s" if fix else "S")
            + f"tart from a copy (`{name} = {other}.copy()`).")
    if held_at:
        raise InPlaceAliasError(
            f"{location(line)}: {what} changes the array in place in numpy, and line {held_at} puts '{name}' into a "
            f"list, dict or object, which in Python holds this very array, so what it holds changes too; in the "
            f"graph arrays are values and it would keep the old one. " + (f"{fix}, or p" if fix else "P")
            + f"ut a copy there (`{name}.copy()`).")


def has_tensor(key) -> bool:
    """A graph tensor in an index key (an index, a slice bound, an item of a tuple)."""
    if isinstance(key, tuple):
        return any(has_tensor(k) for k in key)
    if isinstance(key, slice):
        return any(is_tensor(p) for p in (key.start, key.stop, key.step))
    return is_tensor(key)


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
    bodies and branches, all in the generated file) bound to this array or to a view of it
    (or it a view of theirs), as Python would see it: a loop variable in its first
    iteration, or a value passed into a branch, is the array it came from; `x[1:]`,
    `x.reshape(...)`, `x.T` share x's memory in numpy."""
    tensor = is_tensor(value)
    same = _origins(value) if tensor else None
    same_arrays = originals(value) if not tensor else ()  # (in a branch's trace, a copy of the user's array)
    generated = frame.f_code.co_filename
    while frame is not None:
        if frame.f_code.co_filename == generated:
            for other, v in frame.f_locals.items():
                if other == name or other.startswith("ag__") or other.endswith("_"):
                    continue
                if tensor and is_tensor(v) and not same.isdisjoint(_origins(v)):
                    return other
                if not tensor and isinstance(v, np.ndarray) and any(np.may_share_memory(v, o) for o in same_arrays):
                    return other
        frame = frame.f_back
    return None


def _passes_through(d) -> bool:
    """An op that passes a value on unchanged: into a loop (Enter, and Merge's entry input),
    into a branch (Switch), or as a copy of the same value (Identity, StopGradient); not out
    of a loop (Exit, NextIteration: the loop's own later values)."""
    return d.forwards and d.type not in ("Exit", "NextIteration")


def _origins(t) -> set[int]:
    """The arrays `t` is, or is a view of (ids), walking back through pass-through and view
    ops; not past a copy the program made (`x.copy()`)."""
    seen, todo = {id(t)}, [t]
    while todo and len(seen) < 64:
        t = todo.pop()
        op = t.op
        d = op.op_def  # (`view`: its array output is a view of its first input in numpy, as basic
        #             indexing, reshape and transpose are: an in-place change shows through)
        if is_copy(t) or not _passes_through(d) and (not d.view or t.shape.rank == 0):
            continue  # (a scalar item of an array is a copy in numpy)
        for src in op.inputs[:1] if op.type != "Merge" else op.inputs:
            if src.op.type == "NextIteration" or id(src) in seen:
                continue
            seen.add(id(src))
            todo.append(src)
    return seen


def _warn_param(name: str, op: str, line: int, advice: str = "") -> None:
    where = location(line)
    filename = where.rsplit(":", 1)[0]
    warnings.warn_explicit(
        f"{os.path.basename(where)}: `{name} {op}= ...` changes the caller's array in place in Python; the graph "
        f"makes a new array and leaves the caller's as it was. "
        + (advice or f"Write `{name} = {name} {op} ...` to say so."), SideEffectWarning, filename, line)
