"""Make a failing program smaller while it still fails the same way (same failure signature).

Greedy reduction on the AST of the program's function: delete a statement, hoist the body or
the else of an `if` in its place, drop an else, replace a body by `pass`, replace an expression
by one of its operands of the same kind, a constant by 1, drop the same value from every
returned tuple, drop an unused parameter. A candidate is kept when it is smaller, reads no
variable that some path leaves undefined, and has the same failure signature; the search starts
over from the kept candidate until no candidate helps or the check budget runs out.

What is never touched, so that every candidate still terminates: the test of a `while` and the
first statement of its body (the generator's `k += 1` counter), and no constant becomes 0 (no
new division by zero or zero `range` step).
"""
from __future__ import annotations

import ast
import copy
import time
from typing import Callable, Iterator

from .program_facts import undefined_reads
from .random_programs import Program, module_source


def shrink(program: Program, failure: Callable[[Program], str] | None = None, *,
           max_checks: int = 300, max_seconds: float | None = None) -> Program:
    """The smallest program found that has the same failure signature as `program`.
    `failure(program)` gives the signature ("" when it passes); by default it runs the
    differential test."""
    if failure is None:
        from .differential import run_program  # noqa: PLC0415

        failure = lambda p: run_program(p).signature  # noqa: E731
    target = failure(program)
    if not target:
        return program
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    current, checks = program, 0
    while True:
        for candidate in _candidates(current):
            if checks >= max_checks or (deadline is not None and time.monotonic() > deadline):
                return current
            checks += 1
            if failure(candidate) == target:
                current = candidate
                break
        else:
            return current


def size(program: Program) -> tuple[int, int]:
    """What shrinking reduces: AST nodes of the function, then characters."""
    func = program.function_node()
    return sum(1 for _ in ast.walk(func)), len(ast.unparse(func))


def _candidates(program: Program) -> Iterator[Program]:
    """Smaller variants of `program`, the biggest reductions first."""
    func = program.function_node()
    base = size(program)
    seen = {program.source}
    for make in (_without_unused_parameters, _statement_edits, _fewer_returned_values, _expression_edits):
        for variant in make(func, program):
            if isinstance(variant, tuple):
                new_func, args = variant
            else:
                new_func, args = variant, program.args
            ast.fix_missing_locations(new_func)
            try:
                source = module_source(new_func, program.helpers_source())
                compile(source, "<candidate>", "exec")
            except (SyntaxError, ValueError):
                continue
            if source in seen or undefined_reads(new_func):
                continue
            seen.add(source)
            candidate = program.with_source(source, args)
            if size(candidate) < base:
                yield candidate


# -- statements ---------------------------------------------------------------------------------

