"""Notes every statement that changes an object the function did not create (an
attribute or item of a parameter, a closure variable or a global, or such a list's
`append`, `update`, ...) with `ag__.python_side_effect(what, passed_in, line)`, which
warns when the statement is traced inside a loop or `if` on a tensor: there it runs once
while the graph is built, not each time the graph runs (as TF's autograph warns).

An `append` (or other changing method) called directly on a global or closure name is
also emitted as the call it is, so the lists pass does not rebind that name as a local.

A changing method called inside an expression (`log.append(k) is None`, `stack.pop() > 0`,
in a loop's test, an operand of `and`, a conditional expression...) becomes
`ag__.changing_call(method, args, kwargs, what, line, own)`, which refuses it where nothing
carries the change (conversion.changing_call); activity still reads it as the
change it is.

Requires activity (the function's BODY_SCOPE: its params and modified names)."""
from __future__ import annotations

import copy

import gast

from ..pyct import anno, parser, templates
from ..pyct.qual_names import is_composite
from ..pyct.transformer import child_nodes, not_entered, walk
from .base import Converter

# the nodes without which this pass changes nothing: a tree with none (no attribute or item
# changed, no method called) skips it, and the analysis it reads
ACTS_ON = frozenset({gast.Attribute, gast.Subscript})

# methods of Python containers that change them in place
CHANGING_METHODS = {"append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault",
                    "add", "discard", "sort", "reverse", "appendleft", "extendleft", "popleft"}


def _root(node: gast.expr) -> gast.Name | None:
    """`obj` for `obj.a[i].b`; None when the chain does not start at a name."""
    while isinstance(node, (gast.Attribute, gast.Subscript)):
        node = node.value
    return node if isinstance(node, gast.Name) else None


def _declared_nonlocal(fn: gast.FunctionDef) -> set[str]:
    out: set[str] = set()
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, gast.Nonlocal):
            out |= set(n.names)
        if not isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)):
            todo.extend(child_nodes(n))
    return out


