"""Routes every call through `ag__.converted_call(f, args, kwargs)`, which converts the
user's own functions recursively, swaps builtins for their tensor-aware versions and
calls everything else (numpy, math, library code) as it is."""
from __future__ import annotations

import gast

from ..pyct import templates
from .base import Converter

# the nodes without which this pass changes nothing: a tree with none (a call) skips it
ACTS_ON = frozenset({gast.Call})

# Calls that depend on the caller's frame and must stay where they are.
_LEAVE_ALONE = {"super", "locals", "globals", "vars", "eval", "exec", "dir"}


def _is_ag_call(func: gast.expr) -> bool:
    while isinstance(func, gast.Attribute):
        func = func.value
    return isinstance(func, gast.Name) and func.id == "ag__"


class CallTreeTransformer(Converter):
    def visit_Call(self, node):
        self.generic_visit(node)
        if _is_ag_call(node.func):
            return node
        if isinstance(node.func, gast.Name) and node.func.id in _LEAVE_ALONE:
            return node
        args = gast.Tuple(elts=list(node.args), ctx=gast.Load())
        if node.keywords:
            kwargs = gast.Dict(keys=[templates.const(k.arg) if k.arg else None for k in node.keywords],
                               values=[k.value for k in node.keywords])
        else:
            kwargs = templates.const(None)
        return templates.replace_as_expression("ag__.converted_call(func, args, kwargs)", func=node.func,
                                               args=args, kwargs=kwargs)


def transform(node, ctx):
    return CallTreeTransformer(ctx).visit(node)
