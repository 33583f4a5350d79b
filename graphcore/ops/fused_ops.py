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

from .. import attr_schema as schema
from ..attr_schema import MAX_STEPS, NONNEG_INT, STR, AttrError, record, tuple_of
from ..graph import Graph
from ..registry import CHEAP, define_op, get_op_def, registered_ops
from .array_ops import placeholder_op
from .math_ops import add

# one entry of `steps`: (type, inputs, attrs, name, location, dtype)
TYPE, INPUTS, ATTRS, NAME, LOCATION, DTYPE = range(6)


def ANY_STEP(v, where):
    """A step's shape (a tuple); its fields are checked once the op's inputs are known."""
    if not isinstance(v, tuple):
        raise AttrError(where, f"expected a step (a tuple), got a {type(v).__name__}")


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


fused_op = define_op("Fused", shape=_fused_rule, kernel=run_steps, cost=CHEAP,
                     attrs={"steps": tuple_of(ANY_STEP, MAX_STEPS), "dtype": schema.DTYPE, "shape": schema.SHAPE})


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


# -- a graph file's Fused op: its steps must build, from its inputs, what they say -------------

def _step_type(v, where):
    STR(v, where)
    od = registered_ops().get(v)
    if od is None:
        raise AttrError(where, f"no op type {v!r} is registered")
    if od.stateful or od.uses_runtime or od.control_flow or v == "Placeholder":
        raise AttrError(where, f"a {v} op cannot be a step of a fused op or compiled loop")


def STEP_ATTRS(v, where):
    if not isinstance(v, dict) or not all(isinstance(k, str) for k in v):
        raise AttrError(where, "expected a dict of attributes")


STEP_FIELDS = (_step_type, tuple_of(NONNEG_INT, 10_000), STEP_ATTRS, schema.NAME, STR, schema.DTYPE)


def check_step_fields(step, where: str, fields=STEP_FIELDS) -> None:
    """A step's fields of the right kinds, its attributes those its op type declares."""
    record(*fields)(step, where)
    if step[TYPE] != "Merge":
        try:
            get_op_def(step[TYPE]).check_attrs(step[ATTRS])
        except AttrError as e:
            raise AttrError(f"{where}[{ATTRS}].{e.where}", e.message) from None


def build_step(values: list, step, where: str):
    """The step built on the tensors `values` (in the scratch graph being built): its shape
    rule (and its own file check) must accept them and make the dtype it records."""
    for k, i in enumerate(step[INPUTS]):
        if i >= len(values):
            raise AttrError(f"{where}[{INPUTS}][{k}]", f"refers to value {i}, but only {len(values)} exist there")
    od = get_op_def(step[TYPE])
    try:
        out = od(*(values[i] for i in step[INPUTS]), **step[ATTRS])
    except AttrError as e:
        raise AttrError(f"{where}.{e.where}", e.message) from None
    except Exception as e:  # noqa: BLE001 (a shape rule's refusal, whatever its type, is the file's fault)
        raise AttrError(where, f"the {step[TYPE]} step cannot be built on its inputs: {type(e).__name__}: {e}") \
            from None
    outs = out if isinstance(out, tuple) else (out,)
    made = tuple(t.dtype for t in outs)
    said = step[DTYPE] if isinstance(step[DTYPE], tuple) else (step[DTYPE],)
    if made != said:
        raise AttrError(f"{where}[{DTYPE}]", f"the step makes {', '.join(map(str, made))}, the file says "
                        f"{', '.join(map(str, said))}")
    if od.file_check is not None:
        try:
            od.file_check(outs[0].op)
        except AttrError as e:
            raise AttrError(f"{where}[{ATTRS}].{e.where}", e.message) from None
    return list(outs)


def scratch_inputs(op) -> tuple:
    """A new graph and placeholders like `op`'s inputs, to build its steps on."""
    g = Graph()
    with g.as_default():
        return g, [placeholder_op(dtype=t.dtype, shape=t.shape) for t in op.inputs]


@fused_op.checked_when_loaded
def _check_loaded_fused(op) -> None:
    steps = op.attrs["steps"]
    if not steps:
        raise AttrError("steps", "a Fused op has at least one step")
    for j, step in enumerate(steps):
        check_step_fields(step, f"steps[{j}]")
    g, values = scratch_inputs(op)
    with g.as_default():
        for j, step in enumerate(steps):
            values += build_step(values, step, f"steps[{j}]")
    if values[-1].dtype != op.attrs["dtype"]:
        raise AttrError("dtype", f"the last step makes {values[-1].dtype}, the op says {op.attrs['dtype']}")
