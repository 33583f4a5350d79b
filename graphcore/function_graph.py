"""Function graphs (TensorFlow's FuncGraph): the branches, conditions and bodies of the
Control Flow v2 ops If and While.

A FuncGraph is a Graph of its own: Placeholders for its inputs, a list of outputs, and
captures. A tensor of an enclosing graph read inside becomes an extra Placeholder input,
and the op that calls the function passes the outer tensor explicitly, so a function
never holds an edge into another graph (each function stays a graph of its own that can
be called, differentiated or inlined alone). Capturing goes through every graph in between, so functions
nest to any depth. Control inputs on ops of enclosing graphs are lifted onto the calling
op (`control_captures`): everything a function reads is ready before it is called.

Function graphs live in the library of their outermost graph (`Graph.library`), which
nested ones share; If/While ops name them in their attributes. The other way, a tensor of
a branch read after its If (by later code or by the If's gradient) becomes a new output of
the If (`lift_output`); one of a While's body is read by its gradient through accumulators
(gradients/functional_grad.py, the `resolves` hook).
"""
from __future__ import annotations

import numpy as np

from . import dtypes as dt
from .errors import GraphError, StagingError
from .library import INLINE_HOOKS  # noqa: F401 (the lowering's hooks, here where functions are)
from .graph import Graph, Operation, Tensor
from .ops.array_ops import constant, placeholder_op
from .ops.list_ops import tensor_list_new
from .printer import tensor_type
from .shapes import as_shape


class FuncGraph(Graph):
    """A function: `inputs` (Placeholder outputs: arguments, then captures), `outputs`,
    `captures` [(outer tensor, inner placeholder)] and `control_captures` (ops of the
    enclosing graph that ops inside waited for)."""

    def __init__(self, name: str, outer_graph: Graph):
        super().__init__(library_of=outer_graph)  # one library for a graph and all its functions
        self.name = name
        self.outer_graph = outer_graph
        self.inputs: list[Tensor] = []
        self.outputs: list[Tensor] = []
        self.captures: list[tuple[Tensor, Tensor]] = []
        self._captured: dict[int, Tensor] = {}  # id(outer tensor) -> its placeholder (the list, by key)
        self.control_captures: list[Operation] = []
        self.initial_values: dict[int, Tensor] = {}  # id(a While function's loop variable) -> its value entering
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
        self._captured = {id(o): i for o, i in self.captures}
        self.inputs = [t for t in self.inputs if t.op not in gone]

    # -- inputs ----------------------------------------------------------------------
    def add_argument(self, dtype, shape, name: str = "arg", source=None) -> Tensor:
        """A new Placeholder input of the function (an argument, before any capture);
        `source`: its line (default: the user's line being traced)."""
        with self.as_default(), self.at_top_level():
            t = self.create_op(placeholder_op, [], {"dtype": dt.as_dtype(dtype), "shape": as_shape(shape)},
                               name=name, source=source).outputs[0]
        self.inputs.append(t)
        return t

    def capture(self, t: Tensor) -> Tensor:
        """`t`, a tensor of this graph or of an enclosing one, as seen inside: a
        Placeholder input of this function (and of each function in between)."""
        if t.graph is self:
            return t
        if not self.within(t.graph) and root_graph(t.graph) is root_graph(self):
            return lift_output(t, self)  # computed in a function this graph calls: an extra output
        if not self.outer_graph.within(t.graph):
            raise GraphError(f"{t.name} belongs to a graph that does not enclose the function {self.name!r}; a "
                             "function reads only tensors of its own graph and of the graphs around it")
        # (a tensor of a graph further out is first captured by the graph around this one:
        # captures are keyed by the tensor of that graph)
        outer = t if t.graph is self.outer_graph else self.outer_graph.capture(t)
        inner = self._captured.get(id(outer))
        if inner is not None:
            return inner
        inner = self.add_argument(t.dtype, t.shape, name="capture", source=t.op.source)  # (where t was made)
        self.captures.append((outer, inner))
        self._captured[id(outer)] = inner
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

    def source_of(self, t: Tensor) -> Tensor | None:
        """The tensor of the enclosing graph that input `t` stands for: a capture's outer
        tensor, a loop variable's value entering the loop; None for others (the counter)."""
        for outer, inner in self.captures:
            if inner is t:
                return outer
        return self.initial_values.get(id(t))

    @property
    def arguments(self) -> list[Tensor]:
        """The inputs that are not captures."""
        captured = {id(i) for _, i in self.captures}
        return [t for t in self.inputs if id(t) not in captured]

    def signature(self) -> str:
        """`(float64[], int64[3]) -> (float64[])`: for messages and listings."""
        return (f"({', '.join(tensor_type(t) for t in self.inputs)}) -> "
                f"({', '.join(tensor_type(t) for t in self.outputs)})")

    def __repr__(self) -> str:
        return f"<FuncGraph {self.name}: {len(self)} ops {self.signature()}>"


