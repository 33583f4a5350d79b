"""Variables: named state that outlives one run.

A Variable has a process-unique name; its value lives in a Runtime (graphcore.eager)
under that name. In each graph that reads it, the variable gets one handle op (at
the top level of that graph, captured into loops and conds like any outer tensor);
every read builds a ReadVariableOp in the current context, every assignment an
AssignVariableOp. Outside any graph, reads and assignments act on the default
Runtime at once.

Initialization: a Variable made from a concrete value (numpy or Python) holds it in
the default Runtime as soon as it is created, so eager code and @function code can
use it at once; its `initializer` op resets it. A Variable made from a graph tensor
holds nothing until its initializer runs (TensorFlow 1), and a Session given its own
Runtime starts empty: reading a variable with no value raises an error naming it.

Example:
    w = gc.Variable(np.zeros(3), name="w")
    with g.as_default():
        step = w.assign_sub(0.1 * gc.gradients(loss, [w])[0])
"""
from __future__ import annotations

import contextlib

import numpy as np

from . import dtypes as dt
from .control_flow import group
from .eager import eager_runtime, ordered_state_access, unique_variable_name
from .errors import GraphError
from .graph import Graph, Tensor, get_default_graph
from .ops import state_ops
from .ops.array_ops import cast, constant
from .shapes import TensorShape
from .side_tables import SideTable


class Variable:
    """A named, mutable tensor.

    Args:
      initial_value: a numpy/Python value, a graph Tensor, or a callable returning one.
      name: base name (made unique in the process: "w", "w_1", ...).
      trainable: listed by `trainable_variables()` and used by optimizers by default.
      dtype: convert the initial value to this dtype.
    """

    def __init__(self, initial_value, name: str | None = None, trainable: bool = True, dtype=None):
        if callable(initial_value):
            initial_value = initial_value()
        self.name = unique_variable_name(name or "Variable")
        self.trainable = trainable
        self._handles = SideTable("variable handle")  # graph -> this variable's handle in it
        g = initial_value.graph if isinstance(initial_value, Tensor) else get_default_graph()
        self.graph = g
        if isinstance(initial_value, Tensor):
            if dtype is not None and initial_value.dtype != dt.as_dtype(dtype):
                with g.as_default():
                    initial_value = cast(initial_value, dtype)
            self.dtype = initial_value.dtype
            self.shape = initial_value.shape
            init_value = initial_value
        else:
            d = dt.as_dtype(dtype) if dtype is not None else dt.dtype_of_value(initial_value)
            arr = np.array(initial_value, dtype=d.np_dtype, copy=True)
            self.dtype = d
            self.shape = TensorShape(arr.shape)
            rt = eager_runtime()
            with rt.lock:
                rt.variables[self.name] = arr if arr.ndim else arr[()]
            init_value = arr
        self.initializer = None
        if g is not None:
            g.variables.append(self)
            if trainable:
                g.collections.setdefault("trainable_variables", []).append(self)
            with _at_top_level(g):
                if not isinstance(init_value, Tensor):
                    init_value = constant(init_value, dtype=self.dtype, name=f"{self.name}/initial_value")
                self.initializer = g.create_op(state_ops.assign_op, [self.handle(g), init_value],
                                               name=f"{self.name}/Assign").outputs[0].op

    # -- graph plumbing ----------------------------------------------------
    def handle(self, g: Graph) -> Tensor:
        """This variable's handle in graph `g` (one per graph, built at its top level)."""
        h = self._handles.get(g)
        if h is not None and h.op not in g:
            h = None  # the handle was built in a trace that was rolled back
        if h is None:
            with _at_top_level(g):
                h = g.create_op(state_ops.var_handle_op, [], {"var_name": self.name, "dtype": self.dtype,
                                                              "shape": self.shape.dims},
                                name=self.name).outputs[0]
            self._handles[g] = h
        return h

    def _as_graph_tensor(self, g: Graph) -> Tensor:
        with g.as_default():
            return self.value()

    def _gradient_handle(self, g: Graph) -> Tensor:
        return self.handle(g)

    # -- reading and writing ---------------------------------------------------
    def value(self):
        """The current value: a ReadVariableOp in the graph being built, else a numpy value."""
        g = get_default_graph()
        if g is None:
            return state_ops._read_kernel(eager_runtime(), self.name)
        handle = self.handle(g)
        return ordered_state_access(g, lambda: state_ops.read_variable_op(handle, name=f"{self.name}/read"))

    read_value = value

    def _update(self, op_def, value, what):
        g = get_default_graph() or (value.graph if isinstance(value, Tensor) else None)
        if g is None:
            return op_def.kernel(eager_runtime(), self.name, np.asarray(value, dtype=self.dtype.np_dtype))
        with g.as_default():
            if not isinstance(value, Tensor):
                value = constant(np.asarray(value, dtype=self.dtype.np_dtype))
            if value.dtype != self.dtype:
                raise GraphError(f"{what} of {value.dtype} to variable '{self.name}' of dtype {self.dtype}; "
                                 f"cast it with graphcore.cast(value, graphcore.{self.dtype.name})")
            handle = self.handle(g)
            return ordered_state_access(g, lambda: op_def(handle, value, name=f"{self.name}/{what}"))

    def assign(self, value):
        """Set the value; returns the new value (a tensor in a graph)."""
        return self._update(state_ops.assign_op, value, "Assign")

    def assign_add(self, delta):
        return self._update(state_ops.assign_add_op, delta, "AssignAdd")

    def assign_sub(self, delta):
        return self._update(state_ops.assign_sub_op, delta, "AssignSub")

    def numpy(self):
        return np.asarray(state_ops._read_kernel(eager_runtime(), self.name))

    def __array__(self, dtype=None, copy=None):
        v = np.asarray(self.numpy())
        return v.astype(dtype) if dtype is not None else v

    def get_shape(self) -> TensorShape:
        return self.shape

    def __repr__(self) -> str:
        return f"<Variable '{self.name}' {self.dtype}{self.shape}>"

    __hash__ = object.__hash__


