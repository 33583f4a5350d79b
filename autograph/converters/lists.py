"""Turns `xs.append(v)` statements into `xs = ag__.list_append(xs, v)`, so the list is
visible as loop state and can be staged as a growable tensor list in a graph loop."""
from __future__ import annotations

import gast

from ..pyct import templates
from ..pyct.qual_names import qn
from .base import Converter


class ListTransformer(Converter):
    def visit_Expr(self, node):
        call = node.value
        if (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and call.func.attr == "append"
                and len(call.args) == 1 and not call.keywords and qn(call.func.value) is not None):
            target = call.func.value
            return self.mark(templates.replace("target = ag__.list_append(target_value, value)", target=target,
                                               target_value=_load_copy(target), value=call.args[0]), node)
        return self.generic_visit(node)


def _load_copy(node: gast.expr) -> gast.expr:
    import copy  # noqa: PLC0415

    new = copy.deepcopy(node)
    new.ctx = gast.Load()
    return new


def transform(node, ctx):
    return ListTransformer(ctx).visit(node)
