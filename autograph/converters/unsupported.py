"""Rejects constructs that cannot be converted, with the user's line, a caret and what
to write instead (never a silent fallback)."""
from __future__ import annotations

import gast

from .base import Converter

_MESSAGES = {
    gast.Yield: "generators cannot be converted: 'yield' has no graph equivalent. Return a list or a "
                "stacked tensor instead, or mark the function with @do_not_convert",
    gast.YieldFrom: "generators cannot be converted: 'yield from' has no graph equivalent. Return a list "
                    "instead, or mark the function with @do_not_convert",
    gast.Await: "'await' cannot be converted; call the coroutine outside the @function",
}


class UnsupportedChecker(Converter):
    def visit(self, node):
        msg = _MESSAGES.get(type(node))
        if msg is not None:
            raise self.error(node, msg)
        return super().visit(node)

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        return node


def transform(node, ctx):
    return UnsupportedChecker(ctx).visit(node)
