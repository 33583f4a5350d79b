"""`a op= b` in converted code: Python's in-place operator on Python values, a new value on
graph tensors, and a refusal where numpy would change an array that another variable also
names (see converters/augmented_assignments.py)."""
from __future__ import annotations

import operator
import os
import sys
import warnings

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


def augmented(current, value, op: str, name: str, param: bool, line: int):
    """`current op= value` for the variable `name` (`param`: one of the function's
    parameters) at the user's `line`."""
    if not is_tensor(current):
        return _INPLACE[op](current, value)  # Python's own semantics, in place where Python's are
    if current.shape.rank != 0:  # a numpy array (0-d values are scalars, which numpy never changes in place)
        other = _other_name_for(current, name, sys._getframe(1))
        if other is not None:
            raise InPlaceAliasError(
                f"{location(line)}: `{name} {op}= ...` changes the array in place in numpy, and '{other}' names the "
                f"same array, so in Python '{other}' changes too; in the graph arrays are values and '{other}' "
                f"would keep the old one. Write `{name} = {name} {op} ...` (a new array) or start from a copy "
                f"(`{name} = {other}.copy()`).")
        if param:
            _warn_param(name, op, line)
    return _BINARY[op](current, value)


def _other_name_for(value, name: str, frame) -> str | None:
    """Another variable of the converted function (its frame and the frames of its loop
    bodies and branches, all in the generated file) bound to this array, as Python would
    see it: a loop variable in its first iteration, or a value passed into a branch, is
    the array it came from."""
    same = _origins(value)
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
