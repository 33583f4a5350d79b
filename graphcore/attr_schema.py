"""What each op type's attributes may hold: declared once, in the op's own `define_op`
block (`attrs={"axis": AXIS, "keepdims": opt(BOOL)}`), and checked when a graph file is
read, so a file that loads holds in every attribute only values of the declared kinds.

A graph file is data. Its attributes reach kernels, shape rules and the executor's code
generators; a schema rejects a string where an index belongs, an unknown name, a type the
op never makes, before any of that code sees it (graphcore/serialization/document.py turns
the AttrError into a GraphFileError naming the op and attribute).

A check is a function `check(value, where)` that raises AttrError; the combinators below
build them. `opt(check)` marks an attribute that may be left out (the kernel has a default).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import dtypes as dt
from .errors import GraphError
from .shapes import TensorShape
from .tensor_list import ListValue

INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
MAX_STEPS = 100_000   # steps of one Fused or CompiledLoop op read from a file


class AttrError(GraphError):
    """An attribute value that the op type does not declare or allow; `where` is the path
    inside the attribute (`[2][1]`), the message says what was expected."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}" if where else message)
        self.where, self.message = where, message


Check = Callable[[object, str], None]


@dataclass(frozen=True)
class Attr:
    check: Check
    required: bool = True


def opt(check: Check) -> Attr:
    """An attribute the op may be built without (its kernel has a default)."""
    return Attr(check, required=False)


def _describe(v) -> str:
    if isinstance(v, str):
        return f"the string {v[:40]!r}"
    return f"a {type(v).__name__}"


# -- leaf kinds --------------------------------------------------------------------------------

def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def INT(v, where):
    if not _is_int(v) or not INT64_MIN <= int(v) <= INT64_MAX:
        raise AttrError(where, f"expected an int64, got {_describe(v)}")


def int_in(lo: int, hi: int = INT64_MAX) -> Check:
    def check(v, where):
        INT(v, where)
        if not lo <= int(v) <= hi:
            raise AttrError(where, f"expected an integer from {lo} to {hi}, got {int(v)}")
    return check


NONNEG_INT = int_in(0)


def BOOL(v, where):
    if not isinstance(v, (bool, np.bool_)):
        raise AttrError(where, f"expected true/false, got {_describe(v)}")


def FLOAT(v, where):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise AttrError(where, f"expected a number, got {_describe(v)}")


def STR(v, where):
    if not isinstance(v, str):
        raise AttrError(where, f"expected a string, got {_describe(v)}")


def NONE(v, where):
    if v is not None:
        raise AttrError(where, f"expected null, got {_describe(v)}")


def DTYPE(v, where):
    if not isinstance(v, dt.DType):
        raise AttrError(where, f"expected a dtype, got {_describe(v)}")


def SHAPE(v, where):
    if not isinstance(v, TensorShape):
        raise AttrError(where, f"expected a shape, got {_describe(v)}")


def NUMERIC(v, where):
    """A constant's value: a bool, number, numpy scalar or numeric/bool array."""
    if isinstance(v, (bool, int, float)):
        return
    if isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind in "biuf":
        return
    raise AttrError(where, f"expected a number, bool or numeric array, got {_describe(v)}")


def LIST_VALUE(v, where):
    """A TensorList constant (an empty list, or the items a graph file keeps)."""
    if not isinstance(v, ListValue):
        raise AttrError(where, f"expected a tensor list, got {_describe(v)}")
    for i, item in enumerate(v.items()):
        NUMERIC(item, f"{where}[{i}]")


def matches(pattern: str, what: str) -> Check:
    """A string the whole of which matches `pattern`."""
    compiled = re.compile(pattern)

    def check(v, where):
        if not isinstance(v, str) or not compiled.fullmatch(v):
            raise AttrError(where, f"expected {what}, got {_describe(v)}")
    return check


# An op, frame or step name: printable, no quotes, backslashes or line breaks (names reach
# error messages, listings and pictures).
NAME = matches(r"[^\x00-\x1f\x7f-\x9f\"'\\`]{1,1000}", "a name (1 to 1000 printable characters, no quotes, "
               "backslashes or line breaks)")


