"""Flatten and rebuild nested structures (tuples, lists, dicts, namedtuples) of values."""
from __future__ import annotations

from typing import Any, Callable


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_nested(x) -> bool:
    return isinstance(x, (list, tuple, dict))


def _children(x):
    if isinstance(x, dict):
        return [x[k] for k in sorted(x, key=repr)]
    return list(x)


def flatten(structure) -> list:
    """Leaves of `structure` in a deterministic order (dicts by sorted key)."""
    if not is_nested(structure):
        return [structure]
    out = []
    for c in _children(structure):
        out.extend(flatten(c))
    return out


def _rebuild(like, items):
    if isinstance(like, dict):
        keys = sorted(like, key=repr)
        d = dict(zip(keys, items))
        return type(like)((k, d[k]) for k in like) if type(like) is not dict else {k: d[k] for k in like}
    if _is_namedtuple(like):
        return type(like)(*items)
    if isinstance(like, tuple):
        return tuple(items)
    return list(items)


def pack_sequence_as(structure, flat: list):
    """Inverse of flatten: put `flat` back into the shape of `structure`."""
    flat = list(flat)

    def build(s, it):
        if not is_nested(s):
            return next(it)
        return _rebuild(s, [build(c, it) for c in _children(s)])

    it = iter(flat)
    out = build(structure, it)
    rest = list(it)
    if rest:
        raise ValueError(f"pack_sequence_as: {len(rest)} values left over")
    return out


def structure_description(x) -> str:
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {structure_description(v)}" for k, v in x.items()) + "}"
    if isinstance(x, (list, tuple)):
        br = "[]" if isinstance(x, list) else "()"
        return br[0] + ", ".join(structure_description(v) for v in x) + br[1]
    return "." if x is not None else "None"


def same_structure(a, b) -> bool:
    if is_nested(a) != is_nested(b):
        return False
    if not is_nested(a):
        return True
    if isinstance(a, dict) != isinstance(b, dict) or isinstance(a, list) != isinstance(b, list):
        return False
    if isinstance(a, dict) and set(a) != set(b):
        return False
    ca, cb = _children(a), _children(b)
    return len(ca) == len(cb) and all(same_structure(x, y) for x, y in zip(ca, cb))


def map_structure(fn: Callable, *structures: Any):
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*xs) for xs in zip(*flats)])
