"""Print and Assert: stateful ops that act when the graph runs, not when it is built."""
from __future__ import annotations

import builtins
import itertools
import sys
import weakref

import numpy as np

from ..attr_schema import BOOL, STR, TEMPLATE, matches, opt, optional
from ..errors import InvalidArgumentError
from ..graph import Operation, Tensor, get_default_graph, graph_of
from ..registry import CHEAP, define_op

STREAM = matches(r"stdout|stderr|file:[0-9]{1,18}", "'stdout', 'stderr' or 'file:<n>'")


_CONVERSIONS = {"": lambda v: v, "s": str, "r": repr, "a": ascii}


def format_value(value, conversion: str = "", spec: str = "", python_number: bool = False) -> str:
    """`f"{value!conversion:spec}"` of a tensor's value when the graph runs; a Python
    number's (a weak tensor's) as the Python int or float it stands for."""
    if python_number and isinstance(value, (np.generic, np.ndarray)) and np.ndim(value) == 0:
        value = value.item()
    return format(_CONVERSIONS[conversion](value), spec)


def render(template, values) -> str:
    """A template's text: literal strings, None (the next value, as str gives it) and
    (conversion, spec, python number) (the next value formatted so). A spec that is itself
    a template (`f"{x:{w}.2f}"` with a tensor w) is rendered from the values after the
    value it formats, as Python evaluates the field before its nested spec."""
    return _render(template, iter(values))


def _render(template, it) -> str:
    out = []
    for part in template:
        if isinstance(part, str):
            out.append(part)
        elif part is None:
            out.append(str(next(it)))
        else:
            conversion, spec, python_number = part
            value = next(it)
            if not isinstance(spec, str):
                spec = _render(spec, it)
            out.append(format_value(value, conversion, spec, python_number))
    return "".join(out)


# Print's `stream`: "stdout" / "stderr" (sys.stdout / sys.stderr as they are when the graph
# runs, as Python looks them up when print is called) or "file:<n>", a file object that
# print(file=...) named while the graph was built. A graph file holds data only, so the
# object stays here, for as long as the graph that prints to it lives.
_files: dict = {}
_file_keys = itertools.count()


def stream_of(file, graph) -> str:
    """The `stream` attribute for Python's print(file=file) in `graph`."""
    if file is None or file is sys.stdout:
        return "stdout"
    if file is sys.stderr:
        return "stderr"
    key = f"file:{next(_file_keys)}"
    _files[key] = file
    weakref.finalize(graph, _files.pop, key, None)
    return key


def _output(stream: str):
    if stream == "stdout":
        return sys.stdout
    if stream == "stderr":
        return sys.stderr
    try:
        out = _files[stream]
    except KeyError:
        raise InvalidArgumentError(
            f"Print to a file object ({stream}): the object print(file=...) named while the graph was built is not "
            f"in this process (a graph loaded from a file, or run in another process); print to sys.stdout or "
            f"sys.stderr instead") from None
    if getattr(out, "closed", False):
        raise ValueError(
            "I/O operation on closed file: print(file=...) writes when the graph runs, and this file was closed "
            "by then (a `with open(...)` in a converted function opens and closes the file once, while the graph "
            "is built). Open the file outside the function and pass it in, or print to sys.stdout / sys.stderr")
    return out


def _print_kernel(*values, template=None, sep=" ", end="\n", stream="stdout", flush=True):
    text = sep.join(str(v) for v in values) if template is None else render(template, values)
    out = _output(stream)
    out.write(text + end)
    if flush or stream in ("stdout", "stderr"):  # the console's lines keep their order with the driver's
        out.flush()
    return ()


print_op = define_op("Print", shape=lambda *v, **a: [], kernel=_print_kernel, num_outputs=0, cost=CHEAP,
                     stateful=True, fails=None, attrs={"template": opt(optional(TEMPLATE)), "sep": opt(STR), "end": opt(STR),
                                           "stream": opt(STREAM), "flush": opt(BOOL)})
print_op.not_differentiable("no outputs")


