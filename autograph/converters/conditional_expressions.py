"""Converts `a if c else b` (nested ones too) into `ag__.if_exp(c, lambda: a, lambda: b)`."""
from __future__ import annotations

import gast

from ..pyct import templates
from .base import Converter


# the nodes without which this pass changes nothing: a tree with none (an `a if c else b`) skips it
ACTS_ON = frozenset({gast.IfExp})


class IfExpTransformer(Converter):
    def visit_IfExp(self, node):
        self.generic_visit(node)
        return templates.replace_as_expression(
            "ag__.if_exp(test, lambda: body, lambda: orelse, line)", test=node.test, body=node.body,
            orelse=node.orelse, line=templates.const(self.lineno(node)))


def transform(node, ctx):
    return IfExpTransformer(ctx).visit(node)
