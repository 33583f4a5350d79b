"""Wraps reads of variables that may be unbound on some path in `ag__.ld(x)`, which
raises an error naming the variable, the line that may leave it undefined and the line
that reads it (control flow leaves such variables as `ag__.Undefined`).

Requires reaching definitions (anno.MAYBE_UNDEFINED)."""
from __future__ import annotations

import gast

from ..pyct import anno, templates
from .base import Converter


class VariableTransformer(Converter):
    requires_analysis = ("reaching_definitions",)

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and anno.getanno(node, anno.MAYBE_UNDEFINED):
            return templates.replace_as_expression("ag__.ld(name)", name=node)
        return node



def transform(node, ctx):
    return VariableTransformer(ctx).visit(node)
