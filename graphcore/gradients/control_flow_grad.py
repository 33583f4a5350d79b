"""Gradients of control flow.

cond (op by op, as in TensorFlow 1): the gradient of a cond's Merge is a Switch of
the incoming gradient on the same predicate; the gradient of a cond's Switch is a
Merge of its two output gradients (zeros, guarded by a Switch, stand in for a branch
that does not use the value). On the untaken branch the gradients are dead tokens,
so their kernels never run.

while (the loop as one unit):

    forward loop F (counter added on demand)          backward loop B (runs N times)
    Enter(x0) -> Merge -> Switch -> body -> NextIt      Enter(dy at Exit) -> Merge -> Switch
                               \\-> Exit -> y           -> grad(body) -> NextIteration
                                                       \\-> Exit -> dx0

Exit's gradient enters the backward frame, Enter's gradient leaves it, the
gradients of NextIteration are the backward loop's NextIterations, and the gradient
of a loop invariant (a constant Enter) is summed over all iterations in an extra
loop variable of B. The body's gradient is built by the ordinary reverse walk on
the forward body. When a gradient rule reads a forward tensor t of the body,
`GradWhileContext.capture` adds an accumulator to F: a tensor-list loop variable
that pushes t every iteration; B gets a matching loop variable that pops it. Lists
are values, so B is itself an ordinary loop of ordinary ops and can be
differentiated again (second order). Only tensors some rule reads are accumulated;
the next value of a loop variable is not accumulated at all when B can carry it (it is
the variable's start value one iteration later, see GradWhileContext._carried), and the
gradient of an invariant used by a MatMul is summed as one matmul after B
(contraction.py). A tensor of a cond branch is accumulated as a value that is live in
every iteration (a placeholder when its branch did not run); which tensors are
conditional is found from the dataflow (liveness.py), because B builds the gradients of
a cond's branches directly in its own body, and B reads such a tensor through Switches
on the popped predicates, so that B, differentiated again, is a well-formed cond.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..control_flow import CondContext, WhileContext
from ..errors import GraphError
from ..graph import Tensor
from ..ops import control_flow_ops as cf
from ..ops import list_ops
from ..ops.array_ops import constant
from ..ops.math_ops import add_op, less_op
from ..shapes import TensorShape
from . import remat
from .contraction import contract
from .liveness import liveness
from .util import add_grads, differentiable, zeros_like_fwd, zeros_like_in_loop


# -- the rules of the five primitives -------------------------------------------------

def _is_loop_merge(op) -> bool:
    c = op.ctx
    return isinstance(c, WhileContext) and any(m is op for m in c.loop_merges)


def _is_loop_switch(op) -> bool:
    c = op.ctx
    return isinstance(c, WhileContext) and any(s is op for s in c.switches)


def _record_cond_merge(merge_op, pred: Tensor) -> None:
    g = merge_op.graph
    g.__dict__.setdefault("_grad_cond_preds", {})[id(merge_op)] = (merge_op, pred)


def cond_predicate(op) -> Tensor:
    """The predicate of the cond a (non-loop) Merge belongs to."""
    hit = op.graph.__dict__.get("_grad_cond_preds", {}).get(id(op))
    if hit is not None and hit[0] is op:
        return hit[1]
    for inp in op.inputs:
        c = inp.op.ctx
        while c is not None and c is not op.ctx:
            if isinstance(c, CondContext) and c.outer is op.ctx:
                return c.pred
            c = c.outer
    for inp in op.inputs:
        if inp.op.type == "Switch":
            return inp.op.inputs[1]
    raise GraphError(f"cannot find the predicate of the cond that {op.name} (Merge) closes, so it has no gradient")


@cf.merge_op.gradient
def _merge_grad(op, dy, dindex=None):
    """Merge -> Switch on the cond's predicate: input i receives output i of the Switch."""
    if _is_loop_merge(op):
        raise GraphError(f"{op.name} is the Merge of while loop {op.ctx.name}; loops are differentiated whole "
                         "(while_loop_grad), not op by op")
    if dy is None:
        return [None] * len(op.inputs)
    if len(op.inputs) != 2:
        raise GraphError(f"{op.name}: only two-way Merges (conds) have a gradient")
    sw = cf.switch_op(dy, cond_predicate(op), name="merge_grad")
    return [sw[0], sw[1]]


