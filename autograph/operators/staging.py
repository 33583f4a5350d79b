"""Shared rules for staging Python state into graph control flow: weak typing of Python
numbers, what a branch or loop output must be, and errors that name the variable."""
from __future__ import annotations

import builtins
import contextlib
import numbers
import re
import threading
import weakref

import numpy as np

import graphcore as gc
from graphcore import source_info
from graphcore.errors import StagingError
from graphcore.library import uncalled_functions
from graphcore.ops._helpers import is_python_number, is_weak, join_kinds  # noqa: F401 (conditionals reads it here)

from . import effects, path_types
from .tensor_values import to_tensor  # noqa: F401 (staging's name for it, used across the operators)
from .variables import PartialReturn, Undefined, UndefinedReturnValue


def is_tensor(x) -> bool:
    return isinstance(x, gc.Tensor)


def is_number(x) -> bool:
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, (np.ndarray,))


_ARRAY_DTYPES = frozenset(np.dtype(d) for d in (np.bool_, np.int32, np.int64, np.float32, np.float64))


def is_array_value(x) -> bool:
    """A numpy array of a graph dtype: like a number, a concrete value a graph holds as a
    constant (`m = np.eye(2)` before a loop that computes `m = m @ a`)."""
    return isinstance(x, np.ndarray) and x.dtype in _ARRAY_DTYPES


def is_value(x) -> bool:
    """A tensor, or what can become one: a number or a numpy array of numbers."""
    return is_tensor(x) or is_number(x) or is_array_value(x)


class TruthOnly:
    """`a and b` / `a or b` on a tensor whose operands cannot be one graph value (a bool
    and a number): Python gives one operand or the other, the graph cannot. Its truth
    (a bool tensor) is all that is known, which is all an `if`, `while`, `not`, `assert`
    or another `and` / `or` asks of it; any other use raises the refusal."""

    __slots__ = ("truth", "message")

    def __init__(self, truth_value, message: str):
        self.truth, self.message = truth_value, message

    def _fail(self, *args, **kwargs):
        raise StagingError(self.message)

    __bool__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __neg__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __getitem__ = __iter__ = __len__ = __index__ = __int__ = __float__ = _fail
    __abs__ = __array__ = __eq__ = __ne__ = __invert__ = __and__ = __or__ = __xor__ = _fail
    __hash__ = None

    def __repr__(self) -> str:
        return "TruthOnly(...)"


def as_test(x):
    """A value in a test position: a TruthOnly stands for its truth there."""
    return x.truth if isinstance(x, TruthOnly) else x


def truth(x):
    """Python's truth value of a tensor, as a bool tensor: `x != 0` for a number, as
    `if n:` tests it; an array of several elements is ambiguous, as in numpy."""
    if isinstance(x, TruthOnly):
        return x.truth
    if x.dtype is gc.pyobject:  # `if s:` of a run-time string: Python's truth of the value, when it runs
        out = gc.py_function(builtins.bool, [x], gc.bool_, shapes=[], name="PyTruth")
        out.weak = True
        return out
    dims = x.shape.dims
    if dims is not None and None not in dims and int(np.prod(dims, dtype=np.int64)) != 1:
        raise ValueError(f"{location(0)}: the truth value of an array of shape {tuple(dims)} is ambiguous, as numpy "
                         "says of an array with more than one element: use np.any(x) or np.all(x).")
    if dims:  # one element in an array of rank >= 1: its truth, as numpy's
        x = gc.reshape(x, [])
    if x.dtype == gc.bool_:
        return x
    if not x.dtype.is_numeric:
        raise TypeError(f"{location(0)}: a {x.dtype} tensor has no truth value")
    return gc.not_equal(x, 0)


def python_value(t):
    """A tensor standing for a Python number or bool (what `int()`, `len()`, `not`, `in`,
    `any()` give): weakly typed, so that it takes the dtype of the numpy values it meets and
    prints as Python prints (True, not np.True_). A new tensor when `t` is not weak already:
    `t` may be the argument itself (int() of an int64 casts nothing), another variable's
    value, whose own type must not change; and when `t`'s type depends on the path
    (`float(r)` of an int-or-float r is a float on every path: an anchor, see path_types)."""
    if is_tensor(t) and (not t.weak or path_types.depends(t)):
        t = gc.identity(t)
        t.weak = True
        path_types.anchor(t)
    return t


def natural_dtype(x) -> gc.DType:
    if is_tensor(x):
        return x.dtype
    return gc.dtypes.dtype_of_value(x)


def location(line: int) -> str:
    loc = source_info.user_location(skip=2)
    if loc is None:
        return f"line {line}"
    return f"{loc.filename}:{line or loc.lineno}"