def _blocks(func: ast.FunctionDef) -> list[tuple[ast.AST, str]]:
    """Every statement list in the function, as (owner node, field name), outermost first."""
    found = []
    for node in ast.walk(func):
        for name in ("body", "orelse"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                found.append((node, name))
    return found


def _protected(owner: ast.AST, name: str, index: int) -> bool:
    """The first statement of a while body: the loop's counter increment."""
    return isinstance(owner, ast.While) and name == "body" and index == 0


def _statement_edits(func: ast.FunctionDef, program: Program) -> Iterator[ast.FunctionDef]:
    n_blocks = len(_blocks(func))
    # compound statements first: deleting one removes the most
    for compound_first in (True, False):
        for b in range(n_blocks):
            owner, name = _blocks(func)[b]
            for i, stmt in enumerate(getattr(owner, name)):
                if _protected(owner, name, i) or (isinstance(stmt, (ast.If, ast.For, ast.While)) != compound_first):
                    continue
                yield _edit_block(func, b, lambda block, i=i: block[:i] + block[i + 1:])
    for b in range(n_blocks):
        owner, name = _blocks(func)[b]
        for i, stmt in enumerate(getattr(owner, name)):
            if isinstance(stmt, ast.If):
                yield _edit_block(func, b, lambda block, i=i: block[:i] + block[i].body + block[i + 1:])
                if stmt.orelse:
                    yield _edit_block(func, b, lambda block, i=i: block[:i] + block[i].orelse + block[i + 1:])
                    yield _edit_stmt(func, b, i, lambda s: setattr(s, "orelse", []))
            if isinstance(stmt, (ast.If, ast.For)) and not _is_pass(stmt.body):
                yield _edit_stmt(func, b, i, lambda s: setattr(s, "body", [ast.Pass()]))
            if isinstance(stmt, ast.While) and len(stmt.body) > 1:
                yield _edit_stmt(func, b, i, lambda s: setattr(s, "body", s.body[:1]))


def _is_pass(block: list) -> bool:
    return len(block) == 1 and isinstance(block[0], ast.Pass)


def _edit_block(func: ast.FunctionDef, b: int, change) -> ast.FunctionDef:
    new = copy.deepcopy(func)
    owner, name = _blocks(new)[b]
    block = change(getattr(owner, name))
    if not block and not (name == "orelse"):
        block = [ast.Pass()]
    setattr(owner, name, block)
    return new


def _edit_stmt(func: ast.FunctionDef, b: int, i: int, change) -> ast.FunctionDef:
    new = copy.deepcopy(func)
    owner, name = _blocks(new)[b]
    change(getattr(owner, name)[i])
    return new


# -- expressions ----------------------------------------------------------------------------------

def _frozen_ids(func: ast.FunctionDef) -> set[int]:
    """Nodes the expression edits leave alone: while tests and print labels."""
    frozen = set()
    for node in ast.walk(func):
        if isinstance(node, ast.While):
            frozen.update(id(n) for n in ast.walk(node.test))
        if _is_print(node) and node.args:
            frozen.add(id(node.args[0]))
    return frozen


def _expression_edits(func: ast.FunctionDef, program: Program) -> Iterator[ast.FunctionDef]:
    frozen = _frozen_ids(func)
    kinds = _name_kinds(func, program.args)
    params = {a.arg for a in func.args.args}
    positions = [(parent_index, field, index, node)
                 for parent_index, parent in enumerate(ast.walk(func))
                 for field, index, node in _expression_children(parent)
                 if id(node) not in frozen]
    for parent_index, field, index, node in positions:
        replacements = []
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            if node.value != 1:
                replacements.append(ast.Constant(type(node.value)(1)))
        elif isinstance(node, ast.Tuple):
            continue  # returned tuples: all together, in _fewer_returned_values
        elif _is_print(node):  # drop a printed value; the label and the parameters (tensors) stay
            replacements += [ast.Call(node.func, node.args[:k] + node.args[k + 1:], [])
                             for k in range(1, len(node.args))
                             if not (isinstance(node.args[k], ast.Name) and node.args[k].id in params)]
        else:
            kind = _kind_of(node, kinds)
            replacements += [c for c in ast.iter_child_nodes(node)
                             if isinstance(c, ast.expr) and not (isinstance(node, ast.Call) and c is node.func)
                             and kind is not None and _kind_of(c, kinds) == kind]
        for replacement in replacements:
            new = copy.deepcopy(func)
            parent = list(ast.walk(new))[parent_index]
            _set_child(parent, field, index, copy.deepcopy(replacement))
            yield new


def _fewer_returned_values(func: ast.FunctionDef, program: Program) -> Iterator[ast.FunctionDef]:
    """Drop the k-th value of every returned tuple at once: every path keeps returning the same
    structure (different structures on different paths are a user error in graph code)."""
    tuples = [n.value for n in ast.walk(func) if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple)]
    lengths = {len(t.elts) for t in tuples}
    if len(lengths) != 1 or lengths == {1}:
        return
    for k in range(lengths.pop()):
        new = copy.deepcopy(func)
        for node in ast.walk(new):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
                del node.value.elts[k]
        yield new


# An expression is only replaced by a part of the same kind (int, float or bool), so that a
# shrunk program keeps the generator's rule of one kind per variable: mixing kinds would make
# graph errors that are by design (a bool used in arithmetic, an int on one path and a float on
# another) and could stand in for the real failure under the same signature.

