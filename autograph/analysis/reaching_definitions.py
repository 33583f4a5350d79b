"""Reaching definitions, structured: which local names may be / must be bound before
each statement.

Requires activity. Writes anno.DEFINED_IN (may be bound) and anno.MUST_DEFINED_IN on
every statement, and anno.MAYBE_UNDEFINED on each load of a local name that some path
reaches unbound (the variables converter guards those reads). The analysis runs after
break / continue / return are lowered, so control is structured: a loop body may run
zero times, both branches of an `if` meet after it.
"""
from __future__ import annotations

import gast

from ..pyct import anno
from ..pyct.transformer import child_nodes
from . import activity


class _Analyzer:
    def __init__(self, local_names: set[str]):
        self.locals = local_names

    def _mark_loads(self, node: gast.AST, must: frozenset) -> None:
        todo = list(child_nodes(node)) if isinstance(node, gast.stmt) else [node]
        while todo:
            n = todo.pop()
            if isinstance(n, (gast.FunctionDef, gast.Lambda, gast.ClassDef, gast.stmt)):
                continue  # nested scopes read later; nested statements are visited on their own
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                if n.id in self.locals and n.id not in must:
                    anno.setanno(n, anno.MAYBE_UNDEFINED, True)
            todo.extend(child_nodes(n))

    def block(self, stmts, may: frozenset, must: frozenset):
        for s in stmts:
            may, must = self.stmt(s, may, must)
        return may, must

    def stmt(self, node, may, must):
        anno.setanno(node, anno.DEFINED_IN, may)
        anno.setanno(node, anno.MUST_DEFINED_IN, must)
        scope: activity.Scope = anno.getanno(node, anno.SCOPE)
        mod = frozenset(m for m in scope.modified if m in self.locals)
        if isinstance(node, gast.If):
            self._mark_loads(node.test, must)
            m1, s1 = self.block(node.body, may, must)
            m2, s2 = self.block(node.orelse, may, must)
            return m1 | m2, s1 & s2
        if isinstance(node, (gast.While, gast.For)):
            if isinstance(node, gast.While):
                self._mark_loads(node.test, must)
            else:
                self._mark_loads(node.iter, must)
            body_must = must
            if isinstance(node, gast.For):
                t = activity.Scope()
                activity._targets(node.target, t)
                body_must = must | frozenset(t.modified)
            loop_may = may | mod  # values from earlier iterations
            self.block(node.body, loop_may, body_must)
            m2, s2 = self.block(node.orelse, loop_may, must)
            return loop_may | m2, s2
        if isinstance(node, gast.Try):
            m, _ = self.block(node.body, may, must)
            for h in node.handlers:
                self.block(h.body, may | mod, must)
            self.block(node.orelse, may | mod, must)
            m3, s3 = self.block(node.finalbody, may | mod, must)
            return may | mod, s3
        if isinstance(node, gast.With):
            for item in node.items:
                self._mark_loads(item.context_expr, must)
            inner_must = must | frozenset(
                m for m in anno.getanno(node, anno.SCOPE).modified if m in self.locals) - frozenset(
                anno.getanno(node, anno.BODY_SCOPE).modified)
            m, s = self.block(node.body, may | mod, inner_must)
            return may | mod, must | s
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
            resolve(node)
        else:
            self._mark_loads(node, must)
        return may | mod, must | mod


def resolve(fn: gast.AST) -> None:
    """Annotate a FunctionDef (after activity.resolve) and its nested functions."""
    if isinstance(fn, gast.Lambda):
        return
    scope: activity.Scope = anno.getanno(fn, anno.BODY_SCOPE)
    local = {m for m in scope.modified if "." not in m and "[" not in m} - scope.globals
    nonlocals = set()
    for n in fn.body:
        if isinstance(n, gast.Nonlocal):
            nonlocals |= set(n.names)
    local -= nonlocals
    params = frozenset(scope.params)
    _Analyzer(local | set(params)).block(fn.body, params, params)
