"""The IR: a Graph of Operations whose outputs are Tensors.

Operations are made only by the Graph (`create_op`; `copy_ops_into` for a copy); every op records its type, inputs,
outputs, attrs, control inputs, device, the control-flow context it was built in
(a cond branch or a while frame) and the user's source line that created it.

Graphs are rewritten only through the Graph's public rewrite methods (as torch.fx's
`replace_all_uses_with`, `erase_node`, `inserting_before`): `replace_all_uses_with`,
`update_input`, `erase_op` / `erase_ops`, `inserting_before` / `inserting_after`,
`move_out_of_loop`, `add_control_input` / `remove_control_input`. Each keeps the
consumer lists, the control-flow contexts and the version executors key their plans
on right, and ops a rewrite creates keep the source line of the op they stand for.

Printing, exporting, copying and checking a graph are functions over it that live in their
own modules (printer.py, dot.py, serialization/, graph_copy.py, validate.py); so do turning
a Python value into a constant (ops/array_ops.py) and looking an op type up by name
(registry.py).
They import this module, so it imports none of them: graphcore/__init__.py hands them
to `install`, and the Graph methods that are their shortcuts (`str(g)`, `g.validate()`,
`g.to_dot()`, `g.to_json()`, `Graph.from_json`, `g.copy()`) call them through it.
"""
from __future__ import annotations

import contextlib
import itertools
import operator
import re
import threading
from types import MappingProxyType
from bisect import bisect_left
from typing import Any, Callable, Iterable, Sequence


import numpy as np

from . import dtypes as dt
from .errors import GraphError
from .shapes import TensorShape, as_shape
from .source_info import SourceLocation, user_location


class Tensor:
    """One output of an Operation: a symbolic value with a static dtype and shape.

    Using a Tensor as a Python bool is an error: graph values are only known when
    the graph runs, so branch on them with `graphcore.cond` or write the code in an
    `@autograph.function`, which converts `if`/`while` for you.
    """

    __slots__ = ("op", "value_index", "dtype", "_shape", "_consumers", "weak", "__weakref__")

    # numpy must defer to our operators (ndarray + Tensor -> Tensor.__radd__)
    __array_priority__ = 100
    __array_ufunc__ = None

    def __init__(self, op: "Operation", value_index: int, dtype: dt.DType, shape: TensorShape):
        self.op = op
        self.value_index = value_index
        self.dtype = dtype
        self._shape = shape
        self._consumers: list[Operation] = []
        # weakly typed (JAX's weak_type): computed from Python numbers only, so it takes the
        # dtype of a strongly typed tensor it meets, as the Python numbers would have
        self.weak = False

    @property
    def graph(self) -> "Graph":
        return self.op.graph

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.value_index}"

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape) -> None:
        self._shape = self._shape.merge_with(as_shape(shape))

    def get_shape(self) -> TensorShape:
        return self._shape

    @property
    def ndim(self):
        return self._shape.rank

    def consumers(self) -> list["Operation"]:
        return list(self._consumers)

    @property
    def readers(self) -> list["Operation"]:
        """The ops that read this tensor: the graph's own list, not a copy (`consumers()` is),
        for passes that look at many; read it, never change it (the graph's rewrites do)."""
        return self._consumers

    def __repr__(self) -> str:
        return f"<Tensor {self.name} {self.dtype}{self._shape}>"

    def __bool__(self):
        raise TypeError(
            f"using the graph tensor {self.name} as a Python bool is not allowed: its value is only "
            "known when the graph runs. Decorate the function with @autograph.function so `if`/`while` "
            "on tensors are converted, or use graphcore.cond / graphcore.while_loop.")

    def __len__(self):
        dims = self._shape.dims
        if dims is None or not dims or dims[0] is None:
            raise TypeError(
                f"len() of {self.name} is unknown while building the graph (shape {self._shape}); "
                "use graphcore.shape(t)[0] or graphcore.size(t)")
        return dims[0]

    def __iter__(self):
        dims = self._shape.dims
        if dims is None or not dims or dims[0] is None:
            raise TypeError(
                f"cannot iterate over {self.name} of shape {self._shape} while building the graph; "
                "inside @autograph.function a `for` over a tensor becomes a graph loop")
        return (self[i] for i in range(dims[0]))

    def __index__(self):
        raise TypeError(f"the graph tensor {self.name} cannot be used as a Python index")

    __hash__ = object.__hash__


class Operation:
    """A node of the graph.

    Attributes:
      type: the op type name in the registry, e.g. "Add", "Switch".
      name: unique within the graph, e.g. "while/Merge_1".
      inputs: data input Tensors; outputs: the Tensors this op produces.
      attrs: compile-time attributes (numpy values, ints, strings, dtypes, shapes).
      control_inputs: Operations that must run before this one (no data).
      device: a free-form placement string ("" for the default).
      ctx: the control-flow context (CondContext / WhileContext) the op was built in, or None.
      source: the user's SourceLocation that created the op, or None.
    """

    __slots__ = ("graph", "type", "name", "inputs", "outputs", "attrs", "control_inputs", "device",
                 "ctx", "source", "op_def", "_id", "_order", "_control_outputs", "__weakref__")

    def __init__(self, graph, op_def, name, inputs, output_specs, attrs, control_inputs, device, ctx, source):
        self.graph = graph
        self.op_def = op_def
        self.type = op_def.type
        self.name = name
        self.inputs = tuple(inputs)
        self.attrs = attrs
        self.control_inputs = tuple(control_inputs)
        self.device = device
        self.ctx = ctx
        self.source = source
        self._id = graph._next_op_id()
        self._order = 0  # its place in the graph's order as a number (Graph._place sets it)
        self._control_outputs: list[Operation] = []
        self.outputs = tuple(Tensor(self, i, d, as_shape(s)) for i, (d, s) in enumerate(output_specs))

    @property
    def control_outputs(self) -> list["Operation"]:
        return list(self._control_outputs)

    # (properties with a C getter: passes read these for every op they sort or compare)
    order = property(operator.attrgetter("_order"), doc="""A number that grows along the graph's order:
        `a.order < b.order` when a stands before b. The graph sets it anew when an insertion leaves
        no room between two neighbours (`Graph.renumbered` counts those times), so compare numbers
        read since the last renumbering.""")
    serial = property(operator.attrgetter("_id"), doc="""The op's creation number in its graph, never
        reused: ops made after `mark = graph.checkpoint()` have `serial >= mark`.""")

    @property
    def waiters(self) -> list["Operation"]:
        """The ops with a control input on this one: the graph's own list, not a copy
        (`control_outputs` is); read it, never change it."""
        return self._control_outputs

    def get_attr(self, name: str) -> Any:
        try:
            return self.attrs[name]
        except KeyError:
            raise GraphError(f"op {self.name} ({self.type}) has no attr {name!r}") from None

    @property
    def frame_name(self) -> str:
        """The name of the innermost while frame this op was built in ("" for the root)."""
        c = self.ctx
        while c is not None:
            if c.is_while:
                return c.name
            c = c.outer
        return ""

    def location(self) -> str:
        return str(self.source) if self.source else "<unknown>"

    def describe(self) -> str:
        """`op 'while/add' (Add) at fib.py:7`: how error messages name an op."""
        loc = f" at {self.source}" if self.source is not None else ""
        return f"op {self.name!r} ({self.type}){loc}"

    def __repr__(self) -> str:
        return f"<Operation {self.name} ({self.type})>"


