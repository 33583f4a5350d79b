"""Source maps: every node remembers where it came from in the user's file, and every
line of generated code maps back to a user file and line."""
from __future__ import annotations

import ast
import bisect
import functools
import io

import gast

from . import anno, parser
from .transformer import walk

_ORIGIN_ATTRIBUTE = "_ag_origin"  # the origin, carried over to the standard ast node written


def annotate(node: gast.AST, filename: str, line_offset: int, col_offset: int) -> None:
    """Record the user's (file, line, column) on every node of a freshly parsed tree."""
    for n in walk(node):
        if getattr(n, "lineno", None):
            anno.setanno(n, anno.ORIGIN, (filename, n.lineno + line_offset, (n.col_offset or 0) + col_offset))


def generate(transformed: gast.AST) -> tuple[str, dict[int, tuple[str, int]]]:
    """The source text of a transformed tree (what parser.unparse writes) and its line map:
    each generated line maps to the origin of the first statement or expression that
    starts on it, its own or that of the nearest enclosing node that has one (the first in
    the order of the tree: a statement before the expressions in it). Noted as the text is
    written, rather than by parsing the text back and walking both trees."""
    out = io.StringIO()
    writer = _mapping_unparser()(_translator()().visit(transformed), file=out)
    text = out.getvalue()
    body = text.lstrip()
    skipped = len(text) - len(body)  # (unparse strips the leading newlines)
    line_starts = [0]  # the offset in `body` each of its lines starts at
    at = body.find("\n")
    while at >= 0:
        line_starts.append(at + 1)
        at = body.find("\n", at + 1)
    line_map: dict = {}
    for offset, origin in writer.starts:  # (in the order written: the first on a line is the first noted)
        line = bisect.bisect_right(line_starts, offset - skipped)
        if line not in line_map:
            line_map[line] = (origin[0], origin[1])
    return body.rstrip() + "\n", line_map


@functools.cache
def _translator() -> type:
    """parser's gast -> ast translation, carrying each node's origin to the node it makes."""
    base = parser.translator_to_ast()

    class KeepingOrigins(base):
        def visit(self, node):
            new = base.visit(self, node)
            origin = anno.getanno(node, anno.ORIGIN)
            if origin is not None:
                new.__dict__[_ORIGIN_ATTRIBUTE] = origin
            return new

    return KeepingOrigins


@functools.cache
def _mapping_unparser() -> type:
    """parser's Unparser, noting where each statement and expression that has an origin
    (its own or inherited) starts, as offsets in the text: every statement starts with a
    `fill` (a new line; a def's decorators come first, each on a fill of its own), an
    expression where it is dispatched; an `elif` is a nested If that astunparse writes
    without dispatching it, so _If is written here to note it."""
    base = parser.unparser_class()
    kinds: dict = {}  # node class -> 1 statement, 2 expression, 0 other

    class MappingUnparser(base):
        def __init__(self, tree, file):
            self.starts: list = []  # (offset, origin) in the order written
            self._origin = None  # the origin of the innermost node that has one
            self._statement = None  # the origin of a statement whose first line is the next fill
            super().__init__(tree, file)

        def fill(self, text=""):
            super().fill(text)
            if self._statement is not None and not text.startswith("@"):
                self.starts.append((self.f.tell() - len(text), self._statement))
                self._statement = None

        def dispatch(self, tree):
            cls = tree.__class__
            if cls is list:
                for t in tree:
                    self.dispatch(t)
                return
            outer = self._origin
            origin = self._origin = tree.__dict__.get(_ORIGIN_ATTRIBUTE) or outer
            kind = kinds.get(cls)
            if kind is None:
                kind = kinds[cls] = 1 if issubclass(cls, ast.stmt) else 2 if issubclass(cls, ast.expr) else 0
            if kind == 1:
                self._statement = origin
            elif kind == 2 and origin is not None:
                self.starts.append((self.f.tell(), origin))
            getattr(self, "_" + cls.__name__)(tree)
            self._origin = outer
            if kind == 1:
                self._statement = None

        def _If(self, t):
            self.fill("if ")
            self._conditional(t)

        def _conditional(self, t):
            """`test:`, the body, then an `elif` (a nested If alone in orelse) or `else`."""
            self.dispatch(t.test)
            self.enter()
            self.dispatch(t.body)
            self.leave()
            if len(t.orelse) == 1 and isinstance(t.orelse[0], ast.If):
                nested = t.orelse[0]
                outer = self._origin
                self._origin = self._statement = nested.__dict__.get(_ORIGIN_ATTRIBUTE) or outer
                self.fill("elif ")
                self._conditional(nested)
                self._origin = outer
            elif t.orelse:
                self.fill("else")
                self.enter()
                self.dispatch(t.orelse)
                self.leave()

    return MappingUnparser
