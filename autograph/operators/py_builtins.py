"""Builtins with tensor overloads: `len`, `range`, `abs`, `min`, `max`, `int`, `float`,
`bool`, `any`, `all`, `enumerate`, `zip`, `reversed`, `isinstance`, `type`, `print`, `str`, `repr`,
`ascii`, `format`, `sorted`. On Python values each is the builtin; `any` / `all` of a
generator expression stop where Python stops, also on tensors."""
from __future__ import annotations

import builtins
import types
import warnings

import numpy as np

import graphcore as gc
from graphcore.errors import StagingError
from graphcore.ops.array_ops import int_of_float
from graphcore.ops.logging_ops import FormattedString
from graphcore.ops.py_function_ops import is_pyobject
from graphcore.ops.python_type_ops import int_check

from . import effects, math_functions, numpy_types, path_types, python_calls, short_circuit
from .iterables import enumerate_, range_, reversed_, zip_
from .staged_lists import StagedList
from .staging import checkpoint, is_tensor, is_weak, location, python_value, rollback, to_tensor, truth
from .strings import ascii_, container_text, format_, holds_tensor, repr_, str_


# iterators whose items are made as they are asked for
_LAZY = (types.GeneratorType, builtins.map, builtins.filter, builtins.zip, builtins.enumerate)


def len_(x):
    if is_pyobject(x) or isinstance(x, FormattedString):  # a run-time string or object: its len when the graph runs
        return python_calls.stage(builtins.len, (x,), None, gc.int64, name="len")
    if isinstance(x, StagedList):
        return _python_int(x.length())
    if is_tensor(x):
        if x.dtype == gc.variant:
            return _python_int(gc.tensor_list_length(x))
        dims = x.shape.dims
        if dims and dims[0] is not None:
            return dims[0]
        return _python_int(gc.shape(x)[0])
    return builtins.len(x)


def _python_int(t):
    """A Python int when the graph runs: held as an int64, as a Python int in a graph is
    (an int32 length came back as np.int32)."""
    return python_value(t if t.dtype == gc.int64 else gc.cast(t, gc.int64))


def abs_(x):
    if is_pyobject(x):  # abs() of a run-time object: Python's, when the graph runs
        return python_calls.stage(builtins.abs, (x,), None, gc.pyobject, name="abs")
    if not is_tensor(x):
        return builtins.abs(x)
    return x if x.dtype.is_bool else gc.abs(x)  # numpy's abs of a bool is the bool


def _any_all(x, name: str):
    """`any(v)` / `all(v)` of a 1-d array tensor: the truth of its elements, as Python iterates it."""
    if isinstance(x, (list, tuple)) and builtins.any(is_tensor(v) for v in x):  # a list of tensors: their truths
        truths = [truth(v) if is_tensor(v) else builtins.bool(v) for v in x]
        out = truths[0]
        for t in truths[1:]:
            out = (gc.logical_or if name == "any" else gc.logical_and)(out, t)
        return out
    if not is_tensor(x):
        return (builtins.any if name == "any" else builtins.all)(x)
    rank = x.shape.rank
    if rank == 0:
        raise TypeError(f"{name}() of a single number: a numpy scalar is not iterable (Python raises here too)")
    if rank != 1:
        raise ValueError(
            f"{name}() of a {'tensor of unknown rank' if rank is None else f'{rank}-d array'} takes the truth of "
            f"each row, which is ambiguous for a row of several elements (numpy raises here in Python). Use "
            f"np.{name}(x) for all elements")
    return getattr(np, name)(x)  # numpy's any / all on a graph tensor build the graph ops


def any_(x):
    if isinstance(x, _LAZY) and gc.get_default_graph() is not None:
        return short_circuit.any_all(x, "any")  # stops at the first true item, as Python does
    return python_value(_any_all(x, "any"))


def all_(x):
    if isinstance(x, _LAZY) and gc.get_default_graph() is not None:
        return short_circuit.any_all(x, "all")
    return python_value(_any_all(x, "all"))