_default_graph = threading.local()


def _graph_stack() -> list:
    stack = getattr(_default_graph, "stack", None)
    if stack is None:
        stack = _default_graph.stack = []
    return stack


def get_default_graph() -> "Graph | None":
    """The graph being built on this thread, or None when ops run eagerly."""
    stack = _graph_stack()
    return stack[-1] if stack else None


_NAME_RE = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.\-/]*$")

# name -> function, set once by graphcore/__init__.py (see the module docstring):
#   op_def(type name) -> OpDef          constant(value, dtype) -> Tensor
#   validate(graph)                      format(graph) -> str
#   to_dot(graph) -> str                 to_json(graph) -> str
#   from_json(text) -> Graph             lift(tensor of a function, graph) -> Tensor
#   copy(graph) -> Graph
_installed: dict[str, Callable] = {}


def install(**functions: Callable) -> None:
    """Hand the Graph the functions over graphs that its shortcut methods call."""
    _installed.update(functions)


# Every op of a graph carries a number, `_order`, that grows along the graph's order: an op
# made at the end gets the last one's plus _GAP, an op inserted before another the middle of
# its neighbours' (all are numbered anew, in steps of _GAP, when two neighbours leave no room).
# So "does a stand before b" is `a._order < b._order`, and an op's place is found by bisection,
# without a walk of the list or a table of every op's index (passes ask both often).
_GAP = 1 << 32
_order_of = operator.attrgetter("_order")
_name_of = operator.attrgetter("name")
_outputs_of = operator.attrgetter("outputs")
_consumers_of = operator.attrgetter("_consumers")
_control_outputs_of = operator.attrgetter("_control_outputs")


def _index_of(ops: list, op) -> int:
    """`ops.index(op)` (ops: a graph's list, in order), by bisection on the numbers."""
    i = bisect_left(ops, op._order, key=_order_of)
    if i < len(ops) and ops[i] is op:
        return i
    return ops.index(op)  # (an op not in the list: list.index's ValueError)


class _Same:
    """The default `context` of an insertion: the anchor op's own."""


_SAME = _Same()


