"""Gradients of Control Flow v2's If and While: they are If
and While ops again, so a gradient of a gradient needs nothing more.

If: an If on the same predicate whose branches are the gradient functions of the forward
branches. A forward tensor a gradient function reads becomes an extra output of the
forward If, added when it is asked for (v2_control_flow.lift_output; the branch that does
not compute it outputs zeros of its type).

While: a While that runs the gradient of the body as many times as the forward loop ran
(its iteration counter, output 0). Each forward tensor the gradient body reads is pushed,
every iteration, onto a TensorList carried by the forward loop as an extra loop variable
(added to the While op when first asked for, once per tensor: every later gradient pops
the same list), and popped in reverse order by the gradient loop; a constant of the body
is made again in the gradient body instead. Gradients of loop invariants (captures) are
summed over the iterations in loop variables of the gradient loop.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..function_graph import FuncGraph
from ..graph import Operation, Tensor, get_default_graph
from ..ops import list_ops, math_ops
from ..ops.array_ops import constant, zeros_like
from ..ops.functional_ops import if_op, while_op
from ..registry import needs_grad
from .backprop import backprop
from .util import differentiable, zeros_like_fwd


def _builder_graph(op: Operation):
    """The graph the gradient is built in: the one being built (a gradient function when
    this is a gradient of a gradient), else the op's."""
    return get_default_graph() or op.graph


def _unify(fgs, leading: list[list[Tensor]]):
    """Give every function the inputs `leading[i]` then every capture any of them made
    (one signature for an If's branches); the captured outer tensors, in order."""
    seen, outer = set(), []
    for fg in fgs:
        for o, _ in fg.captures:
            if id(o) not in seen:
                seen.add(id(o))
                outer.append(o)
    for fg, lead in zip(fgs, leading):
        fg.inputs = list(lead) + [fg.capture(o) for o in outer]
    return outer


# -- If ----------------------------------------------------------------------------

@if_op.gradient
def _if_grad(op: Operation, *dys):
    g = _builder_graph(op)
    live = [k for k, d in enumerate(dys) if d is not None]
    args = op.inputs[1:]
    wanted = [i for i, t in enumerate(args) if differentiable(t) and needs_grad(op, i + 1)]
    if not wanted:
        return [None] * len(op.inputs)
    fns = [g.get_function(op.attrs[a]) for a in ("then_branch", "else_branch")]
    grad_fns, leads = [], []
    for fn in fns:
        gf = FuncGraph(f"{fn.name}_grad", g)
        seeds = [gf.add_argument(dys[k].dtype, op.outputs[k].shape, "dy") for k in live]
        with gf.as_default():
            grads = backprop(fn, [fn.outputs[k] for k in live], seeds, list(fn.inputs), scope=None,
                             result_for=[fn.inputs[i] for i in wanted])
            outs = [gr if gr is not None else zeros_like_fwd(gf.capture(args[i])) for gr, i in zip(grads, wanted)]
            gf.set_outputs(outs)
        grad_fns.append(gf)
        leads.append(seeds)
    outer = _unify(grad_fns, leads)
    for gf in grad_fns:
        g.add_function(gf)
    with g.as_default():
        grad = g.create_op(if_op, [op.inputs[0], *[dys[k] for k in live], *outer],
                           {"then_branch": grad_fns[0].name, "else_branch": grad_fns[1].name},
                           name=op.name.rpartition("/")[2] + "_grad")
    grad_fns[0].caller = grad_fns[1].caller = grad
    result = [None] * len(op.inputs)
    for i, t in zip(wanted, grad.outputs):
        result[i + 1] = t
    return result


# -- While -------------------------------------------------------------------------

def _in(g, t: Tensor) -> Tensor:
    """`t` as a tensor of `g` (captured, or lifted out of an If, when it is of another graph)."""
    return t if t.graph is g else g.capture(t) if isinstance(g, FuncGraph) else g.as_tensor(t)


class _Accumulators:
    """The forward tensors a While's gradient body reads: each pushed onto a TensorList
    carried by the forward While (a new loop variable, its input and output added to the
    op) and popped, in the gradient body, from the list the forward loop ends with."""

    def __init__(self, op: Operation, body_fn: FuncGraph, cond_fn: FuncGraph, gb: FuncGraph, passthrough: list):
        self.op, self.body_fn, self.cond_fn, self.gb = op, body_fn, cond_fn, gb
        self.passthrough = passthrough
        self.popped: dict[int, Tensor] = {}
        self.lists: list[Tensor] = []  # the gradient body's list arguments, in order
        self.list_outs: list[Tensor] = []  # the lists after popping (its outputs)
        self.finals: list[Tensor] = []  # the forward loop's final lists (their initial values)

    def __call__(self, t: Tensor) -> Tensor:
        hit = self.popped.get(id(t))
        if hit is not None:
            return hit
        op, body_fn = self.op, self.body_fn
        for k, p in enumerate(body_fn.inputs[:len(self.passthrough)]):
            if p is t and self.passthrough[k]:  # a loop invariant: the value the loop was given
                hit = self.popped[id(t)] = self.gb.capture(op.inputs[k])
                return hit
        if t.op.type == "Const" and not t.op.control_inputs:  # the same in every iteration: made again
            with self.gb.as_default():  # here, as v1 hoists a loop's constants out of it
                hit = self.popped[id(t)] = constant(t.op.attrs["value"], dtype=t.op.attrs["dtype"])
            return hit
        final = _accumulated(op, body_fn, self.cond_fn, t)
        # the gradient loop pops it
        lst = self.gb.add_argument(dt.variant, [], "acc")
        with self.gb.as_default():
            rest, value = list_ops.tensor_list_pop_back(lst, t.dtype, t.shape.dims)
        self.lists.append(lst)
        self.list_outs.append(rest)
        self.finals.append(final)
        self.popped[id(t)] = value
        return value


