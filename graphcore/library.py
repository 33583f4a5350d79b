"""The function library's facts and walks (Control Flow v2): which attributes of an op
type name library functions (declared with the FUNCTION kind in its define_op block),
which functions a graph calls, and what validate() checks of them. A leaf module over
graphs (no import of graph.py): printer, validate, serialization, dot and the passes ask
it, as they ask the registry.
"""
from __future__ import annotations

from .attr_schema import NAME

# Called as hook(function op, its copy) for every op the lowering inlines: what others keep
# about an op by its graph and name (autograph: the Python exception an Assert stands for)
# follows it into the graph it is inlined in.
INLINE_HOOKS: list = []


def FUNCTION(v, where):
    """The attribute kind of a function an op calls: a name in the graph's library (that
    the name is there, with the signature the op needs, is checked once the op is built:
    its shape rule looks the function up)."""
    NAME(v, where)


_function_attrs: dict[str, tuple[str, ...]] = {}


def function_attrs(op_def) -> tuple[str, ...]:
    """The attributes of `op_def` that name functions (declared with the FUNCTION kind)."""
    hit = _function_attrs.get(op_def.type)
    if hit is None:
        hit = _function_attrs[op_def.type] = tuple(
            k for k, a in (op_def.attrs or {}).items() if a.check is FUNCTION)
    return hit


def called_functions(op) -> list[str]:
    """The names of the library functions `op` calls (its function attributes)."""
    return [op.attrs[a] for a in function_attrs(op.op_def) if a in op.attrs]


def reachable_functions(graph) -> list:
    """The library functions that `graph`'s ops call, directly or through other functions,
    each once, a function before the functions that call it."""
    order: list = []
    seen: set[str] = set()

    def visit(g) -> None:
        for op in g.get_operations():
            for name in called_functions(op):
                if name not in seen:
                    seen.add(name)
                    fn = graph.get_function(name)
                    visit(fn)
                    order.append(fn)

    visit(graph)
    return order


def uncalled_functions(graph, candidates) -> list[str]:
    """The names among `candidates` (library functions) that no op calls in `graph`, in the
    graphs enclosing it, or in a library function outside `candidates`, directly or through
    the candidates those call: what a trace undone in `graph` left behind."""
    called: set[str] = set()
    pending = []
    g = graph
    while g is not None:
        pending.append(g)
        g = getattr(g, "outer_graph", None)
    pending += [fn for name, fn in graph.library.items() if name not in candidates]
    while pending:
        for op in pending.pop().get_operations():
            for name in called_functions(op):
                if name in candidates and name not in called:
                    called.add(name)
                    pending.append(graph.library[name])
    return [name for name in candidates if name not in called]


def has_functional_ops(graph) -> bool:
    """The graph has an op that calls a function (If, While)."""
    return any(function_attrs(op.op_def) for op in graph.get_operations())


def library_problems(graph, find_problems) -> list[str]:
    """What is wrong with the functions `graph` calls: each function body is checked as a
    graph (`find_problems`), its inputs are Placeholders of its own and its outputs its own
    tensors, and no function calls itself (directly or through others)."""
    problems: list[str] = []
    state: dict[str, int] = {}  # name -> 1 being visited, 2 done

    def visit(g, path: list[str]) -> None:
        for op in g.get_operations():
            for name in called_functions(op):
                if state.get(name) == 1:
                    problems.append(f"{op.describe()}: calls {name!r}, which is calling it already "
                                    f"({' -> '.join(path + [name])}); functions may not call themselves")
                    continue
                if state.get(name) == 2:
                    continue
                fn = graph.library.get(name)
                if fn is None:
                    problems.append(f"{op.describe()}: calls {name!r}, which is not in the graph's library")
                    continue
                state[name] = 1
                where = f"in function {name!r}: "
                for p in find_problems(fn):
                    problems.append(where + p)
                for k, t in enumerate(fn.inputs):
                    if t.graph is not fn or t.op.type != "Placeholder" or t.op not in fn:
                        problems.append(f"{where}input {k} ({t.name}) is not a Placeholder of the function")
                for k, t in enumerate(fn.outputs):
                    if t.graph is not fn or t.op not in fn:
                        problems.append(f"{where}output {k} ({t.name}) is not a tensor of the function")
                visit(fn, path + [name])
                state[name] = 2

    visit(graph, [])
    return problems