def _name_kinds(func: ast.FunctionDef, args: tuple) -> dict[str, str]:
    kinds = {a.arg: _value_kind(v) for a, v in zip(func.args.args, args)}
    for _ in range(3):  # a name may be read in the tree before the assignment that types it
        for node in ast.walk(func):
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                if isinstance(target, ast.Name) and target.id not in kinds:
                    kind = _kind_of(node.value, kinds)
                    if kind is not None:
                        kinds[target.id] = kind
            elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                it = node.iter
                if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
                    kinds[node.target.id] = "int"
                elif isinstance(it, ast.Name) and kinds.get(it.id, "").startswith("array "):
                    kinds[node.target.id] = kinds[it.id].split()[1]
    return kinds


def _value_kind(value) -> str:
    import numpy as np  # noqa: PLC0415

    if isinstance(value, np.ndarray):
        return "array " + _value_kind(value.dtype.type(0))
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    return "float" if isinstance(value, (float, np.floating)) else type(value).__name__


def _kind_of(node: ast.expr, kinds: dict) -> str | None:
    """int / float / bool, or None when unknown or mixed."""
    if isinstance(node, ast.Constant):
        return _value_kind(node.value) if isinstance(node.value, (bool, int, float)) else None
    if isinstance(node, ast.Name):
        return kinds.get(node.id)
    if isinstance(node, ast.Compare):
        return "bool"
    if isinstance(node, ast.UnaryOp):
        return "bool" if isinstance(node.op, ast.Not) else _numeric(_kind_of(node.operand, kinds))
    if isinstance(node, ast.BinOp):
        return _join_numeric(_kind_of(node.left, kinds), _kind_of(node.right, kinds), isinstance(node.op, ast.Div))
    if isinstance(node, ast.BoolOp):
        found = {_kind_of(v, kinds) for v in node.values}
        return found.pop() if len(found) == 1 else None
    if isinstance(node, ast.IfExp):
        a, b = _kind_of(node.body, kinds), _kind_of(node.orelse, kinds)
        return a if a == b else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name, args = node.func.id, node.args
        if name in ("float", "int"):
            return name
        if name == "len":
            return "int"
        if name == "abs" and args:
            return _numeric(_kind_of(args[0], kinds))
        if name in ("min", "max") and len(args) == 2:
            a, b = _kind_of(args[0], kinds), _kind_of(args[1], kinds)
            return a if a == b else None
    return None


def _numeric(kind: str | None) -> str | None:
    return "int" if kind == "bool" else kind


def _join_numeric(a: str | None, b: str | None, true_division: bool) -> str | None:
    if a is None or b is None or not {a, b} <= {"int", "float", "bool"}:
        return None
    if true_division or "float" in (a, b):
        return "float"
    return "int"


def _is_print(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"


def _expression_children(parent: ast.AST) -> Iterator[tuple[str, int | None, ast.expr]]:
    for field, value in ast.iter_fields(parent):
        if field in ("ctx", "func") or (isinstance(parent, (ast.For, ast.Assign, ast.AugAssign)) and field == "target") \
                or (isinstance(parent, ast.Assign) and field == "targets"):
            continue
        if isinstance(value, ast.expr):
            yield field, None, value
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, ast.expr):
                    yield field, i, item


def _set_child(parent: ast.AST, field: str, index: int | None, value: ast.expr) -> None:
    if index is None:
        setattr(parent, field, value)
    else:
        getattr(parent, field)[index] = value


# -- parameters -------------------------------------------------------------------------------------

def _without_unused_parameters(func: ast.FunctionDef, program: Program) -> Iterator[tuple]:
    used = {n.id for n in ast.walk(func) if isinstance(n, ast.Name)}
    params = [a.arg for a in func.args.args]
    keep = [i for i, name in enumerate(params) if name in used]
    if len(keep) < len(params):
        new = copy.deepcopy(func)
        new.args.args = [new.args.args[i] for i in keep]
        yield new, tuple(program.args[i] for i in keep)
