"""`Fused`: one op standing for a small tree of elementwise ops (and a MatMul, and the
constants they read), made by the optimizer's fusion pass (graphcore/passes/fusion.py) so
that the executor runs one node where it ran several: in a loop, each node costs far more
bookkeeping than an elementwise kernel on a scalar, and `tanh(x @ w + b)` becomes one
node, as TensorFlow's remapper fuses MatMul + BiasAdd + activation.

Its `steps` attribute keeps, for each op it stands for, in order: the op type, where its
inputs come from (an index into the fused op's inputs, then into the steps' results), its
attributes, its name, its source line and its result's dtype. So:
  - its kernel runs exactly the kernels those ops ran, in the same order (the executor
    builds a faster one from the same steps: executor/fused_kernel.py); a step that fails
    is reported with its own name and line (`run_steps`);
  - its gradient is the tree's gradient: the steps are built again from the fused op's
    inputs where the gradient is built, and each step's own rule runs on them in reverse
    order (so a fused forward op recomputes its intermediates in the backward pass, and
    keeps only its inputs).
"""
from __future__ import annotations

from ..registry import CHEAP, define_op, get_op_def
from .math_ops import add

# one entry of `steps`: (type, inputs, attrs, name, location, dtype)
TYPE, INPUTS, ATTRS, NAME, LOCATION, DTYPE = range(6)


def _fused_rule(*inputs, steps, dtype, shape):
    return dtype, shape


def note_failed_step(e: BaseException, step: tuple) -> BaseException:
    """Record on `e` the step it came from: `e.fused_step` = (name, type, location)."""
    if getattr(e, "fused_step", None) is None:
        try:
            e.fused_step = (step[NAME], step[TYPE], step[LOCATION])
        except AttributeError:  # an exception type that refuses attributes
            pass
    return e


def run_steps(*values, steps, dtype=None, shape=None):
    """The reference kernel: each step's registered kernel in turn (eager runs use it, and
    the executor's fast kernel falls back to it to find the step that failed)."""
    results = list(values)
    for step in steps:
        kernel = get_op_def(step[TYPE]).kernel
        try:
            results.append(kernel(*(results[i] for i in step[INPUTS]), **step[ATTRS]))
        except Exception as e:  # noqa: BLE001 (re-raised, marked)
            raise note_failed_step(e, step)
    return results[-1]


fused_op = define_op("Fused", shape=_fused_rule, kernel=run_steps, cost=CHEAP)


@fused_op.gradient
def _fused_grad(op, dy):
    """Build the steps again from the fused op's inputs and run their gradient rules in
    reverse, summing what reaches each input."""
    n = len(op.inputs)
    values = list(op.inputs)
    rebuilt = []
    for step in op.attrs["steps"]:
        out = get_op_def(step[TYPE])(*(values[i] for i in step[INPUTS]), **step[ATTRS])
        values.append(out)
        rebuilt.append(out.op)
    grads: list = [None] * len(values)
    grads[-1] = dy
    for j in reversed(range(len(rebuilt))):
        g = grads[n + j]
        rule = rebuilt[j].op_def.grad_fn
        if g is None or rule is None:
            continue
        for i, gi in zip(op.attrs["steps"][j][INPUTS], rule(rebuilt[j], g)):
            if gi is not None:
                grads[i] = gi if grads[i] is None else add(grads[i], gi)
    return grads[:n]
