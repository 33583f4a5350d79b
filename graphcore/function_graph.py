"""Function graphs (TensorFlow's FuncGraph): the branches, conditions and bodies of the
Control Flow v2 ops If and While.

A FuncGraph is a Graph of its own: Placeholders for its inputs, a list of outputs, and
captures. A tensor of an enclosing graph read inside becomes an extra Placeholder input,
and the op that calls the function passes the outer tensor explicitly, so a function
never holds an edge into another graph (the talk: "you can't just have an edge between
two function definitions"). Capturing goes through every graph in between, so functions
nest to any depth. Control inputs on ops of enclosing graphs are lifted onto the calling
op (`control_captures`): everything a function reads is ready before it is called.

Function graphs live in the library of their outermost graph (`Graph.library`), which
nested ones share; If/While ops name them in their attributes.
"""
from __future__ import annotations

from . import dtypes as dt
from .attr_schema import NAME
from .errors import GraphError
from .graph import Graph, Operation, Tensor
from .shapes import as_shape


class FuncGraph(Graph):
    """A function: `inputs` (Placeholder outputs: arguments, then captures), `outputs`,
    `captures` [(outer tensor, inner placeholder)] and `control_captures` (ops of the
    enclosing graph that ops inside waited for)."""

    def __init__(self, name: str, outer_graph: Graph):
        super().__init__()
        self.name = name
        self.outer_graph = outer_graph
        self._library = outer_graph._library  # one library for a graph and all its functions
        self.inputs: list[Tensor] = []
        self.outputs: list[Tensor] = []
        self.captures: list[tuple[Tensor, Tensor]] = []
        self.control_captures: list[Operation] = []
        self.caller: Operation | None = None  # the If/While op of the enclosing graph that calls it
        self.lifted: dict[int, Tensor] = {}  # id(tensor of this function) -> the caller's output of it
        # a While's gradient body: the forward body it reads (`resolves`), and how a tensor of
        # that body becomes one of this function (`resolve`: popped from an accumulator)
        self.resolves: "FuncGraph | None" = None
        self.resolve = None
        self.add_removal_hook(self._forget)

    def _forget(self, gone) -> None:
        """A rollback inside the function removed some of its placeholders: forget them."""
        self.captures = [(o, i) for o, i in self.captures if i.op not in gone]
        self.inputs = [t for t in self.inputs if t.op not in gone]

    # -- inputs ----------------------------------------------------------------------
    def add_argument(self, dtype, shape, name: str = "arg") -> Tensor:
        """A new Placeholder input of the function (an argument, before any capture)."""
        from .ops.array_ops import placeholder_op  # noqa: PLC0415 (ops import the graph modules)

        with self.as_default(), self.at_top_level():
            t = self.create_op(placeholder_op, [], {"dtype": dt.as_dtype(dtype), "shape": as_shape(shape)},
                               name=name).outputs[0]
        self.inputs.append(t)
        return t

    def capture(self, t: Tensor) -> Tensor:
        """`t`, a tensor of this graph or of an enclosing one, as seen inside: a
        Placeholder input of this function (and of each function in between)."""
        if t.graph is self:
            return t
        if not self.within(t.graph) and _root(t.graph) is _root(self):
            from .v2_control_flow import lift_output  # noqa: PLC0415 (it imports this module)

            return lift_output(t, self)  # computed in a function this graph calls: an extra output
        if not self.outer_graph.within(t.graph):
            raise GraphError(f"{t.name} belongs to a graph that does not enclose the function {self.name!r}; a "
                             "function reads only tensors of its own graph and of the graphs around it")
        # (a tensor of a graph further out is first captured by the graph around this one:
        # captures are keyed by the tensor of that graph)
        outer = t if t.graph is self.outer_graph else self.outer_graph.capture(t)
        for o, inner in self.captures:
            if o is outer:
                return inner
        inner = self.add_argument(t.dtype, t.shape, name="capture")
        self.captures.append((outer, inner))
        return inner

    def _as_graph_tensor(self, value, dtype=None) -> Tensor:
        if isinstance(value, Tensor) and value.graph is not self:
            return self.capture(value)
        return super()._as_graph_tensor(value, dtype)

    def _lift_controls(self, controls: list) -> list:
        """Control inputs on ops of enclosing graphs become control inputs of the calling op."""
        own = []
        for c in controls:
            if c.graph is self:
                own.append(c)
                continue
            if not self.outer_graph.within(c.graph):
                raise GraphError(f"{c.name} is an op of a graph that does not enclose the function {self.name!r}")
            lifted = [c] if c.graph is self.outer_graph else self.outer_graph._lift_controls([c])
            for op in lifted:
                if not any(op is k for k in self.control_captures):
                    self.control_captures.append(op)
        return own

    # -- outputs ---------------------------------------------------------------------
    def set_outputs(self, values) -> list[Tensor]:
        """Make `values` (tensors of any enclosing graph, or Python/numpy values) the
        function's outputs, as tensors of this graph."""
        outs = []
        with self.as_default():
            for v in values:
                outs.append(self.capture(v) if isinstance(v, Tensor) else self._as_graph_tensor(v))
        self.outputs = outs
        return outs

    @property
    def arguments(self) -> list[Tensor]:
        """The inputs that are not captures."""
        captured = {id(i) for _, i in self.captures}
        return [t for t in self.inputs if id(t) not in captured]

    def signature(self) -> str:
        """`(float64[], int64[3]) -> (float64[])`: for messages and listings."""
        from .printer import tensor_type  # noqa: PLC0415

        return (f"({', '.join(tensor_type(t) for t in self.inputs)}) -> "
                f"({', '.join(tensor_type(t) for t in self.outputs)})")

    def __repr__(self) -> str:
        return f"<FuncGraph {self.name}: {len(self)} ops {self.signature()}>"


