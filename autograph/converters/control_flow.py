"""Converts `if` and `while` into calls of `ag__.if_stmt` / `ag__.while_stmt`, which
pick Python or graph semantics at run time.

Each branch or loop body becomes a nested function that reads and writes the
statement's state through `nonlocal`; `get_state` / `set_state` let the operator
carry that state through a graph cond or while loop. The state is every variable the
statement modifies that is live into or out of it (others are local to the body),
plus modified attributes / constant subscripts of outer objects. A variable that no
path defines before the statement starts as `ag__.Undefined('x', line)`.

Closures count too: a nested function or lambda defined outside the statement reads its
free names when it is called, which liveness cannot see (`g = lambda v: v * c`, then `c`
changed in an `if` on a tensor and `g(x)` after it), so those names are live around every
statement; and names it changes through `nonlocal` are modified by any statement that calls
something (`bump()` in a loop on a tensor). Without that, the graph kept the value from
before the statement, or the change made once while tracing.

Requires activity, reaching definitions and liveness (`requires_analysis`)."""
from __future__ import annotations

import gast

from ..analysis.activity import _fn_free_reads
from ..pyct import anno, templates
from ..pyct.qual_names import CONTENTS_SUFFIX, is_composite, is_contents
from ..pyct.transformer import walk
from .base import Converter
from .unsupported import _declared


# the nodes without which this pass changes nothing: a tree with none (straight-line code) skips it,
# and the analyses it reads
ACTS_ON = frozenset({gast.If, gast.While, gast.For})


def state_vars(modified, live: frozenset) -> list[str]:
    """Modified names that are live, then modified composites; sorted for stable code."""
    basic = sorted(m for m in modified if not is_composite(m) and m in live)
    composite = sorted(m for m in modified if is_composite(m))
    return basic + composite


def _closures(tree) -> list[tuple[gast.AST, frozenset, frozenset]]:
    """(node, free names read, names changed via `nonlocal`) of every function or lambda
    nested in `tree` (the converted function itself excluded)."""
    out = []
    for n in walk(tree):
        if n is not tree and isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda)):
            reads, changed = _fn_free_reads(n)
            out.append((n, frozenset(r for r in reads if not is_composite(r)), frozenset(changed)))
    return out


def _changed_in_place(value) -> bool:
    """`ag__.augmented(...)` / `ag__.setitem(...)` of a parameter (`param=True`)."""
    return (isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute)
            and isinstance(value.func.value, gast.Name) and value.func.value.id == "ag__"
            and value.func.attr in ("augmented", "setitem")
            and any(k.arg == "param" and isinstance(k.value, gast.Constant) and k.value.value is True
                    for k in value.keywords))


def _changed_in_place_params(tree) -> frozenset:
    """Parameters the function changes in place (`x += 1`, `x[0] = v`): the caller's arrays,
    whose final values are written back after the run (operators/arguments.py), so they are
    live at the function's end: an if that changes one gives its new value out."""
    if not isinstance(tree, (gast.FunctionDef, gast.AsyncFunctionDef)):
        return frozenset()
    return frozenset(n.targets[0].id for n in gast.walk(tree)
                     if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name)
                     and _changed_in_place(n.value))


