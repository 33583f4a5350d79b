"""f-strings, `str.format`, `%` formatting and `str()` of tensors in converted code.
Python formats a string when the line runs, which for a tensor is while the graph is built:
`print(f"x = {x}")` would print `<Tensor ...>` once instead of the value on every run.
These give Python's string where no tensor is in it, and a graphcore FormattedString
otherwise, whose tensors a Print op formats when the graph runs (with the same conversion
and format spec)."""
from __future__ import annotations

import builtins
import re
import string

import numpy as np

import graphcore as gc
from graphcore.ops.array_ops import int_of_float
from graphcore.ops.logging_ops import FormattedString, format_value


from . import path_types, python_calls
from .staged_lists import StagedList
from .staging import is_tensor

_CONVERSIONS = {-1: "", 115: "s", 114: "r", 97: "a"}  # ast.FormattedValue.conversion


def format_string(*pieces):
    """The f-string of `pieces`: literal strings and (value, conversion, spec) triples."""
    pieces = [(python_calls.runtime_list(p[0]), *p[1:]) if isinstance(p, tuple) and isinstance(p[0], StagedList)
              else p for p in pieces]  # f"{acc}" of a list built in a graph loop: its items' values
    if not any(isinstance(p, tuple) and (is_tensor(p[0]) or holds_tensor(p[0]) or isinstance(p[2], FormattedString)
                                         or isinstance(p[0], FormattedString))
               for p in pieces):
        return "".join(p if isinstance(p, str) else _format(*p) for p in pieces)
    out = []
    for p in pieces:
        out += [p] if isinstance(p, str) else _field(p[0], _CONVERSIONS[p[1]], _spec(p[2]))
    return FormattedString(out)


def _spec(spec):
    """A field's format spec: a str, or a FormattedString where a nested field (`{x:{w}.2f}`)
    holds a tensor (the spec is then formatted when the graph runs, before it is applied)."""
    return spec if isinstance(spec, FormattedString) else str(spec)