class FormattedString(str):
    """A string with tensors in it (an f-string of converted code): as a `str`, the text
    it has while the graph is built (a tensor shows as `<Tensor ...>`); printed by a Print
    op, each tensor's value formatted when the graph runs. `parts`: literal strings and
    (tensor, conversion, spec, python number) pieces. Concatenation keeps the parts."""

    parts: tuple

    def __new__(cls, parts):
        parts = tuple(parts)
        text = "".join(p if isinstance(p, str) else repr(p[0]) if p[1] == "r" else str(p[0]) for p in parts)
        out = super().__new__(cls, text)
        out.parts = parts
        return out

    def __add__(self, other):
        return FormattedString(self.parts + _parts_of(other)) if isinstance(other, str) else NotImplemented

    def __radd__(self, other):
        return FormattedString(_parts_of(other) + self.parts) if isinstance(other, str) else NotImplemented


def _parts_of(s: str) -> tuple:
    return s.parts if isinstance(s, FormattedString) else (str(s),)


def template_of(parts) -> tuple[tuple, list]:
    """(template, tensors) of a FormattedString's parts, for render."""
    template, tensors = [], []
    for p in parts:
        if isinstance(p, str):
            template.append(p)
        elif isinstance(p[2], FormattedString):  # a nested spec with tensors in it: its own template
            spec, spec_tensors = template_of(p[2].parts)
            template.append((p[1], spec, p[3]))
            tensors += [p[0], *spec_tensors]
        else:
            template.append(tuple(p[1:]))
            tensors.append(p[0])
    return tuple(template), tensors


def print(*values, sep: str = " ", end: str = "\n", stream="stdout", flush: bool = True, name=None):  # noqa: A001
    """Print `values` when the graph runs (Python's print when no graph is being built).

    Non-tensor values are printed as they are, a FormattedString with its tensors'
    values; `stream` is "stdout", "stderr" or a file object (Python's print(file=...));
    returns the Print op (or None eagerly)."""
    parts_tensors = [p[0] for v in values if isinstance(v, FormattedString) for p in v.parts if not isinstance(p, str)]
    g = graph_of([*values, *parts_tensors]) or get_default_graph()
    if g is None:
        out = stream if not isinstance(stream, str) else sys.stderr if stream == "stderr" else sys.stdout
        builtins.print(*values, sep=sep, end=end, file=out, flush=flush)
        return None
    if not isinstance(stream, str) or stream not in ("stdout", "stderr"):
        stream = stream_of(stream, g)
    template, tensors = [], []
    for i, v in enumerate(values):
        if i:
            template.append(sep)
        if isinstance(v, Tensor):
            template.append(None)
            tensors.append(v)
        elif isinstance(v, FormattedString):
            pieces, values_of = template_of(v.parts)
            template += pieces
            tensors += values_of
        else:
            template.append(str(v))
    attrs = {"template": tuple(template), "sep": sep, "end": end, "stream": stream}
    if stream.startswith("file:"):  # the console's streams are always flushed (see _print_kernel)
        attrs["flush"] = bool(flush)
    return g.create_op(print_op, tensors, attrs, name=name or "Print")


def _assert_kernel(cond, *data, message="", template=None):
    if not np.all(cond):
        if template is not None:  # the message, with the values of `data` formatted in it
            text = render(template, data)
            error = InvalidArgumentError(f"assertion failed: {text}")
            error.formatted = text
            raise error
        detail = ", ".join(str(d) for d in data)
        raise InvalidArgumentError(f"assertion failed: {message}" + (f" [{detail}]" if detail else ""))
    return ()


assert_op = define_op("Assert", shape=lambda c, *d, **a: [], kernel=_assert_kernel, num_outputs=0, cost=CHEAP,
                      stateful=True, attrs={"message": opt(STR), "template": opt(optional(TEMPLATE))})
assert_op.not_differentiable("no outputs")


def Assert(condition, data=(), message: str = "", name=None) -> Operation | None:  # noqa: N802 (TF's name)
    """Fail the run with `message` (and the values of `data`) when `condition` is false.
    A FormattedString message is formatted with its tensors' values when it fails."""
    data = list(data) if isinstance(data, (list, tuple)) else [data]
    attrs = {"message": str(message)}
    if isinstance(message, FormattedString) and not data:
        attrs["template"], data = template_of(message.parts)
    g = graph_of([condition, *data]) or get_default_graph()
    if g is None:
        _assert_kernel(condition, *data, **attrs)
        return None
    return g.create_op(assert_op, [condition, *data], attrs, name=name or "Assert")
