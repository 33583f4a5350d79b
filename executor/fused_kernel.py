"""The kernel the executor runs for a `Fused` op (graphcore/ops/fused_ops.py): Python
source generated from its steps, one line per step, each calling the kernel the step's op
would have had (the scalar operator of scalar_kernels.py where it applies, else the op's
numpy kernel with its attributes bound), constants bound once. For `tanh(x @ w + b)`:

    def fused(x0, x1, x2):
        try:
            v3 = k0(x0, x1)
            v4 = k1(v3, x2)
            return k2(v4)
        except Exception:
            return reference(x0, x1, x2)

On an exception the reference kernel (fused_ops.run_steps) runs the steps again, one at
a time, and raises marked with the step that failed, so the error names that op and its
line. Values are the same as the unfused ops': the same kernels run in the same order.
"""
from __future__ import annotations

import functools

from graphcore.ops.fused_ops import ATTRS, DTYPE, INPUTS, TYPE, run_steps
from graphcore.registry import get_op_def

from .codegen import Source, args, check_steps, compile_function, ident
from .op_kernels import specialized_kernel
from .scalar_kernels import scalar_kernel_for


def fused_kernel(op):
    """A fast kernel for the Fused op `op`, built from its steps (checked first:
    codegen.check_steps, a malformed op is a GraphError naming it)."""
    steps = op.attrs.get("steps") if isinstance(op.attrs, dict) else None
    check_steps(op.name, steps, len(op.inputs))
    arrays = [(t.shape.rank or 0) > 0 for t in op.inputs]
    return fused_kernel_for(steps, [t.dtype.np_dtype for t in op.inputs], op.name, arrays)


def step_kernel(step, input_dtypes: list, arrays: bool = False):
    """The kernel one step of a Fused op or a compiled loop runs: what the executor would
    run for the op it stands for (a scalar operator or op_kernels' kernel where one applies;
    not where an input is known to be an array, `arrays`: the operator's test would only cost
    a call)."""
    if step[TYPE] == "Fused":
        return fused_kernel_for(step[ATTRS]["steps"], input_dtypes, step[3])
    op_def = get_op_def(step[TYPE])
    if step[ATTRS]:
        return specialized_kernel(step[TYPE], step[ATTRS]) or functools.partial(op_def.kernel, **step[ATTRS])
    if arrays:
        return op_def.kernel
    return scalar_kernel_for(step[TYPE], input_dtypes, op_def.kernel) or op_def.kernel


def _makes_array(step, inputs_are_arrays: list) -> bool:
    """Is the step's value known to be an array of rank 1 or more: an elementwise op's with
    such an input (broadcasting keeps its rank)?"""
    if step[TYPE] in ("Fused", "Const") or not any(inputs_are_arrays):
        return False
    return bool(get_op_def(step[TYPE]).elementwise)


def fused_kernel_for(steps, input_dtypes: list, name: str, arrays: list | None = None):
    """The kernel of a Fused op with these (checked) steps and input dtypes (numpy's);
    `arrays`: per input, whether it is known to be an array (its static rank 1 or more)."""
    n = len(input_dtypes)
    dtypes = list(input_dtypes) + [s[DTYPE].np_dtype for s in steps]
    arrays = list(arrays) if arrays is not None else [False] * n
    env = {"reference": functools.partial(run_steps, steps=steps)}
    params = args("x", range(n))
    names = [ident("x", i) for i in range(n)]
    src = Source()
    with src.block(f"def fused({params})"):
        with src.block("try"):
            for j, step in enumerate(steps):
                ins_arrays = [arrays[i] for i in step[INPUTS]]
                arrays.append(_makes_array(step, ins_arrays))
                if step[TYPE] == "Const":
                    env[ident("c", j)] = step[ATTRS]["value"]
                    names.append(ident("c", j))
                    continue
                env[ident("k", j)] = step_kernel(step, [dtypes[i] for i in step[INPUTS]], any(ins_arrays))
                src.line(f"{ident('v', j)} = {ident('k', j)}({', '.join(names[i] for i in step[INPUTS])})")
                names.append(ident("v", j))
            src.line(f"return {names[-1]}")
        with src.block("except Exception"):
            src.line(f"return reference({params})")
    source = src.text()
    fused = compile_function(source, "fused", env, "fused kernel of", name)
    fused.source = source
    return fused
