"""The kernel the executor runs for a `CompiledLoop` op (graphcore/ops/compiled_ops.py):
the loop as Python source, each step one line calling the kernel the executor would have
run for its op (executor/fused_kernel.step_kernel), values numbered as in the op's
attributes. For `while i < n: a, b, i = b, a + b, i + 1`:

    def loop(x0, x1, x2, x3):
        v0, v1, v2, v3 = x0, x1, x2, x3
        try:
            while True:
                v4 = k4(v2, v3)
                if not v4:
                    break
                v5 = k5(v0, v1)
                v6 = k6(v2, c6)
                v0, v1, v2 = v1, v5, v6
            return v0
        except Exception:
            return reference(x0, x1, x2, x3)

A step of a cond's branch runs under an `if` on the predicates around it; a cond's Merge
is `v9 = v7 if v4 else v8`. The same kernels run in the same order as on the frame
executor, on the same values, so the results are the same; on an exception the reference kernel runs the loop again step by step and raises
marked with the failing step, whose name and line the error then gives.

That is the guarded kernel. Where the loop's values are numpy scalars, a faster one runs
first (executor/scalar_loop.py): their types checked once at the entry, the operators
written without guards, handing over to the guarded kernel wherever numpy would wrap
around, warn or raise.
"""
from __future__ import annotations

import functools

from graphcore.ops.compiled_ops import GUARD, outputs_of, run_loop
from graphcore.ops.fused_ops import ATTRS, DTYPE, INPUTS, TYPE
from graphcore.registry import get_op_def

from .fused_kernel import step_kernel
from .codegen import Source, args, check_loop, compile_function, ident
from .interrupt import python_loop
from .numba_loop import NumbaRefused, numba_loop_kernel
from .scalar_kernels import scalar_source
from .scalar_loop import scalar_loop_kernel


def compiled_loop_kernel(op):
    """A fast kernel for the CompiledLoop op `op`: numba's if it asks for it and every step
    has an exact machine form (executor/numba_loop.py), else generated Python (saying why
    numba's was refused in its `numba_refused`). Its
    attributes are checked first (codegen.check_loop): a malformed loop is a GraphError
    naming the op, and what the generators write from them is only ints in range."""
    check_loop(op.name, op.attrs, len(op.inputs))
    dtypes = [t.dtype.np_dtype for t in op.inputs]
    shapes = [t.shape for t in op.inputs]
    where = _where(op)
    if op.attrs.get("backend") == "numba":
        try:
            return numba_loop_kernel(op.attrs, dtypes, shapes, op.name, where=where,
                                     fallback=lambda: compiled_loop_kernel_for(op.attrs, dtypes, op.name, shapes))
        except NumbaRefused as e:
            kernel = python_loop(compiled_loop_kernel_for(op.attrs, dtypes, op.name, shapes), where)
            kernel.numba_refused = str(e)  # (the listing says why)
            return kernel
    return python_loop(compiled_loop_kernel_for(op.attrs, dtypes, op.name, shapes), where)


def _where(op) -> str:
    """The op as a stopped run's error names it: its name and the user's line."""
    try:
        return f"the compiled loop {op.name} (created at {op.location()})"
    except Exception:  # noqa: BLE001 (an op without a source line)
        return f"the compiled loop {op.name}"


def _kernel_of(step, input_dtypes: list):
    """The kernel of a step: an inner compiled loop's generated one, else as a fused step's."""
    if step[TYPE] == "CompiledLoop":
        return compiled_loop_kernel_for(step[ATTRS], input_dtypes, step[3])
    return step_kernel(step, input_dtypes)


def compiled_loop_kernel_for(a: dict, input_dtypes: list, name: str, shapes=None):
    """The kernel of a CompiledLoop op with attributes `a` (checked) on inputs of these
    numpy dtypes (and static shapes, if known): the fast one for numpy scalars
    (executor/scalar_loop.py), which hands over to the guarded one, or the guarded one alone."""
    guarded = guarded_loop_kernel_for(a, input_dtypes, name)
    return scalar_loop_kernel(a, input_dtypes, name, guarded, shapes) or guarded


def guarded_loop_kernel_for(a: dict, input_dtypes: list, name: str):
    """The guarded kernel: each operator checks its operands (executor/scalar_kernels.py),
    the reference runs the loop again on an exception."""
    n_in = len(input_dtypes)
    steps = list(a["cond_steps"]) + list(a["body_steps"])
    dtypes = list(input_dtypes)
    env = {"reference": functools.partial(run_loop, **a)}
    lines = []
    for step in steps:
        i = len(dtypes)  # the number of the step's (first) value
        k = outputs_of(step)
        dtypes += [d.np_dtype for d in step[DTYPE]] if k > 1 else [step[DTYPE].np_dtype]
        targets = args("v", range(i, i + k))
        if step[TYPE] == "Const":
            env[ident("c", i)] = step[ATTRS]["value"]
            lines.append(f"{ident('v', i)} = {ident('c', i)}")
            continue
        if step[TYPE] == "Merge":  # a cond's: the value of the branch its predicate took
            t, f, p = step[INPUTS]
            line = f"{ident('v', i)} = {ident('v', t)} if {ident('v', p)} else {ident('v', f)}"
        else:
            in_dtypes = [dtypes[x] for x in step[INPUTS]]
            inline = None if step[ATTRS] or k > 1 else \
                scalar_source(step[TYPE], in_dtypes, [ident("v", x) for x in step[INPUTS]], ident("k", i),
                              ident("T", i))
            if inline is not None:  # the operator written out: no call where a scalar kernel would use one
                env[ident("k", i)], env[ident("T", i)] = get_op_def(step[TYPE]).kernel, inline[1]
                line = f"{ident('v', i)} = {inline[0]}"
            else:
                env[ident("k", i)] = _kernel_of(step, in_dtypes)
                line = f"{targets} = {ident('k', i)}({args('v', step[INPUTS])})"
        if step[GUARD]:  # in a cond's branch: only when its predicates say so
            test = " and ".join(ident("v", p) if branch else f"not {ident('v', p)}" for p, branch in step[GUARD])
            line = f"if {test}: {line}"
        lines.append(line)
    n_cond = len(a["cond_steps"])
    params = args("x", range(n_in))
    out = [ident("v", k) for k in a["exits"]]
    src = Source()
    with src.block(f"def loop({params})"):
        src.line(f"{args('v', range(n_in))} = {params}")
        with src.block("try"):
            with src.block("while True"):
                src.extend(lines[:n_cond])
                with src.block(f"if not {ident('v', a['pred'])}"):
                    src.line("break")
                src.extend(lines[n_cond:])
                src.line(f"{args('v', range(a['n_vars']))} = {args('v', a['nexts'])}")
            src.line(f"return {out[0] if len(out) == 1 else '(' + ', '.join(out) + ')'}")
        with src.block("except Exception"):
            src.line(f"return reference({params})")
    source = src.text()
    loop = compile_function(source, "loop", env, "compiled loop", name)
    loop.source = source
    return loop
