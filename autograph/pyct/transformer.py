"""A faster ast.NodeTransformer for the converters and templates, and a faster walk.

Conversion walks each function's tree about twenty-five times (a pass each, templates,
analyses, source maps); ast's visitor looks the method up by name on every node and reads
fields through generators, which was a third of a conversion's time. These do the same
with the method found once per node class, and pass by field-less leaves (contexts,
operators) that a transformer has no method for (a visit would return them unchanged).
"""
from __future__ import annotations

import ast

import gast

# field-less nodes (contexts and operators), of gast and of ast
LEAVES = frozenset(c for base in (gast.expr_context, gast.operator, gast.unaryop, gast.cmpop, gast.boolop,
                                  ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
                   for c in base.__subclasses__() if not c._fields)
# what ast.NodeVisitor.visit_Constant looks for (the node types of Python 3.7)
_OLD_CONSTANT_VISITORS = ("visit_Num", "visit_Str", "visit_Bytes", "visit_NameConstant", "visit_Ellipsis")


def not_entered(self, node):
    """A visit_X method that leaves the node as it is, without entering it (a scope a
    transformer stays out of)."""
    return node


def _statements_only(cls) -> bool:
    """Are all of `cls`'s visit_X methods, but not_entered ones, for statements (or
    modules)? Then an expression holds nothing it changes: no statement sits inside one."""
    for name in dir(cls):
        kind = getattr(gast, name[6:], None) if name.startswith("visit_") else None
        if not (isinstance(kind, type) and issubclass(kind, ast.AST)):
            continue
        method = getattr(cls, name)
        if method is not_entered or issubclass(kind, (gast.stmt, gast.mod)):
            continue
        if method is ast.NodeVisitor.visit_Constant and not any(hasattr(cls, m) for m in _OLD_CONSTANT_VISITORS):
            continue
        return False
    return True


class Transformer(gast.NodeTransformer):
    """ast.NodeTransformer, faster; the same results. A subclass that overrides visit()
    must not act on field-less leaves (generic_visit passes them by), nor, if all its
    visit_X methods are for statements, on expressions (generic_visit does not enter them)."""

    _visitors: dict = {}
    _statements_only = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._visitors = {}  # node class -> the function visiting it, None for generic_visit
        cls._statements_only = _statements_only(cls)

    def _visitor(self, node_class):
        cls = type(self)
        method = getattr(cls, "visit_" + node_class.__name__, None)
        if method is ast.NodeVisitor.visit_Constant and not any(hasattr(cls, m) for m in _OLD_CONSTANT_VISITORS):
            method = None
        self._visitors[node_class] = method
        return method

    def visit(self, node):
        node_class = node.__class__
        try:
            method = self._visitors[node_class]
        except KeyError:
            method = self._visitor(node_class)
        if method is None:
            return self.generic_visit(node)
        return method(self, node)

    def generic_visit(self, node):
        if self._statements_only and isinstance(node, gast.expr):
            return node
        visitors = self._visitors
        for field in node._fields:
            try:
                old = getattr(node, field)
            except AttributeError:
                continue
            if isinstance(old, list):
                new_values = []
                for value in old:
                    if isinstance(value, ast.AST):
                        c = value.__class__
                        if c not in LEAVES or visitors.get(c, True) is not None:
                            value = self.visit(value)
                            if value is None:
                                continue
                            if not isinstance(value, ast.AST):
                                new_values.extend(value)
                                continue
                    new_values.append(value)
                old[:] = new_values
            elif isinstance(old, ast.AST):
                c = old.__class__
                if c in LEAVES and visitors.get(c, True) is None:
                    continue
                new_node = self.visit(old)
                if new_node is None:
                    delattr(node, field)
                else:
                    setattr(node, field, new_node)
        return node


def child_nodes(node) -> list:
    """ast.iter_child_nodes(node), as a list, without its generators."""
    out = []
    for field in node._fields:
        try:
            v = getattr(node, field)
        except AttributeError:
            continue
        if isinstance(v, ast.AST):
            out.append(v)
        elif isinstance(v, list):
            for x in v:
                if isinstance(x, ast.AST):
                    out.append(x)
    return out


def walk(node) -> list:
    """The nodes of ast.walk(node), in its order, as a list."""
    out = [node]
    i = 0
    while i < len(out):
        out.extend(child_nodes(out[i]))
        i += 1
    return out


def node_classes(node, runtime: str | None = None) -> set:
    """The classes of the nodes under `node` (itself included, contexts and operators too):
    one pass over the fields, in no order, cheaper than a walk. With `runtime` (a name), an
    attribute of that name (`ag__.for_stmt`: what converters write) counts as no Attribute."""
    seen: set = set()
    todo = [node]
    pop, push, extend, add = todo.pop, todo.append, todo.extend, seen.add
    while todo:
        n = pop()
        if not isinstance(n, ast.AST):  # (a name, a number, None: fields that hold no node)
            continue
        fields = n.__dict__
        if runtime is None or n.__class__ is not gast.Attribute or getattr(fields.get("value"), "id", None) != runtime:
            add(n.__class__)
        for field in n._fields:
            value = fields.get(field)
            if value.__class__ is list:
                extend(value)
            elif value is not None:
                push(value)
    return seen
