"""The reverse walk: `gradients(ys, xs)` builds the backward graph.

The walk works on *units* of one control-flow level (the top level, or the body of
one while loop): every op of that level is a unit (ops inside cond branches too:
conds are differentiated op by op, Merge -> Switch, Switch -> Merge), and every while
loop nested directly in the level is one unit, whose inputs are its Enters' inputs
and whose outputs are its Exits. Units between the xs and the ys are visited in
reverse topological order; each plain op's rule turns its output gradients into
input gradients, summed with AddN where a tensor has several consumers; each loop
unit is handed to `control_flow_grad.while_loop_grad`, which builds the backward
loop and calls this walk again on the loop body (one level down)."""
from __future__ import annotations

import contextlib

import numpy as np

from ..control_flow import tuple_
from ..errors import GraphError, NoGradientError
from ..graph import Operation, Tensor, graph_of
from ..ops.array_ops import constant
from ..registry import set_needed
from . import remat
from .contraction import factorizer_for
from .control_flow_grad import while_loop_grad
from .liveness import exit_owners, liveness
from .util import add_grads, carries_value, differentiable


def gradients(ys, xs, grad_ys=None, name: str = "gradients", gate_gradients: bool = False,
              memory_budget: int | None = None):
    """Symbolic gradients of `sum(ys)` with respect to each of `xs`.

    Args:
      ys: a tensor or a list of tensors (scalars, unless `grad_ys` is given).
      xs: a tensor, a Variable, or a list of them.
      grad_ys: optional cotangents, one per y, shaped like it (default: 1).
      name: the name scope of the backward ops.
      gate_gradients: make the gradients of each op's inputs available together
        (an op's input gradients pass through one gate), so none is used before all
        are computed (the optimizers' GATE_OP).

    Returns:
      A list with one gradient tensor per x, None where no y depends on x through
      differentiable ops (integer and bool tensors are never differentiated).

    Raises:
      GraphError: a y is not a scalar and no grad_ys is given.
      NoGradientError (a GraphError and a LookupError): an op on the path has no
        gradient rule, or a run-time Python object (pyobject) carries a y's dependence
        on an x: a gradient exists that the graph cannot compute, never a silent zero
        (the message names the op and the line that built it).

    Example:
        dx, = gc.gradients(y, [x])
    """
    ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
    xs_list = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    g = graph_of(ys)
    if g is None:
        raise GraphError("gradients() needs graph tensors as ys; to differentiate Python/numpy code use "
                         "autograph.grad(f)")
    x_tensors = [_as_x(g, x) for x in xs_list]
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    elif not isinstance(grad_ys, (list, tuple)):
        grad_ys = [grad_ys]
    if len(grad_ys) != len(ys):
        raise GraphError(f"gradients: {len(grad_ys)} grad_ys for {len(ys)} ys")

    with g.as_default(), g.name_scope(name), g.control_dependencies(None):
        dys = []
        for y, dy in zip(ys, grad_ys):
            if not isinstance(y, Tensor):
                raise GraphError(f"gradients: ys must be tensors, got {type(y).__name__}")
            if dy is None:
                if y.shape.rank != 0:
                    raise GraphError(
                        f"gradients: {y.name} has shape {y.shape}, not a scalar; pass grad_ys (a cotangent shaped "
                        "like it) or reduce it first, e.g. graphcore.reduce_sum(y)")
                if not differentiable(y):
                    if carries_value(y):  # a run-time object made from an x: its gradient cannot be computed
                        _refuse_object_on_path(g, y, x_tensors)
                    dys.append(None)
                    continue
                dy = constant(np.ones((), dtype=y.dtype.np_dtype), name="grad_ys")
            elif not isinstance(dy, Tensor):
                dy = constant(np.asarray(dy, dtype=y.dtype.np_dtype), name="grad_ys")
            dys.append(dy)
        budget = remat.memory_budget(memory_budget) if memory_budget is not None else contextlib.nullcontext()
        with budget:
            return backprop(g, ys, dys, [t for t in x_tensors if t is not None], scope=g.control_flow_context,
                            result_for=x_tensors, gate=gate_gradients)


def _as_x(g, x):
    if isinstance(x, Tensor):
        return x
    handle = getattr(x, "_gradient_handle", None)
    if handle is not None:
        return handle(g)
    raise GraphError(f"gradients: xs must be tensors or Variables, got {type(x).__name__}")