def sorted_(iterable, /, *, key=None, reverse=False):
    """`sorted(gen)`: Python consumes the whole generator first, so its items are computed
    here in order. Scalars of one dtype (with Python numbers it holds exactly), with keys of
    that kind, are picked in Python's order (`_picked_in_order`: gradients reach each item);
    any other list holding graph values is sorted by Python when the graph runs, as a run-time
    object."""
    if gc.get_default_graph() is None:
        return builtins.sorted(iterable, key=key, reverse=reverse)
    if isinstance(iterable, _LAZY):
        iterable = builtins.list(iterable)
    if isinstance(iterable, (list, tuple)) and not is_tensor(reverse):
        picked = _picked_in_order(builtins.list(iterable), key, builtins.bool(reverse))
        if picked is not None:
            return picked
    kwargs = {**({"key": key} if key is not None else {}), **({"reverse": reverse} if reverse else {})}
    staged = python_calls.maybe_stage(builtins.sorted, (iterable,), kwargs)
    if staged is not python_calls.NOT_STAGED:
        return staged
    return builtins.sorted(iterable, **kwargs)


# How a builtin calls a user function while tracing (sorted's key=): as converted code calls it,
# by conversion.converted_call, installed when conversion is imported (`install_user_call`):
# conversion imports this module, so importing it from here would close a circle.
_user_call = None


def install_user_call(call) -> None:
    global _user_call
    _user_call = call


def _picked_in_order(items: list, key, reverse: bool):
    """Python's sorted() of scalars as the items themselves: the order is Python's own sorted
    of the keys' values, computed when the graph runs (its stability, where it puts NaNs), and
    each output picks its item by it (a gather, so gradients flow; its Python type is the
    picked item's). `key` is called on each item in order, as Python calls it, while tracing.
    None, with nothing built, where the items or keys are not scalars of one kind that one
    dtype holds exactly (the run-time sorted then)."""
    stacked = _stacked_scalars(items)
    if stacked is None:
        return None
    keys, mark = stacked, checkpoint()
    if key is not None:
        keys = _stacked_scalars([_user_call(key, (v,), None) for v in items])
        if keys is None:
            rollback(mark)
            return None
    n = builtins.len(items)

    def order(values):
        return np.array(builtins.sorted(builtins.range(n), key=values.__getitem__, reverse=reverse), dtype=np.int64)
    positions = gc.py_function(order, [keys], gc.int64, stateful=False, shapes=[n], name="SortedOrder")
    picked = gc.gather(stacked, positions)
    out = []
    for k in builtins.range(n):
        item = _python_typed_like(picked[k], items)
        steps = [(gc.equal(positions[k], i), items[i]) for i in builtins.range(1, n)]
        out.append(path_types.chosen(item, items[0], steps))
    return out


def _stacked_scalars(values: list):
    """The values as one rank-1 tensor, if they are scalar tensors of one dtype and Python
    numbers of that kind it holds exactly (at least one tensor), else None."""
    tensors = [v for v in values if is_tensor(v)]
    if not tensors:
        return None
    dtype = tensors[0].dtype
    if builtins.any(t.dtype != dtype or t.shape.rank != 0 for t in tensors) or dtype.np_dtype is None or \
            not (dtype.is_bool or dtype.is_numeric):
        return None
    kind = _kind_of(tensors[0])
    if not builtins.all(is_tensor(v) or (_kind_of(v) == kind and _held_exactly(v, dtype)) for v in values):
        return None
    return gc.stack([v if is_tensor(v) else gc.constant(v, dtype=dtype) for v in values])


def _held_exactly(v, dtype) -> bool:
    try:
        held = np.asarray(v, dtype=dtype.np_dtype).item()
    except (OverflowError, ValueError):
        return False
    return builtins.bool(held == v) or (held != held and v != v)


