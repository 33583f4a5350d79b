"""Lowers `return` anywhere (inside nested loops too) to `do_return = True; retval_ = v`;
every loop that may return also tests `not do_return`, the statements after a possible
return are guarded, and the function ends with one `return ag__.retval(retval_)`.

`raise E` inside an if / while / for (outside `try`) is lowered the same way, as
`ag__.raise_stmt(E); do_return = True`: on a Python path it raises at once; on a graph
path it stages the failure, and the flag keeps the rest of the function from running
on that path (Python would not run it either).

A function whose only return is its last statement, and that raises only outside
control flow, is left alone."""
from __future__ import annotations

import gast

from ..pyct import anno, templates
from ..pyct.transformer import child_nodes
from .base import GuardingTransformer, _JumpState


_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)
_CONTROL_FLOW = (gast.If, gast.While, gast.For)


def _returns(stmts) -> list:
    found = []
    todo = list(stmts)
    while todo:
        n = todo.pop()
        if isinstance(n, _SCOPES):
            continue
        if isinstance(n, gast.Return):
            found.append(n)
        todo.extend(child_nodes(n))
    return found


def _stageable_raises(stmts, in_control_flow=False) -> list:
    """`raise E` statements inside if / while / for and outside any `try`."""
    found = []
    for n in stmts:
        if isinstance(n, _SCOPES + (gast.Try,)):
            continue
        if isinstance(n, gast.Raise) and n.exc is not None and in_control_flow:
            found.append(n)
        inner = in_control_flow or isinstance(n, _CONTROL_FLOW)
        for field in ("body", "orelse"):
            found += _stageable_raises(getattr(n, field, []) or [], inner)
    return found


class _ReturnState(_JumpState):
    def __init__(self, flag: str, value: str):
        super().__init__(flag)
        self.value = value


class ReturnTransformer(GuardingTransformer):
    def visit_FunctionDef(self, node):
        rets = _returns(node.body)
        raises = {id(r) for r in _stageable_raises(node.body)}
        self.raises = getattr(self, "raises", set()) | raises
        simple = not raises and (not rets or (len(rets) == 1 and node.body[-1] is rets[0]))
        if simple:
            self.stack.append(None)
            node.body = self.visit_block(node.body)
            self.stack.pop()
            return node
        st = _ReturnState(self.ctx.namer.new("do_return"), self.ctx.namer.new("retval_"))
        self.ctx.special_names.add(st.value)
        self.stack.append(st)
        body = self.visit_block(node.body)
        self.stack.pop()
        head = templates.replace("flag = False\nvalue = ag__.UndefinedReturnValue()", flag=st.flag,
                                 value=st.value)
        tail = templates.replace(f"return ag__.retval(value, flag, {node.name!r}, {self.lineno(node)})",
                                 value=st.value, flag=st.flag)
        node.body = self.mark(head, node) + body + self.mark(tail, node.body[-1])
        return node

    def visit_Return(self, node):
        st = self.state
        if st is None:
            return node
        st.count += 1
        value = node.value if node.value is not None else templates.const(None)
        return self.mark(templates.replace("flag = True\nvar = value", flag=st.flag, var=st.value,
                                           value=value), node)

    def visit_Raise(self, node):
        st = self.state
        if st is None or id(node) not in getattr(self, "raises", ()):
            return node
        st.count += 1
        call = (templates.replace("ag__.raise_stmt(exc)", exc=node.exc) if node.cause is None else
                templates.replace("ag__.raise_stmt(exc, cause)", exc=node.exc, cause=node.cause))
        return self.mark(call + templates.replace("flag = True", flag=st.flag), node)

    def _loop(self, node):
        st = self.state
        before = st.count if st else 0
        node = self.generic_visit(node)
        if st is not None and st.count > before:
            if isinstance(node, gast.While):
                node.test = templates.replace_as_expression("not flag and test", flag=st.flag, test=node.test)
            else:
                test = templates.replace_as_expression("not flag", flag=st.flag)
                extra = anno.getanno(node, anno.EXTRA_TEST)
                if extra is not None:
                    test = templates.replace_as_expression("a and b", a=test, b=extra)
                anno.setanno(node, anno.EXTRA_TEST, test)
        return node

    visit_While = _loop
    visit_For = _loop


def transform(node, ctx):
    return ReturnTransformer(ctx).visit(node)
