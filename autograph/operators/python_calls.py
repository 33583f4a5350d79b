"""Calls the graph has no op for, staged as Python calls that run when the graph runs
(graphcore's PyFunction): `str(x)` and the string's methods, `json.dumps(float(x))`,
`time.perf_counter()`, `os.environ.get(...)`. Python would make these calls on the values,
every time the line runs; made while tracing they would see a tensor's description or freeze
a reading into the graph.

A staged call is an effect (operators/effects.py): it runs in program order with prints,
once per execution of its line, also when its value is never read (Python's call raises
whether or not its result is used). Its result is a graph number (weak: the Python int,
float or bool it stands for) where the call's result type is known (`len`, `int`, `==`,
`.startswith`, the clock), else a run-time Python object (`gc.pyobject`) that later staged
calls, prints, f-strings, comparisons and the function's return use."""
from __future__ import annotations

import builtins
import operator
import os
import random
import sys
import time

import numpy as np

import graphcore as gc
from graphcore.ops.logging_ops import FormattedString, render, template_of
from graphcore.ops.py_function_ops import is_pyobject, pyobject

from . import path_types
from .staged_lists import StagedList, listed
from .staging import is_tensor, location

NOT_STAGED = object()

# Functions that read the clock: a reading while tracing would be the same on every call.
CLOCKS = {time.time: gc.float64, time.perf_counter: gc.float64, time.monotonic: gc.float64,
          time.process_time: gc.float64, time.thread_time: gc.float64, time.time_ns: gc.int64,
          time.perf_counter_ns: gc.int64, time.monotonic_ns: gc.int64, time.process_time_ns: gc.int64}
# Draws of Python's random module (its hidden Random instance, or the user's): what they give.
# (seed and setstate run in program order with the draws; shuffle changes a list built while
# tracing, which a call on its run-time copy would not: still refused)
RANDOM_DRAWS = {
    **{name: gc.float64 for name in ("random", "uniform", "gauss", "normalvariate", "lognormvariate",
                                     "expovariate", "betavariate", "gammavariate", "triangular", "vonmisesvariate",
                                     "paretovariate", "weibullvariate")},
    **{name: gc.int64 for name in ("randint", "randrange", "getrandbits", "binomialvariate")},
    **{name: pyobject for name in ("choice", "choices", "sample", "randbytes", "seed", "getstate", "setstate")},
}
# Builtins without a graph op, given graph values: what they give.
_STAGED_BUILTINS = {builtins.hex: pyobject, builtins.oct: pyobject, builtins.bin: pyobject, builtins.chr: pyobject,
                    builtins.ord: gc.int64, builtins.sorted: pyobject, builtins.hash: gc.int64}
# Builtins of a run-time object (a list repeated by a tensor count): Python's, on its value.
_OBJECT_BUILTINS = frozenset({builtins.sum, builtins.min, builtins.max, builtins.any, builtins.all, builtins.divmod,
                              builtins.pow, builtins.round})
# Library modules whose functions, given graph values, are called on the values at run time.
STAGED_MODULES = frozenset({"json", "math", "cmath", "string", "textwrap", "datetime", "decimal", "fractions",
                            "statistics", "re", "os", "posixpath", "ntpath", "time", "sys", "io", "binascii",
                            "hashlib", "base64", "struct", "calendar", "locale", "unicodedata", "html", "urllib"})

# Methods of a run-time object whose result type is known: they give graph values.
_BOOL_METHODS = frozenset({"startswith", "endswith", "isdigit", "isalpha", "isalnum", "isspace", "islower",
                           "isupper", "isnumeric", "isdecimal", "isidentifier", "istitle", "isascii",
                           "isprintable", "is_integer", "isdisjoint", "issubset", "issuperset"})
_INT_METHODS = frozenset({"find", "rfind", "index", "rindex", "count", "bit_length", "bit_count"})


def _as_python_number(out):
    """A graph value standing for the Python number a call returned (prints and returns as one)."""
    out.weak = True
    return path_types.anchor(out)