@cf.switch_op.gradient
def _switch_grad(op, d_false, d_true):
    """Switch -> Merge of the two branch gradients; zeros guarded by a Switch on the same
    predicate stand in for a branch that does not read the value."""
    if _is_loop_switch(op):
        raise GraphError(f"{op.name} is a Switch of while loop {op.ctx.name}; loops are differentiated whole")
    x, p = op.inputs
    if d_false is None and d_true is None:
        return [None, None]
    if d_false is None or d_true is None:
        z = cf.switch_op(zeros_like_fwd(x), p, name="switch_grad_zeros")
        d_false = z[0] if d_false is None else d_false
        d_true = z[1] if d_true is None else d_true
    m = cf.merge_op(d_false, d_true, name="switch_grad")
    # the predicate as seen where the Merge is (a backward loop pops it): a later
    # gradient of this Merge switches on that one, not on the forward tensor
    ctx = op.graph.control_flow_context
    _record_cond_merge(m[0].op, ctx.capture(p) if ctx is not None else p)
    return [m[0], None]


@cf.enter_op.gradient
def _enter_grad(op, dy):
    """A constant Enter seen from inside its loop (gradients taken in the body): identity.
    Differentiating through a whole loop, an Enter's gradient is the backward loop's Exit."""
    if op.attrs.get("is_constant"):
        return [dy]
    raise GraphError(f"{op.name} (Enter of {op.attrs['frame_name']}): loops are differentiated whole by "
                     "while_loop_grad; this Enter cannot be differentiated on its own")


@cf.exit_op.gradient
def _exit_grad(op, dy):
    raise GraphError(f"{op.name} (Exit): its gradient is the Enter of the backward loop, built by while_loop_grad")


@cf.next_iteration_op.gradient
def _next_iteration_grad(op, dy):
    raise GraphError(f"{op.name} (NextIteration): its gradient is a NextIteration of the backward loop, built by "
                     "while_loop_grad")


def iteration_count(w: WhileContext) -> Tensor:
    """The number of iterations the loop ran, as an int64 tensor next to its outputs
    (the counter of maximum_iterations, or one added now)."""
    if getattr(w, "has_counter", False):
        return w.exits[0].outputs[0]
    hit = getattr(w, "_grad_counter", None)
    if hit is not None:
        return hit
    g = w.graph
    with g.control_dependencies(None):
        with g.in_control_flow_context(w.outer):
            zero = constant(np.int64(0), name="iteration_count_init")
        if w.outer is not None:
            zero = w.outer.capture(zero)
        i, finish = w.add_loop_var(zero, TensorShape(()))
        with g.in_control_flow_context(w):
            one = constant(np.int64(1))
            nxt = g.create_op(add_op, [i, one], name="iteration_count").outputs[0]
        w._grad_counter = finish(nxt)
    return w._grad_counter


def _dummy_like(t: Tensor) -> Tensor:
    if t.dtype is dt.variant:
        return list_ops.new_op(element_dtype=dt.variant, element_shape=None)
    shape = t.shape.dims if t.shape.is_fully_defined() else ()
    return constant(np.zeros(shape, dtype=t.dtype.np_dtype), name="acc_dummy")


