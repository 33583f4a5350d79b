"""Lowers `continue` to a flag reset at the top of each iteration; the statements after
a `continue` in the body are guarded by `not continue_`."""
from __future__ import annotations

import gast

from ..pyct import templates
from .base import GuardingTransformer, _JumpState


# the nodes without which this pass changes nothing: a tree with none (a `continue`) skips it
ACTS_ON = frozenset({gast.Continue})


class ContinueTransformer(GuardingTransformer):
    def visit_Continue(self, node):
        return self.lower_jump(node, "continue")

    def _loop(self, node):
        st = _JumpState(self.ctx.namer.new("continue_"))
        self.stack.append(st)
        node.body = self.visit_block(node.body)
        self.stack.pop()
        node.orelse = self.visit_block(node.orelse)
        if st.count:
            node.body = self.mark(templates.replace("flag = False", flag=st.flag), node) + node.body
        return node

    visit_While = _loop
    visit_For = _loop


def transform(node, ctx):
    return ContinueTransformer(ctx).visit(node)
