"""Liveness, structured and backward: which names are read later, before being rebound.

Requires activity. Writes anno.LIVE_IN and anno.LIVE_OUT (frozensets of basic names) on
every statement. Control-flow converters use them to pick loop and branch state: a
variable modified in a loop is carried only if it is live into or out of the loop.
Runs after break / continue / return are lowered, so control is structured.
"""
from __future__ import annotations

import gast

from ..pyct import anno
from ..pyct.qual_names import is_composite
from . import activity


def _basic(names) -> frozenset:
    return frozenset(n for n in names if not is_composite(n))


def _expr_reads(node) -> frozenset:
    s = activity.Scope()
    activity._reads(node, s)
    return _basic(s.read)


def _kills(node) -> frozenset:
    """Names a simple statement definitely rebinds."""
    if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
        return frozenset([node.name])
    if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Import, gast.ImportFrom)):
        return _basic(m for m in anno.getanno(node, anno.SCOPE).modified)
    return frozenset()


def block(stmts, live_out: frozenset) -> frozenset:
    live = live_out
    for s in reversed(stmts):
        live = stmt(s, live)
    return live


def stmt(node, live_out: frozenset) -> frozenset:
    anno.setanno(node, anno.LIVE_OUT, live_out)
    scope: activity.Scope = anno.getanno(node, anno.SCOPE)
    if isinstance(node, gast.If):
        live_in = _expr_reads(node.test) | block(node.body, live_out) | block(node.orelse, live_out)
    elif isinstance(node, gast.While):
        after = block(node.orelse, live_out)
        head = after | _expr_reads(node.test)
        while True:
            new = after | _expr_reads(node.test) | block(node.body, head)
            if new == head:
                break
            head = new
        live_in = head
    elif isinstance(node, gast.For):
        after = block(node.orelse, live_out)
        t = activity.Scope()
        activity._targets(node.target, t)
        target = _basic(t.modified)
        # a lowered break/return leaves a test that runs before every iteration
        extra = anno.getanno(node, anno.EXTRA_TEST, None)
        checked = _expr_reads(extra) if extra is not None else frozenset()
        head = after | checked
        while True:
            new = after | checked | (block(node.body, head) - target)
            if new == head:
                break
            head = new
        live_in = head | _expr_reads(node.iter)
    elif isinstance(node, gast.Try):
        handlers = frozenset()
        fin = block(node.finalbody, live_out)
        for h in node.handlers:
            handlers |= block(h.body, fin)
        live_in = block(node.body, block(node.orelse, fin) | handlers) | handlers | fin
    elif isinstance(node, gast.With):
        live_in = block(node.body, live_out) | _basic(scope.read)
    elif isinstance(node, gast.Return):
        live_in = _basic(scope.read)
    elif isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
        resolve(node)
        live_in = (live_out - _kills(node)) | _basic(scope.read)
    else:
        live_in = (live_out - _kills(node)) | _basic(scope.read)
    anno.setanno(node, anno.LIVE_IN, live_in)
    return live_in


def resolve(fn: gast.AST) -> None:
    if isinstance(fn, gast.Lambda):
        return
    block(fn.body, frozenset())
