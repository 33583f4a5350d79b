"""Control-flow builders that lower cond and while_loop to the five v1 primitives
(or, under `gc.control_flow_v2()`, build If / While ops: v2_control_flow.py).

cond(pred, t, f):   each outer tensor a branch reads goes through Switch(x, pred);
                    the branch uses output 1 (true) or 0 (false); one Merge per output.
while_loop(c, b, v): Enter -> Merge -> [cond] -> LoopCond -> Switch -> body ->
                    NextIteration -> back into Merge; Switch's false output -> Exit.
                    Tensors the body reads from outside come in through constant
                    Enters (loop invariants); constants are hoisted out of the loop.

A context (CondContext / WhileContext) is active while a branch or body is built;
Graph.create_op asks it to capture every outer input, so users never wire
Switch or Enter themselves.
"""
from __future__ import annotations

import itertools

import numpy as np

from . import dtypes as dt
from . import nest
from .errors import GraphError, StagingError
from .graph import Operation, Tensor, get_default_graph, graph_of
from .ops import control_flow_ops as cf
from .ops import math_ops
from .ops._helpers import is_python_number
from .ops.array_ops import cast, constant, identity
from .shapes import TensorShape, as_shape

# Control Flow v2's builders (v2_control_flow.py, which imports this module, sets it): its
# `enabled()`, `cond_v2` and `while_loop_v2`
V2 = None


class ControlFlowContext:
    """Base of the two contexts: capture of outer tensors, pivots for input-less ops."""

    is_while = False
    hoists_constants = False

    def __init__(self, graph, outer, name):
        self.graph = graph
        self.outer = outer
        self.name = name
        self._captured: dict[int, tuple[Tensor, Tensor]] = {}
        self._pivot: Tensor | None = None
        graph.add_removal_hook(self._forget)

    def _forget(self, gone) -> None:
        """`gone`: the set of ops that left the graph (ops hash by identity)."""
        if self._captured:  # (a context of a trace that was rolled back caches nothing: no work)
            self._captured = {k: v for k, v in self._captured.items() if v[1].op not in gone}
        if self._pivot is not None and self._pivot.op in gone:
            self._pivot = None
        sw = getattr(self, "_pred_switch", None)
        if sw is not None and sw in gone:
            self._pred_switch = None

    def contains(self, ctx) -> bool:
        """True if `ctx` is this context or nested inside it."""
        while ctx is not None:
            if ctx is self:
                return True
            ctx = ctx.outer
        return False

    def capture(self, t: Tensor) -> Tensor:
        """`t` as seen from inside this context (through Switch/Enter if it is outside)."""
        t_ctx = t.op.ctx
        if self.contains(t_ctx):
            return t
        hit = self._captured.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        # t must come from an enclosing context, never from a sibling or an inner one.
        c = self.outer
        while c is not None and c is not t_ctx:
            c = c.outer
        if c is not t_ctx:
            where = f" (created at {t.op.location()})" if t.op.source else ""
            raise StagingError(
                f"{t.name}{where} was computed inside {t_ctx.describe()} and is used outside of it in "
                f"{self.describe()}; return it from that cond/while instead")
        outer_t = self.outer.capture(t) if self.outer is not None else t
        inner = self._wrap(outer_t)
        self._captured[id(t)] = (t, inner)
        return inner

    def capture_control(self, op: Operation) -> Operation:
        return op

    def prepare_op_inputs(self, op_def, inputs, controls):
        inputs = [self.capture(t) for t in inputs]
        controls = [self.capture_control(c) for c in controls]
        if not inputs and not any(self.contains(c.ctx) for c in controls):
            controls.append(self.pivot.op)
        return inputs, controls

    @property
    def pivot(self) -> Tensor:
        raise NotImplementedError

    def describe(self) -> str:
        return self.name