def _always_live(w: WhileContext, t: Tensor) -> Tensor:
    """`t`, or for a tensor of a cond branch in the loop body, a value that is `t` when
    its branch ran and a placeholder of the same dtype otherwise (so the list gets one
    element per iteration either way)."""
    g = w.graph
    v = t
    for pred, branch, ctx in reversed(liveness(w, t)):
        with g.in_control_flow_context(ctx):
            dummy = _dummy_like(t)
            other = g.create_op(cf.switch_op, [dummy, pred], name="acc_switch").outputs[1 - branch]
            pair = [v, other] if branch == 0 else [other, v]
            m = g.create_op(cf.merge_op, pair, name="acc_merge", capture=False,
                            output_specs=[(t.dtype, TensorShape(None) if t.dtype is not dt.variant else TensorShape(())),
                                          (dt.int32, TensorShape(()))])
        _record_cond_merge(m, pred)
        v = m.outputs[0]
    return v


def accumulate(w: WhileContext, t: Tensor) -> Tensor:
    """Push `t` (a tensor of w's body) once per iteration onto a new tensor-list loop
    variable of `w`; returns the full list (an Exit of `w`). Cached per (loop, tensor)."""
    accs = w.__dict__.setdefault("_grad_accs", {})
    hit = accs.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    g = w.graph
    with g.control_dependencies(None), g.device(t.op.device or g.current_device):  # on the device of the value it keeps
        with g.in_control_flow_context(w):
            v = _always_live(w, t)
        with g.in_control_flow_context(w.outer):
            l0 = list_ops.new_op(element_dtype=t.dtype, element_shape=t.shape.dims, name="acc_init")
        lst, finish = w.add_loop_var(l0, TensorShape(()))
        with g.in_control_flow_context(w):
            pushed = g.create_op(list_ops.push_back_op, [lst, v],
                                 {"element_dtype": t.dtype, "element_shape": t.shape.dims},
                                 name="acc_push", capture=False).outputs[0]
        out = finish(pushed)
    accs[id(t)] = (t, out)
    return out


def accumulators(w: WhileContext) -> list[tuple[Tensor, Tensor]]:
    """(forward tensor, the list of its values: an Exit of `w`) for every tensor of loop
    `w` that backward passes accumulate."""
    return list(getattr(w, "_grad_accs", {}).values())


def accumulated_tensors(w: WhileContext) -> list[Tensor]:
    """The forward tensors of loop `w` that backward passes accumulate (one list each)."""
    return [t for t, _ in accumulators(w)]


# -- the backward loop ----------------------------------------------------------------