def _minmax(args, kwargs, name: str, py):
    """`min` / `max` with Python's semantics where tensors take part: Python keeps the first
    operand unless a later one compares greater (max) or less (min), so `max(1.0, nan)` is
    1.0 and `max(nan, 1.0)` is nan, and over a 1-d array the first element counts the same
    way (a NaN after it is never greater). Python returns the winning operand itself, with
    its own type: the result carries the winner's (path_types), ints and floats compared in
    a float64 that holds the ints exactly (else the run fails). Refused: ints and floats with
    `key=`, arrays compared as wholes, `default=`."""
    if builtins.len(args) == 1 and isinstance(args[0], _LAZY):
        args = (builtins.list(args[0]),)  # max(v * 2 for v in xs): consumed here as Python would, then a list
    if builtins.len(args) == 1 and isinstance(args[0], (list, tuple)) and builtins.any(is_tensor(v) for v in args[0]):
        # `max([x, y, 0.5])`: Python iterates the list as it takes operands (the first winner kept)
        items, kwargs = tuple(args[0]), {k: v for k, v in kwargs.items() if k != "default"}
        return items[0] if builtins.len(items) == 1 else _minmax(items, kwargs, name, py)
    if not builtins.any(is_tensor(a) for a in args):
        return py(*args, **kwargs)
    key = kwargs.pop("key", None)
    if builtins.len(args) == 1:
        if key is not None or builtins.set(kwargs) - {"default"}:
            raise TypeError(f"{name}() of a graph array with key= is not supported: Python would call the key on "
                            f"each element. Compute the keys with array ops and pick with np.argmax / np.argmin")
        return _minmax_of_array(args[0], name, kwargs)
    if kwargs:
        raise TypeError(f"{name}() got unexpected keyword arguments {sorted(kwargs)}")
    kinds = {_kind_of(a) for a in args}
    given = args  # the operands as written: the winner's type is its own
    if kinds == {"int", "float"} and key is None and builtins.all(not is_tensor(a) or a.shape.rank == 0
                                                                    for a in args):
        args = tuple(_float_exactly(a, name) if _kind_of(a) == "int" else a for a in args)
        kinds = {"float"}
    if builtins.len(kinds) > 1:
        raise TypeError(
            f"{name}() of {' and '.join(sorted(kinds))} values: Python returns whichever operand wins, with its own "
            f"type, so the result would be an int or a float depending on the values, and a graph value has one "
            f"dtype. Make the operands the same kind, e.g. `{name}(float(n), x)` or `{name}(x, 0.0)`")
    for a in args:
        if is_tensor(a) and a.shape.rank != 0:
            raise ValueError(
                f"{name}() of arrays compares them as wholes, and the truth value of an array with more than one "
                f"element is ambiguous (numpy raises here in Python). Use "
                f"np.{'maximum' if name == 'max' else 'minimum'}(a, b) for elementwise values, or np.{name}(a) for "
                f"the {'largest' if name == 'max' else 'smallest'} element of one array")
    wins = gc.greater if name == "max" else gc.less
    steps = []  # (condition, operand) of each pick: the winner keeps its own Python type (path_types)
    if key is not None:  # Python compares key(a) and keeps the operand; the key runs on tensors
        key = OVERLOADS.get(key, key)
        out, best = args[0], key(args[0])
        for a in args[1:]:
            k = key(a)
            better = wins(k, best)
            out, best = gc.where(better, a, out), gc.where(better, k, best)
            steps.append((better, a))
        return path_types.chosen(_python_typed_like(out, args), args[0], steps)
    out = args[0]
    for a, written in zip(args[1:], given[1:]):
        if kinds == {"bool"}:  # bools: the or / and of them is the value Python keeps
            out = (gc.logical_or if name == "max" else gc.logical_and)(out, a)
        else:
            better = wins(a, out)
            out = gc.where(better, a, out)
            steps.append((better, written))
    if not steps:
        return _python_typed_like(out, given)
    return path_types.chosen(_python_typed_like(out, given), given[0], steps)


def _float_exactly(a, name: str):
    """An int operand of max / min among floats, as the float64 they are compared in: the run
    fails where that float does not hold the int exactly (Python compares them exactly)."""
    return path_types.stored(a, to_tensor(a, gc.float64), f"<an int operand of {name}()>", 0, f"{name}()")


def _python_typed_like(out, args):
    """The winner of Python numbers is a Python number (weakly typed, as `min(k, 3)` of a
    counter must be to meet an int32 tensor later); of numpy values, a numpy value."""
    if is_tensor(out) and builtins.all(is_weak(a) or isinstance(a, builtins.bool) for a in args):
        out.weak = True
    return out


