"""`a[k]` with a key that is not a constant -> `ag__.getitem(a, k)`, so that a numpy array
or a Python list of numbers indexed by a graph tensor (`table[i]` in a loop over a tensor
range) becomes a graph constant indexed in the graph: numpy and list indexing would ask
the tensor for its value while the graph is built. Slices in the key become
`ag__.slice_(lower, upper, step)` (the user may have a variable named `slice`). Constant
keys (`a[0]`, `a[::-1]`) and assignment targets stay as written."""
from __future__ import annotations

import gast

from .base import Converter


# the nodes without which this pass changes nothing: a tree with none (an item `a[k]`) skips it
ACTS_ON = frozenset({gast.Subscript})


def _ag(attr: str) -> gast.Attribute:
    return gast.Attribute(value=gast.Name(id="ag__", ctx=gast.Load(), annotation=None, type_comment=None),
                          attr=attr, ctx=gast.Load())


def _constant(node) -> bool:
    if isinstance(node, gast.Constant):
        return True
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        return _constant(node.operand)
    if isinstance(node, gast.Slice):
        return all(p is None or _constant(p) for p in (node.lower, node.upper, node.step))
    if isinstance(node, gast.Tuple):
        return all(_constant(e) for e in node.elts)
    return False


def key_expression(node):
    if isinstance(node, gast.Slice):
        parts = [p if p is not None else gast.Constant(value=None, kind=None)
                 for p in (node.lower, node.upper, node.step)]
        return gast.Call(func=_ag("slice_"), args=parts, keywords=[])
    if isinstance(node, gast.Tuple):
        return gast.Tuple(elts=[key_expression(e) for e in node.elts], ctx=gast.Load())
    return node


class SubscriptTransformer(Converter):
    def visit_Subscript(self, node):
        self.generic_visit(node)
        if not isinstance(node.ctx, gast.Load) or _constant(node.slice):
            return node
        call = gast.Call(func=_ag("getitem"), args=[node.value, key_expression(node.slice)], keywords=[])
        return self.mark(gast.copy_location(call, node), node)


def transform(node, ctx):
    return SubscriptTransformer(ctx).visit(node)