def one_of(*values) -> Check:
    allowed = frozenset(values)

    def check(v, where):
        if not isinstance(v, (str, int, bool, type(None))) or v not in allowed:
            shown = ", ".join(sorted(repr(x) for x in allowed))
            raise AttrError(where, f"expected one of {shown[:300]}, got {_describe(v)}")
    return check


# -- combinators ------------------------------------------------------------------------------

def either(*checks: Check) -> Check:
    def check(v, where):
        errors = []
        for c in checks:
            try:
                c(v, where)
                return
            except AttrError as e:
                errors.append(e)
        # the alternative that matched deepest says best what is wrong; at the top, all of them
        deepest = max(len(e.where) for e in errors)
        if deepest > len(where):
            raise next(e for e in errors if len(e.where) == deepest)
        wanted = [e.message.split(", got ")[0].removeprefix("expected ") for e in errors]
        raise AttrError(where, f"expected {' or '.join(dict.fromkeys(wanted))}, got {_describe(v)}")
    return check


def optional(c: Check) -> Check:
    return either(NONE, c)


def tuple_of(item: Check, max_len: int = MAX_STEPS, sequence=(tuple, list)) -> Check:
    def check(v, where):
        if not isinstance(v, sequence):
            raise AttrError(where, f"expected a tuple, got {_describe(v)}")
        if len(v) > max_len:
            raise AttrError(where, f"holds {len(v)} items, at most {max_len} allowed")
        for i, x in enumerate(v):
            item(x, f"{where}[{i}]")
    return check


def record(*fields: Check) -> Check:
    """A tuple of exactly these fields."""
    def check(v, where):
        if not isinstance(v, tuple) or len(v) != len(fields):
            raise AttrError(where, f"expected a tuple of {len(fields)} items, got {_describe(v)}"
                            + (f" of {len(v)}" if isinstance(v, tuple) else ""))
        for i, (c, x) in enumerate(zip(fields, v)):
            c(x, f"{where}[{i}]")
    return check


# -- kinds shared by many ops -----------------------------------------------------------------

AXIS = either(NONE, INT, tuple_of(INT, 64))                   # a reduction's axis
ELEMENT_SHAPE = optional(either(SHAPE, tuple_of(optional(NONNEG_INT), 64)))

# StridedSlice / SetItem's key: per axis ("index", v), ("slice", start, stop, step),
# ("new",) or ("ellipsis",); v is None, ("c", constant) or ("t", which dynamic input)
_BOUND = optional(either(record(one_of("c"), INT), record(one_of("t"), int_in(0, 64))))
INDEX_SPEC = tuple_of(either(record(one_of("index"), _BOUND), record(one_of("slice"), _BOUND, _BOUND, _BOUND),
                             record(one_of("new")), record(one_of("ellipsis"))), 64)


def TEMPLATE(v, where):
    """A Print/Assert template: literal strings, None (the next value as str gives it) and
    (conversion, spec, python number), the spec a string or a template itself."""
    tuple_of(_template_part, 10_000)(v, where)


_CONVERSION = one_of("", "s", "r", "a")


def _template_part(v, where):
    if v is None or isinstance(v, str):
        return
    record(_CONVERSION, either(STR, TEMPLATE), BOOL)(v, where)


def check_attrs(op_type: str, schema: dict[str, Attr] | None, attrs: dict) -> None:
    """Every attribute declared and of its kind, every required one given; AttrError with
    `where` = the attribute's name (and path inside it)."""
    schema = schema or {}
    for name, value in attrs.items():
        spec = schema.get(name)
        if spec is None:
            known = ", ".join(sorted(schema)) or "none"
            raise AttrError(name, f"a {op_type} op has no attribute {name!r} (its attributes: {known})")
        spec.check(value, name)
    for name, spec in schema.items():
        if spec.required and name not in attrs:
            raise AttrError(name, f"a {op_type} op needs the attribute {name!r}")