class CondContext(ControlFlowContext):
    """One branch of a cond: `branch` is 1 for the true branch, 0 for the false one."""

    def __init__(self, graph, outer, name, pred: Tensor, branch: int, sibling: "CondContext | None" = None):
        super().__init__(graph, outer, name)
        self.pred = pred
        self.branch = branch
        self.sibling = sibling  # the other branch: both pivots hang on one Switch(pred, pred)
        self._pred_switch: Operation | None = None

    def _wrap(self, outer_t: Tensor) -> Tensor:
        g = self.graph
        # built as any op of the outer context: in a loop body, a Switch of two loop invariants
        # hangs on the loop's pivot, or it would be live in the iteration that ends the loop
        with g.in_control_flow_context(self.outer), g.control_dependencies(None):
            op = g.create_op(cf.switch_op, [outer_t, self.pred], name="Switch")
        return op.outputs[self.branch]

    @property
    def pivot(self) -> Tensor:
        """Live exactly when this branch is taken: ops with no inputs hang on it."""
        if self._pivot is None:
            g = self.graph
            sw = self.sibling._pred_switch if self.sibling is not None else None
            if sw is None:
                with g.in_control_flow_context(self.outer), g.control_dependencies(None):  # (see _wrap)
                    sw = g.create_op(cf.switch_op, [self.pred, self.pred], name="switch_pred")
            self._pred_switch = sw
            with g.in_control_flow_context(self):
                self._pivot = g.create_op("Identity", [sw.outputs[self.branch]],
                                          name="switch_t" if self.branch else "switch_f", capture=False).outputs[0]
        return self._pivot

    def describe(self) -> str:
        return f"the {'true' if self.branch else 'false'} branch of {self.name}"