def _accumulated(op: Operation, body_fn: FuncGraph, cond_fn: FuncGraph, t: Tensor) -> Tensor:
    """The list of `t`'s values in every iteration of the forward While `op` (an output of
    it): pushed by its body onto a new list loop variable when first asked for, the same
    list for every later gradient (second order, or gc.gradients called again), as v1's
    accumulators are cached per loop and tensor (lists are values: each pops its own)."""
    lists = body_fn.__dict__.setdefault("accumulated", {})  # id(t) -> (t, index of the op's output)
    hit = lists.get(id(t))
    if hit is not None and hit[0] is t:
        return op.outputs[hit[1]]
    fg = op.graph
    with fg.inserting_before(op):
        init = list_ops.tensor_list_new(t.dtype, t.shape.dims)
    cond_fn.add_argument(dt.variant, [], "acc")
    acc = body_fn.add_argument(dt.variant, [], "acc")
    with body_fn.as_default():
        body_fn.outputs.append(list_ops.tensor_list_push_back(acc, t, element_dtype=t.dtype))
    fg.append_input(op, init)
    final = fg.append_output(op, dt.variant, [])
    lists[id(t)] = (t, final.value_index)
    return final


@while_op.gradient
def _while_grad(op: Operation, *dys):
    g = _builder_graph(op)
    cond_fn, body_fn = g.get_function(op.attrs["cond"]), g.get_function(op.attrs["body"])
    n = len(op.inputs)
    passthrough = [body_fn.outputs[k] is body_fn.inputs[k] for k in range(n)]
    vary = [k for k in range(1, n) if not passthrough[k] and differentiable(op.inputs[k])]
    fixed = [k for k in range(1, n) if passthrough[k] and differentiable(op.inputs[k]) and needs_grad(op, k)]
    if not any(needs_grad(op, k) for k in vary) and not fixed:
        return [None] * n
    with g.as_default():
        inits = [dys[k] if dys[k] is not None else zeros_like_fwd(_in(g, op.outputs[k])) for k in vary + fixed]
    base = op.name.rpartition("/")[2]
    gb = FuncGraph(f"{body_fn.name}_grad", g)
    i = gb.add_argument(dt.int64, [], "i")
    dv = [gb.add_argument(op.outputs[k].dtype, op.outputs[k].shape, "dy") for k in vary]
    dc = [gb.add_argument(op.outputs[k].dtype, op.outputs[k].shape, "dy") for k in fixed]
    acc = _Accumulators(op, body_fn, cond_fn, gb, passthrough)
    gb.resolves, gb.resolve = body_fn, acc
    with gb.as_default():
        grads = backprop(body_fn, [body_fn.outputs[k] for k in vary], dv, list(body_fn.inputs[:n]), scope=None,
                         result_for=[body_fn.inputs[k] for k in vary + fixed])
        new_dv = [gr if gr is not None else zeros_like(d) for gr, d in zip(grads[:len(vary)], dv)]
        new_dc = [d if gr is None else math_ops.add(d, gr) for gr, d in zip(grads[len(vary):], dc)]
        nxt = math_ops.add(i, constant(1, dtype=dt.int64))
    gb.resolves = gb.resolve = None
    gc_ = FuncGraph(f"{body_fn.name}_grad_cond", g)
    ci = gc_.add_argument(dt.int64, [], "i")
    c_rest = [gc_.add_argument(t.dtype, t.shape, "dy") for t in dv + dc]
    c_lists = [gc_.add_argument(dt.variant, [], "acc") for _ in acc.lists]
    with gc_.as_default():
        gc_.set_outputs([math_ops.less(ci, gc_.capture(_in(g, op.outputs[0])))])
    lead_b = [i, *dv, *dc, *acc.lists]
    outer = _unify([gb, gc_], [lead_b, [ci, *c_rest, *c_lists]])
    gb.outputs = [nxt, *new_dv, *new_dc, *acc.list_outs, *gb.inputs[len(lead_b):]]
    for fn in (gc_, gb):
        g.add_function(fn)
    with g.as_default():
        start = constant(0, dtype=dt.int64, name=f"{base}_grad_counter")
        grad = g.create_op(while_op, [start, *inits, *[_in(g, f) for f in acc.finals], *outer],
                           {"cond": gc_.name, "body": gb.name,
                            "parallel_iterations": int(op.attrs.get("parallel_iterations", 10))},
                           name=f"{base}_grad")
    gc_.caller = gb.caller = grad
    result = [None] * len(op.inputs)  # (accumulators added inputs: they get none)
    for j, k in enumerate(vary + fixed):
        result[k] = grad.outputs[1 + j]
    return result