class GradWhileContext(WhileContext):
    """The body of a backward loop. Reading a tensor of the forward loop's body pops it
    from an accumulator; a forward loop invariant enters as an invariant."""

    def __init__(self, graph, outer, name, parallel_iterations, forward: WhileContext):
        super().__init__(graph, outer, name, parallel_iterations)
        self.forward = forward
        # id(popped value) -> (popped value, the full forward list as seen from self.outer)
        self._pop_lists: dict[int, tuple[Tensor, Tensor]] = {}
        self.kept_bytes = 0  # per forward iteration, in the lists this loop pops (remat.py)
        self._carrying: set[int] = set()  # forward loop variables whose carried value is being built

    def capture(self, t: Tensor) -> Tensor:
        c = t.op.ctx
        if self.contains(c):
            return t
        hit = self._captured.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        fwd = self.forward
        if fwd.contains(c):
            if t.op.type == "Enter" and t.op.attrs.get("is_constant") and c is fwd:
                inner = self.capture(t.op.inputs[0])
            else:
                k = self._next_value_of(t)
                if k is not None and k not in self._carrying:
                    self._carrying.add(k)  # (loop variables swapped in a cycle, a, b = b, a, carry
                    try:                    # each once: the one met again is popped, not carried)
                        inner = self._carried(k)
                    finally:
                        self._carrying.discard(k)
                else:
                    inner = self._kept_or_recomputed(t)
        else:
            outer_t = self.outer.capture(t) if self.outer is not None else t
            inner = self._wrap(outer_t)
        self._captured[id(t)] = (t, inner)
        return inner

    def _kept_or_recomputed(self, t: Tensor) -> Tensor:
        """A forward body value popped from an accumulator, or computed again here when the
        memory budget says so (remat.py)."""
        fwd = self.forward
        if remat.current_budget() is not None and t.op.type == "Const" and t.op.ctx is fwd \
                and not isinstance(fwd, GradWhileContext) and t.dtype.np_dtype is not None:
            return self._recompute(t)  # the same value in every iteration: nothing to keep
        keep, kept = remat.keep(self.kept_bytes, t)
        if keep or not remat.recomputable(t, fwd):
            self.kept_bytes = kept if keep else kept + (remat.nbytes(t) or 0)
            return self._pop(t)
        return self._recompute(t)

    def _recompute(self, t: Tensor) -> Tensor:
        """`t`'s op built again in this loop from its inputs as this loop sees them."""
        g = self.graph
        op = t.op
        inputs = [self.capture(x) for x in op.inputs]
        with g.in_control_flow_context(self), g.control_dependencies(None):
            new = g.create_op(op.op_def, inputs, dict(op.attrs), name=f"remat_{op.name.rpartition('/')[2]}",
                              capture=not inputs)  # a constant hangs on this loop's pivot
        return new.outputs[t.value_index]

    def _next_value_of(self, t: Tensor):
        """k when `t` is the next value of the forward loop's loop variable k (the input of
        its NextIteration), computed in every iteration; else None."""
        fwd = self.forward
        for k, n in enumerate(fwd.next_iterations):
            if (n.inputs[0] is t and t.dtype is not dt.variant and t is not fwd.switches[k].outputs[1]
                    and not liveness(fwd, t)):
                return k
        return None

    def _carried(self, k: int) -> Tensor:
        """The next value of forward loop variable k, without accumulating it: in forward
        iteration i it is the variable's value at the start of iteration i + 1 (the last
        one: its Exit), which this loop pops one iteration earlier. So a loop variable
        of this loop carries it: it starts as the forward Exit and takes the value popped
        for the variable's start value in each iteration (h of an RNN is then stored once,
        not as both h_t and h_(t-1))."""
        g = self.graph
        fwd = self.forward
        ex = fwd.exits[k].outputs[0]
        init = self.outer.capture(ex) if self.outer is not None else ex
        prev, finish = self.add_loop_var(init, fwd.loop_merges[k].outputs[0].shape)
        with g.in_control_flow_context(self), g.control_dependencies(None):
            start = self.capture(fwd.switches[k].outputs[1])
        finish(start)
        return prev

    def _pop(self, t: Tensor) -> Tensor:
        g = self.graph
        full = accumulate(self.forward, t)
        init = self.outer.capture(full) if self.outer is not None else full
        lst, finish = self.add_loop_var(init, TensorShape(()))
        live_when = liveness(self.forward, t)
        # Where t sits in a cond branch, iterations that skipped the branch pushed a dummy
        # of another shape (_always_live): the popped element's shape is only t's on the
        # branch's side of the Switches below.
        element_shape = None if live_when else t.shape.dims
        with g.in_control_flow_context(self), g.control_dependencies(None):
            pop = g.create_op(list_ops.pop_back_op, [lst], {"element_dtype": t.dtype, "element_shape": element_shape},
                              name="acc_pop", capture=False)
        finish(pop.outputs[0])
        v = pop.outputs[1]
        self._pop_lists[id(v)] = (v, init)
        # A tensor of a cond branch of the forward body is read here, too, through Switches
        # on the (popped) predicates, so this body is a well-formed cond: differentiated
        # again, the gradient of the popped value leaves the branch through the Switches'
        # gradients (Merges with zeros) and is live in every iteration, as the list
        # gradient it is pushed onto must be.
        for pred, branch, _ in live_when:
            with g.in_control_flow_context(self), g.control_dependencies(None):
                v = g.create_op(cf.switch_op, [v, self.capture(pred)], name="acc_pop_switch").outputs[branch]
        if live_when:
            v.set_shape(t.shape)
        return v

    def describe(self) -> str:
        return f"backward loop {self.name} (of {self.forward.name})"