def _minmax_of_array(x, name: str, kwargs: dict):
    """`max(v)` of a 1-d array tensor: Python iterates it (its elements are numpy scalars)."""
    if not is_tensor(x):
        return (builtins.max if name == "max" else builtins.min)(x, **kwargs)
    rank = x.shape.rank
    if rank == 0:
        raise TypeError(f"{name}() of a single number: a numpy scalar is not iterable (Python raises here too); "
                        f"pass two or more values, or an array")
    if rank != 1:
        raise ValueError(
            f"{name}() of a {'tensor of unknown rank' if rank is None else f'{rank}-d array'} iterates its rows and "
            f"compares them as wholes (numpy raises here in Python when a row has more than one element). Use "
            f"np.{name}(x) or x.{name}() for the {'largest' if name == 'max' else 'smallest'} element")
    if x.shape.dims[0] == 0:
        if "default" in kwargs:
            return kwargs["default"]
        raise ValueError(f"{name}() iterable argument is empty")
    if "default" in kwargs and x.shape.dims[0] is None:
        raise TypeError(f"{name}(..., default=) of an array whose length is only known when the graph runs: the "
                        f"result would be the default or an element, decided by the length. Test len(x) with an if")
    reduce = gc.reduce_max if name == "max" else gc.reduce_min
    if x.dtype.is_floating:  # a NaN counts only as the first element: later ones are never greater
        x = gc.where(gc.not_equal(x, x), x[:1], x)
    return reduce(x)


def _kind_of(value) -> str:
    if is_tensor(value):
        d = value.dtype
        return "bool" if d.is_bool else "int" if d.is_integer else "float" if d.is_floating else str(d)
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    return type(value).__name__


def min_(*args, **kwargs):
    return _minmax(args, kwargs, "min", builtins.min)


def max_(*args, **kwargs):
    return _minmax(args, kwargs, "max", builtins.max)


def _zero_d_only() -> bool:
    """Whether this numpy's int() / float() take only 0-d arrays (numpy 2.3 on; before, any
    array of one element, with a DeprecationWarning from 1.25)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            builtins.float(np.zeros(1))
    except TypeError:
        return True
    return False


_ZERO_D_ONLY = _zero_d_only()


def _scalar(x, what: str):
    """`int(t)` / `float(t)` need one element, as Python's do on numpy arrays (or a 0-d
    array, as this numpy's do)."""
    dims = x.shape.dims
    if _ZERO_D_ONLY and dims and not x.weak:
        raise TypeError(f"only 0-dimensional arrays can be converted to Python scalars ({what}() of a tensor of "
                        f"shape {x.shape}, as numpy says): index it first, e.g. {what}(x[0])")
    if dims is not None and None not in dims and int(np.prod(dims, dtype=np.int64)) != 1:
        raise TypeError(f"{what}() of a tensor of shape {list(dims)}: only a tensor of one element converts to a "
                        f"Python scalar; index it first, or use graphcore.cast for every element.")
    return x


def int_(x=0, *args):
    if is_pyobject(x) or isinstance(x, FormattedString) or (args and is_tensor(args[0])):  # int(str(n)), int(s, 16)
        return python_calls.stage(builtins.int, (x, *args), None, gc.int64, name="int")
    if not is_tensor(x):
        return builtins.int(x, *args)
    x = _scalar(x, "int")
    if x.dtype.is_floating:
        check = _raises_unread(x)
        with check.graph.control_dependencies([check.op]):  # (NaN: the check raises, in program order)
            return python_value(int_of_float(x))
    return python_value(gc.cast(x, gc.int64))


def _raises_unread(x):
    """Python's int() of NaN or an infinity raises whether or not its value is read, so an
    effect (IntCheck, run in program order on every run) raises it; the value op waits for it
    (else it failed first, before prints that come earlier in the program). The value op stays
    lazy: a float beyond int64 fails only where it is read (Python's int holds it; a graph's does not)."""
    return math_functions.kept(lambda: int_check(x), x)