class Graph:
    """A dataflow graph. Build ops inside `with g.as_default():`.

    `library` holds the function graphs (function_graph.FuncGraph) that its If/While ops
    call by name; nested functions share their outermost graph's library."""

    outer_graph = None  # a FuncGraph's enclosing graph (None: a top-level graph)
    _lift_controls = None  # FuncGraph: turns control inputs from enclosing graphs into captures

    def __init__(self, *, library_of: "Graph | None" = None):
        """`library_of`: the graph whose function library this one shares (a function graph
        shares its outermost graph's)."""
        self._library: dict = {} if library_of is None else library_of._library  # name -> FuncGraph
        self._ops: list[Operation] = []
        self._by_name: dict[str, Operation] = {}
        self._by_name_view = MappingProxyType(self._by_name)
        self._used_names: dict[str, int] = {}
        self._scope = ""
        self._control_deps: list[list[Operation]] = []
        self._device = ""
        self._ctx = None
        self._lock = threading.RLock()
        self.variables: list = []
        self._while_contexts: dict = {}  # frame name -> WhileContext (gradients find loops here)
        self._removal_hooks: list = []  # control-flow contexts drop what they cached of removed ops
        self.collections: dict[str, list] = {}
        self.version = 0  # bumped on every change; executors key their plans on it
        self._op_count = 0  # ids of ops, never reused (ops may be removed)
        self._insert_before: Operation | None = None  # None: new ops go at the end
        self._insert_index = 0  # where the anchor was last seen (checked before it is trusted)
        self._renumbered = 0  # how often every op's _order was set anew (see _GAP)
        self._inserted_id = -1  # the latest id of an op placed before the end (for rollback)
        self._source = None  # the source line of ops created inside an insertion

    def _next_op_id(self) -> int:
        self._op_count += 1
        return self._op_count - 1

    # -- building --------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
        stack = _graph_stack()
        stack.append(self)
        try:
            yield self
        finally:
            stack.pop()

    def unique_name(self, name: str, mark_used: bool = True) -> str:
        """`add`, `add_1`, `add_2`... within the current name scope."""
        return self._unique(f"{self._scope}{name}" if self._scope else name, mark_used)

    def _unique(self, full: str, mark_used: bool = True) -> str:
        key = full.lower()
        i = self._used_names.get(key, 0)
        candidate = full
        while candidate.lower() in self._used_names or candidate in self._by_name:
            i += 1
            candidate = f"{full}_{i}"
        if mark_used:
            self._used_names[key] = i
            self._used_names[candidate.lower()] = 0
        return candidate

    @contextlib.contextmanager
    def name_scope(self, name: str | None):
        """Prefix the names of ops created inside with `name/` (made unique)."""
        old = self._scope
        if name:
            if name.endswith("/"):
                self._scope = name
            else:
                self._scope = self.unique_name(name) + "/"
        try:
            yield self._scope
        finally:
            self._scope = old

    @contextlib.contextmanager
    def without_name_scope(self):
        """Ops created inside are named at the top level, with no scope prefix (a pass that
        gives each op it builds a scope of its own)."""
        old, self._scope = self._scope, ""
        try:
            yield
        finally:
            self._scope = old

    @contextlib.contextmanager
    def control_dependencies(self, deps: Iterable | None):
        """Ops created inside run only after `deps` (ops or tensors). `None` clears them."""
        if deps is None:
            saved, self._control_deps = self._control_deps, []
            try:
                yield
            finally:
                self._control_deps = saved
            return
        ops = []
        for d in deps:
            if isinstance(d, Tensor):
                d = d.op
            if not isinstance(d, Operation):
                raise GraphError(f"control_dependencies takes ops or tensors, not {type(d).__name__}")
            ops.append(d)
        self._control_deps.append(ops)
        try:
            yield
        finally:
            self._control_deps.pop()

    @property
    def active_control_dependencies(self) -> list[Operation]:
        """The ops every op created now will wait for (from `control_dependencies` blocks)."""
        return [op for group in self._control_deps for op in group]

    @contextlib.contextmanager
    def device(self, name: str):
        old, self._device = self._device, name or ""
        try:
            yield
        finally:
            self._device = old

    @contextlib.contextmanager
    def in_control_flow_context(self, ctx):
        """Ops created inside the block are built in `ctx` (a cond branch or while frame,
        None for the root): control-flow builders enter a branch or body this way, and a
        loader rebuilds a graph op by op. With `create_op(capture=True)` the context still
        wires outer tensors in through Switch or Enter; pass `capture=False` when the graph
        already has them."""
        old, self._ctx = self._ctx, ctx
        try:
            yield ctx
        finally:
            self._ctx = old

    @contextlib.contextmanager
    def at_top_level(self):
        """Ops created inside are built at the top level of the graph: no control-flow
        context, no control dependencies, no name scope (what belongs to no loop, such as
        a variable's handle and initializer)."""
        saved = (self._ctx, self._control_deps, self._scope)
        self._ctx, self._control_deps, self._scope = None, [], ""
        try:
            yield self
        finally:
            self._ctx, self._control_deps, self._scope = saved

    def add_while_context(self, ctx) -> None:
        """Register a while loop's context under its frame name: gradients find loops here.
        `while_loop` does this for the loops it builds; a loader does it for loaded ones."""
        self._while_contexts[ctx.name] = ctx

    @property
    def while_contexts(self) -> dict:
        """Frame name -> the WhileContext of every while loop of the graph (a copy)."""
        return dict(self._while_contexts)

    @property
    def control_flow_context(self):
        return self._ctx

    @property
    def current_device(self) -> str:
        """The device ops created now are placed on (set by `device` blocks; "" for the default)."""
        return self._device

    @property
    def current_name_scope(self) -> str:
        """The prefix of the names of ops created now ("layer/", "" at the top)."""
        return self._scope

    def add_removal_hook(self, hook: Callable[[set], None]) -> None:
        """Call `hook(set of the removed ops)` whenever ops leave the graph (`rollback`,
        `erase_op`): a control-flow context drops what it cached of them. (The ops themselves,
        which hash by identity: a hook asks about each op it caches, and id() would be a
        call per op.)"""
        self._removal_hooks.append(hook)

    def as_tensor(self, value, dtype=None) -> Tensor:
        """`value` as a tensor of this graph: a tensor of it as it is; a tensor of a function
        it calls lifted out as an extra output of the call; a Variable read; a Python or numpy
        value a constant (of `dtype` if given)."""
        return self._as_graph_tensor(value, dtype)

    def _as_graph_tensor(self, value, dtype=None) -> Tensor:
        if isinstance(value, Tensor):
            if value.graph is not self:
                if value.graph.outer_graph is not None and _root(value.graph) is _root(self):
                    # a tensor of a function this graph calls (an If's branch): an extra output
                    return _installed["lift"](value, self)
                raise GraphError(f"tensor {value.name} belongs to another graph than the one being built")
            return value
        convert = getattr(value, "_as_graph_tensor", None)
        if convert is not None:  # a Variable: a read op in this graph
            return convert(self)
        with self.as_default():
            return _installed["constant"](value, dtype=dtype)

    def create_op(self, op_def, inputs: Sequence = (), attrs: dict | None = None, name: str | None = None,
                  control_inputs: Sequence = (), output_specs=None, source: SourceLocation | None = None,
                  capture: bool = True):
        """The only factory of Operations. Converts inputs to tensors of this graph, lets the
        current control-flow context capture outer tensors (Switch / Enter), adds the
        active control dependencies, runs the op's shape rule and records the user's line.

        `op_def` is an OpDef or a registered op type name ("Add").

        Returns the new Operation."""
        if isinstance(op_def, str):
            op_def = _installed["op_def"](op_def)
        attrs = dict(attrs or {})
        with self._lock:
            ctx = self._ctx
            inputs = [t if isinstance(t, Tensor) and t.op.graph is self else self._as_graph_tensor(t)
                      for t in inputs]
            controls: list[Operation] = []
            if capture:
                for group in self._control_deps:
                    controls.extend(group)
            for c in control_inputs:
                controls.append(c.op if isinstance(c, Tensor) else c)
            if controls and self._lift_controls is not None:
                controls = self._lift_controls(controls)
            if ctx is not None and capture:
                inputs, controls = ctx.prepare_op_inputs(op_def, inputs, controls)
            seen = set()
            controls = [c for c in controls if not (c._id in seen or seen.add(c._id))]
            if source is None:
                source = self._source
            if output_specs is None:
                try:
                    output_specs = op_def.infer(inputs, attrs)
                except GraphError as e:  # named at the user's line, as the others below
                    loc = source or user_location(2)
                    if loc is not None and f"{loc.filename}:{loc.lineno}" not in str(e) and str(loc) not in str(e):
                        e.args = (f"{op_def.type} at {loc}: {e}", *e.args[1:])
                    raise
                except (TypeError, ValueError) as e:
                    loc = source or user_location(2)
                    where = f" at {loc}" if loc else ""
                    raise GraphError(f"{op_def.type}{where}: {e}") from None
            op_name = self.unique_name(name or op_def.type)
            op = Operation(self, op_def, op_name, inputs, output_specs, attrs, controls, self._device, ctx,
                           source if source is not None else user_location(2))
            self._place(op)
            self._by_name[op_name] = op
            for t in inputs:
                t._consumers.append(op)
            for c in controls:
                c._control_outputs.append(op)
            self.version += 1
            return op

    def _place(self, op: Operation) -> None:
        """Put a new op at the end of the graph's order, or before the insertion anchor."""
        anchor = self._insert_before
        ops = self._ops
        if anchor is None:
            if ops:
                op._order = ops[-1]._order + _GAP
            ops.append(op)
            return
        self._place_before(op, anchor)

    def _place_before(self, op: Operation, anchor: Operation) -> None:
        ops = self._ops
        i = self._insert_index
        if i >= len(ops) or ops[i] is not anchor:
            i = _index_of(ops, anchor)
        ops.insert(i, op)
        hi = anchor._order
        lo = ops[i - 1]._order if i else hi - 2 * _GAP
        if hi - lo >= 2:
            op._order = (lo + hi) >> 1
        else:
            self._renumber_around(i)
        self._insert_index = i + 1
        self._inserted_id = op._id

    def _renumber_around(self, i: int) -> None:
        """Number anew the ops around place `i`, which has no room left: the smallest window
        around it (doubling) whose neighbours' numbers leave a wide step for each of its ops, or
        that reaches an end of the list (where numbers may grow past the end), so repeated
        insertions at one place cost a few renumberings of a few ops each."""
        ops = self._ops
        n, k = len(ops), 8
        while True:
            a, b = max(0, i - k), min(n, i + k + 1)
            slots = b - a + 1
            if a == 0 and b == n:
                lo, hi = 0, slots * _GAP
            elif a == 0:
                hi = ops[b]._order
                lo = hi - slots * _GAP
            elif b == n:
                lo = ops[a - 1]._order
                hi = lo + slots * _GAP
            else:
                lo, hi = ops[a - 1]._order, ops[b]._order
            if hi - lo >= slots * (_GAP >> 16):
                step = (hi - lo) // slots
                for j in range(a, b):
                    ops[j]._order = lo + (j - a + 1) * step
                self._renumbered += 1
                return
            k *= 2

    def checkpoint(self) -> int:
        """A mark to `rollback` to: builders that trace user code once to learn types
        (while_loop relaxing shapes, autograph's weak typing) undo that trace with it."""
        return self._op_count

    def names_taken(self) -> dict:
        """A snapshot of the names taken so far (ops' and name scopes'), for `give_back_names`."""
        return dict(self._used_names)

    def give_back_names(self, taken: dict) -> None:
        """After a `rollback`: the names taken since `taken = names_taken()` are free again, so
        that a trace undone and redone names its ops as one trace would (`while`, not `while_1`)."""
        self._used_names = dict(taken)

    def rollback(self, checkpoint: int) -> None:
        """Remove every op created after `checkpoint`, with the captures that referred to them."""
        i = len(self._ops)
        while i and self._ops[i - 1]._id >= checkpoint:
            i -= 1
        dropped = self._ops[i:]
        if self._inserted_id >= checkpoint:  # some were placed before older ops
            dropped = [op for op in self._ops if op._id >= checkpoint]
        self._remove(dropped)

    def _remove(self, ops: list[Operation], *, where: list[int] | None = None,
                kept: list[Operation] | None = None) -> None:
        """Take `ops` out of the graph with every reference the graph keeps to them.
        The caller may know `where` they stand in the graph's order (ascending places), or
        the ops `kept` (the others, in order)."""
        gone = set(ops)  # (ops by identity, as they hash)
        if not gone:
            return
        n = len(ops)
        if kept is not None:
            self._ops = kept
        elif where is not None:
            for i in reversed(where):
                del self._ops[i]
        elif len(self._ops) >= n and all(a is b for a, b in zip(self._ops[len(self._ops) - n:], ops)):
            del self._ops[len(self._ops) - n:]  # the usual rollback: the newest ops, at the end
        else:
            self._ops = [op for op in self._ops if op not in gone]
        by_name = self._by_name
        for op in ops:
            by_name.pop(op.name, None)
            for t in op.inputs:
                if t.op not in gone:
                    t._consumers.remove(op)
            for c in op.control_inputs:
                if c not in gone:
                    c._control_outputs.remove(op)
        # a loop all of whose Enters are gone is gone (a loop that never got one stays)
        self._while_contexts = {k: c for k, c in self._while_contexts.items()
                                if not c.enters or not all(map(gone.__contains__, c.enters))}
        for hook in list(self._removal_hooks):
            hook(gone)
        self.version += 1

    # -- rewriting ---------------------------------------------------------
    def _check_op(self, op, what: str) -> None:
        if not isinstance(op, Operation):
            raise GraphError(f"{what} takes an Operation, not {type(op).__name__}")
        if op.graph is not self or self._by_name.get(op.name) is not op:
            raise GraphError(f"{what}: {op.name} ({op.type}) is not an op of this graph")

    def update_input(self, op: Operation, index: int, tensor: Tensor) -> None:
        """Make `tensor` the data input `index` of `op`, keeping consumer lists right. Loops
        are closed this way: a Merge is built before the NextIteration that feeds it."""
        self._check_op(op, "update_input")
        if not isinstance(tensor, Tensor) or tensor.graph is not self:
            raise GraphError(f"update_input: the new input of {op.name} must be a tensor of this graph")
        old = op.inputs[index]
        old._consumers.remove(op)
        op.inputs = op.inputs[:index] + (tensor,) + op.inputs[index + 1:]
        tensor._consumers.append(op)
        self.version += 1

    def replace_all_uses_with(self, old: Tensor, new: Tensor, *, only=None) -> list[Operation]:
        """Make the ops that read `old` read `new` instead (torch.fx's replace_all_uses_with).

        Args:
          old, new: tensors of this graph with the same dtype and compatible shapes.
          only: rewire only some consumers: a collection of ops, or a predicate on an op.
            `new`'s own op is never rewired (so after `y = f(x)` replacing x by y leaves
            f reading x).

        Returns the rewired ops. The tensors a caller holds (fetches) are not changed, and
        which frame each op then reads from is for `validate()` to check.

        Example:
            with g.inserting_before(op):
                c = gc.constant(value)
            g.replace_all_uses_with(op.outputs[0], c)
        """
        if not isinstance(old, Tensor) or old.op.graph is not self:
            raise GraphError("replace_all_uses_with: old must be a tensor of this graph")
        if not isinstance(new, Tensor) or new.op.graph is not self:
            raise GraphError("replace_all_uses_with: new must be a tensor of this graph")
        if old.dtype is not new.dtype and old.dtype != new.dtype:
            raise GraphError(f"replace_all_uses_with: {new.name} is {new.dtype} but {old.name} is {old.dtype}; "
                             "cast it first so the consumers keep their dtypes")
        a, b = old._shape, new._shape
        if a is not b and a.dims != b.dims and not a.is_compatible_with(b):  # (equal dims: compatible)
            raise GraphError(f"replace_all_uses_with: {new.name} has shape {new.shape}, which does not fit "
                             f"{old.name}'s {old.shape} that its consumers were built for")
        if only is not None and not callable(only):
            chosen = {id(op) for op in only}
            only = lambda op: id(op) in chosen  # noqa: E731
        rewired: list[Operation] = []
        new_op, by_name = new.op, self._by_name
        for op in dict.fromkeys(old._consumers):
            if op is new_op or (only is not None and not only(op)):
                continue
            if new is old or by_name.get(op.name) is not op:  # (the latter refused by update_input)
                for k, t in enumerate(op.inputs):
                    if t is old:
                        self.update_input(op, k, new)
            else:  # what update_input does for each input that reads `old`, at once
                ins = op.inputs
                if len(ins) == 2:  # (the usual arities written out: `op` reads `old` at least once)
                    a, b = ins
                    if a is old:
                        n = 2 if b is old else 1
                        op.inputs = (new, new) if n == 2 else (new, b)
                    else:
                        n = 1
                        op.inputs = (a, new)
                elif len(ins) == 1:
                    n = 1
                    op.inputs = (new,)
                else:
                    inputs = list(ins)
                    n = 0
                    for k in range(len(inputs)):
                        if inputs[k] is old:
                            inputs[k] = new
                            n += 1
                    op.inputs = tuple(inputs)
                users, readers = old._consumers, new._consumers
                for _ in range(n):
                    users.remove(op)
                    readers.append(op)
                self.version += n
            rewired.append(op)
        return rewired

    def erase_op(self, op: Operation, *, cascade: bool = False) -> list[Operation]:
        """Remove `op` from the graph (torch.fx's erase_node).

        Refuses while another op reads one of its outputs or waits for it as a control
        input; with `cascade=True` those ops are removed too, and theirs, transitively.
        Returns the removed ops in graph order."""
        self._check_op(op, "erase_op")
        doomed = {id(op): op}
        stack = [op]
        while stack:
            cur = stack.pop()
            users = [c for t in cur.outputs for c in t._consumers] + list(cur._control_outputs)
            if users and not cascade:
                names = ", ".join(sorted({u.name for u in users}))
                raise GraphError(f"cannot erase {op.name} ({op.type}): it is still used by {names}; rewire "
                                 "them first (replace_all_uses_with, remove_control_input) or pass cascade=True")
            for u in users:
                if id(u) not in doomed:
                    doomed[id(u)] = u
                    stack.append(u)
        removed = [o for o in self._ops if id(o) in doomed]
        self._remove(removed)
        return removed

    def erase_ops(self, ops: Iterable[Operation], *, stand_ins: Sequence = (),
                  check_users: bool = True) -> list[Operation]:
        """Remove several ops at once (dead code elimination): every op that reads one of
        their outputs or waits for one of them must be among them. One pass over the
        graph, however many ops go. Returns the removed ops in graph order.

        `stand_ins`: pairs (an op erased here, the op `create_stand_in` made for it), which
        takes its place in the graph's order (as if inserted right before it).
        `check_users=False`: the caller (a pass) knows the ops are of this graph and that all
        their readers and waiters are among them (it erases whole trees it has just replaced),
        so neither is asked again; a wrong claim leaves dangling readers, so only a pass that
        has just rewired them says so."""
        if not check_users:
            doomed = dict.fromkeys(ops)  # (ops by identity, as they hash)
        else:
            doomed = {}
            by_name = self._by_name
            for op in ops:
                try:  # (an op of this graph is the one its name names: the one question asked)
                    mine = by_name.get(op.name) is op
                except (AttributeError, TypeError):
                    mine = False
                if not mine:
                    self._check_op(op, "erase_ops")
                doomed[op] = None
            for op in doomed:
                for t in op.outputs:
                    for u in t._consumers:
                        if u not in doomed:
                            self._refuse_erase(op, doomed)
                for u in op._control_outputs:
                    if u not in doomed:
                        self._refuse_erase(op, doomed)
        all_ops = self._ops
        if len(doomed) <= 8 and not stand_ins:  # a few: found by position (no walk over the graph)
            where = sorted(_index_of(all_ops, op) for op in doomed)
            removed = [all_ops[i] for i in where]
            self._remove(removed, where=where)
            return removed
        # one walk (in C) tells the removed ops from the kept ones: an erased op reads as None
        # in `table`, a stand-in's op as the stand-in, any other op as itself (ops are truthy)
        table = dict(doomed)
        for old, new in stand_ins:
            table[old] = new
            new._order = old._order
            if new._id > self._inserted_id:
                self._inserted_id = new._id
        removed = list(itertools.compress(all_ops, map(doomed.__contains__, all_ops)))
        self._remove(removed, kept=list(filter(None, map(table.get, all_ops, all_ops))))
        return removed

    def create_op_without_inputs_before(self, anchor: Operation, op_def, attrs: dict, name: str,
                                        output_specs: list) -> Operation:
        """The op without inputs `create_op(op_def, (), attrs, name=name, output_specs=output_specs)`
        makes inside `inserting_before(anchor)`, made without the insertion's setting and
        restoring of the graph's state when `anchor` is at the top level (no context to capture
        into or hang on a pivot; the insertion has no control dependencies). Constant folding
        makes its constants this way."""
        if anchor.ctx is not None:
            with self.inserting_before(anchor):
                return self.create_op(op_def, (), attrs, name=name, output_specs=output_specs)
        self._check_op(anchor, "inserting_before")
        with self._lock:
            scope = anchor.name.rpartition("/")[0] + "/" if "/" in anchor.name else ""  # (as _Insertion sets it)
            source = anchor.source
            op = Operation(self, op_def, self._unique(scope + name), (), output_specs, dict(attrs), (),
                           anchor.device or "", None, source if source is not None else user_location(2))
            self._place_before(op, anchor)
            self._by_name[op.name] = op
            self.version += 1
            return op

    def create_stand_in(self, like: Operation, op_def, inputs: list, attrs: dict, name: str,
                        control_inputs: list) -> Operation:
        """The op `create_op(op_def, inputs, attrs, name=name, control_inputs=control_inputs,
        output_specs=<like's>, capture=False)` makes inside `inserting_before(like)`, for a
        pass that knows its inputs are tensors of this graph and its control inputs distinct ops
        of it, and that then has every reader of `like` read it instead (replace_all_uses_with,
        output by output). The new op takes over `like`'s output tensors themselves (`like` is
        left with none, to be erased), so its readers and fetches need no rewiring; their lists
        of readers end as the rewiring leaves them. It is named, wired and counted, but stands
        nowhere in the graph's order until `erase_ops(..., stand_ins=[(like, op)])` puts it in
        `like`'s place. (Fusion replaces many trees, each by one op: their one erase places them
        all, without an insertion or a rewiring each.)"""
        with self._lock:
            scope = like.name.rpartition("/")[0] + "/" if "/" in like.name else ""  # (as _Insertion sets it)
            source = like.source
            op = Operation(self, op_def, self._unique(scope + name), inputs, (),
                           dict(attrs), control_inputs, like.device or "", like.ctx,
                           source if source is not None else user_location(2))
            self._by_name[op.name] = op
            for t in inputs:
                t._consumers.append(op)
            for c in control_inputs:
                c._control_outputs.append(op)
            self.version += 1
            outputs, like.outputs = like.outputs, ()
            op.outputs = outputs
            for t in outputs:
                t.op = op
                users = t._consumers
                if users:
                    # what the rewiring does: each reader in the order it first read, as often as it reads
                    if len(set(users)) != len(users):
                        users[:] = [u for u in dict.fromkeys(users) for _ in range(users.count(u))]
                    self.version += len(users)
            return op

    @staticmethod
    def _refuse_erase(op: Operation, doomed: dict) -> None:
        users = [c for t in op.outputs for c in t._consumers] + list(op._control_outputs)
        outside = sorted({u.name for u in users if u not in doomed})
        raise GraphError(f"cannot erase {op.name} ({op.type}): it is still used by {', '.join(outside)}, "
                         "which is not erased with it; rewire them first or erase them too")

    def add_control_input(self, op: Operation, dep) -> None:
        """Make `op` run only after `dep` (an op, or a tensor's op); nothing if it already does."""
        self._check_op(op, "add_control_input")
        dep = dep.op if isinstance(dep, Tensor) else dep
        self._check_op(dep, "add_control_input")
        if any(c is dep for c in op.control_inputs):
            return
        op.control_inputs = op.control_inputs + (dep,)
        dep._control_outputs.append(op)
        self.version += 1

    def remove_control_input(self, op: Operation, dep) -> None:
        """Stop `op` waiting for `dep` (an op, or a tensor's op)."""
        self._check_op(op, "remove_control_input")
        dep = dep.op if isinstance(dep, Tensor) else dep
        if not any(c is dep for c in op.control_inputs):
            raise GraphError(f"remove_control_input: {op.name} has no control input {getattr(dep, 'name', dep)}")
        op.control_inputs = tuple(c for c in op.control_inputs if c is not dep)
        dep._control_outputs.remove(op)
        self.version += 1

    def inserting_before(self, op: Operation, context=_SAME) -> "_Insertion":
        """Ops created in the block stand before `op` in the graph's order (torch.fx's
        inserting_before) and are built for it: in this graph (the default graph in the
        block), in control-flow `context` (default: op's own, so a constant built in a
        loop body is Entered as usual), with op's source line, device and name scope, and
        none of the caller's control dependencies.

        Example (fold `op` to a constant):
            with g.inserting_before(op):
                c = gc.constant(value)
            g.replace_all_uses_with(op.outputs[0], c)
            g.erase_op(op)
        """
        return _Insertion(self, op, context, "inserting_before")

    def inserting_after(self, op: Operation, context=_SAME) -> "_Insertion":
        """As `inserting_before`, but the new ops stand right after `op` (in creation order)."""
        return _Insertion(self, op, context, "inserting_after")

    def _inserting(self, anchor: Operation | None, like: Operation, context) -> "_Insertion":
        """An insertion before `anchor` (None: at the end) of ops built for `like`."""
        return _Insertion(self, like, context, None, anchor)

    def move_out_of_loop(self, op: Operation, *, erase: bool = True) -> Operation:
        """Loop-invariant code motion: rebuild `op`, an op of a while loop's body whose
        inputs are all loop invariants (constant Enters of that loop), once outside the
        loop; its outputs come back in through constant Enters, which its consumers read
        instead, and the op in the loop is erased.

        The new op is built in the loop's outer context (which wires it in as any op built
        there), with op's type, attrs, device and source line; a control input op had from
        outside the loop (through a constant Enter) becomes its own. A consumer left with
        only loop invariants as inputs waits for the loop's pivot, as `while_loop` builds
        it: invariants are live in the loop's last, dead iteration too.

        Refuses ops with side effects (they must run in every iteration), control-flow
        primitives, ops without outputs, and ops with an input or control input computed
        in the loop. Returns the new op. `erase=False` leaves `op` in the loop, unused, for
        the caller to erase together with others (one `erase_ops` walks the graph once).

        Example:
            hoisted = g.move_out_of_loop(g.get_operation_by_name("while/mul"))
        """
        self._check_op(op, "move_out_of_loop")
        ctx = op.ctx
        where = f"cannot move {op.name} ({op.type}) out of its loop"
        _check_movable(op, ctx, where)
        controls, pivot = _controls_from_outside(op, ctx, where)
        need_pivot = _readers_left_with_invariants(op, ctx)
        if need_pivot and pivot is None and ctx.first_switch_true is None:
            raise GraphError(f"{where}: it is in the condition of {ctx.name}, where its consumers "
                             f"{', '.join(u.name for u in need_pivot)} would run once too often")
        outer_inputs = []
        for t in op.inputs:
            outer_inputs.append(t.op.inputs[0])
        specs = []
        for t in op.outputs:
            specs.append((t.dtype, t.shape))
        with self._inserting(op, op, ctx.outer):
            new = self.create_op(op.op_def, outer_inputs, op.attrs, name=op.name.rpartition("/")[2],
                                 control_inputs=controls, output_specs=specs)
            self._ctx = ctx  # (what in_control_flow_context(ctx) does; the insertion restores it)
            entered = []
            for t in new.outputs:
                entered.append(ctx.capture(t))
            if need_pivot and pivot is None:
                pivot = ctx.pivot.op
        for old, inner in zip(op.outputs, entered):
            self.replace_all_uses_with(old, inner)
        for waiting in list(op._control_outputs):
            self.remove_control_input(waiting, op)
            self.add_control_input(waiting, entered[0].op)
        for u in need_pivot:
            self.add_control_input(u, pivot)
        if erase:
            self.erase_op(op)
        return new

    # -- copying -----------------------------------------------------------
    def copy(self) -> "Graph":
        """An independent copy of this graph: its ops (same names, order, attributes, source
        lines), control-flow contexts, function library, variables and collections, and the
        side tables that hold only graph objects and plain values (graphcore/graph_copy.py).
        Changing the copy leaves this graph as it is; both list and compute the same."""
        return _installed["copy"](self)

    def copy_ops_into(self, other: "Graph") -> dict:
        """Copy every op of this graph, in its order, into `other`, a new graph with no ops:
        names, types, attributes (the dict copied, and numpy values in it), devices, source
        lines, creation numbers and order numbers; inputs, control inputs, readers and waiters
        in the same order; output dtypes, shapes and weak typing. Each copy keeps the
        original's `ctx`, for the caller to map to the copied contexts (graph_copy.py does).
        Returns {original op or tensor: its copy} (both hash by identity)."""
        if not isinstance(other, Graph) or other._ops or other is self:
            raise GraphError("copy_ops_into: the target must be another graph, with no ops yet")
        memo: dict = {}
        for op in self._by_name.values():  # (creation order: ops_by_name keeps it in the copy)
            new = Operation.__new__(Operation)
            new.graph, new.op_def, new.type, new.name = other, op.op_def, op.type, op.name
            new.attrs = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in op.attrs.items()}
            new.device, new.ctx, new.source = op.device, op.ctx, op.source
            new._id, new._order, new._control_outputs = op._id, op._order, []
            outs = []
            for t in op.outputs:
                c = Tensor(new, t.value_index, t.dtype, t._shape)
                c.weak = t.weak
                memo[t] = c
                outs.append(c)
            new.outputs = tuple(outs)
            memo[op] = new
            other._by_name[new.name] = new
        for op in self._by_name.values():
            new = memo[op]
            try:
                new.inputs = tuple([memo[t] for t in op.inputs])
                new.control_inputs = tuple([memo[c] for c in op.control_inputs])
            except KeyError:
                raise GraphError(f"cannot copy {op.describe()}: it reads or waits for an op that is not in its "
                                 "graph") from None
            new._control_outputs[:] = [memo[w] for w in op._control_outputs]
            for t in op.outputs:
                memo[t]._consumers[:] = [memo[r] for r in t._consumers]
        other._ops[:] = [memo[op] for op in self._ops]
        other._used_names.update(self._used_names)
        other._op_count = self._op_count
        other._inserted_id = self._inserted_id
        other.version += 1
        return memo

    # -- the function library ---------------------------------------------
    @property
    def library(self) -> MappingProxyType:
        """Function name -> FuncGraph, for every function this graph's ops (or its
        functions' ops) may call: a read-only view that follows the library (`add_function`
        changes it)."""
        return MappingProxyType(self._library)

    def add_function(self, fn) -> str:
        """Put the function graph `fn` in the library under a name made unique there
        (fn.name, fn.name_1, ...); returns the name, also set on fn."""
        base, i = fn.name, 0
        name = base
        while name in self._library:
            i += 1
            name = f"{base}_{i}"
        fn.name = name
        self._library[name] = fn
        self.version += 1
        return name

    def drop_functions(self, names) -> None:
        """Take the functions `names` out of the library (the branches and bodies of a trace
        that was undone: `autograph.operators.staging.rollback`)."""
        dropped = [n for n in names if self._library.pop(n, None) is not None]
        if dropped:
            self.version += 1

    def clear_library(self) -> None:
        """Drop every function of the library (a pass inlined every call of them)."""
        self._library.clear()
        self.version += 1

    def append_input(self, op: Operation, t: Tensor) -> None:
        """Give `op` one more input (a While gaining an accumulator loop variable)."""
        self._check_op(op, "append_input")
        op.inputs = op.inputs + (t,)
        t._consumers.append(op)
        self.version += 1

    def append_output(self, op: Operation, dtype, shape) -> Tensor:
        """Give `op` one more output (an If whose branches gained one: Control Flow v2 adds
        the intermediates that code after it or its gradient reads). Tensors already
        taken from op stay valid; plans keyed on `version` are made anew."""
        t = Tensor(op, len(op.outputs), dtype, as_shape(shape))
        op.outputs = op.outputs + (t,)
        self.version += 1
        return t

    def get_function(self, name: str):
        """The library's function `name`; GraphError naming what the library holds if none."""
        fn = self._library.get(name)
        if fn is None:
            known = ", ".join(sorted(self._library)[:20]) or "none"
            raise GraphError(f"no function named {name!r} in the graph's library (it holds: {known})")
        return fn

    def within(self, other: "Graph") -> bool:
        """This graph is `other` or a function nested (at any depth) in `other`."""
        g = self
        while g is not None:
            if g is other:
                return True
            g = g.outer_graph
        return False

    # -- looking up ------------------------------------------------------
    def get_operations(self) -> list[Operation]:
        return list(self._ops)

    def iter_operations(self):
        """The ops in the graph's order, without a copy of the list (`operations` is one):
        for a pass that reads them all and changes the graph only after the loop."""
        return iter(self._ops)

    @property
    def ops_by_name(self) -> MappingProxyType:
        """Name -> op of every op in the graph, in creation order: a read-only view that
        follows the graph (`ops_by_name.get(op.name) is op` asks whether op is still in it,
        as `op in graph` does, without a call)."""
        return self._by_name_view

    @property
    def renumbered(self) -> int:
        """How many times ops' `order` numbers were set anew (see Operation.order)."""
        return self._renumbered

    @property
    def operations(self) -> list[Operation]:
        return list(self._ops)

    def __contains__(self, op) -> bool:
        """`op in g`: op is an Operation of this graph (and was not removed)."""
        return isinstance(op, Operation) and self._by_name.get(op.name) is op

    def get_operation_by_name(self, name: str) -> Operation:
        try:
            return self._by_name[name]
        except KeyError:
            raise GraphError(f"no op named {name!r} in the graph") from None

    def get_tensor_by_name(self, name: str) -> Tensor:
        op_name, _, idx = name.rpartition(":")
        if not op_name:
            op_name, idx = name, "0"
        op = self.get_operation_by_name(op_name)
        try:
            return op.outputs[int(idx)]
        except (ValueError, IndexError):
            raise GraphError(f"op {op_name!r} has no output {idx!r}") from None

    def as_graph_element(self, obj):
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise GraphError(f"{obj.name} belongs to another graph")
            return obj
        if isinstance(obj, str):
            return self.get_tensor_by_name(obj) if ":" in obj else self.get_operation_by_name(obj)
        raise GraphError(f"cannot interpret {type(obj).__name__} {obj!r} as a tensor or op of this graph")

    def op_types(self) -> list[str]:
        return [op.type for op in self._ops]

    def __len__(self) -> int:
        return len(self._ops)

    # -- checking, printing, exporting: shortcuts to functions over graphs -------------
    def validate(self) -> None:
        """Check the graph's invariants; raise GraphError naming the first bad op and the fix
        (graphcore/validate.py)."""
        _installed["validate"](self)

    def __str__(self) -> str:
        """The listing of graphcore/printer.py, one line per op."""
        return _installed["format"](self)

    def __repr__(self) -> str:
        """`<Graph: 27 ops, 1 while loop>`."""
        return _installed["repr"](self) if "repr" in _installed else f"<Graph: {len(self._ops)} ops>"

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """In a notebook: the picture (SVG, with Graphviz) and the listing (graphcore/dot.py)."""
        return _installed["mimebundle"](self, repr(self), include=include, exclude=exclude)

    def to_dot(self, **options) -> str:
        """Graphviz DOT text (graphcore/dot.py: fetches=, show_effects=, depth=, legend=)."""
        return _installed["to_dot"](self, **options)

    def to_json(self) -> str:
        """A graph file that `Graph.from_json` loads (graphcore/serialization)."""
        return _installed["to_json"](self)

    @staticmethod
    def from_json(text: str | bytes) -> "Graph":
        """Load a graph file; GraphFileError names the place of the first problem."""
        return _installed["from_json"](text)