class ControlFlowTransformer(Converter):
    requires_analysis = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.closures: list | None = None
        self.globals: frozenset = frozenset()
        self.declared: frozenset = frozenset()  # its `nonlocal` / `global` names: bound outside it

    def visit(self, node):
        if self.closures is None:  # the tree as it comes in: its nested functions are the user's
            self.closures = _closures(node)
            self.changed_params = _changed_in_place_params(node)
        return super().visit(node)

    def visit_FunctionDef(self, node):
        """Its `nonlocal` / `global` names (the converted function's, or a nested one's) are
        read by its callers after it returns: live around every statement, carried as state,
        never set undefined; generated functions reach a global by `global`."""
        saved = self.declared, self.globals
        declared = _declared(node)
        self.declared = frozenset(declared)
        self.globals = frozenset(n for n, stmt in declared.items() if isinstance(stmt, gast.Global))
        try:
            return self.generic_visit(node)
        finally:
            self.declared, self.globals = saved

    def _closure_state(self, node) -> tuple[frozenset, frozenset]:
        """(names closures defined outside `node` may read later, names closures may change
        when `node` calls something); call before `node`'s children are converted."""
        live, changed = self.changed_params | self.declared, frozenset()
        if not self.closures:  # (the usual case: no nested function, nothing to walk for)
            return live, changed
        nodes = walk(node)
        inside = {id(n) for n in nodes}
        calls = any(isinstance(n, gast.Call) for n in nodes)
        for fn, reads, mods in self.closures:
            if id(fn) not in inside:
                live |= reads | mods
            if calls:
                changed |= mods
        return live, changed

    def _state_functions(self, names: list[str]) -> tuple[list, str, str]:
        """`get_state()` returning the state's values and `set_state(vars_)` binding them.
        The items of a container (`a[:]`) are read as a snapshot and written back in place."""
        get_state = self.ctx.namer.new("get_state")
        set_state = self.ctx.namer.new("set_state")
        vars_ = self.ctx.namer.new("vars_")
        if not names:
            return (templates.replace("def get_state():\n    return ()\ndef set_state(vars_):\n    pass\n",
                                      get_state=get_state, set_state=set_state, vars_=vars_), get_state, set_state)
        reads, targets, write_backs = [], [], []
        for n in names:
            if is_contents(n):
                container = n[:-len(CONTENTS_SUFFIX)]
                items = self.ctx.namer.new("items")
                reads.append(f"ag__.contents({container})")
                targets.append(items)
                write_backs += templates.replace(f"ag__.set_contents({container}, {items})")
            else:
                reads.append(n)
                targets.append(n)
        code = templates.replace("def get_state():\n    return values\n", get_state=get_state,
                                 values=templates.replace_as_expression(", ".join(reads) + ","))
        code += templates.replace(
            "def set_state(vars_):\n    nonlocal_stmt\n    targets = vars_\n", set_state=set_state,
            vars_=vars_, targets=templates.replace_as_expression(", ".join(targets) + ","),
            nonlocal_stmt=self._nonlocal(names))
        code[-1].body += write_backs
        return code, get_state, set_state

    def _nonlocal(self, names: list[str]) -> list:
        basic = [n for n in names if not is_composite(n) and n not in self.globals]
        globals_ = [n for n in names if n in self.globals]
        return (([gast.Nonlocal(names=basic)] if basic else [])
                + ([gast.Global(names=globals_)] if globals_ else []))

    def _function(self, name: str, body: list, names: list[str], args: list[str] = ()) -> list:
        fn = templates.replace("def fn():\n    nonlocal_stmt\n    body\n", fn=name,
                               nonlocal_stmt=self._nonlocal(names), body=body)
        fn[0].args.args = [gast.Name(id=a, ctx=gast.Param(), annotation=None, type_comment=None) for a in args]
        return fn

    def _undefined_assigns(self, node, names: list[str]) -> list:
        defined = anno.getanno(node, anno.DEFINED_IN, frozenset())
        out = []
        for n in names:
            if not is_composite(n) and n not in defined and n not in self.declared:
                out += templates.replace(f"{n} = ag__.Undefined({n!r}, {self.lineno(node)})")
        return out

    def _body_locals(self, node, body: list, names: list[str]) -> list:
        """A variable that a loop body (or an if branch) assigns but that is not its state is
        a local of the body function. When a statement nested in the body (an if or loop, now a
        function with `nonlocal`) assigns it before the body itself does, bind it first,
        so that the `nonlocal` finds it. (Its value from an earlier iteration is never
        read, or liveness would have made it loop state.)"""
        bound, needed = set(names), []
        for stmt in body:
            if isinstance(stmt, gast.FunctionDef):
                for inner in stmt.body:
                    if isinstance(inner, gast.Nonlocal):
                        needed += [n for n in inner.names if n not in bound and n not in needed]
            elif isinstance(stmt, gast.Assign):
                bound |= {t.id for t in stmt.targets if isinstance(t, gast.Name)}
        return [s for n in needed for s in templates.replace(f"{n} = ag__.Undefined({n!r}, {self.lineno(node)})")]

    def _ordered(self, node, modified, extra_live=frozenset(), closure_live=frozenset()) -> tuple[list[str], int]:
        live_out = anno.getanno(node, anno.LIVE_OUT, frozenset()) | closure_live
        live_in = anno.getanno(node, anno.LIVE_IN, frozenset()) | extra_live
        names = state_vars(modified, live_in | live_out)
        outs = [n for n in names if is_composite(n) or n in live_out]
        ins = [n for n in names if n not in outs]
        return outs + ins, len(outs)

    def visit_If(self, node):
        body_scope = anno.getanno(node, anno.BODY_SCOPE)
        orelse_scope = anno.getanno(node, anno.ORELSE_SCOPE)
        closure_live, closure_changed = self._closure_state(node)
        self.generic_visit(node)
        names, nouts = self._ordered(node, body_scope.modified | orelse_scope.modified | closure_changed,
                                     closure_live=closure_live)
        code, get_state, set_state = self._state_functions(names)
        if_body, else_body = self.ctx.namer.new("if_body"), self.ctx.namer.new("else_body")
        # a branch's own locals need binding too where a statement nested in it assigns them
        # first (the rest of a loop body after an early return is such a branch)
        code += self._function(if_body, self._body_locals(node, node.body, names) + node.body, names)
        code += self._function(else_body, self._body_locals(node, node.orelse, names) + node.orelse, names)
        code += templates.replace(
            "ag__.if_stmt(test, if_body, else_body, get_state, set_state, names=names, nouts=nouts, line=line)",
            test=node.test, if_body=if_body, else_body=else_body, get_state=get_state,
            set_state=set_state, names=templates.str_tuple(names), nouts=templates.const(nouts),
            line=templates.const(self.lineno(node)))
        return self.mark(self._undefined_assigns(node, names) + code, node)

    def visit_While(self, node):
        body_scope = anno.getanno(node, anno.BODY_SCOPE)
        closure_live, closure_changed = self._closure_state(node)
        self.generic_visit(node)
        if node.orelse:
            raise self.error(node, "internal: while/else should have been lowered by break_statements")
        names, nouts = self._ordered(node, body_scope.modified | closure_changed, closure_live=closure_live)
        code, get_state, set_state = self._state_functions(names)
        body, test = self.ctx.namer.new("loop_body"), self.ctx.namer.new("loop_test")
        code += self._function(body, self._body_locals(node, node.body, names) + node.body, names)
        code += templates.replace("def loop_test():\n    return test_expr\n", loop_test=test, test_expr=node.test)
        code += templates.replace(
            "ag__.while_stmt(loop_test, loop_body, get_state, set_state, names=names, nouts=nouts, line=line)",
            loop_test=test, loop_body=body, get_state=get_state, set_state=set_state,
            names=templates.str_tuple(names), nouts=templates.const(nouts), line=templates.const(self.lineno(node)))
        return self.mark(self._undefined_assigns(node, names) + code, node)

    def visit_For(self, node):
        body_scope = anno.getanno(node, anno.BODY_SCOPE)
        extra = anno.getanno(node, anno.EXTRA_TEST)
        closure_live, closure_changed = self._closure_state(node)
        self.generic_visit(node)
        if node.orelse:
            raise self.error(node, "internal: for/else should have been lowered by break_statements")
        extra_live = frozenset()
        if extra is not None:
            extra_live = frozenset(n.id for n in walk(extra) if isinstance(n, gast.Name))
        names, nouts = self._ordered(node, body_scope.modified | closure_changed, extra_live, closure_live)
        code, get_state, set_state = self._state_functions(names)
        body, itr = self.ctx.namer.new("loop_body"), self.ctx.namer.new("itr")
        body_stmts = templates.replace("target = itr", target=node.target, itr=itr) + node.body
        body_stmts = self._body_locals(node, body_stmts, names) + body_stmts
        code += self._function(body, body_stmts, names, args=[itr])
        extra_name = templates.const(None)
        if extra is not None:
            extra_name = self.ctx.namer.new("extra_test")
            code += templates.replace("def extra_test():\n    return test_expr\n", extra_test=extra_name,
                                      test_expr=extra)
        code += templates.replace(
            "ag__.for_stmt(iterated, extra_test, loop_body, get_state, set_state, names=names, nouts=nouts, line=line)",
            iterated=node.iter, extra_test=extra_name, loop_body=body, get_state=get_state,
            set_state=set_state, names=templates.str_tuple(names), nouts=templates.const(nouts),
            line=templates.const(self.lineno(node)))
        return self.mark(self._undefined_assigns(node, names) + code, node)


def transform(node, ctx):
    return ControlFlowTransformer(ctx).visit(node)