def float_(x=0.0):
    if is_pyobject(x) or isinstance(x, FormattedString):
        return python_calls.stage(builtins.float, (x,), None, gc.float64, name="float")
    return python_value(gc.cast(_scalar(x, "float"), gc.float64)) if is_tensor(x) else builtins.float(x)


def bool_(x=False):
    if is_pyobject(x):
        return python_calls.stage(builtins.bool, (x,), None, gc.bool_, name="bool")
    if is_tensor(x):
        dims = x.shape.dims
        if dims is None or (dims and None in dims):
            # numpy raises ValueError for an array of other than one element, read or not: an effect
            return python_value(math_functions.kept(lambda: truth(x), x))
        return python_value(truth(x))  # a Python bool
    return builtins.bool(x)


def _stands_for(t) -> list:
    """Python values of the types a graph tensor stands for: a weak tensor is a Python number,
    a scalar a numpy scalar (numpy's operators give those, not 0-d arrays), an array an
    ndarray; with the rank unknown, either."""
    np_dtype = getattr(t.dtype, "np_dtype", None)
    if np_dtype is None:
        return []
    if t.weak:
        return [builtins.bool(0) if t.dtype.is_bool else builtins.int(0) if t.dtype.is_integer else 0.0]
    rank = t.shape.rank
    scalar, array = np_dtype.type(0), np.zeros((1,) * builtins.max(rank or 1, 1), dtype=np_dtype)
    return [scalar] if rank == 0 else [array] if rank is not None else [scalar, array]


def isinstance_(obj, classinfo):
    """`isinstance` answered for the value a graph tensor stands for (np.float64 is a float, an
    int64 array an np.ndarray), not for the Tensor object; refused when tracing cannot know."""
    if not is_tensor(obj) or builtins.isinstance(obj, classinfo):
        return builtins.isinstance(obj, classinfo)
    if path_types.depends(obj) and obj.shape.rank == 0:  # a type that depends on the path: the tag decides
        out = path_types.answer(obj, lambda v: builtins.isinstance(v, classinfo), "isinstance() of")
        return out if builtins.isinstance(out, builtins.bool) else python_value(out)
    answers = {builtins.isinstance(v, classinfo) for v in _stands_for(obj)}
    if builtins.len(answers) != 1:
        raise TypeError(f"isinstance() of the graph tensor {obj.name} ({obj.dtype}, shape {obj.shape}): whether its "
                        f"value is a numpy scalar, an array or a Python number is not known while tracing. Test "
                        f"x.dtype or np.ndim(x) instead")
    return answers.pop()


def type_(*args):
    """`type(x)` of a graph tensor: the type of the value it stands for (np.float64, np.ndarray, int)."""
    if builtins.len(args) != 1 or not is_tensor(args[0]):
        return builtins.type(*args)
    if path_types.depends(args[0]) and args[0].shape.rank == 0:
        return path_types.python_type(args[0])
    types = {builtins.type(v) for v in _stands_for(args[0])}
    if builtins.len(types) != 1:
        raise TypeError(f"type() of the graph tensor {args[0].name} ({args[0].dtype}, shape {args[0].shape}): "
                        f"whether its value is a numpy scalar or an array is not known while tracing. Test x.dtype "
                        f"or np.ndim(x) instead")
    return types.pop()


class _NoOutput:
    """A file that checks print's arguments as Python's print would, writing nothing."""

    def __init__(self, file):
        if file is not None:
            file.write  # noqa: B018 (Python's AttributeError for a file without write())

    def write(self, text):
        return len(text)


def print_(*values, sep=" ", end="\n", file=None, flush=False):
    """While tracing, a Print op: it prints when the graph runs, on every call, in
    program order (a print of Python values only, run at trace time, would print once,
    and in both branches of an `if` on a tensor). Python's print otherwise."""
    g = gc.get_default_graph()
    if g is None:
        return builtins.print(*values, sep=sep, end=end, file=file, flush=flush)
    # Python's TypeError for a sep / end that is not a str, AttributeError for a file without write()
    builtins.print(sep=sep, end="", file=_NoOutput(file))
    builtins.print(end=end, file=_NoOutput(file))
    values = [python_calls.runtime_list(v) if isinstance(v, StagedList) else  # a list built in a graph loop
              container_text(v) if holds_tensor(v) else  # `print([x])`: the items' values
              path_types.shown(v, "printing")[0] if is_tensor(v) else v for v in values]  # (as its path's type)
    with g.control_dependencies(effects.dependencies()):
        op = gc.print(*values, sep=sep if sep is not None else " ", end=end if end is not None else "\n",
                      stream=file, flush=builtins.bool(flush))
    effects.record(op)
    return None


