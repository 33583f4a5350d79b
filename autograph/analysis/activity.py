"""Activity analysis: which names each statement reads and which it modifies.

Writes anno.SCOPE on every statement, and anno.BODY_SCOPE / anno.ORELSE_SCOPE on
compound statements. Names assigned inside a nested function or lambda are local to
it, unless declared `nonlocal` there (as generated control-flow bodies do); names read
inside a nested function count as reads of the enclosing scope (closures).
Attribute targets are recorded as composite names (`obj.total`), item assignments as
the container's items (`a[:]` for `a[i] = v`, see qual_names.contents_name).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import gast

from ..pyct import anno
from ..pyct.qual_names import CONTENTS_SUFFIX, contents_name, qn
from ..pyct.transformer import child_nodes, walk


@dataclass
class Scope:
    """Names read and names modified by a statement or block."""

    read: set[str] = field(default_factory=set)
    modified: set[str] = field(default_factory=set)
    # basic names bound by the function itself (params), only on the function scope
    params: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)

    def merge(self, other: "Scope") -> "Scope":
        self.read |= other.read
        self.modified |= other.modified
        self.globals |= other.globals
        return self


def _targets(node: gast.AST, scope: Scope) -> None:
    """Record an assignment target."""
    if isinstance(node, gast.Name):
        scope.modified.add(node.id)
    elif isinstance(node, (gast.Tuple, gast.List)):
        for e in node.elts:
            _targets(e, scope)
    elif isinstance(node, gast.Starred):
        _targets(node.value, scope)
    elif isinstance(node, (gast.Attribute, gast.Subscript)):
        name = qn(node) if isinstance(node, gast.Attribute) else contents_name(node)
        if name is not None:
            scope.modified.add(name)
        _reads(node.value, scope)
        if isinstance(node, gast.Subscript):
            _reads(node.slice, scope)


def _fn_free_reads(node: gast.AST) -> tuple[set[str], set[str]]:
    """(names read, names modified via `nonlocal`) by a nested function or lambda."""
    inner = Scope()
    args = node.args
    params = {a.id for a in args.args + args.posonlyargs + args.kwonlyargs if isinstance(a, gast.Name)}
    for a in (args.vararg, args.kwarg):
        if a is not None:
            params.add(a.id)
    for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
        _reads(d, inner)  # defaults are evaluated in the enclosing scope
    outer_reads = set(inner.read)
    body = Scope()
    if isinstance(node, gast.Lambda):
        _reads(node.body, body)
    else:
        block_scope(node.body, body)
    nonlocals: set[str] = set()
    for n in walk(node):
        if isinstance(n, gast.Nonlocal):
            nonlocals |= set(n.names)
    local = (body.modified - nonlocals) | params
    reads = {r for r in body.read if r.split(".")[0].split("[")[0] not in local}
    modified = {m for m in body.modified if m in nonlocals}
    return outer_reads | reads, modified


# methods that change a list or dict in place (`append` is turned into an assignment by
# the lists pass): the container's items are state of a loop or `if` that calls them
ITEM_CHANGING_METHODS = frozenset({"pop", "popitem", "remove", "clear", "insert", "extend", "sort", "reverse",
                                   "update", "setdefault"})


def _changed_container(call: gast.Call) -> str | None:
    """`xs[:]` for `xs.pop()` (also as converted code's `ag__.converted_call(xs.pop, ...)` and
    `ag__.changing_call(xs.pop, ...)`)."""
    func = call.func
    if (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and func.value.id == "ag__"
            and func.attr in ("converted_call", "changing_call") and call.args):
        func = call.args[0]
    if not isinstance(func, gast.Attribute) or func.attr not in ITEM_CHANGING_METHODS:
        return None
    base = qn(func.value)
    return None if base is None else base + CONTENTS_SUFFIX


def _reads(node: gast.AST | None, scope: Scope) -> None:
    if node is None:
        return
    if isinstance(node, gast.Call):
        changed = _changed_container(node)
        if changed is not None:
            scope.modified.add(changed)
    if isinstance(node, gast.Name):
        if isinstance(node.ctx, gast.Load):
            scope.read.add(node.id)
        elif isinstance(node.ctx, gast.Store):
            scope.modified.add(node.id)  # walrus
        return
    if isinstance(node, gast.Lambda):
        r, m = _fn_free_reads(node)
        scope.read |= r
        scope.modified |= m
        return
    if isinstance(node, (gast.ListComp, gast.SetComp, gast.GeneratorExp, gast.DictComp)):
        inner = Scope()
        for child in child_nodes(node):
            _reads(child, inner)
        local = set()
        for g in node.generators:
            t = Scope()
            _targets(g.target, t)
            local |= t.modified
        scope.read |= {r for r in inner.read if r not in local}
        return
    if isinstance(node, gast.Attribute) and isinstance(node.ctx, gast.Load):
        name = qn(node)
        if name is not None:
            scope.read.add(name)
    for child in child_nodes(node):
        _reads(child, scope)


def stmt_scope(node: gast.stmt) -> Scope:
    """The Scope of one statement, annotating nested statements on the way."""
    s = Scope()
    if isinstance(node, (gast.Assign,)):
        _reads(node.value, s)
        for t in node.targets:
            _targets(t, s)
    elif isinstance(node, gast.AugAssign):
        _reads(node.value, s)
        _reads(gast.Name(id=node.target.id, ctx=gast.Load(), annotation=None, type_comment=None)
               if isinstance(node.target, gast.Name) else node.target, s)
        if not isinstance(node.target, gast.Name):
            t = qn(node.target)
            if t:
                s.read.add(t)
        _targets(node.target, s)
    elif isinstance(node, gast.AnnAssign):
        _reads(node.value, s)
        if node.value is not None:
            _targets(node.target, s)
    elif isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
        for d in node.decorator_list:
            _reads(d, s)
        r, m = _fn_free_reads(node)
        s.read |= r
        s.modified |= m
        s.modified.add(node.name)
        resolve(node)
    elif isinstance(node, gast.ClassDef):
        for b in node.bases + node.decorator_list:
            _reads(b, s)
        s.modified.add(node.name)
    elif isinstance(node, (gast.If, gast.While)):
        _reads(node.test, s)
        body = block_scope(node.body)
        orelse = block_scope(node.orelse)
        anno.setanno(node, anno.BODY_SCOPE, body)
        anno.setanno(node, anno.ORELSE_SCOPE, orelse)
        s.merge(body).merge(orelse)
    elif isinstance(node, gast.For):
        _reads(node.iter, s)
        body = Scope()
        _targets(node.target, body)
        block_scope(node.body, body)
        orelse = block_scope(node.orelse)
        anno.setanno(node, anno.BODY_SCOPE, body)
        anno.setanno(node, anno.ORELSE_SCOPE, orelse)
        s.merge(body).merge(orelse)
    elif isinstance(node, gast.With):
        for item in node.items:
            _reads(item.context_expr, s)
            if item.optional_vars is not None:
                _targets(item.optional_vars, s)
        body = block_scope(node.body)
        anno.setanno(node, anno.BODY_SCOPE, body)
        s.merge(body)
    elif isinstance(node, gast.Try):
        for block in (node.body, node.orelse, node.finalbody):
            s.merge(block_scope(block))
        for h in node.handlers:
            _reads(h.type, s)
            if h.name is not None:
                _targets(h.name, s)
            s.merge(block_scope(h.body))
    elif isinstance(node, (gast.Import, gast.ImportFrom)):
        for a in node.names:
            s.modified.add((a.asname or a.name).split(".")[0])
    elif isinstance(node, gast.Global):
        s.globals |= set(node.names)
    elif isinstance(node, gast.Delete):
        for t in node.targets:
            _reads(t.value if isinstance(t, (gast.Attribute, gast.Subscript)) else None, s)
            if isinstance(t, gast.Subscript):  # `del a[k]` changes the items of `a`
                _targets(t, s)
    else:
        for child in child_nodes(node):
            _reads(child, s)
    anno.setanno(node, anno.SCOPE, s)
    return s


def block_scope(stmts: list[gast.stmt], into: Scope | None = None) -> Scope:
    s = into if into is not None else Scope()
    for st in stmts:
        s.merge(stmt_scope(st))
    return s


def resolve(fn: gast.AST) -> Scope:
    """Annotate a FunctionDef (or Lambda) and return the Scope of its body."""
    if isinstance(fn, gast.Lambda):
        s = Scope()
        _reads(fn.body, s)
        anno.setanno(fn, anno.BODY_SCOPE, s)
        return s
    s = block_scope(fn.body)
    args = fn.args
    s.params = {a.id for a in args.args + args.posonlyargs + args.kwonlyargs}
    for a in (args.vararg, args.kwarg):
        if a is not None:
            s.params.add(a.id)
    anno.setanno(fn, anno.BODY_SCOPE, s)
    return s
