"""Comprehensions and generator expressions stay Python: each one's iterable and `if`
conditions go through `ag__.comprehension_iter` / `ag__.comprehension_test`, which pass
Python values through and reject a tensor with a ConversionError at the user's line and
column (a comprehension has no graph form; the error says to write a `for` loop)."""
from __future__ import annotations

import gast

from ..pyct import anno, templates
from .base import Converter


# the nodes without which this pass changes nothing: a tree with none (a comprehension) skips it
ACTS_ON = frozenset({gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp})


class ComprehensionTransformer(Converter):
    def _origin(self, node) -> gast.expr:
        origin = anno.getanno(node, anno.ORIGIN) or (self.ctx.filename, 0, None)
        return templates.const(tuple(origin))

    def _comprehension(self, node):
        self.generic_visit(node)
        for g in node.generators:
            g.iter = templates.replace_as_expression("ag__.comprehension_iter(it, origin)", it=g.iter,
                                                     origin=self._origin(g.iter))
            g.ifs = [templates.replace_as_expression("ag__.comprehension_test(test, origin)", test=t,
                                                     origin=self._origin(t)) for t in g.ifs]
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension


def transform(node, ctx):
    return ComprehensionTransformer(ctx).visit(node)
