"""Generate code from templates: a snippet of ordinary Python whose placeholder names
are replaced by AST nodes (moved, not copied: use each node once), so the generated code reads like the Python it stands for.

    replace('''
        def body_name():
            body
        ag__.run(body_name)
    ''', body_name="loop_body", body=stmts)

A placeholder may be replaced by a string (a new name), an expression node, or a
list of statements (when the placeholder stands alone as a statement).
"""
from __future__ import annotations

import functools
import textwrap
from typing import Any

import gast

from .transformer import Transformer


def _set_ctx(node: gast.AST, ctx: gast.AST) -> gast.AST:
    if isinstance(node, (gast.Name, gast.Attribute, gast.Subscript, gast.Starred)):
        node.ctx = ctx
    if isinstance(node, (gast.Tuple, gast.List)):
        node.ctx = ctx
        for e in node.elts:
            _set_ctx(e, ctx)
    if isinstance(node, gast.Starred):
        _set_ctx(node.value, ctx)
    return node


def _as_expr(value: Any, ctx: gast.AST) -> gast.AST:
    if isinstance(value, str):
        return gast.Name(id=value, ctx=ctx, annotation=None, type_comment=None)
    if isinstance(value, gast.AST):
        return _set_ctx(value, ctx)
    raise TypeError(f"cannot put {type(value).__name__} into a template expression")


class _Replacer(Transformer):
    def __init__(self, replacements: dict[str, Any]):
        self.r = replacements

    def visit_Name(self, node):
        if node.id in self.r:
            return _as_expr(self.r[node.id], node.ctx)
        return node

    def visit_Expr(self, node):
        if isinstance(node.value, gast.Name) and node.value.id in self.r:
            v = self.r[node.value.id]
            if isinstance(v, list):
                return list(v) or [gast.Pass()]
            if isinstance(v, gast.stmt):
                return v
        self.generic_visit(node)
        return node

    def _rename(self, name: str) -> str:
        v = self.r.get(name, name)
        return v if isinstance(v, str) else name

    def visit_FunctionDef(self, node):
        node.name = self._rename(node.name)
        self.generic_visit(node)
        return node

    def visit_Nonlocal(self, node):
        node.names = [self._rename(n) for n in node.names]
        return node

    visit_Global = visit_Nonlocal

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr in self.r and isinstance(self.r[node.attr], str):
            node.attr = self.r[node.attr]
        return node


@functools.lru_cache(maxsize=1024)
def _parsed(template: str) -> gast.Module:
    """The template's tree, parsed once (converters use a few dozen templates, each many
    times): `replace` works on a copy, this one is never changed."""
    return gast.parse(textwrap.dedent(template))


def _copy(node):
    """A deep copy of a parsed tree (fields and positions: what a parse makes), about ten
    times faster than parsing the template again or copy.deepcopy."""
    if isinstance(node, list):
        return [_copy(n) if isinstance(n, gast.AST) else n for n in node]
    cls = node.__class__
    new = cls.__new__(cls)
    d = node.__dict__.copy()
    for f in cls._fields:
        v = d.get(f)
        if isinstance(v, (list, gast.AST)):
            d[f] = _copy(v)
    new.__dict__.update(d)
    return new


def replace(template: str, **replacements: Any) -> list[gast.stmt]:
    """Parse `template` and replace placeholder names; returns the list of statements."""
    tree = _copy(_parsed(template))
    tree = _Replacer(replacements).visit(tree)
    out: list[gast.stmt] = []
    for s in tree.body:
        out.extend(s if isinstance(s, list) else [s])
    return out


def replace_as_expression(template: str, **replacements: Any) -> gast.expr:
    """Like `replace`, for a template that is one expression."""
    stmts = replace(template, **replacements)
    if len(stmts) != 1 or not isinstance(stmts[0], gast.Expr):
        raise ValueError(f"template is not one expression: {template!r}")
    return stmts[0].value


def const(value: Any) -> gast.Constant:
    return gast.Constant(value=value, kind=None)


def str_tuple(names: list[str]) -> gast.Tuple:
    return gast.Tuple(elts=[const(n) for n in names], ctx=gast.Load())
