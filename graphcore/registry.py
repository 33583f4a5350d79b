"""The op registry: each op is one `define_op(...)` block holding its definition, its
shape/dtype rule, its numpy kernel and (registered right below it) its gradient.

    tanh = define_op("Tanh", shape=same_as_input, kernel=np.tanh)

    @tanh.gradient
    def _tanh_grad(op, dy):        # one entry per input, None = no gradient
        y = op.outputs[0]
        return [dy * (1 - y * y)]

Calling an OpDef builds the op in the graph being built, or, when no graph is being
built and every input is a concrete value, runs the kernel at once (eager). While a
gradient rule runs, `needs_grad(op, i)` says whether the reverse walk wants the
gradient of input i.
"""
from __future__ import annotations

import inspect
import threading
from typing import Callable

from . import dtypes as dt
from .attr_schema import Attr, check_attrs
from .eager import eager_runtime
from .errors import GraphError
from .graph import Tensor, get_default_graph, graph_of
from .shapes import TensorShape, as_shape

_REGISTRY: dict[str, "OpDef"] = {}

# Cost classes: the executor runs "cheap" ops inline on the scheduling thread; "heavy"
# ops go to the worker pool when their inputs are large (numpy releases the GIL then).
CHEAP = "cheap"
HEAVY = "heavy"

# `fails` of an op type that has not said whether it can fail at run time: it may
# (a `try` body refuses it, loop-invariant motion leaves it in its loop).
UNDECLARED = "may fail: its op type does not declare otherwise"

# The taxonomy an op type may declare in its define_op block (see OpDef); passes, the
# converter's operators, placement and the pictures ask these instead of keeping lists.
FACTS = ("elementwise", "fails", "commutative", "pure", "python", "symbol", "ufunc", "expr", "numba",
         "unit", "involution", "family", "exact", "shape_only", "view", "forwards", "control_flow", "loop_frame",
         "fusible", "own_kind", "picture")


