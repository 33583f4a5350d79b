"""Converts f-strings into `ag__.format_string(...)`, so that a tensor in one is formatted
when the graph runs (see operators/strings.py): `f"x = {x:.3f}"` becomes
`ag__.format_string('x = ', (x, -1, '.3f'))`. A nested spec (`{x:{width}}`) is an
f-string itself and is converted the same way. `'...' % values` with a string literal on
the left becomes `ag__.percent_format('...', values)` (`str.format` calls are routed by
converted_call)."""
from __future__ import annotations

import gast

from .base import Converter


# the nodes without which this pass changes nothing: a tree with none (an f-string or a `%`) skips it
ACTS_ON = frozenset({gast.JoinedStr, gast.Mod})


class FormattedStringTransformer(Converter):
    def visit_JoinedStr(self, node):
        self.generic_visit(node)
        pieces = []
        for v in node.values:
            if isinstance(v, gast.FormattedValue):
                spec = v.format_spec if v.format_spec is not None else gast.Constant(value="", kind=None)
                pieces.append(gast.Tuple(elts=[v.value, gast.Constant(value=v.conversion, kind=None), spec],
                                         ctx=gast.Load()))
            else:
                pieces.append(v)
        call = gast.Call(func=gast.Attribute(value=gast.Name(id="ag__", ctx=gast.Load(), annotation=None,
                                                             type_comment=None), attr="format_string", ctx=gast.Load()),
                         args=pieces, keywords=[])
        return self.mark(gast.copy_location(call, node), node)

    def visit_BinOp(self, node):
        self.generic_visit(node)
        left = node.left
        if not isinstance(node.op, gast.Mod) or not (isinstance(left, gast.Constant) and isinstance(left.value, str)):
            return node
        ag = gast.Name(id="ag__", ctx=gast.Load(), annotation=None, type_comment=None)
        call = gast.Call(func=gast.Attribute(value=ag, attr="percent_format", ctx=gast.Load()),
                         args=[left, node.right], keywords=[])
        return self.mark(gast.copy_location(call, node), node)


def transform(node, ctx):
    return FormattedStringTransformer(ctx).visit(node)
