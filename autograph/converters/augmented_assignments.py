"""`name op= value` -> `name = ag__.augmented(name, value, "op", name="name", param=..., line=...)`.

numpy's `a += b` changes the array `a` in place: every other name for that array sees the
change, and so does the caller that passed it. A graph tensor is a value; `a += b` on it
makes a new one. `ag__.augmented` keeps Python's in-place operator for Python values and
refuses, at the user's line, an in-place change to a graph array that another variable
also names (the graph would compute something else than Python there). Targets that are
attributes or items keep their own statement (side_effects notes them)."""
from __future__ import annotations

import gast

from ..pyct import templates
from .base import Converter

_OPS = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.FloorDiv: "//", gast.Mod: "%",
        gast.Pow: "**", gast.MatMult: "@", gast.BitAnd: "&", gast.BitOr: "|", gast.BitXor: "^",
        gast.LShift: "<<", gast.RShift: ">>"}


class AugmentedAssignmentTransformer(Converter):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.params: set[str] = set()

    def visit_FunctionDef(self, node):
        if not self.params:  # the converted function's own parameters
            args = node.args
            self.params = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs
                           + [a for a in (args.vararg, args.kwarg) if a is not None]}
        return self.generic_visit(node)

    def visit_AugAssign(self, node):
        if not isinstance(node.target, gast.Name) or type(node.op) not in _OPS:
            return self.generic_visit(node)
        name = node.target.id
        new = templates.replace(
            "target = ag__.augmented(current, value, op, name=name_, param=is_param, line=line_)",
            target=gast.Name(name, gast.Store(), None, None), current=gast.Name(name, gast.Load(), None, None),
            value=node.value, op=templates.const(_OPS[type(node.op)]), name_=templates.const(name),
            is_param=templates.const(name in self.params), line_=templates.const(self.lineno(node)))
        return self.mark(new, node)


def transform(node, ctx):
    return AugmentedAssignmentTransformer(ctx).visit(node)