def holds_tensor(value) -> bool:
    """A list, tuple or dict with a graph tensor somewhere inside."""
    if isinstance(value, (list, tuple)):
        return any(is_tensor(v) or holds_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(is_tensor(v) or holds_tensor(v) for v in value.values())
    return False


def container_text(value) -> FormattedString:
    """`str(value)` of a container holding tensors, as Python shows it: the items' reprs
    (np.int32(4) for a numpy scalar, 4 for a Python number), formatted when the graph runs."""
    pieces: list = []

    def add(v):
        if is_tensor(v):
            pieces.append(_piece(v, "r", ""))
        elif holds_tensor(v):
            walk(v)
        else:
            pieces.append(builtins.repr(v))

    def walk(c):
        if isinstance(c, dict):
            pieces.append("{")
            for i, (k, v) in enumerate(c.items()):
                pieces.append((", " if i else "") + builtins.repr(k) + ": ")
                add(v)
            pieces.append("}")
            return
        opening, closing = ("[", "]") if isinstance(c, list) else ("(", ",)" if len(c) == 1 else ")")
        if type(c) not in (list, tuple):  # a namedtuple shows its field names
            opening, closing = type(c).__name__ + "(", ")"
        pieces.append(opening)
        for i, v in enumerate(c):
            if i:
                pieces.append(", ")
            if type(c) not in (list, tuple):
                pieces.append(c._fields[i] + "=")
            add(v)
        pieces.append(closing)

    walk(value)
    return FormattedString(pieces)


def _field(value, conversion: str, spec: str) -> list:
    """The pieces of one formatted field (several for a container holding tensors)."""
    if isinstance(value, FormattedString):
        if conversion in ("", "s") and not spec:
            return list(value.parts)  # f"<{s}>" of an f-string with tensors: its pieces, inline
        value = python_calls.rendered(value)  # f"{s!r:>12}": the run-time text, formatted
    if holds_tensor(value) and conversion in ("", "s", "r") and not spec:
        return list(container_text(value).parts)
    return [_piece(value, conversion, spec)]


def _format(value, conversion: int, spec: str) -> str:
    return format_value(value, _CONVERSIONS[conversion], spec)


def _staged_text(value) -> bool:
    return is_tensor(value) or holds_tensor(value) or isinstance(value, (FormattedString, StagedList))


def str_(*args, **kwargs):
    """`str(t)` of a tensor (or of a container holding one): Python's str of the value, made
    when the graph runs, as a run-time string (python_calls): its methods, len, comparisons and
    int() give Python's values (the tensor's description never leaks)."""
    if len(args) == 1 and not kwargs and _staged_text(args[0]):
        return python_calls.stage(builtins.str, args, name="str")
    return builtins.str(*args, **kwargs)


def repr_(obj):
    """`repr(t)` of a tensor: as Python shows the value when the graph runs (np.float64(1.5)
    for a numpy scalar, 1.5 for a Python number), a run-time string."""
    return python_calls.stage(builtins.repr, (obj,), name="repr") if _staged_text(obj) else builtins.repr(obj)


def ascii_(obj):
    return python_calls.stage(builtins.ascii, (obj,), name="ascii") if _staged_text(obj) else builtins.ascii(obj)


def format_(value, spec=""):
    """`format(t, spec)` of a tensor: formatted when the graph runs, a run-time string."""
    if _staged_text(value) or _staged_text(spec):
        return python_calls.stage(builtins.format, (value, spec), name="format")
    return builtins.format(value, spec)


def _piece(value, conversion: str, spec):
    """One formatted field: text now for a Python value, a FormattedString piece for a tensor
    (or for a Python number whose spec holds a tensor: a constant that the Print formats)."""
    if isinstance(spec, FormattedString) and not is_tensor(value):
        if not isinstance(value, (builtins.int, builtins.float)) or (
                isinstance(value, builtins.int) and not -2**63 <= value < 2**63):
            raise TypeError(
                f"a format spec with a graph tensor in it (`{{v:{{w}}}}`) applied to a Python "
                f"{type(value).__name__}: the spec is only known when the graph runs, and a "
                f"{type(value).__name__} is not a graph value. Pad it with a width known while tracing, or format "
                f"a number")
        return (gc.constant(np.asarray(value)), conversion, spec, True)
    if not is_tensor(value):
        return format_value(value, conversion, spec)
    shown, python_number = path_types.shown(value, "formatting")  # a value whose type depends on the path:
    return (shown, conversion, spec, python_number)                # as the type this run's path gave it


def _joined(pieces):
    if not any(isinstance(p, tuple) for p in pieces):
        return "".join(pieces)
    return FormattedString(pieces)


def str_format(template: str, *args, **kwargs):
    """`template.format(*args, **kwargs)` with tensors among the arguments: fields parsed as
    Python's str.format parses them (auto and explicit numbering, names, `.attr` and `[key]`,
    conversions, nested specs)."""
    return _joined(_vformat(string.Formatter(), template, args, kwargs, [0], 2))


def _vformat(formatter, template, args, kwargs, auto: list, depth: int) -> list:
    """The pieces of `template`; `auto` boxes the automatic field number, which a nested spec
    shares with its field (`"{:{}}".format(x, w)`), as Python's str.format numbers them."""
    if depth < 0:
        raise ValueError("Max string recursion exceeded")
    pieces = []
    for literal, field, spec, conversion in formatter.parse(template):
        if literal:
            pieces.append(literal)
        if field is None:
            continue
        if field == "" or field[0] in ".[":
            if auto[0] is None:
                raise ValueError("cannot switch from manual field specification to automatic field numbering")
            field, auto[0] = str(auto[0]) + field, auto[0] + 1
        elif re.match(r"\d", field):  # a number (a name does not count: "{} {x}" is fine)
            if auto[0]:
                raise ValueError("cannot switch from automatic field numbering to manual field specification")
            auto[0] = None
        value, _ = formatter.get_field(field, args, kwargs)
        if spec and "{" in spec:  # a nested field: a FormattedString where it holds a tensor
            spec = _spec(_joined(_vformat(formatter, spec, args, kwargs, auto, depth - 1)))
        pieces += _field(value, conversion or "", spec or "")
    return pieces


# printf-style: %[(name)][flags][width][.precision][length]type
_PERCENT = re.compile(r"%(?:\((?P<key>[^)]*)\))?(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d+))?"
                      r"[hlL]?(?P<type>[diouxXeEfFgGcrsa%])")


def percent_format(template, values):
    """`template % values` with tensors among the values: each printf-style field as the
    format spec Python's `%` would apply (`%d` of a float truncates it first, as `%` does)."""
    tensors = values.values() if isinstance(values, dict) else values if isinstance(values, tuple) else (values,)
    if not isinstance(template, str) or not any(is_tensor(v) or holds_tensor(v) or isinstance(v, FormattedString)
                                                for v in tensors):
        return template % values
    if isinstance(values, dict):
        lookup, items = values, None
    else:
        lookup, items = None, list(values) if isinstance(values, tuple) else [values]
    pieces, pos, used = [], 0, 0
    for m in _PERCENT.finditer(template):
        pieces.append(template[pos:m.start()])
        pos = m.end()
        kind = m.group("type")
        if kind == "%":
            pieces.append("%")
            continue
        if m.group("width") == "*" or m.group("prec") == "*":
            raise TypeError("`%*d` (a width or precision taken from the values) with a graph tensor among the values "
                            "is not supported: write the width into the format, or use an f-string")
        if m.group("key") is not None:
            if lookup is None:
                raise TypeError("format requires a mapping")
            value = lookup[m.group("key")]
        else:
            if items is None or used >= len(items):
                raise TypeError("not enough arguments for format string")
            value, used = items[used], used + 1
        field = _percent_field(value, m.group("flags"), m.group("width") or "", m.group("prec"), kind)
        pieces += field if isinstance(field, list) else [field]
    pieces.append(template[pos:])
    if items is not None and used < len(items):
        raise TypeError("not all arguments converted during string formatting")
    return _joined([p for p in pieces if p != ""])


def _refuse_float(value, kind: str) -> None:
    """`%x` / `%o` / `%c` of a float: Python's TypeError (for a value that is a float on some
    paths only, a refusal that says so)."""
    path_types.refuse_mixed(value, path_types.INTS | path_types.BOOLS, f"`%{kind}` formatting of",
                            "Convert it with int(...) first.")
    kinds = path_types.kinds_of(value)
    if isinstance(kinds, frozenset) and kinds <= path_types.FLOATS:
        name = path_types.TYPE_NAMES[min(kinds)].replace("np.", "numpy.")
        raise TypeError("%c requires int or char" if kind == "c" else
                        f"%{kind} format: an integer is required, not {name}")


def _percent_field(value, flags: str, width: str, precision, kind: str):
    if isinstance(value, FormattedString):  # an f-string with tensors: its run-time text
        value = python_calls.rendered(value)
    if holds_tensor(value) and kind in "rs" and not width and precision is None:
        return _field(value, kind, "")
    if not is_tensor(value):
        return ("%" + flags + width + ("." + precision if precision is not None else "") + kind) % (value,)
    align = "<" if "-" in flags else ""
    fill_zero = "0" if "0" in flags and not align and kind not in "rsa" else ""
    sign = "+" if "+" in flags else " " if " " in flags else ""
    alt = "#" if "#" in flags and kind in "oxXeEfFgG" else ""
    if kind in "rsa":  # the text of the value, right-aligned unless `-`
        spec = (align or ">") + width + ("." + precision if precision is not None else "") if width or precision \
            else ""
        return _field(value, kind, spec)
    if kind in "diouxXc":
        if kind in "oxXc":  # of a float, Python's TypeError
            _refuse_float(value, kind)
        if value.dtype.is_floating:  # `%d` of a float: its int(), as Python's % gives
            value = int_of_float(value)
            value.weak = True
        code = {"i": "d", "u": "d"}.get(kind, kind)
        if kind in "diu" and precision is not None:  # `%.3d`: at least 3 digits
            raise TypeError("`%.Nd` with a graph tensor is not supported: use an f-string with a format spec")
        return _piece(value, "", align + sign + alt + fill_zero + width + code)
    return _piece(value, "", align + sign + alt + fill_zero + width + ("." + precision if precision is not None
                                                                      else ".6") + kind)