# Called as hook(function op, its copy) for every op the lowering inlines: what others keep
# about an op by its graph and name (autograph: the Python exception an Assert stands for)
# follows it into the graph it is inlined in.
INLINE_HOOKS: list = []


def _root(g: Graph) -> Graph:
    while g.outer_graph is not None:
        g = g.outer_graph
    return g


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


def called_functions(op: Operation) -> list[str]:
    """The names of the library functions `op` calls (its function attributes)."""
    return [op.attrs[a] for a in function_attrs(op.op_def) if a in op.attrs]


def reachable_functions(graph: Graph) -> list[FuncGraph]:
    """The library functions that `graph`'s ops call, directly or through other functions,
    each once, a function before the functions that call it."""
    order: list[FuncGraph] = []
    seen: set[str] = set()

    def visit(g: Graph) -> None:
        for op in g.get_operations():
            for name in called_functions(op):
                if name not in seen:
                    seen.add(name)
                    fn = graph.get_function(name)
                    visit(fn)
                    order.append(fn)

    visit(graph)
    return order


def has_functional_ops(graph: Graph) -> bool:
    """The graph has an op that calls a function (If, While)."""
    return any(function_attrs(op.op_def) for op in graph.get_operations())


def library_problems(graph: Graph, find_problems) -> list[str]:
    """What is wrong with the functions `graph` calls: each function body is checked as a
    graph (`find_problems`), its inputs are Placeholders of its own and its outputs its own
    tensors, and no function calls itself (directly or through others)."""
    problems: list[str] = []
    state: dict[str, int] = {}  # name -> 1 being visited, 2 done

    def visit(g: Graph, path: list[str]) -> None:
        for op in g.get_operations():
            for name in called_functions(op):
                if state.get(name) == 1:
                    problems.append(f"{op.describe()}: calls {name!r}, which is calling it already "
                                    f"({' -> '.join(path + [name])}); functions may not call themselves")
                    continue
                if state.get(name) == 2:
                    continue
                fn = graph._library.get(name)
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


def format_library(graph: Graph, format_op) -> str:
    """The listing of the functions `graph` calls, after the graph's own:

        function cond_true(%capture: float64[]) -> (%Mul):
          %Mul: float64[] = Mul(%capture, %Const)
    """
    from .printer import tensor_ref, tensor_type  # noqa: PLC0415

    parts = []
    for fn in reachable_functions(graph):
        args = ", ".join(f"{tensor_ref(t)}: {tensor_type(t)}" for t in fn.inputs)
        outs = ", ".join(tensor_ref(t) for t in fn.outputs)
        body = "".join(f"  {format_op(op)}\n" for op in fn.get_operations() if op.type != "Placeholder"
                       or not any(op is t.op for t in fn.inputs))
        parts.append(f"\nfunction {fn.name}({args}) -> ({outs}):\n{body}")
    return "".join(parts)
