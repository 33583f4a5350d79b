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


def _renamed(name: str, r: dict) -> str:
    v = r.get(name, name)
    return v if isinstance(v, str) else name


def _instantiate(node, r: dict, names: dict):
    """A copy of template node `node` with the placeholders of `r` replaced: a name by a
    new name or an expression, a statement that is only a name by statements, a def's,
    global's, nonlocal's or attribute's name by a new one. `names`: per template node, the
    names in it (a part naming no placeholder is copied as it is, without looking in)."""
    if not (names[id(node)] & r.keys()):
        return _copy(node)
    cls = node.__class__
    if cls is gast.Name:
        if node.id in r:
            return _as_expr(r[node.id], _copy(node.ctx))
        return _copy(node)
    if cls is gast.Expr and node.value.__class__ is gast.Name and node.value.id in r:
        v = r[node.value.id]
        if isinstance(v, list):
            return list(v) or [gast.Pass()]
        if isinstance(v, gast.stmt):
            return v
    if cls is gast.Global or cls is gast.Nonlocal:
        new = _copy(node)
        new.names = [_renamed(n, r) for n in node.names]
        return new
    new = cls.__new__(cls)
    d = node.__dict__.copy()
    for f in cls._fields:
        v = d.get(f)
        if isinstance(v, list):
            items = []
            for x in v:
                if isinstance(x, gast.AST):
                    x = _instantiate(x, r, names)
                    if isinstance(x, list):
                        items.extend(x)
                        continue
                items.append(x)
            d[f] = items
        elif isinstance(v, gast.AST):
            d[f] = _instantiate(v, r, names)
    new.__dict__.update(d)
    if cls is gast.FunctionDef:
        new.name = _renamed(node.name, r)
    elif cls is gast.Attribute:
        new.attr = _renamed(node.attr, r)
    return new


def _names_within(tree) -> dict:
    """Per node of a template (by id), the names that could be placeholders in it."""
    out: dict = {}

    def visit(node) -> frozenset:
        found = set()
        cls = node.__class__
        if cls is gast.Name:
            found.add(node.id)
        elif cls is gast.FunctionDef:
            found.add(node.name)
        elif cls is gast.Attribute:
            found.add(node.attr)
        elif cls is gast.Global or cls is gast.Nonlocal:
            found.update(node.names)
        for f in cls._fields:
            v = getattr(node, f, None)
            for x in v if isinstance(v, list) else [v]:
                if isinstance(x, gast.AST):
                    found |= visit(x)
        out[id(node)] = frozenset(found)
        return out[id(node)]

    visit(tree)
    return out


@functools.lru_cache(maxsize=1024)
def _parsed(template: str) -> tuple[gast.Module, dict]:
    """The template's tree, parsed once (converters use a few dozen templates, each many
    times), and the names in each of its nodes: `replace` makes a new tree from it, this
    one is never changed."""
    tree = gast.parse(textwrap.dedent(template))
    return tree, _names_within(tree)


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
    tree, names = _parsed(template)
    out: list[gast.stmt] = []
    for s in tree.body:
        s = _instantiate(s, replacements, names)
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
