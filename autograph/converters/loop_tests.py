"""A `while` test that assigns (`while (line := next_line()) != end:`) becomes a flag
evaluated before the loop and again at the end of every iteration:

    test_ = <test>
    while test_:
        body
        test_ = <test>

Runs after break / continue / return are lowered, so the body has no jumps left and the
test already starts with `not break_ and ...`: after a break (or a return) the re-test
stops at the flag, without evaluating the assignment, as Python would not evaluate the
test again. `and` / `or` in the test become nested ifs, keeping their laziness without
the functions (lambdas) that `and` / `or` otherwise become, which would take the
assignment into a scope of their own. The `:=` then sits in a plain statement, whose
target is ordinary state of the loop.
"""
from __future__ import annotations

import copy

import gast

from ..pyct import templates
from ..pyct.transformer import walk
from .base import Converter


# the nodes without which this pass changes nothing: a tree with none (a `:=`, in a while test) skips it
ACTS_ON = frozenset({gast.NamedExpr})


def _assigns(expr) -> bool:
    return any(isinstance(n, gast.NamedExpr) for n in walk(expr))


class LoopTestTransformer(Converter):
    def visit_While(self, node):
        self.generic_visit(node)
        if not _assigns(node.test):
            return node
        flag = self.ctx.namer.new("test_")
        first = self._evaluate(flag, node.test)
        again = self._evaluate(flag, copy.deepcopy(node.test))
        node.test = gast.Name(id=flag, ctx=gast.Load(), annotation=None, type_comment=None)
        node.body = node.body + self.mark(again, node)
        return self.mark(first, node) + [node]

    def _evaluate(self, flag: str, test) -> list:
        """`flag = test`, with `and` / `or` spelled as ifs (the right side only when needed)."""
        if not isinstance(test, gast.BoolOp):
            return templates.replace("flag = test", flag=flag, test=test)
        first, rest = test.values[0], test.values[1:]
        out = templates.replace("flag = test", flag=flag, test=first)
        if not rest:
            return out
        remainder = rest[0] if len(rest) == 1 else gast.BoolOp(op=test.op, values=rest)
        guard = "if flag:\n    body" if isinstance(test.op, gast.And) else "if not flag:\n    body"
        return out + templates.replace(guard, flag=flag, body=self._evaluate(flag, remainder))


def transform(node, ctx):
    return LoopTestTransformer(ctx).visit(node)
