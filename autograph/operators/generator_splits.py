"""Which generators are generator expressions of converted code, with their splits (the
for/if part in Python, the item as a function: comprehensions.SplitGenerator). A leaf
table that comprehensions fills and short_circuit and side_effects read, so that neither
of those imports comprehensions to ask."""
from __future__ import annotations

import weakref

_splits: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # the user's generator -> its split


def remember(gen, split) -> None:
    """`gen` is the generator the user holds for the generator expression split as `split`."""
    _splits[gen] = split


def split_of(gen):
    """The split of a generator expression written in converted code, else None."""
    try:
        return _splits.get(gen)
    except TypeError:
        return None