def join_dtypes(name: str, a, b, what_a: str, what_b: str, line: int) -> gc.DType:
    """The dtype two values of variable `name` share (graphcore's join_kinds: two strong
    dtypes do not join), or an error naming it."""
    da, db = natural_dtype(a), natural_dtype(b)
    joined = join_kinds(da, is_weak(a), db, is_weak(b), strong_promote=False)
    if joined is not None:
        return joined
    if gc.pyobject in (da, db):
        obj, what_obj, other, what_other = (da, what_a, db, what_b) if da is gc.pyobject else (db, what_b, da, what_a)
        raise StagingError(
            f"{location(line)}: {quoted(name)} is a run-time Python object {what_obj} (the result of a Python call "
            f"made when the graph runs, such as sum() of a list repeated by a tensor count) but {other} {what_other}: "
            f"the graph does not know that object's type, so the two cannot be one variable. Convert the object "
            f"where it is made: int(...), float(...) or str(...) of it.")
    raise StagingError(
        f"{location(line)}: {quoted(name)} is {da} {what_a} but {db} {what_b}; a variable must keep one dtype "
        f"across graph control flow. Cast one of them (e.g. with graphcore.cast).")


_RETURNED = re.compile(r"retval_+\d*(.*)$")


def quoted(name: str) -> str:
    """A variable of the converted code as the user knows it: the converter's return slot
    (`retval_`, its items `retval_[0]`) is "the returned value"."""
    m = _RETURNED.match(name)
    return f"the returned value{m.group(1)}" if m else f"'{name}'"


def runtime_object_pair(a, b) -> bool:
    """Two values of one variable (before and after a loop body, or of two branches) that
    become one run-time Python object (python_calls): a run-time string and a Python string."""
    def kind(v):
        return "object" if is_tensor(v) and v.dtype is gc.pyobject else "text" if isinstance(v, (str, bytes)) else None
    return {kind(a), kind(b)} in ({"object"}, {"object", "text"})


def mark_weak(tensors, weak) -> None:
    """Outputs of a cond or loop whose values were weak on every path stay weak."""
    for t, w in zip(tensors, weak):
        if is_tensor(t):
            t.weak = bool(w)


# Arrays the program copied (`x.copy()`, `np.copy(x)`): in numpy no other name shares them,
# though the graph's copy is an Identity of the original (graph values are never shared).
_COPIES: "weakref.WeakValueDictionary[int, gc.Tensor]" = weakref.WeakValueDictionary()


def mark_copy(t):
    if is_tensor(t):
        _COPIES[id(t)] = t
    return t


def is_copy(t) -> bool:
    return _COPIES.get(id(t)) is t


def fill_dims(example) -> list[int]:
    """The shape of the zeros that stand in for a variable where it is unassigned: the
    shape `example` (its assigned value) has, unknown dimensions as 0."""
    if is_tensor(example):
        return [d or 0 for d in (example.shape.dims or ())]
    return list(np.shape(example))


def zeros(dims, dtype: gc.DType):
    """A constant stand-in for an unassigned variable; never read by correct code (reads
    are guarded, see maybe_defined)."""
    return gc.constant(np.zeros(dims, dtype=dtype.np_dtype), dtype=dtype)


def same_python_value(a, b) -> bool:
    """Whether two Python values of a variable may be merged as one (no graph output)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):  # (a branch traced on a copy of it, unchanged)
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 (arrays, containers of tensors, odd objects: treat as different)
        return False


def is_special(name: str) -> bool:
    """Generated return-value variables: filled with zeros where a path leaves them unset,
    without a defined flag (the `do_return` flag already says whether they are set)."""
    return name.startswith("retval_")


def describe(value) -> str:
    if isinstance(value, TruthOnly):
        raise StagingError(value.message)
    if is_tensor(value):
        return f"a {value.dtype} tensor"
    if isinstance(value, (Undefined, UndefinedReturnValue)):
        return "undefined"
    if isinstance(value, PartialReturn):
        return f"{'None' if value.value is None else describe(value.value)} on some paths, not returned yet on others"
    return f"a Python {type(value).__name__}"


class Replan(Exception):
    """Raised from inside a graph builder to retrace it with a better plan."""

    def __init__(self, plan):
        super().__init__("replan")
        self.plan = plan


_dry = threading.local()


@contextlib.contextmanager
def dry_running():
    """While a loop body is traced once on the values before the loop (to plan its
    variables): a Python `raise` or failing `assert` on that path is not the program's,
    since the real body, on loop variables, may not take it."""
    depth = getattr(_dry, "depth", 0)
    _dry.depth = depth + 1
    try:
        yield
    finally:
        _dry.depth = depth


def in_dry_run() -> bool:
    return getattr(_dry, "depth", 0) > 0


def checkpoint():
    """A mark to roll the graph being built back to, with the effect chain's position
    (an effect recorded by a trace that is then undone must not stay the chain's token)."""
    g = gc.get_default_graph()
    chain = effects.current()
    saved = (chain, chain.token, chain.effects) if chain is not None else None
    if g is None:
        return (None, 0, saved, None, ())
    return (g, g.checkpoint(), saved, g.names_taken(), tuple(g.library))


def rollback(mark) -> None:
    """Undo what was built since `checkpoint()`: its ops, its effects, the names it took
    (a loop built again after a replan is `while`, as if built once) and the functions it
    added to the library (Control Flow v2 branches and bodies) that nothing left calls."""
    g, n, saved, names, functions = mark
    if g is not None:
        g.rollback(n)
        g.give_back_names(names)
        added = set(g.library).difference(functions)
        if added:
            g.drop_functions(uncalled_functions(g, added))
    if saved is not None:
        chain, token, count = saved
        chain.token, chain.effects = token, count
