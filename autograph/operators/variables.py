"""Placeholders for variables that are not (yet) bound, and the guarded read `ld`."""
from __future__ import annotations

from graphcore import source_info

from ..errors import UndefinedVariableError


def reading_location() -> str:
    """`file:line` of the innermost user line on the stack (the line doing the read)."""
    loc = source_info.user_location(skip=2)
    return f"{loc.filename}:{loc.lineno}" if loc else "<unknown>"


class Undefined:
    """Stands for a variable that may be unbound: defined only in one branch of an `if`
    or only inside a loop. Reading it (via `ld`, or using it in any way) raises an
    error naming the variable, the line that may leave it undefined and the reading line."""

    __slots__ = ("symbol_name", "lineno")

    def __init__(self, symbol_name: str, lineno: int = 0):
        self.symbol_name = symbol_name
        self.lineno = lineno

    def _fail(self, *args, **kwargs):
        raise_undefined(self)

    def __repr__(self) -> str:
        return f"Undefined({self.symbol_name!r})"

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise_undefined(self)

    __bool__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __neg__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __getitem__ = __iter__ = __len__ = __call__ = __index__ = _fail
    __int__ = __float__ = __abs__ = __matmul__ = __rmatmul__ = _fail


class UndefinedReturnValue:
    """The return value before any `return` ran; `retval` turns it into None."""

    def __repr__(self) -> str:
        return "UndefinedReturnValue()"


class PartialReturn:
    """A Python value (not a tensor: a str, None, an object) returned on some paths of an
    `if` on a tensor and not yet on the others. It becomes the return value when every
    path returns the same value; `retval` refuses it when some path returns nothing."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return f"PartialReturn({self.value!r})"

    def __eq__(self, other) -> bool:
        if not isinstance(other, PartialReturn):
            return NotImplemented
        try:
            return self.value is other.value or bool(self.value == other.value)
        except Exception:  # noqa: BLE001 (an object whose == is not a bool: different)
            return False

    __hash__ = None


def returned_none(value) -> bool:
    """A returned value that is None where a `return` ran (`return`, `return None`)."""
    return value is None or (isinstance(value, PartialReturn) and value.value is None)


def raise_undefined(u: Undefined):
    where = f" (it may be left undefined by the statement at line {u.lineno})" if u.lineno else ""
    raise UndefinedVariableError(
        f"'{u.symbol_name}' is used at {reading_location()} before it is defined on every path{where}. "
        f"Assign '{u.symbol_name}' before that statement, or in every branch / before the loop.")


def is_undefined(value) -> bool:
    return isinstance(value, (Undefined, UndefinedReturnValue))


__all__ = ["Undefined", "UndefinedReturnValue", "PartialReturn", "returned_none", "is_undefined"]
