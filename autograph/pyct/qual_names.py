"""Qualified names of assignable expressions: `x`, `obj.attr`, `d['k']`.

Control-flow state is keyed by these strings; a composite name (with a dot or a
subscript) stands for an attribute of an object, or the items `a[:]` of a container,
so it is carried through loops but never declared `nonlocal`.
"""
from __future__ import annotations

import gast


def qn(node: gast.AST) -> str | None:
    """The qualified name of `node`, or None if it is not a name, attribute chain or
    subscript with a constant key."""
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Attribute):
        base = qn(node.value)
        return None if base is None else f"{base}.{node.attr}"
    if isinstance(node, gast.Subscript):
        base = qn(node.value)
        if base is None or not isinstance(node.slice, gast.Constant):
            return None
        return f"{base}[{node.slice.value!r}]"
    return None


CONTENTS_SUFFIX = "[:]"


def contents_name(target: gast.Subscript) -> str | None:
    """`a[:]`, the items of `a`, for an item assignment target `a[i]`, `a[i][j]` or
    `a['k']` (`self.d[:]` for `self.d[i]`); None when the container has no name."""
    node = target.value
    while isinstance(node, gast.Subscript):
        node = node.value
    base = qn(node)
    return None if base is None else base + CONTENTS_SUFFIX


def is_contents(name: str) -> bool:
    return name.endswith(CONTENTS_SUFFIX)


def is_composite(name: str) -> bool:
    return "." in name or "[" in name