class _Level:
    """The units of one control-flow level `scope` (None = the top level, else the
    WhileContext whose body is walked): each op of the level (cond branches included) is
    a unit, and so is each while loop nested directly in it (its Enters' inputs are its
    inputs, its Exits its outputs)."""

    def __init__(self, g, scope):
        self.scope = scope
        self.owners = exit_owners(g)

    def unit_of(self, op: Operation):
        """The unit `op` belongs to, or None when it is outside this level (an input of
        the level, not differentiated here)."""
        c = op.ctx
        if op.type == "Exit":
            w = self.owners.get(id(op))
            if w is not None:
                c = w
        outermost = None
        while c is not self.scope:
            if c is None:
                return None
            if c.is_while:
                outermost = c
            c = c.outer
        return outermost if outermost is not None else op

    @staticmethod
    def inputs(u) -> list:
        return list(u.inputs) if isinstance(u, Operation) else [e.inputs[0] for e in u.enters]

    @staticmethod
    def outputs(u) -> list:
        return list(u.outputs) if isinstance(u, Operation) else [x.outputs[0] for x in u.exits]

    def between(self, ys, xs, x_ids) -> dict:
        """id -> unit, for the units on a path from the xs to the ys."""
        back: dict[int, object] = {}
        stack = list(ys)
        while stack:
            t = stack.pop()
            if id(t) in x_ids:
                continue
            u = self.unit_of(t.op)
            if u is None or id(u) in back:
                continue
            back[id(u)] = u
            stack.extend(self.inputs(u))
        fwd: dict[int, object] = {}
        stack = list(xs)
        while stack:
            t = stack.pop()
            for op in t.consumers():
                if op.type == "NextIteration" and op.ctx is self.scope:
                    continue  # do not run around the loop whose body this is
                u = self.unit_of(op)
                if u is None or id(u) in fwd:
                    continue
                fwd[id(u)] = u
                stack.extend(self.outputs(u))
        return {k: u for k, u in back.items() if k in fwd}

    def topological_order(self, ys, relevant: dict, x_ids) -> list:
        """The relevant units, each after the units it reads from (depth first from the ys)."""
        order: list = []
        done: set[int] = set()
        for y in ys:
            u0 = self.unit_of(y.op)
            if u0 is None or id(u0) not in relevant or id(u0) in done:
                continue
            work = [(u0, iter(self.inputs(u0)))]
            done.add(id(u0))
            while work:
                u, it = work[-1]
                nxt = None
                for t in it:
                    v = None if id(t) in x_ids else self.unit_of(t.op)
                    if v is not None and id(v) in relevant and id(v) not in done:
                        nxt = v
                        break
                if nxt is None:
                    work.pop()
                    order.append(u)
                else:
                    done.add(id(nxt))
                    work.append((nxt, iter(self.inputs(nxt))))
        return order


class _GradientSums:
    """The gradient contributions reaching each tensor, summed (AddN) when first read."""

    def __init__(self):
        self.parts: dict[int, tuple[Tensor, list]] = {}

    def add(self, t: Tensor, gr) -> None:
        if gr is None or not differentiable(t):
            return
        if not isinstance(gr, Tensor):
            raise GraphError(f"a gradient rule returned {type(gr).__name__} for {t.name}; rules return tensors")
        entry = self.parts.get(id(t))
        if entry is None:
            self.parts[id(t)] = (t, [gr])
        else:
            entry[1].append(gr)

    def total(self, t: Tensor):
        entry = self.parts.get(id(t))
        if entry is None:
            return None
        if len(entry[1]) > 1:
            entry[1][:] = [add_grads(entry[1])]
        return entry[1][0]


def backprop(g, ys, dys, xs, scope, result_for=None, gate: bool = False, factored: dict | None = None):
    """Gradients of `ys` (seeded with `dys`) for `xs`, for the ops of control-flow level
    `scope` (None = top level, else a WhileContext whose body this is).

    Gradient ops are built in the graph's current context. Returns one entry per
    tensor of `result_for` (default `xs`).

    `factored` (walking a loop body for its backward loop): a dict whose keys are ids of
    xs (loop invariants) whose per-iteration gradient contributions may be left as
    `contraction.Factors` for the caller to sum after the loop; the walk puts the list
    of such Factors under each key (the rest of the gradient is in the result, as usual)."""
    level = _Level(g, scope)
    x_ids = {id(x) for x in xs}
    relevant = level.between(ys, xs, x_ids)
    sums = _GradientSums()
    for y, dy in zip(ys, dys):
        sums.add(y, dy)

    def is_relevant(t: Tensor) -> bool:
        if id(t) in x_ids:
            return True
        u = level.unit_of(t.op)
        return u is not None and id(u) in relevant

    for u in reversed(level.topological_order(ys, relevant, x_ids)):
        if not isinstance(u, Operation):  # a nested while loop: its backward loop
            exit_grads = [sums.total(x.outputs[0]) for x in u.exits]
            if all(d is None for d in exit_grads):
                continue
            wanted = {id(e.inputs[0]) for e in u.enters if is_relevant(e.inputs[0])}
            for t, gr in while_loop_grad(u, exit_grads, wanted, walk=backprop):
                sums.add(t, gr)
            continue
        op = u
        outs = [sums.total(t) for t in op.outputs]
        if all(d is None for d in outs):
            continue
        for t in op.inputs:
            if carries_value(t) and is_relevant(t) and _smoothly_from_x(t, x_ids, is_relevant):
                raise _no_gradient(_object_maker(t, is_relevant))  # (the gradient would stop here, silently)
        if op.op_def.grad_fn is None:
            if op.op_def.no_gradient_reason is not None:
                continue
            raise NoGradientError(
                f"no gradient registered for op type '{op.type}' ({op.name}), created at {op.location()}; "
                "wrap its input in graphcore.stop_gradient if no gradient should flow through it")
        mask = [is_relevant(t) and differentiable(t) for t in op.inputs]
        if not any(mask):
            continue  # no input takes a gradient (ints, bools, objects not made smoothly from an x)
        taken = _factor_invariants(g, op, outs, mask, scope, factored) if factored else ()
        if taken and not any(mask):
            continue
        for t, gr in zip(op.inputs, _run_rule(op, outs, mask, taken, gate)):
            sums.add(t, gr)

    return [sums.total(x) if x is not None and differentiable(x) else None for x in (result_for or xs)]


