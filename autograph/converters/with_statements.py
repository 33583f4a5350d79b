"""`with m as x:` -> `with ag__.context_manager(m, line, "m") as x:`, so that a context manager
whose effect the graph cannot have is refused while tracing (operators/context_managers.py)
instead of taking effect once, while the graph is built."""
from __future__ import annotations

import gast

from ..pyct import parser, templates
from .base import Converter


# the nodes without which this pass changes nothing: a tree with none (a `with`) skips it
ACTS_ON = frozenset({gast.With})


class WithTransformer(Converter):
    def visit_With(self, node):
        self.generic_visit(node)
        for item in node.items:
            item.context_expr = templates.replace_as_expression(
                "ag__.context_manager(manager, line, text)", manager=item.context_expr,
                line=templates.const(self.lineno(node)), text=templates.const(parser.unparse(item.context_expr).strip()))
        return node


def transform(node, ctx):
    return WithTransformer(ctx).visit(node)
