"""`try: body except ...:` -> the body inside `with ag__.try_body(line):`, so that a body
that builds graph ops which can fail is refused while tracing (operators/exceptions.py):
those ops fail when the graph runs, after the `try` has finished, and its `except` clause
would never see the error that Python would have caught there. A try without handlers
(`try/finally`) stays as written."""
from __future__ import annotations

import gast

from ..pyct import templates
from .base import Converter


# the nodes without which this pass changes nothing: a tree with none (a `try`) skips it
ACTS_ON = frozenset({gast.Try})


class TryTransformer(Converter):
    def visit_Try(self, node):
        self.generic_visit(node)
        if not node.handlers:
            return node
        guard = templates.replace("with ag__.try_body(line_):\n    pass", line_=templates.const(self.lineno(node)))[0]
        guard.body = node.body
        node.body = [self.mark(guard, node)]
        return node


def transform(node, ctx):
    return TryTransformer(ctx).visit(node)
