"""Source maps: every node remembers where it came from in the user's file, and every
line of generated code maps back to a user file and line."""
from __future__ import annotations

import ast
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
    the order of the tree: a statement before the expressions in it). Written in one pass,
    as the text is written, rather than by parsing the text back and walking both trees."""
    out = io.StringIO()
    writer = _mapping_unparser()(_translator()().visit(transformed), file=out)
    text = out.getvalue()
    body = text.lstrip()
    skipped = text[:len(text) - len(body)].count("\n")  # (unparse strips the leading newlines)
    line_map = {line - skipped: (origin[0], origin[1]) for line, origin in writer.line_map.items()}
    return body.rstrip() + "\n", line_map


@functools.cache
def _translator() -> type:
    """parser's gast -> ast translation, carrying each node's origin to the node it makes."""
    base = parser.translator_to_ast()

    class KeepingOrigins(base):
        def visit(self, node):
            new = base.visit(self, node)
            origin = anno.getanno(node, anno.ORIGIN)
            if origin is not None and isinstance(new, ast.AST):
                setattr(new, _ORIGIN_ATTRIBUTE, origin)
            return new

    return KeepingOrigins


@functools.cache
def _mapping_unparser() -> type:
    """parser's Unparser, noting the line each statement and expression starts on. Every
    statement starts with a `fill` (a new line; a def's decorators come first, each on a
    fill of its own); expressions never start with a new line; an `elif` is a nested If
    that astunparse writes without dispatching it, so _If is written here to dispatch it."""
    base = parser.unparser_class()

    class MappingUnparser(base):
        def __init__(self, tree, file):
            self.line_map: dict = {}
            self._line = 1  # the line being written (1: the first)
            self._origin = None  # the origin of the innermost node that has one
            self._statement = None  # a statement whose first line is the next fill: (origin,)
            super().__init__(tree, file)

        def write(self, text):
            if "\n" in text:
                self._line += text.count("\n")
            super().write(text)

        def fill(self, text=""):
            super().fill(text)  # (a new line, then the text: written to the file directly)
            self._line += 1
            if self._statement is not None and not text.startswith("@"):
                origin = self._statement[0]
                self._statement = None
                if origin is not None:
                    self.line_map.setdefault(self._line, origin)

        def dispatch(self, tree):
            if isinstance(tree, list):
                for t in tree:
                    self.dispatch(t)
                return
            outer = self._origin
            self._origin = getattr(tree, _ORIGIN_ATTRIBUTE, None) or outer
            statement = isinstance(tree, ast.stmt)
            if statement:
                self._statement = (self._origin,)
            elif isinstance(tree, ast.expr) and self._origin is not None:
                self.line_map.setdefault(self._line, self._origin)
            try:
                super().dispatch(tree)
            finally:
                self._origin = outer
                if statement:
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
                self._origin = getattr(nested, _ORIGIN_ATTRIBUTE, None) or outer
                self._statement = (self._origin,)
                try:
                    self.fill("elif ")
                    self._conditional(nested)
                finally:
                    self._origin = outer
            elif t.orelse:
                self.fill("else")
                self.enter()
                self.dispatch(t.orelse)
                self.leave()

    return MappingUnparser
