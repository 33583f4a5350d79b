"""Turns `assert test, msg` into `ag__.assert_stmt(test, lambda: msg)`: a Python assert
on Python values, an Assert op on a tensor."""
from __future__ import annotations

import gast

from ..pyct import templates
from .base import Converter


# the nodes without which this pass changes nothing: a tree with none (an `assert`) skips it
ACTS_ON = frozenset({gast.Assert})


class AssertTransformer(Converter):
    def visit_Assert(self, node):
        self.generic_visit(node)
        msg = node.msg if node.msg is not None else templates.const("Assertion failed")
        return self.mark(templates.replace("ag__.assert_stmt(test, lambda: msg)", test=node.test, msg=msg), node)


def transform(node, ctx):
    return AssertTransformer(ctx).visit(node)
