"""Comprehensions and generator expressions in converted code. Their iterables and `if`
conditions must be Python values (a tensor has no Python length): a tensor is refused at
the user's line and column, a comprehension's with a ConversionError, a generator
expression's with a StagingError saying to write a `for` loop. A generator expression is
Python's generator, remembered with its split (`SplitGenerator`): its items can also be
computed one at a time inside graph conds, so `any` / `all` of it stop where Python would
(short_circuit.py)."""
from __future__ import annotations

import os

import graphcore as gc

from ..errors import ConversionError, StagingError, _location
from . import generator_splits
from .iterables import GraphIterable
from .side_effects import check_advance, note_made
from .staging import is_tensor, location

_ITER_ADVICE = ("a comprehension over a tensor (or range, zip or enumerate of one) cannot be converted: comprehensions run as Python and the tensor's "
                "rows are only known when the graph runs. Write a for loop that appends to a list (it becomes a "
                "graph loop), or use graphcore.map_fn.")
_TEST_ADVICE = ("a comprehension's condition is a tensor, which cannot be converted: comprehensions run as Python "
                "and the condition is only known when the graph runs. Write a for loop with an if statement that "
                "appends to a list, or select with graphcore.where.")
_GENERATOR_ITER_ADVICE = (
    "a graph tensor (or range, zip or enumerate of one), whose number of items is only known when the graph runs, "
    "so the generator has no staged form. Write a for loop that accumulates instead (it becomes a graph loop): "
    "for any(v > 0 for v in xs), `found = False` then `for v in xs:` / `    found = found or v > 0`; for sum(), "
    "`total += v`. Or use numpy on the array: np.any(xs > 0), np.sum(xs * 2).")


def _where(origin: tuple) -> str:
    filename, lineno, col = origin
    return f"{os.path.basename(filename)}:{lineno}"


def _refused(value) -> bool:
    return is_tensor(value) or isinstance(value, GraphIterable)  # a tensor, range/zip/enumerate of one


def comprehension_iter(iterable, origin: tuple, generator_iterable: str | None = None):
    """The iterable of a comprehension, if it is a Python value. `generator_iterable`: in a
    generator expression, the iterable's text (the refusal names it)."""
    check_advance(iterable, "this comprehension" if generator_iterable is None else "this generator expression",
                  origin[1])
    if _refused(iterable):
        if generator_iterable is not None:
            raise StagingError(f"{_where(origin)}: this generator expression iterates over `{generator_iterable}`, "
                               f"{_GENERATOR_ITER_ADVICE}\n{_location(*origin)}")
        raise ConversionError(_ITER_ADVICE, *origin)
    return iterable


def comprehension_test(test, origin: tuple):
    """An `if` condition of a comprehension, if it is a Python value."""
    if _refused(test):
        raise ConversionError(_TEST_ADVICE, *origin)
    return test


class SplitGenerator:
    """What the converter split `(item for v in xs if c)` into: `targets`, a Python generator
    of the loop variables' values (`((v,) for v in xs if c)`: the `for` and `if` parts, run as
    Python), and `item`, a function of those values (`lambda v: item`). The generator the user
    holds is Python's (`generator_expression`), each item computed when asked for; `any` /
    `all` instead take the values one position at a time (`positions`) and compute each item
    inside the graph cond that decides whether Python would reach it (a cond branch may be
    traced more than once: it computes the item again from the same values)."""

    __slots__ = ("item", "targets", "origin", "lost", "_staged")

    def __init__(self, item, targets, origin: tuple):
        self.item, self.targets, self.origin, self.lost = item, targets, origin, None
        self._staged = None  # (the result op, the Positions) of the staged any / all that lost the position

    def check_position(self) -> None:
        if self.lost is not None:
            raise StagingError(f"{location(0)}: {self.lost}")

    def positions(self, builtin: str) -> "Positions":
        """The loop variables' values from where the generator is now, for `builtin`'s
        staged short circuit (any / all). After a staged any / all whose graph was undone (a
        cond branch traced again), the same values again: that trace is being redone."""
        if self.lost is not None:
            op, positions = self._staged
            if _built(op):  # a second use
                self.check_position()
            positions.builtin = builtin
            return positions
        return Positions(self, builtin)

    def lose_position(self, builtin: str, result, positions: "Positions") -> None:
        """After a staged any / all, how far the generator ran is decided when the graph
        runs: it cannot be iterated again (the user's generator raises when asked)."""
        self._staged = (result.op, positions)
        self.lost = (f"the generator expression made at {_where(self.origin)} was given to {builtin}() before, "
                     f"which stops at an item whose truth is only known when the graph runs, so how many items are "
                     f"left is not known while tracing. Make a new generator (or a list) for this second use.\n"
                     f"{_location(*self.origin)}")


def _built(op) -> bool:
    """Whether `op` is still part of the graph being built: in its graph, and that graph the
    one being built, one enclosing it, or a function an op still in such a graph calls (not
    the branch of a trace that was undone)."""
    g = op.graph
    if op not in g:
        return False
    enclosing = set()
    current = gc.get_default_graph()
    while current is not None:
        enclosing.add(current)
        current = getattr(current, "outer_graph", None)
    while g not in enclosing:
        caller = getattr(g, "caller", None)
        if caller is None or caller not in caller.graph:
            return False
        g = caller.graph
    return True


class Positions:
    """The loop variables' values of a SplitGenerator by position, each fetched once (a cond
    branch traced again reads the same ones)."""

    __slots__ = ("_split", "builtin", "_values", "_ended")

    def __init__(self, split: SplitGenerator, builtin: str):
        self._split, self.builtin, self._values, self._ended = split, builtin, [], False

    def at(self, k: int, staged: bool):
        """The values of the k-th item from the start, or None past the end. `staged`: the
        fetch happens inside a graph cond, where ops made by the `for` / `if` parts (a print
        in a condition) would be lost when the branch is traced again: refused."""
        while len(self._values) <= k and not self._ended:
            g = gc.get_default_graph()
            mark = g.checkpoint() if g is not None else 0
            try:
                self._values.append(next(self._split.targets))
            except StopIteration:
                self._ended = True
            if staged and g is not None and g.checkpoint() != mark:
                raise StagingError(
                    f"{_where(self._split.origin)}: the `for` / `if` part of this generator expression computes "
                    f"graph values (a print, a call, the items of another generator), and {self.builtin}() reaches "
                    f"it only when the items before it decide so at run time. Compute them in a for loop instead "
                    f"(`for v in ...:` with an if that breaks), or use a list comprehension to compute every item."
                    f"\n{_location(*self._split.origin)}")
        return self._values[k] if k < len(self._values) else None

    def item(self, values):
        return self._split.item(*values)




def _items(split: SplitGenerator):
    split.check_position()
    item = split.item
    for values in split.targets:
        yield item(*values)
        if split.lost is not None:  # given to a staged any / all meanwhile
            split.check_position()


def generator_expression(item, targets, origin: tuple):
    """The generator `(item for ...)` is in Python (a generator object, named <genexpr>),
    remembered with its split for any / all."""
    split = SplitGenerator(item, targets, origin)
    gen = _items(split)
    gen.__name__, gen.__qualname__ = "<genexpr>", "<genexpr>"
    generator_splits.remember(gen, split)
    return note_made(gen)