class OpDef:
    """An op type: its shape rule, kernel and gradient.

    Args:
      type: registry name ("MatMul").
      shape: rule `(*inputs, **attrs) -> (dtype, shape)` or a list of those, one per output.
      kernel: `(*values, **attrs) -> value` (a tuple when num_outputs > 1).
      num_outputs: fixed count, or None when `shape` decides it.
      cost: CHEAP (always inline) or HEAVY (may go to the pool when large).
      stateful: the op has side effects (Print, Assert, variable updates): never pruned
        as a duplicate, and eager calls always run.
      uses_runtime: the kernel's first argument is the Session runtime (variables).
      attrs: the attributes it takes, name -> attr_schema.Attr or a check (required);
        a graph file's attributes are checked against them (graphcore/attr_schema.py).

    Facts (keywords of define_op, each read by the consumers named; `declared` keeps which
    the block gave, so a test can name an op type that lacks one a consumer needs):
      elementwise: each output element from the same element of the (broadcast) inputs,
        no state: fusion fuses it, gradients may recompute it, LICM may hoist it.
      fails: None if it cannot fail at run time (numpy gives inf, nan or wraps around
        instead), else how it fails: a `try` body refuses it, LICM keeps it in its loop.
      commutative: f(x, y) == f(y, x) exactly (CSE matches both orders).
      pure: its value depends on its inputs and attributes only, no effects (default:
        neither stateful nor a runtime user); compiled loops take only pure ops.
      python: what it computes on scalars as the program wrote it (operator.add for Add,
        np.sin for Sin): the converter follows Python's result types with it.
      symbol: how a program writes it ("+", "unary -", "abs()"), for messages.
      ufunc: the numpy function a tensor argument turns into this op (np.sin).
      expr: Python source on scalar operands {0}, {1} that gives the kernel's value
        (scalar loops and generated kernels; the executor checks the types it gives).
      numba: the source of the same in a numba loop on floats (None: numba cannot take it).
      unit: u with x op u == x exactly (u op x too when commutative); involution: f(f(x)) == x.
      family: "arithmetic", "comparison", "logical", "bitwise" or "math" (elementwise kinds).
      exact: the number kinds ("int", "float") on which its result is exact whenever its
        operand is (|f(x)| <= |x| on ints; representable in the operand's float type).
      shape_only: its value depends only on its input's static shape (constant folding).
      view: its output is a view of its first input in numpy (in-place changes show through).
      forwards: its output is an input's value unchanged (Identity, Enter, Switch, Merge...).
      control_flow: a v1 control-flow primitive or LoopCond (dead-token rules of its own).
      loop_frame: only a loop frame has it (Enter, Exit, NextIteration, LoopCond; not the
        Switch and Merge a cond has too): a pass keeps or drops a loop whole.
      fusible: may be a step of a Fused op (default: elementwise).
      own_kind: its output's Python type is its own whatever its inputs' (a conversion, an
        index, a count, a list): the converter's path types stop there.
      picture: its node's attributes in DOT pictures (graphcore/dot.py), where it has a look
        of its own (the control-flow primitives, inputs, constants, transport).
    """

    __slots__ = ("type", "shape_fn", "kernel", "num_outputs", "cost", "stateful", "uses_runtime",
                 "grad_fn", "no_gradient_reason", "doc", "attrs", "file_check", "declared", "public") + FACTS

    def __init__(self, type: str, *, shape: Callable, kernel: Callable | None, num_outputs: int | None = 1,
                 cost: str = HEAVY, stateful: bool = False, uses_runtime: bool = False, doc: str = "",
                 attrs: dict | None = None, **facts):
        unknown = set(facts) - set(FACTS)
        if unknown:
            raise GraphError(f"op type {type!r}: unknown facts {sorted(unknown)}; known: {', '.join(FACTS)}")
        self.type = type
        self.attrs = None if attrs is None else {k: a if isinstance(a, Attr) else Attr(a) for k, a in attrs.items()}
        self.shape_fn = shape
        self.kernel = kernel
        self.num_outputs = num_outputs
        self.cost = cost
        self.stateful = stateful
        self.uses_runtime = uses_runtime
        self.grad_fn = None
        self.file_check: Callable | None = None
        self.no_gradient_reason: str | None = None
        self.doc = doc
        self.public: Callable | None = None  # the public function building it (`exported`)
        self.declared = frozenset(facts)
        self.elementwise = facts.get("elementwise", False)
        self.fails = facts.get("fails", UNDECLARED)
        self.commutative = facts.get("commutative", False)
        self.pure = facts.get("pure", not stateful and not uses_runtime)
        self.python = facts.get("python")
        self.symbol = facts.get("symbol")
        self.ufunc = facts.get("ufunc")
        self.expr = facts.get("expr")
        self.numba = facts.get("numba")
        self.unit = facts.get("unit")
        self.involution = facts.get("involution", False)
        self.family = facts.get("family")
        self.exact = frozenset(facts.get("exact", ()))
        self.shape_only = facts.get("shape_only", False)
        self.view = facts.get("view", False)
        self.forwards = facts.get("forwards", False)
        self.control_flow = facts.get("control_flow", False)
        self.loop_frame = facts.get("loop_frame", False)
        self.fusible = facts.get("fusible", self.elementwise)
        self.own_kind = facts.get("own_kind", False)
        self.picture = facts.get("picture")

    @property
    def can_fail(self) -> bool:
        return self.fails is not None

    @property
    def heavy(self) -> bool:
        return self.cost == HEAVY

    @property
    def arity(self) -> int | None:
        """How many operands `python` takes (None without one)."""
        fn = self.python
        if fn is None:
            return None
        nin = getattr(fn, "nin", None)
        if nin is not None:
            return nin
        return len(inspect.signature(fn).parameters)

    # -- registration of the gradient, in the op's own block --------------
    def gradient(self, fn: Callable) -> Callable:
        """Register `fn(op, *output_grads) -> [grad per input]` as this op's gradient."""
        self.grad_fn = fn
        return fn

    def checked_when_loaded(self, fn: Callable) -> Callable:
        """Register `fn(op)`, run on an op of this type read from a graph file once its inputs
        are known: what its attributes say must agree with them (AttrError if not)."""
        self.file_check = fn
        return fn

    def exported(self, fn: Callable) -> Callable:
        """Register `fn` as the public function that builds this op: graphcore exports it under
        its name and maps the op's `ufunc` to it (tensor_operators)."""
        self.public = fn
        return fn

    def not_differentiable(self, reason: str = "its outputs do not depend smoothly on its inputs") -> "OpDef":
        """Mark that this op has no gradient on purpose (integer, boolean or constant-valued)."""
        self.no_gradient_reason = reason
        return self

    def check_attrs(self, attrs: dict) -> None:
        """AttrError unless `attrs` are what this op type declares (graph files)."""
        check_attrs(self.type, self.attrs, attrs)

    # -- building --------------------------------------------------------
    def infer(self, inputs: list[Tensor], attrs: dict) -> list[tuple[dt.DType, TensorShape]]:
        spec = self.shape_fn(*inputs, **attrs)
        specs = spec if isinstance(spec, list) else [spec]
        if self.num_outputs is not None and len(specs) != self.num_outputs:
            raise GraphError(f"{self.type}: shape rule gave {len(specs)} outputs, expected {self.num_outputs}")
        return [(dt.as_dtype(d), as_shape(s)) for d, s in specs]

    def __call__(self, *inputs, name: str | None = None, **attrs):
        """Build the op (graph mode) or run it now (eager). Returns a Tensor, or a tuple of
        Tensors for multi-output ops; in eager mode the numpy value(s)."""
        g = graph_of(inputs) or get_default_graph()
        if g is None:
            return self.run_eager(inputs, attrs)
        op = g.create_op(self, inputs, attrs, name=name)
        return op.outputs[0] if len(op.outputs) == 1 else tuple(op.outputs)

    def run_eager(self, inputs, attrs):
        if self.uses_runtime:
            return self.kernel(eager_runtime(), *inputs, **attrs)
        return self.kernel(*inputs, **attrs)

    def __repr__(self) -> str:
        return f"<OpDef {self.type}>"