def runtime_list(staged):
    """A list appended to in a graph loop (StagedList), as the run-time Python list it is: its
    items numpy values, or Python numbers where Python numbers were appended."""
    kinds = staged.item_kinds("looking at the text of")
    return gc.py_function(lambda a: listed(kinds, a), [staged.stacked()], pyobject, stateful=False, name="PyList")


def _leaves(value, out: list):
    """`value` with each graph value replaced by a slot number (its tensor appended to `out`):
    the call's arguments are rebuilt from the run-time values."""
    if isinstance(value, FormattedString):
        value = rendered(value)
    elif isinstance(value, StagedList):
        value = runtime_list(value)
    if is_tensor(value):
        out.append(value)
        return _Slot(len(out) - 1)
    if type(value) in (list, tuple):
        return type(value)(_leaves(v, out) for v in value)
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):  # a namedtuple
        return type(value)(*(_leaves(v, out) for v in value))
    if type(value) is dict:
        return {k: _leaves(v, out) for k, v in value.items()}
    return value


class _Slot:
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


def _rebuild(value, values):
    if isinstance(value, _Slot):
        return values[value.i]
    if type(value) in (list, tuple):
        return type(value)(_rebuild(v, values) for v in value)
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return type(value)(*(_rebuild(v, values) for v in value))
    if type(value) is dict:
        return {k: _rebuild(v, values) for k, v in value.items()}
    return value


def _holds_graph_value(value) -> bool:
    if is_tensor(value) or isinstance(value, (FormattedString, StagedList)):
        return True
    if isinstance(value, (list, tuple)):
        return builtins.any(_holds_graph_value(v) for v in value)
    if type(value) is dict:
        return builtins.any(_holds_graph_value(v) for v in value.values())
    return False


def _name_of(func) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or type(func).__name__
    module = getattr(func, "__module__", None)
    return f"{module}.{name}" if module and module != "builtins" else name


# Calls that cannot fail on the values a graph holds (numbers, arrays, strings, lists of
# them) and change nothing: not chained as effects (their data orders them), a little cheaper.
_TOTAL = frozenset({builtins.str, builtins.repr, builtins.ascii})


def stage(func, args=(), kwargs=None, result=pyobject, name=None):
    """`func(*args, **kwargs)` when the graph runs, on the values of the graph values inside
    the arguments (nested in lists, tuples and dicts); `result` is the dtype of a graph
    number it returns, or `pyobject`. An effect (in program order, on every run) unless it
    is one of _TOTAL."""
    tensors: list = []
    shape_args = _leaves(tuple(args), tensors)
    shape_kwargs = _leaves(dict(kwargs or {}), tensors)
    inputs, as_python = [], []
    for t in tensors:
        if is_pyobject(t):
            inputs.append(t)
            as_python.append(False)
        else:
            shown, python_number = path_types.shown(t, "calling Python on")
            inputs.append(shown)
            as_python.append(python_number)

    if not shape_kwargs and builtins.all(isinstance(a, _Slot) and a.i == i for i, a in enumerate(shape_args)) \
            and builtins.len(shape_args) == builtins.len(tensors):
        def call(*values):  # (the common case, str(x) or s.upper(): the values are the arguments)
            return func(*values)
    else:
        def call(*values):
            return func(*_rebuild(shape_args, values), **_rebuild(shape_kwargs, values))

    call.__qualname__ = name or _name_of(func)
    effect = not builtins.any(func is f for f in _TOTAL)
    out = gc.py_function(call, inputs, result, stateful=effect, as_python=as_python,
                         shapes=None if result is pyobject else [], name="PyCall")
    return out if result is pyobject else _as_python_number(out)


def rendered(s: FormattedString):
    """The text of an f-string with tensors in it, as a run-time string."""
    template, tensors = template_of(s.parts)
    return gc.py_function(lambda *values: render(template, values), tensors, pyobject, stateful=True,
                          name="PyFormat")


