"""Rejects constructs that cannot be converted, with the user's line, a caret and what
to write instead (never a silent fallback). Runs first, before anything is rewritten.

What is rejected, and why:
* `yield` / `yield from` / `await`: no graph equivalent.
* `del x` of a name inside an if / while / for: the statement's state would lose a
  variable on one path only.
* `:=` in an operand of `and` / `or` or in a conditional expression (outside a `while`
  test, which loop_tests handles): those become functions (evaluated lazily), where the
  name would be bound in the wrong scope.

Supported on purpose (lowered like any other jump, so they behave as in Python):
break / continue / return inside `try` / `except` / `finally` and `with` blocks, also in
tensor loops; the `finally` block and `__exit__` still run when the jump is taken.

Requires activity (anno.BODY_SCOPE / ORELSE_SCOPE on if / while / for)."""
from __future__ import annotations

import gast

from ..pyct.transformer import child_nodes, walk
from .base import Converter

_MESSAGES = {
    gast.Yield: "generators cannot be converted: 'yield' has no graph equivalent. Return a list or a "
                "stacked tensor instead, or mark the function with @do_not_convert",
    gast.YieldFrom: "generators cannot be converted: 'yield from' has no graph equivalent. Return a list "
                    "instead, or mark the function with @do_not_convert",
    gast.Await: "'await' cannot be converted; call the coroutine outside the @function",
}

_CONTROL_FLOW = (gast.If, gast.While, gast.For)


def _declared(fn: gast.FunctionDef) -> dict[str, gast.stmt]:
    """Names the function declares `global` or `nonlocal` (not in nested functions)."""
    out: dict[str, gast.stmt] = {}
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)):
            continue
        if isinstance(n, (gast.Global, gast.Nonlocal)):
            out.update({name: n for name in n.names})
        todo.extend(child_nodes(n))
    return out


class UnsupportedChecker(Converter):
    requires_analysis = ("activity",)

    def __init__(self, ctx):
        super().__init__(ctx)
        self.depth = 0  # how many if / while / for statements enclose the node

    def visit(self, node):
        msg = _MESSAGES.get(type(node))
        if msg is not None:
            raise self.error(node, msg)
        return super().visit(node)

    def visit_FunctionDef(self, node):
        depth, self.depth = self.depth, 0
        self.generic_visit(node)
        self.depth = depth
        return node

    def _control_flow(self, node):
        # (a `global` / `nonlocal` name assigned inside is carried as the statement's state,
        # control_flow.py, and written back after each run, function.py)
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1
        return node

    visit_If = visit_For = _control_flow

    def _walrus_in(self, expr, where: str, advice: str):
        for n in walk(expr):
            if isinstance(n, gast.NamedExpr):
                name = getattr(n.target, "id", "?")
                raise self.error(n, f"'{name} := ...' in {where} cannot be converted: that expression becomes a "
                                    f"function of its own, so '{name}' would not be assigned. {advice}")

    def visit_While(self, node):
        test, node.test = node.test, gast.Constant(value=True, kind=None)  # (loop_tests lowers its `:=`)
        try:
            return self._control_flow(node)
        finally:
            node.test = test

    def visit_BoolOp(self, node):
        self._walrus_in(node, "an `and` / `or`", "Assign it in a statement of its own before the expression.")
        return self.generic_visit(node)

    def visit_IfExp(self, node):
        self._walrus_in(node, "a conditional expression",
                        "Assign it in a statement of its own before the expression.")
        return self.generic_visit(node)

    def visit_Delete(self, node):
        if self.depth:
            for t in node.targets:
                if isinstance(t, gast.Name):
                    raise self.error(
                        t, f"'del {t.id}' inside an if / while / for cannot be converted: graph control flow "
                           f"needs every variable on every path. Assign '{t.id} = None' instead, or delete it "
                           "after the statement.")
        return node


def transform(node, ctx):
    return UnsupportedChecker(ctx).visit(node)
