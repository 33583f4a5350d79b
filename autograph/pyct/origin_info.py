"""Source maps: every node remembers where it came from in the user's file, and every
line of generated code maps back to a user file and line."""
from __future__ import annotations

import gast

from . import anno
from .transformer import child_nodes, walk


def annotate(node: gast.AST, filename: str, line_offset: int, col_offset: int) -> None:
    """Record the user's (file, line, column) on every node of a freshly parsed tree."""
    for n in walk(node):
        if getattr(n, "lineno", None):
            anno.setanno(n, anno.ORIGIN, (filename, n.lineno + line_offset, (n.col_offset or 0) + col_offset))


def line_map(transformed: gast.AST, regenerated: gast.AST) -> dict[int, tuple[str, int]]:
    """Walk the transformed tree and the tree parsed back from its generated source side
    by side; each generated line maps to the origin of the node on it (or of the nearest
    enclosing node that has one)."""
    out: dict[int, tuple[str, int]] = {}

    def walk(a, b, inherited):
        if type(a) is not type(b):
            return
        origin = anno.getanno(a, anno.ORIGIN) or inherited
        line = getattr(b, "lineno", None)
        if line and origin is not None and isinstance(b, (gast.stmt, gast.expr)):
            if line not in out or isinstance(b, gast.stmt) and anno.hasanno(a, anno.ORIGIN):
                out.setdefault(line, (origin[0], origin[1]))
        for ca, cb in zip(child_nodes(a), child_nodes(b)):
            walk(ca, cb, origin)

    walk(transformed, regenerated, None)
    return out
