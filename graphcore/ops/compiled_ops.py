"""`CompiledLoop`: one op standing for a whole while loop of pure ops, made by the
`compile_loops` pass (graphcore/passes/compile_loops.py) when a function asks for
`jit_compile=True`, as TensorFlow's XLA clusters a loop. The frame executor then runs one
node per loop, not several per iteration; the executor's kernel for it is Python source
with a `while` (executor/compiled_loop.py).

Its attributes describe the loop as data (so a graph file keeps it): the values of one
iteration are numbered, first the loop variables (`n_vars`), then the loop invariants
(the op's other inputs), then one per step. `cond_steps` run every iteration, the last
one included (what the loop test reads); `pred` is the test's value; `body_steps` run when
it is true; `nexts` give the next value of each loop variable; `exits` which variable each
output is. A step is as a Fused op's, (type, inputs, attrs, name, location, dtype), and a
guard: (value, branch) pairs, the predicates of the conds around it, under which it runs;
a cond's Merge is a step of type Merge whose inputs are (true value, false value, predicate).
A step with several outputs (an inner compiled loop) has a tuple of dtypes and numbers them
one after the other.
"""
from __future__ import annotations

from ..errors import GraphError
from ..registry import CHEAP, define_op, get_op_def
from .fused_ops import ATTRS, DTYPE, INPUTS, TYPE, note_failed_step

GUARD = 6  # a loop step's guard, after the fields a fused step has


def _loop_rule(*inputs, dtypes, shapes, **attrs):
    return [(d, s) for d, s in zip(dtypes, shapes)]


def outputs_of(step) -> int:
    """How many values a step makes (an inner compiled loop may make several)."""
    return len(step[DTYPE]) if isinstance(step[DTYPE], tuple) else 1


def _run_region(values: list, steps) -> None:
    for step in steps:
        k = outputs_of(step)
        if not all(bool(values[p]) == branch for p, branch in step[GUARD]):
            values.extend([None] * k)  # a branch not taken in this iteration: its values do not exist
        elif step[TYPE] == "Merge":
            true_value, false_value, pred = step[INPUTS]
            values.append(values[true_value] if values[pred] else values[false_value])
        else:
            try:
                out = get_op_def(step[TYPE]).kernel(*(values[i] for i in step[INPUTS]), **step[ATTRS])
            except Exception as e:  # noqa: BLE001 (re-raised, marked with the step)
                raise note_failed_step(e, step)
            values.extend(out) if k > 1 else values.append(out)


def run_loop(*inputs, n_vars, cond_steps, pred, body_steps, nexts, exits, dtypes=None, shapes=None, backend=None):
    """The reference kernel: the steps' own kernels, one at a time (eager runs use it; the
    executor's generated kernel falls back to it to name a failing step)."""
    state = list(inputs[:n_vars])
    invariants = list(inputs[n_vars:])
    while True:
        values = state + invariants
        _run_region(values, cond_steps)
        if not values[pred]:
            out = tuple(state[k] for k in exits)
            return out[0] if len(out) == 1 else out
        _run_region(values, body_steps)
        state = [values[i] for i in nexts]


compiled_loop_op = define_op("CompiledLoop", shape=_loop_rule, kernel=run_loop, num_outputs=None, cost=CHEAP)


@compiled_loop_op.gradient
def _compiled_loop_grad(op, *dys):
    """Refused, not zero: a compiled loop keeps no per-iteration values to differentiate."""
    raise GraphError(
        f"cannot differentiate {op.name}, a loop compiled with jit_compile=True (created at {op.location()}): "
        "it keeps no per-iteration values; take the gradient inside the function (autograph.grad, "
        "graphcore.gradients while tracing), where it is built before the loop is compiled, or trace "
        "it with jit_compile=False")
