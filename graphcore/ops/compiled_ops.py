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

from .. import dtypes as dt
from .. import attr_schema as schema
from ..attr_schema import BOOL, MAX_STEPS, NONNEG_INT, AttrError, either, one_of, opt, record, tuple_of
from ..errors import GraphError
from ..registry import CHEAP, define_op, get_op_def
from .fused_ops import (ANY_STEP, ATTRS, DTYPE, INPUTS, STEP_ATTRS, STEP_FIELDS, TYPE, build_step, check_step_fields,
                        note_failed_step, scratch_inputs)

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


_INDICES = tuple_of(NONNEG_INT, MAX_STEPS)
compiled_loop_op = define_op("CompiledLoop", shape=_loop_rule, kernel=run_loop, num_outputs=None, cost=CHEAP, attrs={
    "n_vars": NONNEG_INT, "cond_steps": tuple_of(ANY_STEP, MAX_STEPS), "pred": NONNEG_INT,
    "body_steps": tuple_of(ANY_STEP, MAX_STEPS), "nexts": _INDICES, "exits": _INDICES,
    "dtypes": opt(tuple_of(schema.DTYPE, MAX_STEPS)), "shapes": opt(tuple_of(schema.SHAPE, MAX_STEPS)),
    "backend": opt(one_of(None, "numba"))})

# a loop step: a fused step's fields (its dtype a tuple for an inner loop), and its guard
_LOOP_STEP_FIELDS = STEP_FIELDS[:DTYPE] + (either(schema.DTYPE, tuple_of(schema.DTYPE, MAX_STEPS)),
                                                 tuple_of(record(NONNEG_INT, BOOL), 1000))
_MERGE_FIELDS = (one_of("Merge"), record(NONNEG_INT, NONNEG_INT, NONNEG_INT), STEP_ATTRS) + _LOOP_STEP_FIELDS[3:]


@compiled_loop_op.checked_when_loaded
def _check_loaded_loop(op) -> None:
    """The loop's steps build, from its inputs, the values they record; every index names a
    value that exists where it is read (the executor's code generators rely on this)."""
    a = op.attrs
    n_vars = a["n_vars"]
    if not 0 < n_vars <= len(op.inputs):
        raise AttrError("n_vars", f"{n_vars} loop variables, but the op has {len(op.inputs)} inputs")
    g, values = scratch_inputs(op)
    with g.as_default():
        for key in ("cond_steps", "body_steps"):
            for j, step in enumerate(a[key]):
                where = f"{key}[{j}]"
                check_step_fields(step, where, _MERGE_FIELDS if step[TYPE] == "Merge" else _LOOP_STEP_FIELDS)
                for k, (p, _) in enumerate(step[GUARD]):
                    _read_bool(values, p, f"{where}[{GUARD}][{k}][0]")
                if step[TYPE] == "Merge":
                    t, f, p = step[INPUTS]
                    _read_bool(values, p, f"{where}[{INPUTS}][2]")
                    for k in (0, 1):
                        _read(values, step[INPUTS][k], f"{where}[{INPUTS}][{k}]", step[DTYPE])
                    values.append(values[t])
                else:
                    values += build_step(values, step, where)
            if key == "cond_steps":
                _read_bool(values, a["pred"], "pred")
    if len(a["nexts"]) != n_vars:
        raise AttrError("nexts", f"{len(a['nexts'])} next values for {n_vars} loop variables")
    for k, i in enumerate(a["nexts"]):
        _read(values, i, f"nexts[{k}]", op.inputs[k].dtype)
    for k, i in enumerate(a["exits"]):
        if i >= n_vars:
            raise AttrError(f"exits[{k}]", f"{i} is not one of the {n_vars} loop variables")
    made = [op.inputs[i].dtype for i in a["exits"]]
    if [t.dtype for t in op.outputs] != made:
        raise AttrError("exits", "the loop variables it returns are not of its outputs' dtypes")


def _read(values: list, i: int, where: str, dtype) -> None:
    if i >= len(values):
        raise AttrError(where, f"refers to value {i}, but only {len(values)} exist there")
    if values[i].dtype != dtype:
        raise AttrError(where, f"value {i} is {values[i].dtype}, {dtype} is expected there")


def _read_bool(values: list, i: int, where: str) -> None:
    _read(values, i, where, dt.bool_)


@compiled_loop_op.gradient
def _compiled_loop_grad(op, *dys):
    """Refused, not zero: a compiled loop keeps no per-iteration values to differentiate."""
    raise GraphError(
        f"cannot differentiate {op.name}, a loop compiled with jit_compile=True (created at {op.location()}): "
        "it keeps no per-iteration values; take the gradient inside the function (autograph.grad, "
        "graphcore.gradients while tracing), where it is built before the loop is compiled, or trace "
        "it with jit_compile=False")