class WhileContext(ControlFlowContext):
    """The body and condition of one while loop; `name` is its frame name."""

    is_while = True
    hoists_constants = True

    def __init__(self, graph, outer, name, parallel_iterations: int):
        super().__init__(graph, outer, name)
        self.parallel_iterations = parallel_iterations
        self.first_switch_true: Tensor | None = None
        self.enters: list[Operation] = []
        self.exits: list[Operation] = []
        self.loop_merges: list[Operation] = []
        self.next_iterations: list[Operation] = []
        self.switches: list[Operation] = []
        self.loop_cond: Operation | None = None
        self.maximum_iterations = None
        self.loop_var_names: list[str] = []  # one per Merge, as the user wrote them (for pictures)

    def _forget(self, gone) -> None:
        """Besides the captures, drop removed ops from the loop's lists (a loop variable
        whose Merge, Switch, NextIteration or Exit is gone leaves all four lists)."""
        super()._forget(gone)
        lists = (self.loop_merges, self.switches, self.next_iterations, self.exits)
        if gone.isdisjoint(itertools.chain(self.enters, *lists)):
            pass  # none of the loop's ops is gone: its lists stay as they are
        else:
            self._forget_loop_ops(gone, lists)
        if self.loop_cond is not None and self.loop_cond in gone:
            self.loop_cond = None
        if self.first_switch_true is not None and self.first_switch_true.op in gone:
            self.first_switch_true = None

    def _forget_loop_ops(self, gone, lists) -> None:
        self.enters = [e for e in self.enters if e not in gone]
        if len({len(each) for each in lists}) == 1:
            keep = [k for k in range(len(self.loop_merges)) if not any(each[k] in gone for each in lists)]
            lists = tuple([each[k] for k in keep] for each in lists)
        else:  # a loop being built: its lists are not filled alike yet
            lists = tuple([op for op in each if op not in gone] for each in lists)
        self.loop_merges, self.switches, self.next_iterations, self.exits = lists

    def _wrap(self, outer_t: Tensor) -> Tensor:
        g = self.graph
        with g.in_control_flow_context(self):
            op = g.create_op(cf.enter_op, [outer_t], {"frame_name": self.name, "is_constant": True,
                                                      "parallel_iterations": self.parallel_iterations},
                             name="Enter", capture=False)
        self.enters.append(op)
        return op.outputs[0]

    def capture_control(self, op: Operation) -> Operation:
        """A control input from outside the loop: carry it in as a constant Enter of a
        token that depends on it, so the dependency holds in every iteration."""
        if self.contains(op.ctx):
            return op
        g = self.graph
        with g.in_control_flow_context(op.ctx):
            tok = g.create_op("Const", [], {"value": np.zeros((), np.int32), "dtype": dt.int32},
                              name="control_token", control_inputs=[op], capture=False).outputs[0]
        return self.capture(tok).op

    def prepare_op_inputs(self, op_def, inputs, controls):
        """Besides capturing, give an op whose inputs are all loop invariants a control
        input on the pivot: invariants are live in every iteration, including the last one
        whose body must be dead, so without it such an op would run once too often and a
        loop variable computed from invariants alone would never let the loop end."""
        inputs, controls = super().prepare_op_inputs(op_def, inputs, controls)
        if (inputs and self.first_switch_true is not None and all(self.is_loop_invariant(t) for t in inputs)
                and not any(self.contains(c.ctx) for c in controls)):
            controls.append(self.pivot.op)
        return inputs, controls

    # -- the wiring of one loop variable, written once ----------------------------------
    # Enter -> Merge -> Switch on the LoopCond -> (body) -> NextIteration -> back into the
    # Merge; the Switch's false output -> Exit. The Merge is built before the
    # NextIteration that closes it, so its second input starts as a stand-in (the Enter).
    # while_loop builds its variables with these, gradients add variables to built loops.

    def loop_var_head(self, init: Tensor, shape=None) -> tuple[Operation, Operation]:
        """The Enter and Merge of a loop variable entering with `init` (a tensor of the
        outer context), of static `shape` (default: init's)."""
        g = self.graph
        shape = init.shape if shape is None else as_shape(shape)
        with g.in_control_flow_context(self):
            e = g.create_op(cf.enter_op, [init], {"frame_name": self.name, "is_constant": False,
                                                  "parallel_iterations": self.parallel_iterations},
                            name="Enter", capture=False, output_specs=[(init.dtype, shape)])
            m = g.create_op(cf.merge_op, [e.outputs[0], e.outputs[0]], name="Merge", capture=False,
                            output_specs=[(init.dtype, shape), (dt.int32, TensorShape(()))])
        return e, m

    def loop_var_switch(self, merge: Operation) -> Operation:
        """The Switch of a loop variable on the loop's LoopCond: output 1 is the value the
        body reads, output 0 the value the Exit takes when the loop ends."""
        g = self.graph
        with g.in_control_flow_context(self):
            return g.create_op(cf.switch_op, [merge.outputs[0], self.loop_cond.outputs[0]], name="Switch",
                               capture=False)

    def loop_var_back_edge(self, merge: Operation, next_value: Tensor) -> Operation:
        """The NextIteration of `next_value`, made the Merge's second input (the back edge)."""
        g = self.graph
        with g.in_control_flow_context(self):
            n = g.create_op(cf.next_iteration_op, [next_value], name="NextIteration", capture=False,
                            output_specs=[(next_value.dtype, merge.outputs[0].shape)])
        g.update_input(merge, 1, n.outputs[0])
        return n

    def loop_var_exit(self, switch: Operation) -> Operation:
        """The Exit (in the outer context) of the Switch's false output."""
        g = self.graph
        with g.in_control_flow_context(self.outer):
            return g.create_op(cf.exit_op, [switch.outputs[0]], name="Exit", capture=False)

    def add_loop_var(self, init: Tensor, shape=None):
        """Start a new loop variable of this loop (built already) entering with `init`.

        Returns (value inside the body, finish); `finish(next_value)` closes the variable
        and returns its Exit's tensor. Gradients carry accumulators and backward values
        this way."""
        e, m = self.loop_var_head(init, shape)
        s = self.loop_var_switch(m)

        def finish(next_value: Tensor) -> Tensor:
            n = self.loop_var_back_edge(m, next_value)
            x = self.loop_var_exit(s)
            self.record_loop_var(e, m, s, n, x)
            return x.outputs[0]

        return s.outputs[1], finish

    def record_loop_var(self, enter, merge, switch, next_iteration, exit_) -> None:
        """List a finished loop variable's ops in the loop's lists (index-aligned)."""
        self.enters.append(enter)
        self.loop_merges.append(merge)
        self.switches.append(switch)
        self.next_iterations.append(next_iteration)
        self.exits.append(exit_)

    def is_loop_invariant(self, t: Tensor) -> bool:
        op = t.op
        return op.type == "Enter" and op.ctx is self and bool(op.attrs.get("is_constant"))

    @property
    def pivot(self) -> Tensor:
        """Live in every iteration that runs the body, dead when the loop exits."""
        if self._pivot is None:
            if self.first_switch_true is None:
                raise GraphError(f"an op with no inputs was created in the condition of {self.name}; "
                                 "give it an input or build it outside the loop")
            g = self.graph
            with g.in_control_flow_context(self):
                self._pivot = g.create_op("Identity", [self.first_switch_true], name="pivot",
                                          capture=False).outputs[0]
        return self._pivot

    def describe(self) -> str:
        return f"while loop {self.name}"