def _body_dependencies(w: WhileContext) -> list[set[int]]:
    """For each loop variable k, the loop variables j whose body input reaches k's
    body output (conservatively, through nested loops)."""
    switch_index = {id(s): j for j, s in enumerate(w.switches)}
    deps = []
    for n in w.next_iterations:
        found: set[int] = set()
        seen: set[int] = set()
        stack = [n.inputs[0].op]
        while stack:
            op = stack.pop()
            if id(op) in seen:
                continue
            seen.add(id(op))
            j = switch_index.get(id(op))
            if j is not None:
                found.add(j)
                continue
            if op.type == "Enter" and op.ctx is w:
                continue
            if not w.contains(op.ctx) and op.type != "Exit":
                continue
            stack.extend(t.op for t in op.inputs)
        deps.append(found)
    return deps


def while_loop_grad(w: WhileContext, exit_grads: list, wanted: set[int], walk) -> list[tuple[Tensor, Tensor]]:
    """Build the backward loop of forward loop `w` in the current context.

    Args:
      w: the forward loop.
      exit_grads: the gradient reaching each Exit of `w` (None: none).
      wanted: ids of the Enter inputs whose gradients the caller needs.
      walk: the reverse walk that called this (`backprop.backprop`); it differentiates
        w's body, one control-flow level down.

    Returns (forward tensor, gradient) pairs for Enter inputs of `w`."""
    g = w.graph
    outer = g.control_flow_context
    ins = [s.outputs[1] for s in w.switches]
    outs = [n.inputs[0] for n in w.next_iterations]
    active_list = _active_loop_vars(w, exit_grads)
    if not active_list:
        return []
    invariants = [e for e in w.enters if e.attrs.get("is_constant") and id(e.inputs[0]) in wanted
                  and differentiable(e.outputs[0]) and e.inputs[0].op.type != "Const"]

    def to_outer(t):
        return outer.capture(t) if outer is not None else t

    n_iter = iteration_count(w)
    with g.name_scope("while_grad") as scope, g.control_dependencies(None):
        b = _backward_loop(w, scope.rstrip("/"), n_iter)

        # one gradient loop variable per active forward loop variable, entering with dy at its Exit
        vars_ = {}
        for k in active_list:
            dy = exit_grads[k]
            if dy is None:
                dy = zeros_like_fwd(w.exits[k].outputs[0])
            dy = to_outer(dy)
            shape = TensorShape(()) if dy.dtype is dt.variant else w.loop_merges[k].outputs[0].shape
            vars_[k] = b.add_loop_var(dy, shape)

        xs = [ins[k] for k in active_list] + [e.outputs[0] for e in invariants]
        factored = {id(e.outputs[0]): [] for e in invariants}
        with g.in_control_flow_context(b):
            grads = walk(g, [outs[k] for k in active_list], [vars_[k][0] for k in active_list], xs, scope=w,
                             factored=factored)

        result = []
        for i, k in enumerate(active_list):
            gk = grads[i]
            with g.in_control_flow_context(b):
                # zeros computed from the loop variable itself, so they are dead when the loop ends (a
                # constant would be a loop invariant, live in every iteration: the loop never ends)
                gk = zeros_like_in_loop(vars_[k][0]) if gk is None else b.capture(gk)
            final = vars_[k][1](gk)
            enter_k = w.loop_merges[k].inputs[0].op
            result.append((enter_k.inputs[0], final))
        for j, e in enumerate(invariants):
            gj = grads[len(active_list) + j]
            parts = [_sum_factors(b, f) for f in factored[id(e.outputs[0])]]
            if gj is not None:
                init = to_outer(zeros_like_fwd(e.inputs[0]))
                shape = TensorShape(()) if init.dtype is dt.variant else e.outputs[0].shape
                acc, finish = b.add_loop_var(init, shape)
                with g.in_control_flow_context(b):
                    nxt = add_grads([acc, b.capture(gj)])
                parts.append(finish(nxt))
            if parts:
                result.append((e.inputs[0], add_grads(parts)))
    return result