def root_graph(g: Graph) -> Graph:
    """The graph a function graph `g` is nested in, at any depth (`g` itself if none)."""
    while g.outer_graph is not None:
        g = g.outer_graph
    return g


def control_flow_scope(g: Graph | None):
    """Where code being traced into `g` runs: its v1 control-flow context, or the function
    graph itself when `g` is a v2 branch or body (whose context is None, as at the top
    level); None at the top level of the graph. What "inside a loop or `if` on a tensor"
    means for both versions."""
    if g is None:
        return None
    ctx = g.control_flow_context
    if ctx is None and g.outer_graph is not None:
        return g
    return ctx


def lift_output(t: Tensor, into) -> Tensor:
    """`t`, computed in a branch of an If (or in a function nested in one), as a tensor of
    the graph `into` that encloses the If: a new output of the If (and of each If in
    between), the other branch giving zeros of its type. (v1 lets an op after a cond read
    a branch's tensor, dead when the branch was not taken; the intermediates that a
    gradient needs are made outputs the same way.) Read from outside a While's body, a
    tensor has one value per iteration: refused, as v1 refuses it."""
    while True:
        if t.graph is into:
            return t
        if into.within(t.graph):  # out far enough: `into` (a function) captures it
            return into.capture(t)
        g = into
        while g is not None:  # a While's gradient body reads its forward body (an accumulator)
            if getattr(g, "resolves", None) is t.graph:
                r = g.resolve(t)
                return r if g is into else into.capture(r)
            g = g.outer_graph
        fn = t.graph
        hit = fn.lifted.get(id(t))
        if hit is None:
            op = fn.caller
            if op is None or op.type != "If":
                what = "a while loop's body or condition" if op is not None else "a function"
                raise StagingError(
                    f"{t.name} (created at {t.op.location()}) was computed inside {what} ({fn.name}) and is used "
                    "outside of it; return it from the loop instead")
            then_fn, else_fn = (op.graph.get_function(op.attrs[a]) for a in ("then_branch", "else_branch"))
            other = else_fn if fn is then_fn else then_fn
            with other.as_default():
                if t.dtype == dt.variant:  # a tensor list (a loop's accumulator): an empty one (the
                    z = tensor_list_new(dt.float64)  # stand-in for a value; only the taken branch reads it)
                elif t.dtype.np_dtype is None:
                    raise StagingError(f"{t.name} ({t.dtype}) is computed in one branch of {op.name} only and "
                                       "used after it; compute it before the cond or in both branches")
                else:  # one Const (only the taken branch's value is read; unknown dimensions 0)
                    z = constant(np.zeros([0 if d is None else d for d in t.shape.as_list()]
                                          if t.shape.rank is not None else [], dtype=t.dtype.np_dtype))
            fn.outputs.append(t)
            other.outputs.append(z)
            op.graph.append_output(op, t.dtype, t.shape.most_specific_compatible(z.shape))
            hit = fn.lifted[id(t)] = op.outputs[-1]
        t = hit
