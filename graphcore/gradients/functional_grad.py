"""Gradients of Control Flow v2's If and While, as the talk describes them: they are If
and While ops again, so a gradient of a gradient needs nothing more.

If: an If on the same predicate whose branches are the gradient functions of the forward
branches. A forward tensor a gradient function reads becomes an extra output of the
forward If, added when it is asked for (v2_control_flow.lift_output; the branch that does
not compute it outputs zeros of its type).

While: a While that runs the gradient of the body as many times as the forward loop ran
(its iteration counter, output 0). Each forward tensor the gradient body reads is pushed,
every iteration, onto a TensorList carried by the forward loop as an extra loop variable
(added to the While op when first asked for), and popped in reverse order by the gradient
loop. Gradients of loop invariants (captures) are summed over the iterations in loop
variables of the gradient loop.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import GraphError
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