# -- cond -------------------------------------------------------------------------

def _to_tensor_like(value, like: Tensor | None):
    if isinstance(value, Tensor):
        return value
    if like is not None and is_python_number(value):
        if like.dtype.is_floating or (like.dtype.is_integer and isinstance(value, int) and not isinstance(value, bool)):
            return constant(value, dtype=like.dtype)
    return constant(value)


def _is_passthrough(v) -> bool:
    """A branch output that is not a value for the graph (None, a string, a function): it
    passes through the cond as it is when both branches return the same one."""
    return v is None or isinstance(v, str) or callable(v) and not isinstance(v, Tensor)


def cond(pred, true_fn, false_fn, name: str | None = None):
    """Run `true_fn()` if `pred` else `false_fn()`, as a graph conditional.

    A Python bool `pred` just calls one function. A bool scalar tensor builds both
    branches; each may return any nested structure (tuples, lists, dicts) of tensors
    or Python numbers, and both must return the same structure and dtypes.

    Example:
        z = gc.cond(x < y, lambda: x + z, lambda: y * y)
    """
    if not isinstance(pred, Tensor):
        if isinstance(pred, (np.ndarray, np.generic)):
            pred = bool(pred)
        return true_fn() if pred else false_fn()
    if not pred.dtype.is_bool or pred.shape.rank not in (0, None):
        raise StagingError(f"cond's predicate must be a scalar bool tensor, got {pred.dtype}{pred.shape} ({pred.name})")
    if V2 is not None and V2.control_flow_v2_enabled():
        return V2.cond_v2(pred, true_fn, false_fn, name)
    g = pred.graph
    outer = g.control_flow_context
    if outer is not None:
        pred = outer.capture(pred)
    with g.name_scope(name or "cond") as scope:
        scope_name = scope.rstrip("/")
        ctxs, results = {}, {}
        for branch, fn in ((1, true_fn), (0, false_fn)):
            ctxs[branch] = CondContext(g, outer, scope_name, pred, branch, sibling=ctxs.get(1))
            if branch == 0:
                ctxs[1].sibling = ctxs[0]
            with g.in_control_flow_context(ctxs[branch]):
                results[branch] = fn()
        t_out, f_out = results[1], results[0]
        if not nest.same_structure(t_out, f_out):
            raise StagingError(
                f"{scope_name}: the true branch returns {nest.structure_description(t_out)} but the false branch "
                f"returns {nest.structure_description(f_out)}; make both branches return the same structure")
        merged = []
        for i, (tv, fv) in enumerate(zip(nest.flatten(t_out), nest.flatten(f_out))):
            if not isinstance(tv, Tensor) and not isinstance(fv, Tensor):
                if _is_passthrough(tv) and (tv is fv or tv == fv):
                    merged.append(tv)
                    continue
                if is_python_number(tv) and is_python_number(fv):
                    common = dt.as_dtype(np.result_type(type(tv), type(fv)))
                    tv, fv = _constant_in(g, ctxs[1], tv, common), _constant_in(g, ctxs[0], fv, common)
            pair = {}
            for branch, v, other in ((1, tv, fv), (0, fv, tv)):
                like = other if isinstance(other, Tensor) else None
                with g.in_control_flow_context(ctxs[branch]):
                    try:
                        v = _to_tensor_like(v, like)
                    except TypeError as e:
                        raise StagingError(f"{scope_name}: output {i} of the {'true' if branch else 'false'} "
                                           f"branch cannot be a graph value: {e}") from None
                    pair[branch] = ctxs[branch].capture(v)
            if pair[1].dtype != pair[0].dtype:
                raise StagingError(
                    f"{scope_name}: output {i} is {pair[1].dtype} in the true branch but {pair[0].dtype} in the "
                    "false branch; cast one so both branches return the same dtype")
            with g.in_control_flow_context(outer):
                m = g.create_op(cf.merge_op, [pair[0], pair[1]], name="Merge", capture=False)
            merged.append(m.outputs[0])
    return nest.pack_sequence_as(t_out, merged)