def _active_loop_vars(w: WhileContext, exit_grads: list) -> list[int]:
    """The forward loop variables the backward loop carries a gradient for: those whose
    Exit gets one, and every differentiable variable their next values depend on."""
    ins = [s.outputs[1] for s in w.switches]
    active = {k for k in range(len(w.loop_merges))
              if exit_grads[k] is not None and differentiable(w.exits[k].outputs[0])}
    deps = _body_dependencies(w)
    changed = True
    while changed:
        changed = False
        for k in list(active):
            for j in deps[k]:
                if j not in active and differentiable(ins[j]):
                    active.add(j)
                    changed = True
    return sorted(active)


def _backward_loop(w: WhileContext, name: str, n_iter: Tensor) -> "GradWhileContext":
    """A new backward loop of `w` (in the current context) whose only loop variable yet
    is its counter: it runs exactly `n_iter` (the forward loop's count) iterations."""
    g = w.graph
    outer = g.control_flow_context
    b = GradWhileContext(g, outer, name, w.parallel_iterations, w)
    g.add_while_context(b)
    b.maximum_iterations = None
    b.has_counter = True
    zero = constant(np.int64(0))
    e0, m0 = b.loop_var_head(outer.capture(zero) if outer is not None else zero)
    with g.in_control_flow_context(b):
        p = g.create_op(less_op, [m0.outputs[0], b.capture(n_iter)], name="Less").outputs[0]
        b.loop_cond = g.create_op(cf.loop_cond_op, [p], name="LoopCond", capture=False)
    s0 = b.loop_var_switch(m0)
    b.first_switch_true = s0.outputs[1]
    with g.in_control_flow_context(b):
        nxt0 = g.create_op(add_op, [s0.outputs[1], constant(np.int64(1))], name="add").outputs[0]
    b.record_loop_var(e0, m0, s0, b.loop_var_back_edge(m0, nxt0), b.loop_var_exit(s0))
    return b


def _sum_factors(b: "GradWhileContext", f) -> Tensor:
    """The sum over b's iterations of one iteration's `Factors` (see contraction.py), as
    one matmul after the loop (built in b.outer) of the lists of both factors: a factor
    that is a value popped from a forward accumulator is read from that list as the
    forward loop left it; any other is pushed by b onto a list of its own (one per
    tensor, shared by all the sums that use it)."""
    g = b.graph
    lists, backward_order = [], []
    for t in (f.left, f.right):
        popped = b._pop_lists.get(id(t))
        if popped is not None and popped[0] is t:
            lists.append(popped[1])
            backward_order.append(False)
            continue
        pushed = b.__dict__.setdefault("_factor_lists", {})
        hit = pushed.get(id(t))
        if hit is None or hit[0] is not t:
            with g.in_control_flow_context(b.outer), g.control_dependencies(None):
                l0 = list_ops.new_op(element_dtype=t.dtype, element_shape=t.shape.dims, name="factor_init")
            lst, finish = b.add_loop_var(l0, TensorShape(()))
            with g.in_control_flow_context(b), g.control_dependencies(None):
                nxt = g.create_op(list_ops.push_back_op, [lst, t], {"element_dtype": t.dtype,
                                                                   "element_shape": t.shape.dims},
                                  name="factor_push").outputs[0]
            hit = pushed[id(t)] = (t, finish(nxt))
        lists.append(hit[1])
        backward_order.append(True)
    return contract(lists[0], lists[1], f, aligned=backward_order[0] == backward_order[1])
