"""`any(it)` / `all(it)` of a lazy iterator while a graph is built, with Python's short
circuit: items in order, stopping at the first true one (any) or false one (all), so items
after it, their prints and their errors, never run. The result is a Python bool.

A generator expression written in converted code (comprehensions.SplitGenerator) is
staged as a chain of conds, as `or` / `and` are (logical.py): an item that is a tensor decides
at run time, and the items after it are computed inside the cond branch that needs them.
Any other lazy iterator (a generator function, map, zip) cannot be replayed inside a cond: its
items are taken in order while they are Python values; one that is a tensor decides only if it
is the last, else refused (computing the rest anyway would run their effects, raise their
errors and rebind their `:=` names where Python does not)."""
from __future__ import annotations

import builtins

from graphcore.errors import StagingError

from .comprehensions import SplitGenerator
from .generator_splits import split_of
from .conditionals import if_exp
from .side_effects import check_advance
from .staging import as_test, is_tensor, location, python_value, truth


def any_all(iterable, name: str):
    split = split_of(iterable)
    if split is not None:
        return _conds(split, name, iterable)
    return _until_a_tensor(iterable, name)


def _conds(gen: SplitGenerator, name: str, user_generator):
    stop = name == "any"  # the truth that ends the scan, and the result then
    positions = gen.positions(name)
    staged = [False]

    def scan(k: int):
        while True:
            values = positions.at(k, staged[0])
            if values is None:
                return not stop
            v = as_test(positions.item(values))
            if is_tensor(v):
                break
            if builtins.bool(v) == stop:
                return stop
            k += 1
        staged[0] = True
        rest = k + 1

        def scan_rest():
            out = scan(rest)
            return python_value(out) if is_tensor(out) else out
        if stop:
            return if_exp(truth(v), lambda: True, scan_rest)
        return if_exp(truth(v), scan_rest, lambda: False)

    try:
        out = scan(0)
    except RecursionError:
        raise StagingError(f"{location(0)}: {name}() of a generator expression with too many items that are graph "
                           f"tensors to stage one cond per item. Make an array and use np.{name}(...), or write a "
                           f"for loop") from None
    out = python_value(out) if is_tensor(out) else out
    if staged[0]:
        gen.lose_position(name, out, positions)  # (how far it ran is decided when the graph runs)
    else:  # decided while tracing: the generator ran on, a Python iterator advanced where the trace is
        check_advance(user_generator, f"{name}()")
    return out


def _until_a_tensor(iterator, name: str):
    stop = name == "any"
    for v in iterator:
        v = as_test(v)
        if is_tensor(v):
            t = truth(v)
            for _ in iterator:  # more items, which Python computes only if this one does not decide
                raise _refusal(name)
            return python_value(t)
        if builtins.bool(v) == stop:
            return stop
    return not stop


def _refusal(name: str) -> StagingError:
    return StagingError(
        f"{location(0)}: {name}() of an iterator (a generator function, map, zip, or a generator expression with := "
        f"in it) with an item that is a graph tensor and items after it: Python computes the later items (their "
        f"effects, their errors, the names they assign) only if that item's truth, known only when the graph runs, "
        f"does not decide the result, and this iterator's items cannot be computed inside a graph cond. Write a "
        f"generator expression without := in the converted function (`{name}(f(v) for v in xs)`), or a for loop.")
