"""A Python list that a graph loop appended to: it stays a list.

Inside a loop on a tensor, `acc.append(v)` pushes onto a tensor list (a variant loop
variable). After the loop, and in the loops around it, `acc` is a `StagedList` over that
tensor list, and behaves as the Python list would where the graph can say the same:

    acc.append(v)        another push                len(acc)      a tensor
    acc[i]               the i-th element (i < 0 counts from the end)
    for v in acc         a graph loop over the elements
    np.stack(acc, axis)  the elements stacked
    np.array(acc)        the same (numpy_types: an empty list fails the run unless its
                         elements are float64 scalars, as numpy's empty array is float64)
    return acc           a Python list of numpy values, as the plain function returns

Everything else a Python list can do (slicing, `acc * 2`, np.sum, np.concatenate,
iterating in unconverted code) is refused with a TypeError that says what to write: a list whose length
is only known when the graph runs cannot pretend to be a Python list there.
"""
from __future__ import annotations

import sys

import numpy as np

import graphcore as gc

from graphcore.errors import StagingError

from . import path_types
from .iterables import GraphIterable
from .staging import is_tensor, location, to_tensor


def python_number(v) -> bool:
    """A Python bool, int or float, or a tensor standing for one (weak, a scalar)."""
    if is_tensor(v):
        return bool(v.weak) and v.shape.rank == 0
    return type(v) in (bool, int, float)


# The appended items of a list are Python numbers and numpy values both: where one kind
# ends is known only when the graph runs (returning such a list is refused).
MIXED = "mixed"


def joined(a, b):
    """The kind of two runs of appended items: None (no item), True (Python numbers), False
    (numpy values) or MIXED."""
    if a is None:
        return b
    if b is None:
        return a
    return a if a == b else MIXED


def list_kinds(value) -> tuple:
    """(head, appended) of a list: whether each item known while tracing is a Python number,
    and the kind of the items graph control flow appended after them."""
    if isinstance(value, StagedList):
        return value.head, value.python
    return tuple(python_number(v) for v in value), None


def branch_kinds(values) -> tuple:
    """(head, appended) of the list two branches (or a loop's entry and body) leave: the
    items both know while tracing, then what either appends beyond them."""
    kinds = [list_kinds(v) for v in values]
    k = min(len(h) for h, _ in kinds)
    heads = {h[:k] for h, _ in kinds}
    if len(heads) > 1:  # item i a Python number on one path, numpy's on another
        return (), MIXED
    appended = None
    for head, python in kinds:
        for flag in head[k:]:
            appended = joined(appended, flag)
        appended = joined(appended, python)
    return heads.pop(), appended


