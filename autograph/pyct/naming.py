"""Fresh names for generated symbols that never collide with the user's names."""
from __future__ import annotations

import gast

from .transformer import walk


def all_names(node: gast.AST) -> set[str]:
    """Every identifier used in `node` (names, args, function names)."""
    names: set[str] = set()
    for n in walk(node):
        if isinstance(n, gast.Name):
            names.add(n.id)
        elif isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            names.add(n.name)
    return names


class Namer:
    """Hands out `base`, `base_1`, ... skipping names already in use."""

    def __init__(self, reserved: set[str]):
        self._used = set(reserved)

    def new(self, base: str) -> str:
        name, i = base, 0
        while name in self._used:
            i += 1
            name = f"{base}_{i}"
        self._used.add(name)
        return name