def _check_movable(op: Operation, ctx, where: str) -> None:
    """What `move_out_of_loop` refuses: an op outside a loop's body, with side effects, of
    the loop's machinery, without outputs, or with an input that is not a loop invariant."""
    if ctx is None or not ctx.is_while:
        raise GraphError(f"{where}: it is not in a while loop's body (it is in "
                         f"{'the root' if ctx is None else ctx.describe()})")
    if op.op_def.stateful or op.op_def.control_flow:
        why = "it has side effects" if op.op_def.stateful else "it is loop machinery"
        raise GraphError(f"{where}: {why}, so it must stay in every iteration of {ctx.name}")
    if not op.outputs:
        raise GraphError(f"{where}: it has no outputs to bring back into the loop")
    for t in op.inputs:  # (an invariant is an Enter: asked first, without a call)
        if t.op.type != "Enter" or not ctx.is_loop_invariant(t):
            raise GraphError(f"{where}: its input {t.name} is computed in {ctx.describe()}, not a loop "
                             "invariant (a constant Enter of the loop)")


def _controls_from_outside(op: Operation, ctx, where: str) -> tuple[list, Operation | None]:
    """The control inputs the moved op keeps (each carried into the loop by a constant Enter:
    the op outside the loop it stands for), and the loop's pivot if op waited for it; any
    other control input runs in the loop, so the op cannot leave it."""
    controls, pivot = [], None
    for c in op.control_inputs:
        if c.type == "Enter" and ctx.is_loop_invariant(c.outputs[0]):
            controls.append(c.inputs[0].op)  # a dependency from outside the loop, carried in
        elif c.type == "Identity" and c.ctx is ctx and c.inputs[0] is ctx.first_switch_true:
            pivot = c
        else:
            raise GraphError(f"{where}: it waits for {c.name}, which runs in {ctx.describe()}")
    return controls, pivot