class StagedMethod:
    """`s.upper` of a run-time object: calling it stages the call on the object's value."""

    __slots__ = ("obj", "name")

    def __init__(self, obj, name: str):
        self.obj, self.name = obj, name

    def __call__(self, *args, **kwargs):
        name = self.name
        result = gc.bool_ if name in _BOOL_METHODS else gc.int64 if name in _INT_METHODS else pyobject
        return stage(lambda o, *a, **k: getattr(o, name)(*a, **k), (self.obj, *args), kwargs, result,
                     name=f".{name}")

    def __repr__(self) -> str:
        return f"<staged method .{self.name} of {self.obj.name}>"


# Methods a run-time object may have (of the types staged calls give): only these, so that
# `hasattr(t, "_fields")` and the like still answer False for a run-time object.
_OBJECT_METHODS = frozenset(n for t in (str, bytes, list, tuple, dict, set, int, float) for n in dir(t)
                            if not n.startswith("_"))
# Methods of Python and numpy scalars that a graph tensor lacks: staged on the number's value.
_NUMBER_METHODS = frozenset({"is_integer", "as_integer_ratio", "hex", "bit_length", "bit_count"})


def _bool_result(fn, name):
    def op(a, b):
        def checked(x, y):
            out = fn(x, y)
            if not isinstance(out, (builtins.bool, np.bool_)):
                raise TypeError(f"`{name}` of run-time Python objects gave {type(out).__name__}, not a bool: the "
                                f"graph needs a truth value here")
            return builtins.bool(out)
        return stage(checked, (a, b), None, gc.bool_, name=name)
    return op


_COMPARISONS = {"eq": (operator.eq, "=="), "ne": (operator.ne, "!="), "lt": (operator.lt, "<"),
                "le": (operator.le, "<="), "gt": (operator.gt, ">"), "ge": (operator.ge, ">=")}
_ARITHMETIC = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "mod": operator.mod,
               "truediv": operator.truediv, "floordiv": operator.floordiv, "pow": operator.pow}


def _repeats(seq, count) -> bool:
    """Whether `seq * count` is Python's repetition of a list or tuple by a scalar tensor count
    that Python repeats by (an int; a float or numpy bool count raises Python's TypeError, from
    path_types): a run-time list or tuple, made when the graph runs."""
    if not isinstance(seq, (list, tuple)) or count.shape.rank != 0 or count.dtype.np_dtype is None:
        return False
    path_types.check_repetition_count(seq, count)
    return count.dtype.is_integer or count.dtype.is_bool