def _constant_in(g, ctx, value, dtype):
    with g.in_control_flow_context(ctx):
        return constant(value, dtype=dtype)


# -- while_loop ---------------------------------------------------------------------

class _RelaxShapes(Exception):
    def __init__(self, index, shape):
        self.index = index
        self.shape = shape


def while_loop(cond, body, loop_vars, parallel_iterations: int = 10, maximum_iterations=None,
               shape_invariants=None, name: str | None = None, loop_var_names=None,
               return_same_structure: bool = False):
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`, as a graph loop.

    `loop_vars` is any nested structure of tensors or Python numbers (a bare tensor
    counts as a one-element list). Tensors read by `cond`/`body` from outside are
    captured as loop invariants. With `maximum_iterations` the loop also stops after
    that many iterations. A loop variable whose shape changes between iterations is
    given a relaxed shape automatically unless `shape_invariants` pins it.

    Returns the final loop variables in the structure of `loop_vars` (a one-element
    list gives the bare tensor, as in TensorFlow 1, unless `return_same_structure`).

    Example:
        i, v = gc.while_loop(lambda i, v: i < 10, lambda i, v: (i + 1, v * x), [0, 1.0])
    """
    if parallel_iterations < 1:
        raise GraphError(f"parallel_iterations must be >= 1, got {parallel_iterations}")
    single = not nest.is_nested(loop_vars)
    structure = [loop_vars] if single else loop_vars
    flat = nest.flatten(structure)
    g = graph_of(flat) or get_default_graph()
    if g is None:
        # eager: a plain Python loop with the same meaning
        vals = structure
        n = 0
        while (maximum_iterations is None or n < maximum_iterations) and bool(np.all(cond(*vals))):
            out = body(*vals)
            vals = [out] if single or (len(structure) == 1 and not isinstance(out, (list, tuple))) else out
            n += 1
        return vals[0] if single or (len(vals) == 1 and not return_same_structure) else vals
    names = list(loop_var_names) if loop_var_names is not None else [f"loop_vars[{i}]" for i in range(len(flat))]
    flat = [v if isinstance(v, Tensor) else constant(v) for v in flat]
    if shape_invariants is not None:
        shapes = [as_shape(s) for s in nest.flatten(shape_invariants if not single else [shape_invariants])]
        if len(shapes) != len(flat):
            raise StagingError(f"shape_invariants has {len(shapes)} entries but there are {len(flat)} loop variables")
        relaxable = False
    else:
        shapes = [v.shape for v in flat]
        relaxable = True
    if V2 is not None and V2.control_flow_v2_enabled():
        return V2.while_loop_v2(cond, body, structure, single, flat, shapes, relaxable, parallel_iterations,
                                 maximum_iterations, name, names, return_same_structure)
    for _ in range(len(flat) * 8 + 2):
        mark = g.checkpoint()
        try:
            return _build_while(g, cond, body, structure, single, flat, shapes, relaxable, parallel_iterations,
                                maximum_iterations, name, names, return_same_structure)
        except _RelaxShapes as r:
            g.rollback(mark)
            shapes[r.index] = r.shape
    raise GraphError("while_loop: shapes did not settle")  # pragma: no cover


def _build_while(g, cond, body, structure, single, flat, shapes, relaxable, parallel_iterations,
                 maximum_iterations, name, names, return_same_structure):
    outer = g.control_flow_context
    counter = maximum_iterations is not None
    with g.name_scope(name or "while") as scope:
        ctx = WhileContext(g, outer, scope.rstrip("/"), parallel_iterations)
        g.add_while_context(ctx)
        ctx.maximum_iterations = maximum_iterations
        ctx.has_counter = counter
        ctx.loop_var_names = (["iteration counter"] if counter else []) + list(names)  # for pictures
        init = list(flat)
        all_shapes = list(shapes)
        if counter:
            with g.in_control_flow_context(outer):
                init = [constant(np.int64(0))] + init
            all_shapes = [TensorShape(())] + all_shapes
        if outer is not None:
            init = [outer.capture(t) for t in init]
        if getattr(outer, "is_while", False) and outer.first_switch_true is not None:
            # An outer loop's invariant is live even in the iteration that ends that loop, whose
            # body must be dead: an Identity of it hangs on the outer pivot (prepare_op_inputs),
            # so this inner loop does not start, live, in that iteration.
            init = [identity(t) if outer.is_loop_invariant(t) else t for t in init]
        merges = []
        for v, s in zip(init, all_shapes):
            if not v.shape.is_compatible_with(s):
                raise StagingError(f"while_loop: the initial value {v.name} has shape {v.shape}, which does not "
                                   f"match its shape invariant {s}")
            e, m = ctx.loop_var_head(v, s)
            ctx.enters.append(e)
            merges.append(m)
        ctx.loop_merges = merges
        merged = [m.outputs[0] for m in merges]
        user_vals = merged[1:] if counter else merged
        packed = nest.pack_sequence_as(structure, user_vals)
        ctx.loop_cond = _loop_cond(ctx, cond, packed, merged[0] if counter else None, maximum_iterations)
        switches = [ctx.loop_var_switch(m) for m in merges]
        ctx.switches = switches
        ctx.first_switch_true = switches[0].outputs[1]
        body_in = [s.outputs[1] for s in switches]
        packed_in = nest.pack_sequence_as(structure, body_in[1:] if counter else body_in)
        with g.in_control_flow_context(ctx):
            new = _next_values(ctx, body(*packed_in), structure, single, merged[counter:])
            if counter:
                new = [math_ops.add(body_in[0], 1)] + new
        _check_next_values(ctx, new, merged, names, counter, relaxable)
        ctx.next_iterations = [ctx.loop_var_back_edge(m, v) for m, v in zip(merges, new)]
        ctx.exits = exits = [ctx.loop_var_exit(s) for s in switches]
        results = [e.outputs[0] for e in exits]
        if counter:
            results = results[1:]
    res = nest.pack_sequence_as(structure, results)
    if single or (isinstance(structure, list) and len(structure) == 1 and not return_same_structure):
        return res[0]
    return res


def _loop_cond(ctx: WhileContext, cond, packed, counter: Tensor | None, maximum_iterations) -> Operation:
    """The LoopCond of `cond(*packed)`, and of `counter < maximum_iterations` with a counter."""
    g = ctx.graph
    with g.in_control_flow_context(ctx):
        p = cond(*packed)
        if counter is not None:
            lim = maximum_iterations if isinstance(maximum_iterations, Tensor) else constant(
                np.int64(maximum_iterations))
            if lim.dtype != dt.int64:
                lim = cast(lim, dt.int64)
            below = math_ops.less(counter, lim)
            p = below if p is True else (math_ops.logical_and(below, p) if isinstance(p, Tensor)
                                          else below if p else math_ops.logical_and(below, constant(False)))
        if not isinstance(p, Tensor):
            p = constant(bool(p))
        if not p.dtype.is_bool:
            raise StagingError(f"the condition of {ctx.name} must return a bool, got {p.dtype} ({p.name})")
        return g.create_op(cf.loop_cond_op, [p], name="LoopCond")


def body_outputs(name: str, out, structure, single: bool, n: int) -> list:
    """A loop body's result `out` as its flat list of n values, one per loop variable (tuples
    and lists may stand for each other; the leaves must match one to one)."""
    if single or (len(structure) == 1 and not isinstance(out, (list, tuple))):
        out = [out]
    out_flat = nest.flatten(out)
    if len(out_flat) != n:
        raise StagingError(
            f"the body of {name} returns {nest.structure_description(out)} ({len(out_flat)} values) but "
            f"the loop variables are {nest.structure_description(structure)} ({n} values); return "
            "one new value per loop variable")
    return out_flat


def _next_values(ctx: WhileContext, out, structure, single: bool, merged: list) -> list:
    """The body's result `out` as one tensor per loop variable (built in ctx), each as
    seen in the body; an invariant gets an Identity, which waits for the pivot."""
    out_flat = body_outputs(ctx.name, out, structure, single, len(merged))
    new = []
    for v, like in zip(out_flat, merged):
        v = ctx.capture(_to_tensor_like(v, like))
        if ctx.is_loop_invariant(v):
            v = ctx.graph.create_op("Identity", [v], name="Identity").outputs[0]  # gets the pivot
        new.append(v)
    return new


def _check_next_values(ctx: WhileContext, new: list, merged: list, names: list, counter: bool,
                       relaxable: bool) -> None:
    """Each next value keeps its variable's dtype, and a shape its variable's shape covers
    (else the loop is rebuilt with a relaxed shape, when shapes may be relaxed). Covers, not
    only "is compatible with": a next value of shape [?, 3] (grown in an `if`) for a
    variable of shape [0, 3] fits at run time only in some iterations, and the static
    [0, 3] would tell `len()` and constant folding the number of rows is 0."""
    for i, (v, m) in enumerate(zip(new, merged)):
        k = i - counter
        if v.dtype != m.dtype:
            raise StagingError(
                f"{names[k] if k >= 0 else 'the iteration counter'} enters {ctx.name} as {m.dtype} but the body "
                f"makes it {v.dtype}; cast it so it keeps one dtype")
        covering = m.shape.most_specific_compatible(v.shape)
        if covering != m.shape:
            if relaxable and k >= 0:
                raise _RelaxShapes(k, covering)
            raise StagingError(
                f"{names[k]} has shape {m.shape} entering {ctx.name} but {v.shape} after one iteration; "
                "pass a shape_invariants entry with None for the changing dimensions")


# -- case, switch_case, group, tuple ------------------------------------------------

def case(pred_fn_pairs, default=None, exclusive: bool = False, name: str | None = None):
    """The first `fn` whose `pred` is true, else `default()`: nested conds."""
    pairs = list(pred_fn_pairs.items() if isinstance(pred_fn_pairs, dict) else pred_fn_pairs)
    if not pairs:
        if default is None:
            raise StagingError("case needs at least one (pred, fn) pair or a default")
        return default()
    if default is None:
        pairs, (_, default) = pairs[:-1], pairs[-1]
    fn = default
    for p, f in reversed(pairs):
        fn = (lambda p=p, f=f, rest=fn: cond(p, f, rest, name=name or "case"))  # noqa: E731 (a chain of closures)
    return fn()


def switch_case(branch_index, branch_fns, default=None, name: str | None = None):
    """Run `branch_fns[branch_index]()` (or `default()` when out of range)."""
    items = sorted(branch_fns.items()) if isinstance(branch_fns, dict) else list(enumerate(branch_fns))
    if default is None:
        default = items[-1][1]
    if not isinstance(branch_index, Tensor):
        return dict(items).get(int(branch_index), default)()
    return case([(math_ops.equal(branch_index, k), f) for k, f in items], default=default, name=name or "switch_case")


def group(*inputs, name: str | None = None):
    """One NoOp that runs after all `inputs` (ops or tensors)."""
    flat = nest.flatten(list(inputs))
    g = graph_of(flat) or get_default_graph()
    if g is None:
        return None
    ops = [x.op if isinstance(x, Tensor) else x for x in flat if x is not None]
    return g.create_op("NoOp", [], name=name or "group_deps", control_inputs=ops)


def tuple_(tensors, control_inputs=None, name: str | None = None):
    """Identities of `tensors` that are only available once all of them are computed."""
    flat = [t for t in tensors]
    g = graph_of(flat) or get_default_graph()
    if g is None:
        return list(flat)
    gate = group(*(flat + list(control_inputs or [])), name=(name or "tuple") + "_gate")
    out = []
    with g.control_dependencies([gate]):
        for t in flat:
            out.append(identity(t) if isinstance(t, Tensor) else t)
    return out