def define_op(type: str, *, shape: Callable, kernel: Callable | None, num_outputs: int | None = 1,
              cost: str = HEAVY, stateful: bool = False, uses_runtime: bool = False, doc: str = "",
              attrs: dict | None = None, **facts) -> OpDef:
    """Define and register an op type; see OpDef (its facts too)."""
    if type in _REGISTRY:
        raise GraphError(f"op type {type!r} is defined twice")
    op = OpDef(type, shape=shape, kernel=kernel, num_outputs=num_outputs, cost=cost, stateful=stateful,
               uses_runtime=uses_runtime, doc=doc, attrs=attrs, **facts)
    _REGISTRY[type] = op
    return op


def get_op_def(type: str) -> OpDef:
    try:
        return _REGISTRY[type]
    except KeyError:
        raise GraphError(f"no op type {type!r} is registered") from None


def registered_ops() -> dict[str, OpDef]:
    return dict(_REGISTRY)


def op_types(**facts) -> frozenset[str]:
    """The registered op types whose facts have these values: `op_types(elementwise=True)`,
    `op_types(fails=None)`, `op_types(family="comparison")`. Asked when a module needs
    the set: op types registered later (other modules, users) are not in it."""
    return frozenset(t for t, d in _REGISTRY.items() if all(getattr(d, k) == v for k, v in facts.items()))


def public_functions() -> dict[str, Callable]:
    """name -> the public function of each op type that declared one (`exported`)."""
    return {d.public.__name__: d.public for d in _REGISTRY.values() if d.public is not None}


# -- shape rules shared by many ops ---------------------------------------

def same_as_input(x, *rest, **attrs):
    return x.dtype, x.shape


def scalar_of(dtype):
    def rule(*inputs, **attrs):
        return dt.as_dtype(dtype), TensorShape(())
    return rule


# -- what the reverse walk tells a gradient rule ----------------------------

# Which inputs of the op whose rule is running need a gradient. A rule may skip the
# others: inside a loop, every forward tensor a rule reads costs an accumulator.
_needed_inputs = threading.local()


def needs_grad(op, i: int) -> bool:
    """False when the reverse walk does not need the gradient of input `i` of `op`
    (a constant, an integer, or not on a path from the xs); rules use it to avoid
    reading forward tensors they would only need for that input."""
    cur = getattr(_needed_inputs, "value", None)
    if cur is None or cur[0] is not op:
        return True
    return cur[1][i]


def set_needed(op, mask) -> None:
    """Set by the walk around each rule it runs (`op` None clears it)."""
    _needed_inputs.value = (op, mask) if op is not None else None