def _install() -> None:
    """Operators of gc.Tensor for run-time objects: Python's operators on the values (the
    graph's numeric ops refuse a pyobject by its dtype)."""
    T = gc.Tensor  # noqa: N806
    if getattr(T, "_pyobject_operators", False):
        return
    T._pyobject_operators = True

    for key, (fn, symbol) in _COMPARISONS.items():
        graph_op = getattr(T, f"__{key}__")
        staged = _bool_result(fn, symbol)

        def cmp(self, other, graph_op=graph_op, staged=staged):
            if self.dtype is pyobject or (is_tensor(other) and other.dtype is pyobject) or \
                    isinstance(other, (str, FormattedString)):
                return staged(self, other)
            return graph_op(self, other)
        setattr(T, f"__{key}__", cmp)

    for key, fn in _ARITHMETIC.items():
        graph_op, graph_rop = getattr(T, f"__{key}__", None), getattr(T, f"__r{key}__", None)

        def binary(self, other, graph_op=graph_op, fn=fn, key=key):
            if self.dtype is pyobject or (is_tensor(other) and other.dtype is pyobject) or \
                    isinstance(other, (str, FormattedString)) and key in ("add", "mul") or \
                    key == "mul" and _repeats(other, self):
                return stage(fn, (self, other), None, pyobject, name=key)
            return graph_op(self, other)

        def rbinary(self, other, graph_rop=graph_rop, fn=fn, key=key):
            if self.dtype is pyobject or isinstance(other, (str, FormattedString)) and key in ("add", "mul") or \
                    key == "mul" and _repeats(other, self):
                return stage(fn, (other, self), None, pyobject, name=key)
            return graph_rop(self, other)
        setattr(T, f"__{key}__", binary)
        setattr(T, f"__r{key}__", rbinary)

    graph_getitem = T.__getitem__

    def getitem(self, key):
        if self.dtype is pyobject:
            return stage(operator.getitem, (self, key), None, pyobject, name="[]")
        return graph_getitem(self, key)
    T.__getitem__ = getitem

    for key, fn, symbol in (("neg", operator.neg, "-"), ("pos", operator.pos, "+"), ("invert", operator.invert, "~"),
                            ("abs", operator.abs, "abs")):
        graph_unary = getattr(T, f"__{key}__", None)
        if graph_unary is None:
            continue

        def unary(self, graph_unary=graph_unary, fn=fn, symbol=symbol):
            if self.dtype is pyobject:  # -s, ~k of a run-time object: Python's operator on its value
                return stage(fn, (self,), None, pyobject, name=symbol)
            return graph_unary(self)
        setattr(T, f"__{key}__", unary)

    def getattr_(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            d = T.dtype.__get__(self)
        except AttributeError:
            raise AttributeError(name) from None
        if d is pyobject and name in _OBJECT_METHODS:
            return StagedMethod(self, name)
        if name in _NUMBER_METHODS and d.np_dtype is not None and T.shape.__get__(self).rank == 0:
            return StagedMethod(self, name)  # x.is_integer(): the method of the number x stands for
        raise AttributeError(f"'Tensor' object has no attribute {name!r}")
    T.__getattr__ = getattr_

    # An f-string with tensors in it is a str whose text, while tracing, shows `<Tensor ...>`:
    # compared or indexed in converted code it is the run-time text (its other uses go
    # through converted_call, len_ and contains).
    F = FormattedString  # noqa: N806
    for key in ("eq", "ne"):
        text_op, staged = getattr(str, f"__{key}__"), _bool_result(_COMPARISONS[key][0], _COMPARISONS[key][1])

        def fcmp(self, other, text_op=text_op, staged=staged):
            if gc.get_default_graph() is None:
                return text_op(self, other)
            return staged(rendered(self), rendered(other) if isinstance(other, F) else other)
        setattr(F, f"__{key}__", fcmp)
    F.__hash__ = str.__hash__
    def fiter(self):
        if gc.get_default_graph() is None:
            return str.__iter__(self)
        from graphcore.errors import StagingError  # noqa: PLC0415

        raise StagingError(
            f"{location(0)}: iterating an f-string with a tensor in it: its text (and so its characters) is known only "
            "when the graph runs. Loop over range(len(s)) and index s[i], or compute the result in one Python call "
            "(autograph.py_function)")
    F.__iter__ = fiter
    F.__mul__ = lambda self, k: str.__mul__(self, k) if gc.get_default_graph() is None else \
        stage(operator.mul, (rendered(self), k), None, pyobject, name="*")
    F.__rmul__ = lambda self, k: str.__rmul__(self, k) if gc.get_default_graph() is None else \
        stage(operator.mul, (k, rendered(self)), None, pyobject, name="*")
    F.__getitem__ = lambda self, key: str.__getitem__(self, key) if gc.get_default_graph() is None else \
        stage(operator.getitem, (rendered(self), key), None, pyobject, name="[]")


_install()


def maybe_stage(f, args, kwargs):
    """What converted_call does with a call it would make as it is, while a graph is built:
    the staged call where Python would read the clock or environment, or call a library
    function (or a string's method) on graph values; NOT_STAGED otherwise."""
    try:
        clock = CLOCKS.get(f)
    except TypeError:
        clock = None
    if clock is not None:
        return stage(f, args, kwargs, clock)
    if f is time.sleep:  # sleeps on every call, in program order (not once, while tracing)
        return stage(f, args, kwargs, pyobject, name="time.sleep")
    owner = getattr(f, "__self__", None)
    if isinstance(owner, random.Random):  # random.random(), random.randint(1, n): a new draw on every run
        kind = RANDOM_DRAWS.get(getattr(f, "__name__", ""))
        return NOT_STAGED if kind is None else stage(f, args, kwargs, kind, name=f"random.{f.__name__}")
    if owner is os.environ and getattr(f, "__name__", "") in ("get", "__getitem__", "__contains__"):
        return stage(f, args, kwargs, gc.bool_ if f.__name__ == "__contains__" else pyobject,
                     name=f"os.environ.{f.__name__}")
    if f is os.getenv:
        return stage(f, args, kwargs, pyobject)
    if isinstance(owner, FormattedString) and getattr(f, "__name__", "") != "format":
        # f"{x}".replace(...): the method of the run-time text
        return StagedMethod(rendered(owner), f.__name__)(*args, **(kwargs or {}))
    if not (_holds_graph_value(args) or _holds_graph_value(kwargs or {})):
        return NOT_STAGED
    if owner is not None and (owner is sys.stdout or owner is sys.stderr) and f.__name__ in ("write", "writelines"):
        # sys.stdout.write(str(x)): Python looks sys.stdout up when the line runs, as print does
        stream, method = "stdout" if owner is sys.stdout else "stderr", f.__name__
        return stage(lambda *a, **k: getattr(getattr(sys, stream), method)(*a, **k), args, kwargs, pyobject,
                     name=f"sys.{stream}.{method}")
    if isinstance(owner, (str, bytes)) or (owner is not None and hasattr(owner, "write") and
                                           f.__name__ in ("write", "writelines")):
        return stage(f, args, kwargs, pyobject)
    try:
        builtin = _STAGED_BUILTINS.get(f)
    except TypeError:
        builtin = None
    if builtin is not None:  # hex(n), chr(k), ord(c): Python's, on the value
        return stage(f, args, kwargs, builtin, name=f.__name__)
    module = (getattr(f, "__module__", None) or getattr(type(owner), "__module__", "") or "").split(".")[0]
    if module.lstrip("_") in STAGED_MODULES:
        return stage(f, args, kwargs, pyobject)
    if f in _OBJECT_BUILTINS and builtins.any(is_pyobject(a) for a in (*args, *(kwargs or {}).values())):
        return stage(f, args, kwargs, pyobject, name=f.__name__)  # sum([1, 2] * n): Python's, on the run-time list
    return NOT_STAGED


def py_function(func, inputs, Tout, stateful: bool = True, grad=None, name=None, shapes=None):  # noqa: N803
    """`gc.py_function` for converted code (see graphcore.ops.py_function_ops): Python's call
    on the values when the graph runs; a stateful call runs in program order with prints.
    Python numbers among the inputs reach `func` as Python numbers (as the call would see them)."""
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    as_python = [bool(getattr(t, "weak", False)) or isinstance(t, (builtins.int, builtins.float, builtins.bool))
                 for t in inputs]
    return gc.py_function(func, inputs, Tout, stateful=stateful, grad=grad, name=name, shapes=shapes,
                          as_python=as_python)


def reraise_python(error) -> None:
    """If `error` is a Python call (a PyFunction) failing when the graph ran, raise the
    exception Python raised, of its own type, with a note naming the user's line and the
    frame and iteration (an ExecutionError[ValueError] would hide a JSONDecodeError or the
    user's own exception class)."""
    op, original = getattr(error, "op", None), getattr(error, "original", None)
    if op is None or op.type != "PyFunction" or original is None or isinstance(original, gc.AutographError):
        return
    where = f" at {op.source}" if op.source is not None else ""
    frame = f", in frame {error.frame} iteration {error.iteration}" if error.frame and "/" in error.frame else ""
    original.add_note(f"  raised by the Python call made when the graph ran{where}{frame}")
    raise original