def _refuse_object_on_path(g, y: Tensor, xs: list) -> None:
    """NoGradientError when the run-time object `y` depends on one of the `xs` (else its
    gradient is None, as for any y with no path to an x)."""
    xs = [x for x in xs if x is not None and differentiable(x)]
    x_ids = {id(x) for x in xs}
    level = _Level(g, g.control_flow_context)
    relevant = level.between([y], xs, x_ids)

    def is_relevant(t: Tensor) -> bool:
        u = level.unit_of(t.op)
        return id(t) in x_ids or (u is not None and id(u) in relevant)
    if relevant and _smoothly_from_x(y, x_ids, is_relevant):
        raise _no_gradient(_object_maker(y, is_relevant))


def _smoothly_from_x(t: Tensor, x_ids: set, is_relevant) -> bool:
    """Whether the run-time object `t` is made from an x through floats and objects only (not
    through an int or a bool, whose gradient is zero: `str(int(x))` carries none)."""
    stack, seen = [t], set()
    while stack:
        u = stack.pop()
        if id(u) in x_ids:
            return True
        if id(u) in seen:
            continue
        seen.add(id(u))
        stack.extend(i for i in u.op.inputs if (differentiable(i) or carries_value(i)) and is_relevant(i))
    return False


def _object_maker(t: Tensor, is_relevant) -> Operation:
    """The op that turns differentiated values into the run-time object `t` (or one it is made
    from): where the gradient would stop."""
    op = t.op
    seen = set()
    while id(op) not in seen:
        seen.add(id(op))
        if any(differentiable(i) and is_relevant(i) for i in op.inputs):
            return op
        objects = [i for i in op.inputs if carries_value(i) and is_relevant(i)]
        if not objects:
            return op
        op = objects[0].op
    return op


def _no_gradient(op: Operation) -> NoGradientError:
    what = op.attrs.get("func") if op.type == "PyFunction" else None
    called = f", a call of Python's {what}() when the graph runs" if what else ""
    return NoGradientError(
        f"No gradient defined for operation '{op.name}' (op type: {op.type}{called}), created at {op.location()}: "
        f"its output is a run-time Python object, which the graph cannot differentiate through, and the value "
        f"differentiated depends on it: the graph cannot compute that gradient, and 0 could be wrong. Compute the value with graph "
        f"ops on arrays of one dtype (e.g. sorted() of values of one kind, np.sort), give a py_function a grad=, "
        f"or wrap its input in graphcore.stop_gradient if no gradient should flow through it.")


def _run_rule(op, outs, mask, taken, gate: bool) -> list:
    """The input gradients op's rule gives for output gradients `outs`, told which
    inputs need one (`mask`); inputs whose gradient was `taken` as Factors get None."""
    set_needed(op, mask)
    try:
        with op.graph.device(op.device or op.graph.current_device):  # a gradient is computed where its op was
            in_grads = op.op_def.grad_fn(op, *outs)
    finally:
        set_needed(None, None)
    if len(in_grads) != len(op.inputs):
        raise GraphError(f"the gradient rule of {op.type} returned {len(in_grads)} gradients for "
                         f"{len(op.inputs)} inputs")
    if taken:
        in_grads = [None if i in taken else d for i, d in enumerate(in_grads)]
    if gate and sum(1 for d in in_grads if d is not None) > 1:
        in_grads = _gated(in_grads)
    return in_grads


def _factor_invariants(g, op, outs, mask, scope, factored: dict) -> set[int]:
    """Inputs of `op` that are loop invariants in `factored` and whose gradient its
    factorizer gives as Factors; records those, clears them from `mask`, returns them."""
    fz = factorizer_for(op)
    cand = [i for i, t in enumerate(op.inputs) if mask[i] and id(t) in factored]
    if fz is None or not cand or len(outs) != 1 or outs[0] is None:
        return set()
    # one pair per iteration: the op runs in every iteration, and so does its gradient
    if liveness(scope, op.outputs[0]) or liveness(g.control_flow_context, outs[0]):
        return set()
    taken = set()
    for i in cand:
        f = fz(op, i, outs[0])
        if f is not None:
            factored[id(op.inputs[i])].append(f)
            mask[i] = False
            taken.add(i)
    return taken


def _gated(grads: list) -> list:
    """Identities of the non-None gradients that all wait for one gate (tf.tuple)."""
    live = [d for d in grads if d is not None]
    gated = iter(tuple_(live))
    return [next(gated) if d is not None else None for d in grads]
