"""The Control Flow v2 ops: If and While, whose branches, condition and body are
functions of the graph's library (graphcore/function_graph.py).

    If(pred, *inputs; then_branch, else_branch) -> outputs of the branch taken
    While(*loop_vars; cond, body, parallel_iterations) -> the final loop_vars

Both branches of an If take the If's inputs and return outputs of one signature (the
builder pads them so); a While's cond and body take the loop variables, cond returns a
scalar bool and body the next loop variables (loop variable 0 is the iteration counter
that graphcore/v2_control_flow.py adds to every loop, which the gradient reads). Their
shape rules read the functions, so validate() and a graph file's checks catch a call that
does not fit its function. They have no kernel: a run lowers them to Switch/Merge and
one loop frame first (graphcore/passes/lower_functional.py).
"""
from __future__ import annotations

from ..attr_schema import AttrError, int_in, opt
from ..errors import GraphError
from ..library import FUNCTION
from ..registry import CHEAP, define_op


def _check_call(fn, args, what: str) -> None:
    if len(fn.inputs) != len(args):
        raise GraphError(f"{what} {fn.name!r} takes {len(fn.inputs)} inputs {fn.signature()}, "
                         f"but the op passes {len(args)}")
    for k, (p, a) in enumerate(zip(fn.inputs, args)):
        if p.dtype != a.dtype or not p.shape.is_compatible_with(a.shape):
            raise GraphError(f"{what} {fn.name!r}: input {k} is {p.dtype}{p.shape} but the op passes "
                             f"{a.name} of {a.dtype}{a.shape}")


def _if_rule(pred, *inputs, then_branch, else_branch):
    g = pred.graph
    if not pred.dtype.is_bool or pred.shape.rank not in (0, None):
        raise GraphError(f"If's predicate must be a scalar bool, got {pred.dtype}{pred.shape}")
    t, e = g.get_function(then_branch), g.get_function(else_branch)
    _check_call(t, inputs, "then_branch")
    _check_call(e, inputs, "else_branch")
    if len(t.outputs) != len(e.outputs):
        raise GraphError(f"the branches {t.name!r} and {e.name!r} return {len(t.outputs)} and "
                         f"{len(e.outputs)} values; both must return the same signature")
    specs = []
    for k, (a, b) in enumerate(zip(t.outputs, e.outputs)):
        if a.dtype != b.dtype:
            raise GraphError(f"output {k} is {a.dtype} in {t.name!r} but {b.dtype} in {e.name!r}")
        specs.append((a.dtype, a.shape.most_specific_compatible(b.shape)))
    return specs


# own_kind: the Python type of an output is what the builder registered for it (autograph's
# join of the branches, as for v1's Merge), not something to work out from the inputs
if_op = define_op("If", shape=_if_rule, kernel=None, num_outputs=None, cost=CHEAP, own_kind=True,
                  picture={"shape": "box", "style": "rounded,filled,bold", "fillcolor": "#e9e2f7"},
                  attrs={"then_branch": FUNCTION, "else_branch": FUNCTION},
                  doc="Calls then_branch or else_branch on its inputs, as pred says.")


def _while_rule(*loop_vars, cond, body, parallel_iterations=10):
    if not loop_vars:
        raise GraphError("While needs its loop variables (the iteration counter first)")
    g = loop_vars[0].graph
    c, b = g.get_function(cond), g.get_function(body)
    _check_call(c, loop_vars, "cond")
    _check_call(b, loop_vars, "body")
    if len(c.outputs) != 1 or not c.outputs[0].dtype.is_bool or c.outputs[0].shape.rank not in (0, None):
        raise GraphError(f"cond {c.name!r} must return one scalar bool, it returns {c.signature()}")
    if len(b.outputs) != len(loop_vars):
        raise GraphError(f"body {b.name!r} returns {len(b.outputs)} values for {len(loop_vars)} loop variables")
    specs = []
    for k, (p, o) in enumerate(zip(b.inputs, b.outputs)):
        if p.dtype != o.dtype or p.shape.most_specific_compatible(o.shape) != p.shape:
            raise GraphError(f"body {b.name!r}: loop variable {k} enters as {p.dtype}{p.shape} but leaves as "
                             f"{o.dtype}{o.shape}")
        specs.append((p.dtype, p.shape))
    return specs


while_op = define_op("While", shape=_while_rule, kernel=None, num_outputs=None, cost=CHEAP, own_kind=True,
                     picture={"shape": "box", "style": "rounded,filled,bold", "fillcolor": "#dcd3f0"},
                     attrs={"cond": FUNCTION, "body": FUNCTION, "parallel_iterations": opt(int_in(1, 2 ** 31 - 1))},
                     doc="Runs body on the loop variables while cond says so.")


def _check_functions(op) -> None:
    """A loaded If/While names functions of the file's library (its shape rule, run by the
    loader's validation, checks their signatures)."""
    for attr in ("then_branch", "else_branch", "cond", "body"):
        if attr in op.attrs:
            try:
                op.graph.get_function(op.attrs[attr])
            except GraphError as e:
                raise AttrError(attr, str(e)) from None


if_op.checked_when_loaded(_check_functions)
while_op.checked_when_loaded(_check_functions)
