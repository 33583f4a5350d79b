"""What a `for` loop on tensors iterates over: a tensor's rows, `range` with a tensor
bound, and `enumerate` / `zip` / `reversed` of those. Each is a `GraphIterable`: a length (a tensor
or a Python int) and `item(k)` for a tensor index k, so `for_stmt` runs it as a graph
loop over `k`. `zip` stops at the shortest length, as Python's does.

Python iterables (lists, dicts, `dict.items()`, ranges of Python ints on their own) are
not GraphIterables: their loops run as Python.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

import graphcore as gc
from graphcore.ops.array_ops import constant_value
from graphcore.errors import StagingError

from . import exceptions, path_types
from .staging import is_number, is_tensor, to_tensor


class GraphIterable:
    """Iterated by a graph loop: `length()` items, `item(k)` the k-th. Python iterates it
    (`list(enumerate(x))`, unpacking) only when its length is known while tracing."""

    def length(self):
        raise NotImplementedError

    def item(self, k):
        raise NotImplementedError

    def __iter__(self):
        n = self.length()
        if is_tensor(n):
            n = constant_value(n)
        if n is None or np.ndim(n) != 0:
            raise TypeError(f"iterating over {type(self).__name__.replace('Tensor', '').lower() or 'it'} of a graph "
                            "tensor whose length is only known when the graph runs is not supported outside a "
                            "`for` statement; loop over it with `for`, which becomes a graph loop")
        return (self.item(k) for k in range(int(n)))


class TensorRows(GraphIterable):
    """The rows of a tensor (its first dimension)."""

    def __init__(self, tensor):
        self.tensor = tensor

    def length(self):
        dims = self.tensor.shape.dims
        return dims[0] if dims and dims[0] is not None else gc.shape(self.tensor)[0]

    def item(self, k):
        return self.tensor[k]


class TensorRange(GraphIterable):
    """`range(...)` with a tensor bound."""

    def __init__(self, start, limit, delta):
        if not is_tensor(delta) and delta == 0:
            builtins.range(0, 1, delta)  # Python's ValueError
        self.start, self.limit, self.delta = (to_tensor(v, gc.int64) for v in (start, limit, delta))
        if is_tensor(delta):
            exceptions.check(gc.not_equal(self.delta, to_tensor(0, gc.int64)),
                             ValueError("range() arg 3 must not be zero"))

    def length(self):
        start, limit, delta = self.start, self.limit, self.delta
        return gc.maximum((limit - start + delta - gc.sign(delta)) // delta, to_tensor(0, gc.int64))

    def item(self, k):
        """Python's range yields Python ints: weakly typed (`x + i` keeps x's dtype)."""
        out = self.start + k * self.delta
        out.weak = True
        return out


class TensorEnumerate(GraphIterable):
    """`enumerate(x, start)` of a GraphIterable: (index, item) pairs."""

    def __init__(self, inner: GraphIterable, start=0):
        self.inner, self.start = inner, start

    def length(self):
        return self.inner.length()

    def item(self, k):
        index = k + self.start
        if is_tensor(index):
            index.weak = True  # a Python int, as enumerate gives
        return (index, self.inner.item(k))


class TensorZip(GraphIterable):
    """`zip(...)` where at least one argument is a tensor (or another GraphIterable)."""

    def __init__(self, parts: list[GraphIterable]):
        self.parts = parts

    def length(self):
        lengths = [p.length() for p in self.parts]
        if not builtins.any(is_tensor(n) for n in lengths):
            return builtins.min(lengths)
        out = to_tensor(lengths[0], gc.int64)
        for n in lengths[1:]:
            out = gc.minimum(out, to_tensor(n, gc.int64))
        return out

    def item(self, k):
        return tuple(p.item(k) for p in self.parts)


class TensorReversed(GraphIterable):
    """`reversed(x)` of a GraphIterable: its items, last first."""

    def __init__(self, inner: GraphIterable):
        self.inner = inner

    def length(self):
        return self.inner.length()

    def item(self, k):
        return self.inner.item(self.inner.length() - 1 - k)


def as_graph_iterable(value) -> GraphIterable | None:
    """The GraphIterable a `for` over `value` runs as, or None for a Python loop."""
    if isinstance(value, GraphIterable):
        return value
    if is_tensor(value):
        return TensorRows(value)
    return None


def _zip_part(value, position: int) -> GraphIterable:
    staged = as_graph_iterable(value)
    if staged is not None:
        return staged
    if isinstance(value, range):
        return TensorRange(value.start, value.stop, value.step)
    if isinstance(value, (list, tuple)):
        if value and builtins.all(is_tensor(v) for v in value):
            return TensorRows(gc.stack(list(value)))
        if builtins.all(is_number(v) for v in value):
            return TensorRows(gc.constant(np.asarray(value)))
    raise StagingError(
        f"zip() argument {position + 1} is a Python {type(value).__name__} zipped with a tensor; in a loop on a "
        "tensor every zipped value must be a tensor, a range, or a list of numbers or of tensors. Convert it "
        "(e.g. gc.constant(...)) or iterate over it in a separate Python loop.")


def zip_(*values, strict: bool = False):
    """`zip`: a graph loop's iterable when any argument is a tensor, else Python's zip."""
    if not builtins.any(as_graph_iterable(v) is not None for v in values):
        return builtins.zip(*values, strict=strict) if strict else builtins.zip(*values)
    if strict:
        raise StagingError("zip(..., strict=True) over tensors is not supported: lengths are only known when the "
                           "graph runs. Assert the lengths are equal and use zip() without strict.")
    return TensorZip([_zip_part(v, i) for i, v in enumerate(values)])


def enumerate_(value, start=0):
    """`enumerate`: of a tensor or another GraphIterable, a graph loop's iterable."""
    staged = as_graph_iterable(value)
    if staged is not None:
        return TensorEnumerate(staged, start)
    return builtins.enumerate(value, start)


def reversed_(value):
    """`reversed`: of a tensor or another GraphIterable (`range(n)` with a tensor n), a
    graph loop's iterable, last item first; Python's reversed otherwise."""
    staged = as_graph_iterable(value)
    if staged is None:
        return builtins.reversed(value)
    if not isinstance(staged, (TensorRange, TensorRows)):  # as Python: enumerate, zip, reversed are iterators
        python_name = {TensorEnumerate: "enumerate", TensorZip: "zip"}.get(type(staged), "reversed")
        raise TypeError(f"'{python_name}' object is not reversible")
    return TensorReversed(staged)


def range_(*args):
    """`range`: with any tensor argument, a graph loop's iterable (of integers: a float is
    Python's TypeError, a value that is an int on some paths only a refusal)."""
    if not builtins.any(is_tensor(a) for a in args):
        return builtins.range(*args)
    for a in args:
        if not is_tensor(a):
            operator.index(a)  # Python's TypeError for a float
            continue
        path_types.refuse_mixed(a, path_types.INTS | path_types.BOOLS, "range() of",
                                "Convert it with int(...) first.")
        kinds = path_types.kinds_of(a)
        if a.dtype.is_floating and isinstance(kinds, frozenset) and kinds <= path_types.FLOATS:
            name = path_types.TYPE_NAMES[min(kinds)].replace("np.", "numpy.")
            raise TypeError(f"'{name}' object cannot be interpreted as an integer")
    if len(args) == 1:
        return TensorRange(0, args[0], 1)
    if len(args) == 2:
        return TensorRange(args[0], args[1], 1)
    return TensorRange(*args)
