"""Converts `and` / `or` / `not`, chained comparisons and `in` into `ag__` calls that keep
Python's laziness (operands are lambdas) and become logical ops on tensors."""
from __future__ import annotations

import gast

from ..pyct import templates
from .base import Converter

# the nodes without which this pass changes nothing: a tree with none (an `and` / `or` / `not` or a comparison) skips it
ACTS_ON = frozenset({gast.BoolOp, gast.Not, gast.Compare})


_CMP_OPS = {gast.Eq: "==", gast.NotEq: "!=", gast.Lt: "<", gast.LtE: "<=", gast.Gt: ">", gast.GtE: ">=",
            gast.Is: "is", gast.IsNot: "is not", gast.In: "in", gast.NotIn: "not in"}


def _thunk(expr: gast.expr) -> gast.Lambda:
    return templates.replace_as_expression("lambda: value", value=expr)


class LogicalTransformer(Converter):
    def visit_BoolOp(self, node):
        self.generic_visit(node)
        fn = "ag__.and_" if isinstance(node.op, gast.And) else "ag__.or_"
        call = templates.replace_as_expression(f"{fn}()")
        call.args = [_thunk(v) for v in node.values]
        return call

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, gast.Not):
            return templates.replace_as_expression("ag__.not_(value)", value=node.operand)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and not isinstance(node.ops[0], (gast.In, gast.NotIn)):
            return node  # (`in` goes through ag__: Python's `in` would take the truth of a tensor ==)
        call = templates.replace_as_expression("ag__.compare_chain()")
        call.args = [_thunk(node.left)]
        for op, right in zip(node.ops, node.comparators):
            call.args += [templates.const(_CMP_OPS[type(op)]), _thunk(right)]
        return call


def transform(node, ctx):
    return LogicalTransformer(ctx).visit(node)
