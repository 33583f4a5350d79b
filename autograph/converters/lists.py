"""Turns `xs.append(v)` statements into `xs = ag__.list_append(xs, v)`, so the list is
visible as loop state and can be staged as a growable tensor list in a graph loop;
`xs.extend([a, b])` of a list or tuple display is an append per item. The call names the
variable, the line and where the function puts the list into a container, so that an append
another name would see is refused (operators/data_structures.refuse_if_aliased).

In a nested function, appending to a list of an enclosing function (`out.append(v)` in
`def push(v)`) rebinds it through `nonlocal out`: a plain rebinding would make `out` a
local of the nested function (UnboundLocalError), and the `nonlocal` lets a loop that calls
the nested function carry the list as its state (converters/control_flow.py). An append to
a global or to a closure variable of the converted function itself stays Python's call."""
from __future__ import annotations

import gast

from ..pyct import templates
from ..pyct.qual_names import qn
from ..pyct.transformer import child_nodes, walk
from .augmented_assignments import held_names
from .base import Converter


# the nodes without which this pass changes nothing: a tree with none (an attribute: `xs.append(v)`) skips it
ACTS_ON = frozenset({gast.Attribute})


_FUNCTIONS = (gast.FunctionDef, gast.AsyncFunctionDef)


def _own_names(fn) -> tuple[set[str], set[str]]:
    """(names local to `fn`: parameters and names it binds, names it declares nonlocal or
    global), not looking into functions nested in it."""
    args = fn.args
    local = {a.id for a in args.args + args.posonlyargs + args.kwonlyargs if isinstance(a, gast.Name)}
    local |= {a.id for a in (args.vararg, args.kwarg) if a is not None}
    declared: set[str] = set()
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (gast.Nonlocal, gast.Global)):
            declared |= set(n.names)
        elif isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            local.add(n.id)
        if isinstance(n, _FUNCTIONS + (gast.ClassDef,)):
            local.add(n.name)
            continue
        if not isinstance(n, gast.Lambda):
            todo.extend(child_nodes(n))
    return local - declared, declared


class ListTransformer(Converter):
    def __init__(self, ctx):
        super().__init__(ctx)
        # (node, its locals, its nonlocal / global names, names to declare nonlocal in it)
        self.functions: list[tuple[gast.AST, set[str], set[str], list[str]]] = []
        self.held: dict[str, int] = {}

    def visit_FunctionDef(self, node):
        if not self.functions:
            self.held = held_names(node, self.lineno)
        local, declared = _own_names(node)
        self.functions.append((node, local, declared, []))
        self.generic_visit(node)
        _, _, _, needed = self.functions.pop()
        if needed:
            node.body.insert(0, gast.Nonlocal(names=needed))
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def _outer_local(self, name: str) -> bool:
        """Whether `name`, read in the innermost nested function, is a local of an enclosing
        function of the converted one (what `nonlocal` would find)."""
        for _, local, declared, _ in reversed(self.functions[:-1]):
            if name in declared:
                return False
            if name in local:
                return True
        return False

    def visit_Expr(self, node):
        call = node.value
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and len(call.args) == 1
                and not call.keywords and qn(call.func.value) is not None):
            return self.generic_visit(node)
        target = call.func.value
        items = [call.args[0]]
        if call.func.attr == "extend":
            # a display whose items do not read the list: appends, one per item, in order
            if not isinstance(call.args[0], (gast.List, gast.Tuple)) or any(
                    isinstance(n, gast.Name) and n.id == qn(target).split(".")[0].split("[")[0]
                    for n in walk(call.args[0])):
                return self.generic_visit(node)
            items = call.args[0].elts
            if not items or any(isinstance(e, gast.Starred) for e in items):
                return self.generic_visit(node)
        if call.func.attr in ("append", "extend"):
            if isinstance(target, gast.Name) and len(self.functions) > 1:
                _, local, declared, needed = self.functions[-1]
                if target.id not in local and target.id not in declared:
                    if not self._outer_local(target.id):
                        return self.generic_visit(node)  # a global's (or outside closure's) list: Python's call
                    needed.append(target.id)
                    declared.add(target.id)
            extras = ""
            if isinstance(target, gast.Name):
                line = self.lineno(node)
                held = self.held.get(target.id, 0)  # (put into a container after the append: it holds the final list)
                extras = f", name={target.id!r}, line={line}, held_at={held if held < line else 0}"
            out = []
            for item in items:
                out += templates.replace(f"target = ag__.list_append(target_value, value{extras})",
                                         target=_load_copy(target, gast.Store()), target_value=_load_copy(target),
                                         value=item)
            return self.mark(out, node)
        return self.generic_visit(node)


def _load_copy(node: gast.expr, ctx=None) -> gast.expr:
    import copy  # noqa: PLC0415

    new = copy.deepcopy(node)
    new.ctx = ctx or gast.Load()
    return new


def transform(node, ctx):
    return ListTransformer(ctx).visit(node)