OVERLOADS = {
    builtins.len: len_, builtins.range: range_, builtins.abs: abs_, builtins.min: min_, builtins.max: max_,
    builtins.int: int_, builtins.float: float_, builtins.bool: bool_, builtins.enumerate: enumerate_,
    builtins.zip: zip_, builtins.reversed: reversed_, builtins.isinstance: isinstance_, builtins.print: print_,
    builtins.type: type_, builtins.any: any_, builtins.all: all_,
    builtins.str: str_, builtins.repr: repr_, builtins.ascii: ascii_, builtins.format: format_,
    builtins.sorted: sorted_,
}
OVERLOADS.update(math_functions.OVERLOADS)
OVERLOADS.update(numpy_types.OVERLOADS)


def round_(number, ndigits=None):
    """`round(x, n)` keeps x's type, also where it depends on the path (path_types), and
    rounds as that type does (a Python float rounds its exact decimal value, numpy scales
    first: round(2.675, 2) is 2.67 and np.round gives 2.68): each kind's rounding is computed
    and the tag chooses. Refused where that cannot be done (an array, bools)."""
    if ndigits is None or not path_types.depends(number):
        return math_functions.round_(number, ndigits)
    if isinstance(ndigits, int) and number.shape.rank == 0:
        out = path_types.round_by_kind(number, ndigits)  # each path's own rounding, chosen by the tag
        if out is not None:
            return out
    kinds = path_types.kinds_of(number)
    python_rounding = number.weak  # the rounding the graph does: Python's for a weak value, else numpy's
    numpy_floats = {path_types.NP_FLOAT32, path_types.NP_FLOAT64}
    if isinstance(kinds, frozenset) and ((path_types.PY_FLOAT in kinds and not python_rounding)
                                         or (kinds & numpy_floats and python_rounding)):
        raise StagingError(
            f"{location(0)}: round(x, n) of a value that is {path_types.describe_kinds(kinds)} depending on the path "
            f"the run takes: Python rounds a Python float by its exact decimal value and numpy scales first "
            f"(round(2.675, 2) is 2.67 for one and 2.68 for the other), so the graph cannot round it as Python does "
            f"on every path. Convert it first: float(x) or np.float64(x).")
    return path_types.same_kind(math_functions.round_(number, ndigits), number)


OVERLOADS[builtins.round] = round_


def gradients_(ys, xs, *args, **kwargs):
    """gc.gradients in converted code: a gradient has its x's type, whatever the Python types
    of the values it went through (path_types would call it untracked otherwise)."""
    return [path_types.anchor(g) for g in gc.gradients(ys, xs, *args, **kwargs)]


OVERLOADS[gc.gradients] = gradients_


def filter_(function, iterable):
    """`filter(f, xs)`: Python's, item by item; a test that is a graph tensor is refused (how
    many items pass is known only when the graph runs, and a Python list has one length)."""
    if is_tensor(iterable):
        raise TypeError(f"{location(0)}: filter() over an array that is a graph tensor: how many items pass is known "
                        f"only when the graph runs. Use a numpy mask instead: `x[x > 0]`, or np.where.")
    kept_items = []
    for v in iterable:
        test = v if function is None else function(v)
        if is_tensor(test):
            raise TypeError(f"{location(0)}: filter() with a test that is a graph tensor (its value is known only when "
                            f"the graph runs): how many items pass, and so the length of the result, would depend on "
                            f"it. Use a numpy mask instead: `a = np.array(items); a[a > t]` (an array), or np.where.")
        if test:
            kept_items.append(v)
    return builtins.iter(kept_items)


OVERLOADS[builtins.filter] = filter_