class StagedList(GraphIterable):
    """A list of tensors of one dtype and element shape, held by a tensor list `handle`."""

    __slots__ = ("handle", "dtype", "shape", "python", "head")

    def __init__(self, handle, dtype, shape, python=None, head: tuple = ()):
        self.handle, self.dtype, self.shape = handle, gc.as_dtype(dtype), shape
        # which items are Python numbers (the ints of int(v), a counter: returned as Python's):
        # `head` says it of each item known while tracing, `python` of all appended after them
        # in graph control flow (None: none yet; MIXED: both kinds)
        self.head, self.python = tuple(head), python

    def item_kinds(self, what: str, where: str = "") -> tuple:
        """(head, appended): which items are Python numbers, for `what` (returning the list,
        printing it) to give them as Python holds them; refused where that depends on the run.
        Lists of other dtypes hold numpy values only (a Python float in a float32 list)."""
        if self.python is MIXED:
            raise StagingError(
                f"{where or location(0)}: {what} a list appended to in graph control flow with both Python numbers and numpy "
                f"values (`acc.append(0.0)` and `acc.append(x)` of a numpy x, say): which of its items Python holds as "
                f"Python numbers depends on the path the run takes. Append one kind: float(v) / int(v) for Python "
                f"numbers, or np.float64(v) / np.int64(v) for numpy's.")
        if self.dtype not in (gc.int64, gc.float64, gc.bool_):
            return (), False
        return self.head, bool(self.python)

    # -- what a list can do in the graph ---------------------------------------------------
    def appended(self, value) -> "StagedList":
        """The list with `value` appended. A numpy value of another dtype is refused (a cast
        would change it: a float appended to a list that began with the int 0 was truncated);
        a Python number (weak) takes the list's dtype, as it would in a numpy array."""
        if is_tensor(value) and value.dtype != self.dtype and not value.weak:
            if path_types.depends(value):
                raise StagingError(
                    f"{location(0)}: appending a value whose Python type depends on the path the run takes (an int "
                    f"on one path and a float on another, say) to a list built in a graph loop, whose elements have "
                    f"one dtype ({self.dtype} from the first append): Python's list would hold both types. Append "
                    f"float(...) or int(...) of it.")
            raise TypeError(f"appending a {value.dtype} value to a list of {self.dtype} values built in a graph loop; "
                            f"convert it with .astype(...) so every element has one dtype")
        v = to_tensor(value, self.dtype)
        return StagedList(gc.tensor_list_push_back(self.handle, v, element_dtype=self.dtype), self.dtype, self.shape,
                          joined(self.python, python_number(value)), self.head)

    def length(self):
        return gc.tensor_list_length(self.handle)

    def item(self, k):
        return gc.tensor_list_get_item(self.handle, k, self.dtype, self.shape)

    def stacked(self):
        return gc.tensor_list_stack(self.handle, self.dtype, self.shape)

    def __getitem__(self, index):
        if isinstance(index, slice):
            raise TypeError("slicing a list built in a graph loop is not supported; index it (acc[i]) or stack it "
                            "first (np.stack(acc)[a:b])")
        if not (is_tensor(index) or isinstance(index, (int, np.integer))):
            raise TypeError(f"list indices must be integers, not {type(index).__name__}")
        k = to_tensor(index, gc.int64)
        n = self.length()
        return self.item(gc.where(k < 0, k + n, k))

    # -- what it must not pretend ----------------------------------------------------------
    def __iter__(self):
        # numpy's np.stack looks at its sequence with tuple(arrays)
        # before dispatching on __array_function__: there, and only there, this list
        # stands for itself, so that the dispatch below runs. Anywhere else iterating
        # would have to invent a length.
        if sys._getframe(1).f_code.co_name == "_arrays_for_stack_dispatcher":
            return iter((self,))
        raise TypeError(_ADVICE.format(what="iterating over it with a Python builtin (sum, max, min, sorted, list, "
                                            "...) or outside converted code") +
                        " For sum(acc), loop: `total = 0.0` then `for v in acc: total += v` (Python's order of adding).")

    def __len__(self):
        raise TypeError(_ADVICE.format(what="len() outside converted code"))

    def __array__(self, dtype=None, copy=None):  # (np.array in converted code stacks: numpy_types)
        raise TypeError(_ADVICE.format(what="np.array(...) of it outside converted code") +
                        " Use np.stack(acc) to get the array.")

    def __array_function__(self, func, types, args, kwargs):
        if func is np.stack:
            return _stack(self, *args[1:], **kwargs)
        raise TypeError(_ADVICE.format(what=f"np.{func.__name__}(...) of it") + " Use np.stack(acc) first.")

    def __repr__(self) -> str:
        return f"<list of {self.dtype}{gc.TensorShape(self.shape) if self.shape is not None else ''} built in a " \
               f"graph loop: {self.handle.name}>"


_ADVICE = ("this list was appended to in a loop on a tensor, so its length is only known when the graph runs, and "
           "{what} is not supported. Inside @autograph.function, index it, take len(), loop over it with `for`, "
           "append, stack it with np.stack(acc), or return it.")


def listed(kinds: tuple, values) -> list:
    """The run's items of a staged list as Python's list holds them (`kinds`: item_kinds)."""
    head, python = kinds
    return [v.item() if (head[i] if i < len(head) else python) else v for i, v in enumerate(values)]


def _stack(staged: StagedList, axis=0, out=None, **kwargs):
    if out is not None or kwargs:
        raise TypeError("np.stack of a list built in a graph loop takes only axis")
    s = staged.stacked()
    rank = s.shape.rank
    if axis == 0:
        return s
    if rank is None:
        raise TypeError("np.stack(acc, axis) with axis != 0 needs the elements' rank known while tracing")
    axis = axis % rank
    perm = list(range(1, axis + 1)) + [0] + list(range(axis + 1, rank))
    return gc.transpose(s, perm)
