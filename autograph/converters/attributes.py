"""`x.shape`, `x.ndim`, `x.size` read in converted code -> `ag__.array_attribute(x, "shape")`,
which gives numpy's answer for a graph tensor as well (operators/attributes.py) and the
attribute itself for anything else. Assignment targets (`obj.shape = ...`) stay as written."""
from __future__ import annotations

import gast

from ..operators.attributes import ARRAY_ATTRIBUTES
from ..pyct import templates
from .base import Converter


# the nodes without which this pass changes nothing: a tree with none (an attribute) skips it
ACTS_ON = frozenset({gast.Attribute})


class AttributeTransformer(Converter):
    def visit_Attribute(self, node):
        self.generic_visit(node)
        if not isinstance(node.ctx, gast.Load) or node.attr not in ARRAY_ATTRIBUTES:
            return node
        call = templates.replace_as_expression("ag__.array_attribute(obj, name)", obj=node.value,
                                               name=templates.const(node.attr))
        return self.mark(gast.copy_location(call, node), node)


def transform(node, ctx):
    return AttributeTransformer(ctx).visit(node)