def _readers_left_with_invariants(op: Operation, ctx) -> list[Operation]:
    """The readers of op in its loop that, once op is moved out, read only loop invariants
    and wait for nothing else in the loop: they must wait for the loop's pivot."""
    # (loops rather than generators: a pass moves ops out one by one)
    users: dict = {}
    for t in op.outputs:
        for u in t._consumers:
            users[u] = None
    need_pivot = []
    for u in users:
        if u.ctx is not ctx:
            continue
        for t in u.inputs:
            p = t.op
            if p is not op and (p.type != "Enter" or not ctx.is_loop_invariant(t)):
                break
        else:
            for c in u.control_inputs:
                if c is not op and ctx.contains(c.ctx):
                    break
            else:
                need_pivot.append(u)
    return need_pivot


class _Insertion:
    """The block of `Graph.inserting_before` / `inserting_after`: entering it sets what
    the block changes (where new ops go, their source line, name scope, control-flow
    context, device, no control dependencies, the graph as the default one) and leaving
    it restores all of it. One object rather than nested context managers: passes open
    one such block for nearly every op they create."""

    __slots__ = ("graph", "like", "context", "check", "anchor", "saved", "stack")

    def __init__(self, graph: "Graph", like: Operation, context, check: str | None, anchor=None):
        self.graph = graph
        self.like = like
        self.context = context
        self.check = check  # "inserting_before" / "inserting_after": check `like`, and find the anchor
        self.anchor = anchor

    def __enter__(self) -> "Graph":
        g, like, check = self.graph, self.like, self.check
        anchor = self.anchor
        if check is not None:
            g._check_op(like, check)
            if check == "inserting_before":
                anchor = like
            else:
                ops = g._ops
                i = _index_of(ops, like)
                anchor = ops[i + 1] if i + 1 < len(ops) else None
        self.saved = (g._insert_before, g._insert_index, g._source, g._scope, g._ctx, g._control_deps, g._device)
        g._insert_before = anchor
        g._source = like.source
        name = like.name
        g._scope = name.rpartition("/")[0] + "/" if "/" in name else ""
        g._ctx = like.ctx if self.context is _SAME else self.context
        g._control_deps = []
        g._device = like.device or ""
        self.stack = stack = _graph_stack()
        stack.append(g)
        return g

    def __exit__(self, *exc) -> None:
        g = self.graph
        self.stack.pop()
        (g._insert_before, g._insert_index, g._source, g._scope, g._ctx, g._control_deps,
         g._device) = self.saved


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def graph_of(values) -> Graph | None:
    """The graph that any Tensor among `values` (nested lists allowed) belongs to; but the
    graph being built when both are of one tree of function graphs (Control Flow v2: an op
    in a function reading a tensor from outside captures it; an op after an If, or in its
    gradient, reading a branch's tensor makes it an output of the If)."""
    g = _graph_of(values)
    if g is not None:
        stack = _graph_stack()
        if stack:
            d = stack[-1]
            if d is not g and (d.outer_graph is not None or g.outer_graph is not None) and _root(d) is _root(g):
                return d  # (a tensor of a function read after its call or in a gradient: lifted out)
    return g


def _root(g: Graph) -> Graph:
    while g.outer_graph is not None:
        g = g.outer_graph
    return g


def _graph_of(values) -> Graph | None:
    for v in values:
        if isinstance(v, Tensor):
            return v.graph
        if isinstance(v, (list, tuple)):
            g = _graph_of(v)
            if g is not None:
                return g
    return None


def _default_graph_or_error(what: str) -> Graph:
    g = get_default_graph()
    if g is None:
        raise GraphError(f"{what} needs a graph being built: use it inside `with graph.as_default():`")
    return g


def control_dependencies(deps):
    """`with gc.control_dependencies([a, b]):` on the graph being built."""
    return _default_graph_or_error("control_dependencies").control_dependencies(deps)


def name_scope(name: str):
    """`with gc.name_scope("layer"):` on the graph being built."""
    return _default_graph_or_error("name_scope").name_scope(name)


def device(name: str):
    """`with gc.device("cpu:0"):` on the graph being built."""
    return _default_graph_or_error("device").device(name)
