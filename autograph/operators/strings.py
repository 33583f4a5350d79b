"""f-strings and `str()` of tensors in converted code. Python formats an f-string when
the line runs, which for a tensor is while the graph is built: `print(f"x = {x}")`
would print `<Tensor ...>` once instead of the value on every run. `format_string` gives
Python's string where no tensor is in it, and a graphcore FormattedString otherwise,
whose tensors a Print op formats when the graph runs (with the same conversion and format
spec)."""
from __future__ import annotations

import builtins

from graphcore.ops.logging_ops import FormattedString, format_value

from .staging import is_tensor, is_weak

_CONVERSIONS = {-1: "", 115: "s", 114: "r", 97: "a"}  # ast.FormattedValue.conversion


def format_string(*pieces):
    """The f-string of `pieces`: literal strings and (value, conversion, spec) triples."""
    if not any(isinstance(p, tuple) and is_tensor(p[0]) for p in pieces):
        return "".join(p if isinstance(p, str) else _format(*p) for p in pieces)
    return FormattedString(p if isinstance(p, str) else
                           (p[0], _CONVERSIONS[p[1]], str(p[2]), is_weak(p[0])) if is_tensor(p[0]) else
                           _format(*p) for p in pieces)


def _format(value, conversion: int, spec: str) -> str:
    return format_value(value, _CONVERSIONS[conversion], spec)


def str_(*args, **kwargs):
    """`str(t)` of a tensor: its value as text when the graph runs (where a Print prints
    it); Python's str otherwise."""
    if len(args) == 1 and not kwargs and is_tensor(args[0]):
        return FormattedString([(args[0], "s", "", is_weak(args[0]))])
    return builtins.str(*args, **kwargs)