class SideEffectTransformer(Converter):
    requires_analysis = ("activity",)

    def __init__(self, ctx):
        super().__init__(ctx)
        self.params: set[str] | None = None  # set on entering the converted function
        self.passed: set[str] = set()  # params never rebound: their objects are the caller's
        self.local: set[str] = set()
        self.blocks: list[set[str]] = []  # names bound in each enclosing if / loop (innermost last)
        self.stmt_line = 0  # the line of the statement being visited (expressions may have none of their own)

    def visit(self, node):
        if not isinstance(node, gast.stmt):
            return super().visit(node)
        outer, self.stmt_line = self.stmt_line, self.lineno(node) or self.stmt_line
        try:
            return super().visit(node)
        finally:
            self.stmt_line = outer

    def _compound(self, node):
        self.blocks.append({n.id for stmt in node.body + node.orelse for n in walk(stmt)
                            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)})
        try:
            return self.generic_visit(node)
        finally:
            self.blocks.pop()

    visit_If = visit_For = visit_While = _compound

    def visit_FunctionDef(self, node):
        if self.params is not None:
            return node  # a nested function is converted on its own when it is called
        scope = anno.getanno(node, anno.BODY_SCOPE)
        self.params = set(scope.params)
        self.local = {m for m in scope.modified if not is_composite(m)} - scope.globals - _declared_nonlocal(node)
        self.passed = self.params - self.local  # `acc = list(acc)` makes acc the function's own (maybe)
        self.local -= self.params
        self.local.add("ag__")
        self.generic_visit(node)
        return node

    visit_Lambda = visit_ClassDef = not_entered

    def _outside(self, target: gast.expr) -> gast.Name | None:
        """The root name of an attribute / item target when the object is not the
        function's own."""
        if not isinstance(target, (gast.Attribute, gast.Subscript)):
            return None
        root = _root(target)
        return root if root is not None and root.id not in self.local else None

    def _noted(self, node: gast.stmt, targets: list[gast.expr], what: str | None = None, visit: bool = True) -> list:
        """`node` followed by a note per target it changes on an object from outside. The
        note comes after the statement and carries the root object as it is then (`acc` after
        `acc.append(v)`, which the lists pass rebinds) when the change is to the object's
        items: a helper that returns that object hands its change back to a caller that
        assigns it (see operators/side_effects.check_call_result). A change through an
        attribute (`self.steps += 1`) cannot be handed back: the note carries None."""
        if visit:
            self.generic_visit(node)  # (changing calls inside its expressions)
        notes = []
        for t in targets:
            root = self._outside(t)
            if root is not None:
                text = what or parser.unparse(t).strip()
                chain = t.value if what is not None else t  # `acc[i].append(...)`: the object is acc[i]
                by_items = not any(isinstance(n, gast.Attribute) for n in _chain(chain))
                obj = gast.Name(id=root.id, ctx=gast.Load(), annotation=None, type_comment=None)
                notes += templates.replace("ag__.python_side_effect(what, passed_in, line, obj)",
                                           what=templates.const(text),
                                           passed_in=templates.const(root.id in self.passed),
                                           line=templates.const(self.lineno(node)),
                                           obj=obj if by_items else templates.const(None))
        return [node] + self.mark(notes, node)

    def visit_Assign(self, node):
        return self._noted(node, [e for t in node.targets for e in _flat_targets(t)])

    def visit_AugAssign(self, node):
        return self._noted(node, [node.target])

    def visit_AnnAssign(self, node):
        return self._noted(node, [node.target] if node.value is not None else [])

    def visit_Delete(self, node):
        return self._noted(node, list(node.targets))

    def _own(self, name: str) -> bool:
        """Whether `name` is a container the innermost enclosing if / loop makes itself (or the
        function, at its top level): a new one on each run of that block."""
        return name in self.local and (not self.blocks or name in self.blocks[-1])

    def visit_Call(self, node):
        """A changing method called inside an expression (see the module docstring)."""
        self.generic_visit(node)
        func = node.func
        if not (isinstance(func, gast.Attribute) and func.attr in CHANGING_METHODS):
            return node
        root = _root(func.value)
        if root is None or root.id == "ag__":
            return node
        args = gast.Tuple(elts=list(node.args), ctx=gast.Load())
        kwargs = (gast.Dict(keys=[templates.const(k.arg) if k.arg else None for k in node.keywords],
                            values=[k.value for k in node.keywords]) if node.keywords else templates.const(None))
        return templates.replace_as_expression(
            "ag__.changing_call(func, args, kwargs, what, line, own)", func=func, args=args, kwargs=kwargs,
            what=templates.const(parser.unparse(func).strip() + "(...)"),
            line=templates.const(self.lineno(node) or self.stmt_line), own=templates.const(self._own(root.id)))

    def visit_Expr(self, node):
        call = node.value
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and call.func.attr in CHANGING_METHODS):
            return self.generic_visit(node)
        # a changing method called as a statement: its arguments (and object) may hold changing calls of their own
        call.args = [self.visit(a) for a in call.args]
        for k in call.keywords:
            k.value = self.visit(k.value)
        call.func.value = self.visit(call.func.value)
        obj = call.func.value
        root = _root(obj)
        if root is None:
            return node
        if root.id in self.local:
            if self._own(root.id):
                # at the top level, or made in the same if / loop body: a container of this call or iteration,
                # whose changes are Python's as they are
                return node
            # the function's own container: a change graph control flow cannot carry is refused there
            note = templates.replace("ag__.python_side_effect(what, None, line, obj)",
                                     what=templates.const(parser.unparse(call.func).strip() + "(...)"),
                                     line=templates.const(self.lineno(node)), obj=copy.deepcopy(obj))
            for n in walk(note[0]):
                if isinstance(n, gast.Name):
                    n.ctx = gast.Load()
            return self.mark(note, node) + [node]
        out = self._noted(node, [call.func], what=parser.unparse(call.func).strip() + "(...)", visit=False)
        if isinstance(obj, gast.Name) and obj.id not in self.params:
            # keep `seen.append(v)` a call on the global / closure list (see module docstring)
            args = gast.Tuple(elts=list(call.args), ctx=gast.Load())
            kwargs = (gast.Dict(keys=[templates.const(k.arg) if k.arg else None for k in call.keywords],
                                values=[k.value for k in call.keywords]) if call.keywords else templates.const(None))
            node.value = templates.replace_as_expression("ag__.converted_call(func, args, kwargs)", func=call.func,
                                                         args=args, kwargs=kwargs)
        return out


def _chain(node: gast.expr) -> list[gast.expr]:
    """The attribute and item accesses from `node` down to its root name."""
    out = []
    while isinstance(node, (gast.Attribute, gast.Subscript)):
        out.append(node)
        node = node.value
    return out


def _flat_targets(t: gast.expr) -> list[gast.expr]:
    if isinstance(t, (gast.Tuple, gast.List)):
        return [x for e in t.elts for x in _flat_targets(e)]
    if isinstance(t, gast.Starred):
        return _flat_targets(t.value)
    return [t]


def transform(node, ctx):
    return SideEffectTransformer(ctx).visit(node)
