"""Static facts about a generated program: which constructs it uses (coverage statistics)
and which reads may find a variable undefined (a rule the generator keeps and the shrinker
must not break)."""
from __future__ import annotations

import ast

import numpy as np

from .random_programs import Program


def constructs(program: Program) -> set[str]:
    """The constructs a program uses (for coverage statistics): AST node types and a few
    shapes that matter here, such as `return` inside a loop or and/or on plain values."""
    func = program.function_node()
    helpers = {n.name for n in ast.parse(program.source).body if isinstance(n, ast.FunctionDef)} - {func.name}
    found = set()
    for node in ast.walk(func):
        found.add(type(node).__name__)
        if isinstance(node, ast.For):
            found.add("for_range" if isinstance(node.iter, ast.Call) else "for_array")
            if isinstance(node.iter, ast.Call) and len(node.iter.args) == 3:
                found.add("range_step")
        if isinstance(node, (ast.For, ast.While)):
            jumps = {type(n).__name__ for n in ast.walk(node) if isinstance(n, (ast.Return, ast.Break, ast.Continue))}
            found.update(f"{j.lower()}_in_loop" for j in jumps)
        if isinstance(node, ast.If) and node.orelse:
            found.add("elif" if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If) else "else")
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            found.add("tuple_return")
        if isinstance(node, ast.BoolOp) and not all(isinstance(v, (ast.Compare, ast.BoolOp, ast.UnaryOp))
                                                    for v in node.values):
            found.add("and_or_on_values")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            found.add("print")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
            found.add("helper_call")
        if isinstance(node, ast.Return) and (node.value is None or (isinstance(node.value, ast.Constant)
                                                                   and node.value.value is None)):
            found.add("return_none")
        if isinstance(node, (ast.For, ast.While)) and node.orelse:
            found.add("loop_else")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("enumerate", "reversed"):
            found.add(node.func.id)
        if isinstance(node, ast.Call) and node.keywords:
            found.add("keyword_call")
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
            found.add("tuple_unpacking")
        if isinstance(node, (ast.Lambda, ast.FunctionDef)) and node is not func:
            found.add("closure")
        if isinstance(node, ast.Nonlocal):
            found.add("nonlocal")
        if isinstance(node, ast.Compare) and len(node.ops) > 1:
            found.add("chained_compare")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            found.add("power")
        if isinstance(node, ast.Subscript) and isinstance(node.slice, (ast.Slice, ast.UnaryOp)):
            found.add("slice_or_negative_index")
        if isinstance(node, ast.Constant) and isinstance(node.value, float) and node.value * 4 != int(node.value * 4):
            found.add("inexact_float")
    if not isinstance(func.body[-1], ast.Return):
        found.add("may_fall_off")
    if any(isinstance(a, (float, np.floating)) and not np.isfinite(a) for a in program.args):
        found.add("non_finite_arg")
    for a in program.args:
        found.add("arg " + (type(a).__name__ if not isinstance(a, np.ndarray) else f"ndarray[{a.dtype.name}]"))
    return found


def undefined_reads(func: ast.FunctionDef) -> list[str]:
    """Local names read where some path reaching the read has not assigned them (the rule the
    generator keeps and the shrinker must not break). Loops may run zero times; a branch that
    returns, breaks or continues does not reach what follows it."""
    local = {a.arg for a in func.args.args} | {n.id for n in ast.walk(func)
                                              if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bad: list[str] = []

    def reads(node, defined):
        if node is None:
            return
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in local and n.id not in defined:
                bad.append(n.id)

    def block(stmts, defined):
        """The names defined after `stmts`, or None when they never fall through."""
        defined = set(defined)
        for stmt in stmts:
            if isinstance(stmt, ast.Assign):
                reads(stmt.value, defined)
                defined |= {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            elif isinstance(stmt, ast.AugAssign):
                reads(stmt.value, defined)
                target = stmt.target.value if isinstance(stmt.target, ast.Subscript) else stmt.target
                reads(ast.Name(target.id, ast.Load()) if isinstance(target, ast.Name) else target, defined)
                if isinstance(stmt.target, ast.Subscript):
                    reads(stmt.target.slice, defined)
            elif isinstance(stmt, ast.If):
                reads(stmt.test, defined)
                ends = [e for e in (block(stmt.body, defined), block(stmt.orelse, defined)) if e is not None]
                if not ends:
                    return None
                defined = set.intersection(*ends)
            elif isinstance(stmt, (ast.For, ast.While)):
                reads(stmt.iter if isinstance(stmt, ast.For) else stmt.test, defined)
                inner = defined | ({n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)}
                                   if isinstance(stmt, ast.For) else set())
                block(stmt.body, inner)
                block(stmt.orelse, defined)
            elif isinstance(stmt, (ast.Return, ast.Expr)):
                reads(stmt.value, defined)
                if isinstance(stmt, ast.Return):
                    return None
            elif isinstance(stmt, (ast.Break, ast.Continue)):
                return None
        return defined

    block(func.body, {a.arg for a in func.args.args})
    return bad
