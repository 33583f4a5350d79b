"""`name op= value` -> `name = ag__.augmented(name, value, "op", name="name", param=..., line=...)`.

numpy's `a += b` changes the array `a` in place: every other name for that array sees the
change, and so does the caller that passed it. A graph tensor is a value; `a += b` on it
makes a new one. `ag__.augmented` keeps Python's in-place operator for Python values and
refuses, at the user's line, an in-place change to a graph array that another variable
also names, or that the function also puts into a list, dict or object (the graph would
compute something else than Python there). Targets that are
attributes or items keep their own statement (side_effects notes them)."""
from __future__ import annotations

import gast

from ..pyct import templates
from ..pyct.transformer import child_nodes, walk
from .base import Converter

OPERATORS = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.FloorDiv: "//", gast.Mod: "%",
        gast.Pow: "**", gast.MatMult: "@", gast.BitAnd: "&", gast.BitOr: "|", gast.BitXor: "^",
        gast.LShift: "<<", gast.RShift: ">>"}


# methods that keep their argument in the container they are called on
_STORING_METHODS = frozenset({"append", "extend", "insert", "add", "appendleft", "setdefault", "update"})
_LITERALS = (gast.List, gast.Tuple, gast.Set, gast.Dict)


# the nodes without which this pass changes nothing: a tree with none (an `a += b`) skips it
ACTS_ON = frozenset({gast.AugAssign})


def held_names(fn: gast.FunctionDef, lineno) -> dict[str, int]:
    """Names whose value the function puts into a container or an object that outlives the
    statement (`acc = [v]`, `acc.append(v)`, `d[k] = v`, `self.h = v`), each with the first
    such line: numpy's in-place `v += ...` would change what the container holds too.
    Literals that are only passed to a function (`np.stack([v, w])`), returned, or unpacked
    (`a, b = v, w`) hold nothing afterwards."""
    held: dict[str, int] = {}

    def store(expr, line):
        if isinstance(expr, gast.Name):
            held.setdefault(expr.id, line)
        elif isinstance(expr, gast.Starred):
            store(expr.value, line)
        elif isinstance(expr, (gast.List, gast.Tuple, gast.Set)):
            for e in expr.elts:
                store(e, line)
        elif isinstance(expr, gast.Dict):
            for e in [k for k in expr.keys if k is not None] + expr.values:
                store(e, line)

    for node in walk(fn):
        if isinstance(node, (gast.Assign, gast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, gast.Assign) else [node.target]
            if any(isinstance(t, (gast.Subscript, gast.Attribute)) for t in targets):
                store(node.value, lineno(node))
            elif isinstance(node.value, _LITERALS) and not all(isinstance(t, (gast.Tuple, gast.List)) for t in targets):
                store(node.value, lineno(node))
        elif isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
                node.func.attr in _STORING_METHODS:
            for a in node.args:
                store(a, lineno(node))
    return held


class InPlaceConverter(Converter):
    """What a converter of in-place changes needs of the converted function: its parameters
    (a change the caller would see) and the names it puts into containers (`held_names`)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.params: set[str] | None = None
        self.local: set[str] = set()
        self.held: dict[str, int] = {}
        self.iterating: list[tuple[str, int]] = []  # (name, line) of each enclosing `for ... in name`

    def visit_For(self, node):
        """In the body of `for e in name:` Python's iterator holds name's array: an in-place
        change there shows in later iterations (see `iterated_at`)."""
        node.target = self.visit(node.target)
        node.iter = self.visit(node.iter)
        targets = {n.id for n in walk(node.target) if isinstance(n, gast.Name)}
        read = any(isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id in targets
                   for stmt in node.body for n in walk(stmt))
        watch = isinstance(node.iter, gast.Name) and read  # (items never read: their values do not matter)
        if watch:
            self.iterating.append((node.iter.id, self.lineno(node)))
        node.body = self._block(node.body)
        if watch:
            self.iterating.pop()
        node.orelse = self._block(node.orelse)
        return node

    def _block(self, stmts: list) -> list:
        out = []
        for n in stmts:
            new = self.visit(n)
            out += new if isinstance(new, list) else [new] if new is not None else []
        return out

    def in_place_extras(self, name: str) -> str:
        """The keyword arguments of ag__.augmented / setitem that say where else `name`'s array lives."""
        extra = ", held_at=held_" if name in self.held else ""
        iterated = [line for n, line in self.iterating if n == name]
        return extra + (f", iterated_at={iterated[-1]}" if iterated else "")

    def visit_FunctionDef(self, node):
        if self.params is None:  # the converted function's own parameters
            args = node.args
            self.params = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs
                           + [a for a in (args.vararg, args.kwarg) if a is not None]}
            self.local = _local_names(node) | self.params
            self.held = held_names(node, self.lineno)
        return self.generic_visit(node)


def _local_names(fn: gast.FunctionDef) -> set[str]:
    """Names the function binds (Python's locals), not those it declares global or
    nonlocal: `G[k] = v` on any other name changes an outside object and must not make
    `G` a local by rebinding it."""
    stored, declared = set(), set()
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            stored.add(n.id)
        elif isinstance(n, (gast.Global, gast.Nonlocal)):
            declared |= set(n.names)
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            stored.add(n.name)
            continue
        if not isinstance(n, gast.Lambda):
            todo.extend(child_nodes(n))
    return stored - declared


class AugmentedAssignmentTransformer(InPlaceConverter):

    def visit_AugAssign(self, node):
        if not isinstance(node.target, gast.Name) or type(node.op) not in OPERATORS:
            return self.generic_visit(node)
        name = node.target.id
        new = templates.replace(
            f"target = ag__.augmented(current, value, op, name=name_, param=is_param, line=line_"
            f"{self.in_place_extras(name)})",
            target=gast.Name(name, gast.Store(), None, None), current=gast.Name(name, gast.Load(), None, None),
            value=node.value, op=templates.const(OPERATORS[type(node.op)]), name_=templates.const(name),
            is_param=templates.const(name in self.params), line_=templates.const(self.lineno(node)),
            held_=templates.const(self.held.get(name, 0)))
        return self.mark(new, node)


def transform(node, ctx):
    return AugmentedAssignmentTransformer(ctx).visit(node)
