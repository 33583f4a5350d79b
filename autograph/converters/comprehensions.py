"""Comprehensions and generator expressions stay Python: each one's iterables and `if`
conditions go through `ag__.comprehension_iter` / `ag__.comprehension_test`, which pass
Python values through and reject a tensor at the user's line and column (no graph form; the
error says to write a `for` loop).

A generator expression is also split, so that its items can be computed inside graph conds
(`any` / `all` of tensors stop where Python stops):

    (x > i for i in xs if i)
    -> ag__.generator_expression(lambda i: x > i, ((i,) for i in xs if i), origin)

The `for` / `if` part stays a Python generator giving the loop variables' values; the item is
a function of them (operators/comprehensions.SplitGenerator); the generator the user holds
is still a Python generator."""
from __future__ import annotations

import gast

from ..pyct import anno, parser, templates
from .base import Converter

# the nodes without which this pass changes nothing: a tree with none (a comprehension) skips it
ACTS_ON = frozenset({gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp})

# an item that binds or suspends in its own scope would change meaning inside a lambda
_NOT_SPLIT = (gast.NamedExpr, gast.Yield, gast.YieldFrom, gast.Await)


def _target_names(target, out: list) -> bool:
    """The names a `for` target binds, appended to `out`; False for a target that is not
    made of names (`for self.k in ...`: its value would be read late)."""
    if isinstance(target, gast.Name):
        out.append(target.id)
        return True
    if isinstance(target, gast.Starred):
        return _target_names(target.value, out)
    if isinstance(target, (gast.Tuple, gast.List)):
        return all(_target_names(e, out) for e in target.elts)
    return False


class ComprehensionTransformer(Converter):
    def _origin(self, node) -> gast.expr:
        origin = anno.getanno(node, anno.ORIGIN) or (self.ctx.filename, 0, None)
        return templates.const(tuple(origin))

    def _comprehension(self, node, generator: bool = False):
        self.generic_visit(node)
        for g in node.generators:
            if generator:  # its refusal names the iterable as written
                g.iter = templates.replace_as_expression("ag__.comprehension_iter(it, origin, text)", it=g.iter,
                                                         origin=self._origin(g.iter),
                                                         text=templates.const(parser.unparse(g.iter).strip()))
            else:
                g.iter = templates.replace_as_expression("ag__.comprehension_iter(it, origin)", it=g.iter,
                                                         origin=self._origin(g.iter))
            g.ifs = [templates.replace_as_expression("ag__.comprehension_test(test, origin)", test=t,
                                                     origin=self._origin(t)) for t in g.ifs]
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = _comprehension

    def visit_GeneratorExp(self, node):
        node = self._comprehension(node, generator=True)
        names: list[str] = []
        if any(g.is_async for g in node.generators) or \
                not all(_target_names(g.target, names) for g in node.generators) or \
                any(isinstance(n, _NOT_SPLIT) for n in gast.walk(node.elt)) or len(set(names)) != len(names):
            return node  # left as Python's generator
        item = node.elt
        node.elt = gast.Tuple(elts=[gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None)
                                    for n in names], ctx=gast.Load())
        return templates.replace_as_expression(
            f"ag__.generator_expression(lambda {', '.join(names)}: item__, targets__, origin__)",
            item__=item, targets__=node, origin__=self._origin(node))


def transform(node, ctx):
    return ComprehensionTransformer(ctx).visit(node)
