"""Tables from a graph (or a control-flow context) to what a module remembers about it,
kept on that object itself.

A module-level `weakref.WeakKeyDictionary[Graph, ...]` leaks whenever a value refers back to
its key: every table of tensors (their ops know their graph) kept each graph of a process
alive, so a long run of traced functions grew by thousands of objects per function and
Python's full collections took seconds (benchmarks/stall_hunt.py found it: 4 s pauses after
500 random programs). A table stored on the graph goes with it; a cycle through it is an
ordinary one the collector frees.

    _registry = SideTable("path_types")      # instead of weakref.WeakKeyDictionary()
    _registry.setdefault(graph, {})[k] = v
"""
from __future__ import annotations

import itertools

_ATTR = "_side_tables"
_numbers = itertools.count()
_MISSING = object()


class SideTable:
    """A mapping from objects with a `__dict__` to values, stored on each object (see above)."""

    __slots__ = ("_slot",)

    def __init__(self, name: str):
        self._slot = f"{name}#{next(_numbers)}"  # each table its own slot, also two of one name

    def _tables(self, obj, create: bool):
        tables = obj.__dict__.get(_ATTR)
        if tables is None and create:
            tables = obj.__dict__[_ATTR] = {}
        return tables

    def get(self, obj, default=None):
        tables = self._tables(obj, False)
        return default if tables is None else tables.get(self._slot, default)

    def setdefault(self, obj, default):
        return self._tables(obj, True).setdefault(self._slot, default)

    def __getitem__(self, obj):
        value = self.get(obj, _MISSING)
        if value is _MISSING:
            raise KeyError(obj)
        return value

    def __setitem__(self, obj, value) -> None:
        self._tables(obj, True)[self._slot] = value

    def __contains__(self, obj) -> bool:
        return self.get(obj, _MISSING) is not _MISSING

    def pop(self, obj, default=_MISSING):
        tables = self._tables(obj, False)
        if tables is None or self._slot not in tables:
            if default is _MISSING:
                raise KeyError(obj)
            return default
        return tables.pop(self._slot)


def copy_tables(old, new, convert) -> None:
    """Give `new`, a copy of `old` (a graph or a control-flow context), each table `old` has,
    its value passed through `convert`, which maps what refers to `old` onto `new`. A table
    `convert` cannot map (it raises LookupError) is left out: the copy has none, as a graph
    no module has remembered anything of yet."""
    new.__dict__.pop(_ATTR, None)  # (what a copy of old's fields brought along)
    tables = old.__dict__.get(_ATTR)
    if not tables:
        return
    kept = {}
    for slot, value in tables.items():
        try:
            kept[slot] = convert(value)
        except LookupError:
            continue
    if kept:
        new.__dict__[_ATTR] = kept
