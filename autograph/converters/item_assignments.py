"""`y[k] = v` and `y[k] op= v` on a name -> `y = ag__.setitem(y, k, v, ...)`.

numpy's item assignment changes the array in place; a graph array is a value, so the
graph makes a new one with the items replaced (graphcore's SetItem) and rebinds the name,
which makes `out[i] = ...` in a loop on a tensor a loop variable like any other. On a list,
a dict or another object `ag__.setitem` is Python's own statement (and gives the same
object back). Like `a op= b` on an array, a change another name, a container or the caller
would see in Python is refused or warned about (operators/augmented.py). Other targets
(`obj.a[k] = v`, `a, b[k] = ...`, an item of a global or closure variable) keep their
statement."""
from __future__ import annotations

import gast

from ..pyct import templates
from .augmented_assignments import OPERATORS, InPlaceConverter
from .subscripts import key_expression


# the nodes without which this pass changes nothing: a tree with none (an item: `y[k] = v`) skips it
ACTS_ON = frozenset({gast.Subscript})


class ItemAssignmentTransformer(InPlaceConverter):
    def _rewrite(self, node, target, value, op):
        name = target.value.id
        new = templates.replace(
            f"target_ = ag__.setitem(current, key, value, op, name=name_, param=is_param, line=line_"
            f"{self.in_place_extras(name)})",
            target_=gast.Name(name, gast.Store(), None, None), current=gast.Name(name, gast.Load(), None, None),
            key=key_expression(target.slice), value=value, op=templates.const(op), name_=templates.const(name),
            is_param=templates.const(name in self.params), line_=templates.const(self.lineno(node)),
            held_=templates.const(self.held.get(name, 0)))
        return self.mark(new, node)

    def visit_Assign(self, node):
        self.generic_visit(node)
        if len(node.targets) != 1 or not _named_item(node.targets[0], self.local):
            return node
        return self._rewrite(node, node.targets[0], node.value, None)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if not _named_item(node.target, self.local) or type(node.op) not in OPERATORS:
            return node
        return self._rewrite(node, node.target, node.value, OPERATORS[type(node.op)])


def _named_item(target, local) -> bool:
    """`y[k]` on a local name (an outside object's item assignment stays Python's)."""
    return isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name) and target.value.id in local


def transform(node, ctx):
    return ItemAssignmentTransformer(ctx).visit(node)
