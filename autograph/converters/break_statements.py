"""Lowers `break` to a flag: `break_ = True`, the loop tests `not break_` before each
iteration (a While's test, a For's EXTRA_TEST annotation) and statements after the
break are guarded. A loop's `else` moves after the loop, guarded by `not break_`.
Runs first, so later passes only see structured loops."""
from __future__ import annotations

import gast

from ..pyct import anno, templates
from .base import GuardingTransformer, _JumpState


# the nodes without which this pass changes nothing: a tree with none (a `break`, or a loop,
# whose `else` clause this pass moves after it) skips it
ACTS_ON = frozenset({gast.Break, gast.While, gast.For})


class BreakTransformer(GuardingTransformer):
    def visit_Break(self, node):
        return self.lower_jump(node, "break")

    def _loop(self, node):
        st = _JumpState(self.ctx.namer.new("break_"))
        self.stack.append(st)
        node.body = self.visit_block(node.body)
        self.stack.pop()
        orelse = self.visit_block(node.orelse)
        node.orelse = []
        if isinstance(node, gast.While):
            node.test = self.visit(node.test)
        else:
            node.iter = self.visit(node.iter)
        if not st.count:
            return [node] + orelse
        if isinstance(node, gast.While):
            node.test = templates.replace_as_expression("not flag and test", flag=st.flag, test=node.test)
        else:
            anno.setanno(node, anno.EXTRA_TEST,
                         templates.replace_as_expression("not flag", flag=st.flag))
        out = self.mark(templates.replace("flag = False", flag=st.flag), node) + [node]
        if orelse:
            out += self.mark(templates.replace("if not flag:\n    orelse", flag=st.flag, orelse=orelse), node)
        return out

    visit_While = _loop
    visit_For = _loop


def transform(node, ctx):
    return BreakTransformer(ctx).visit(node)