def _binary(name):
    def op(self, other):
        return getattr(self.value(), f"__{name}__")(other)

    def rop(self, other):
        v = self.value()
        if isinstance(v, Tensor):
            return getattr(v, f"__r{name}__")(other)
        return getattr(np.asarray(v), f"__r{name}__")(other)

    return op, rop


for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul"):
    _o, _r = _binary(_n)
    setattr(Variable, f"__{_n}__", _o)
    setattr(Variable, f"__r{_n}__", _r)
for _n in ("lt", "le", "gt", "ge"):
    setattr(Variable, f"__{_n}__", (lambda n: lambda self, o: getattr(self.value(), f"__{n}__")(o))(_n))
Variable.__neg__ = lambda self: -self.value()
Variable.__getitem__ = lambda self, key: self.value()[key]


@contextlib.contextmanager
def _at_top_level(g: Graph):
    """Build in `g` at its top level: handles and initializers belong to no loop."""
    with g.as_default(), g.at_top_level():
        yield g


def global_variables_initializer(graph: Graph | None = None):
    """One op that runs the initializer of every variable of the graph (None eagerly)."""
    g = graph or get_default_graph()
    if g is None:
        return None
    inits = [v.initializer for v in g.variables if getattr(v, "initializer", None) is not None]
    with g.as_default(), _at_top_level(g):
        return group(*inits, name="init")


def trainable_variables(graph: Graph | None = None) -> list:
    g = graph or get_default_graph()
    if g is None:
        return []
    return list(g.collections.get("trainable_variables", []))


def global_variables(graph: Graph | None = None) -> list:
    g = graph or get_default_graph()
    return list(g.variables) if g is not None else []


def variables_initializer(var_list) -> object:
    inits = [v.initializer for v in var_list if v.initializer is not None]
    return group(*inits, name="init") if inits else None


__all__ = ["Variable", "global_variables_initializer", "trainable_variables", "global_variables",
           "variables_initializer"]
