"""`jit_compile="numba"`: a CompiledLoop whose values are numbers or arrays of known rank and
whose steps all have an exact form runs as one numba-compiled function (numba is an
optional extra: pip install -e '.[jit]').

Exact means the same value, bit for bit, as the numpy kernel the frame executor runs:
  + - * on integers wrap around as numpy's do; // and % on integers give 0 for a zero
    divisor, as numpy does (numba's error_model="numpy"), and a divisor of -1 is written
    out (the machine division would trap on the smallest integer);
  + - * / on floats are IEEE operations in both; sqrt is correctly rounded in both;
  comparisons, logical ops, Select and a cond's Merge are choices;
  Maximum/Minimum are written as numpy's loop computes them (a NaN wins);
  each result is cast to the dtype the op declares;
  a Cast is exact except float -> int (out of range or NaN, numpy's result is its own).
numba's transcendental functions (exp, tanh, ...) are libm's, which differ from numpy's in
the last bit: on scalars a loop with one keeps the generated Python kernel
(executor/compiled_loop.py). Values of known rank may be arrays (C-contiguous, checked at
each call): an op on an array calls numpy's own loop for it (executor/numba_numpy_loops.py:
elementwise ops whose kernel is their ufunc, MatMul 2-D, x[i]), and where numpy's call cannot
be reproduced at run time, or numpy would report a floating-point exception, the loop hands
the call over to the Python kernel. A Fused step is written out step by step; an inner
compiled loop becomes a numba function it calls.
"""
from __future__ import annotations

import numpy as np

from graphcore.errors import GraphError
from graphcore.ops.compiled_ops import GUARD, outputs_of
from graphcore.ops.fused_ops import ATTRS, DTYPE, INPUTS, TYPE
from graphcore.registry import get_op_def, registered_ops

from . import numba_numpy_loops as numpy_loops
from .codegen import Source, args, compile_function, ident, label, literal
from .interrupt import numba_loop, python_loop
from .scalar_kernels import _binary_form

_TYPES = {np.dtype(np.int64): "np.int64", np.dtype(np.int32): "np.int32", np.dtype(np.float64): "np.float64",
          np.dtype(np.float32): "np.float32", np.dtype(np.bool_): "np.bool_"}
_INTS = {np.dtype(np.int64), np.dtype(np.int32)}
_FLOATS = {np.dtype(np.float64), np.dtype(np.float32)}
# the op types written as Python operators on scalars (OpDef.expr), by their operator: + - *
# are exact on machine ints (wrapping as numpy's kernels do) and floats alike
_FORMS = {t: f for t in registered_ops() if (f := _binary_form(t)) is not None}
_ARITHMETIC = {t: sym for t, (d, sym) in _FORMS.items() if d.family == "arithmetic" and sym in ("+", "-", "*")}
_COMPARISONS = {t: sym for t, (d, sym) in _FORMS.items() if d.family == "comparison"}


class NumbaRefused(Exception):
    """Why a loop keeps the generated Python kernel (a step without an exact machine form,
    an array): its message names the step and its line, for the listing
    (`autograph graph ... --numba`)."""



def numba_available() -> bool:
    try:
        import numba  # noqa: F401,PLC0415 (optional)
    except ImportError:
        return False
    return True


def require_numba() -> None:
    if not numba_available():
        raise GraphError("jit_compile='numba' needs numba: pip install -e '.[jit]' (or pip install 'numba==0.68.1'); "
                         "jit_compile=True compiles loops to Python without it")


def _expr(kind: str, args: list[str], in_dtypes: list, out) -> str:
    """The exact expression of one op on scalars named `args` (see the module docstring)."""
    out = np.dtype(out)
    if out not in _TYPES or any(np.dtype(d) not in _TYPES for d in in_dtypes):
        raise NumbaRefused(f"values of {out}: numba loops take bool, int32, int64, float32 and float64 scalars")
    T = _TYPES[out]
    same = len({np.dtype(d) for d in in_dtypes}) <= 1
    d0 = np.dtype(in_dtypes[0]) if in_dtypes else None
    if kind == "Identity":
        return args[0]
    if kind in _ARITHMETIC and same and (d0 in _INTS or d0 in _FLOATS):
        return f"{T}({args[0]} {_ARITHMETIC[kind]} {args[1]})"
    if kind == "AddN" and same and (d0 in _INTS or d0 in _FLOATS):  # left to right, as its kernel adds
        total = args[0]
        for x in args[1:]:
            total = f"{T}({total} + {x})"
        return total
    if kind == "RealDiv" and same and d0 in _FLOATS:
        return f"{T}({args[0]} / {args[1]})"
    if kind in ("FloorDiv", "Mod") and same and d0 in _INTS:
        a, b = args
        if kind == "FloorDiv":
            return f"{T}(-{a} if {b} == -1 else {a} // {b})"
        return f"{T}(0 if {b} == -1 else {a} % {b})"
    if kind == "Cast":  # exact where numpy's and the machine's conversions agree
        if d0 == out:
            return args[0]
        if out == np.dtype(np.bool_):
            return f"({args[0]} != 0)"
        if d0 in _FLOATS and out in _INTS:
            raise NumbaRefused("a cast from float to int: out of range or for NaN numpy's result is its own")
        return f"{T}({args[0]})"
    if kind == "Sign" and d0 in _INTS:
        return f"{T}(1 if {args[0]} > 0 else (-1 if {args[0]} < 0 else 0))"
    if kind == "Abs" and d0 in _INTS:  # (the smallest integer stays itself, as in numpy)
        return f"{T}(-{args[0]} if {args[0]} < 0 else {args[0]})"
    if kind == "Abs" and d0 in _FLOATS:
        return f"{T}(abs({args[0]}))"
    if kind == "Neg" and (d0 in _INTS or d0 in _FLOATS):
        return f"{T}(-{args[0]})"
    if kind == "Square" and (d0 in _INTS or d0 in _FLOATS):
        return f"{T}({args[0]} * {args[0]})"
    if kind == "Sqrt" and d0 in _FLOATS:
        return f"{T}(np.sqrt({args[0]}))"
    if kind in _COMPARISONS and same and d0 != np.dtype(np.bool_):
        return f"({args[0]} {_COMPARISONS[kind]} {args[1]})"
    if kind in ("LogicalAnd", "LogicalOr") and same and d0 == np.dtype(np.bool_):
        return f"({args[0]} {'and' if kind == 'LogicalAnd' else 'or'} {args[1]})"
    if kind == "LogicalNot" and d0 == np.dtype(np.bool_):
        return f"(not {args[0]})"
    if kind in ("Maximum", "Minimum") and same and (d0 in _INTS or d0 in _FLOATS):
        a, b = args
        cmp = ">=" if kind == "Maximum" else "<="
        nan = f" or {a} != {a}" if d0 in _FLOATS else ""
        return f"{T}({a} if ({a} {cmp} {b}{nan}) else {b})"
    if kind == "Select" and len({np.dtype(d) for d in in_dtypes[1:]}) == 1 and d0 == np.dtype(np.bool_):
        return f"{T}({args[1]} if {args[0]} else {args[2]})"
    raise NumbaRefused(f"{kind} on {', '.join(str(np.dtype(d)) for d in in_dtypes)}: no form in numba known to give "
                   "numpy's very bits (numba's transcendental functions may differ in the last bit)")


def _python_expr(kind: str, args: list[str], in_dtypes: list, out) -> str:
    """A PythonArith step (Python numbers, Python's arithmetic): a checked helper that
    raises where Python raises or int64 cannot hold Python's result; the compiled loop
    then hands the call to the Python kernel, which reports it at the user's line."""
    d = {np.dtype(x) for x in in_dtypes}
    form = _binary_form(kind)
    helper = _CHECKED_INT.get(form[1]) if form is not None else None
    if d == {np.dtype(np.int64)} and np.dtype(out) == np.dtype(np.int64) and helper is not None:
        return f"{helper}({args[0]}, {args[1]})"
    if d == {np.dtype(np.float64)} and kind == "RealDiv":
        return f"py_float_div({args[0]}, {args[1]})"
    raise NumbaRefused(f"Python's {form[1] if form else kind} on {', '.join(sorted(map(str, d)))}: Python's rules are kept "
                   "by the Python kernel")  # (int / int, float // and %, powers)


# Python's int operators, checked against int64 (by the operator an op type's expr writes)
_CHECKED_INT = {"+": "py_int_add", "-": "py_int_sub", "*": "py_int_mul", "//": "py_int_floordiv",
                "%": "py_int_mod"}
_INT64_MIN = -2 ** 63
_LEFT_INT64 = "a Python int left int64"


def _checked_helpers(add_ovf, sub_ovf, mul_ovf) -> dict:
    """The checked helpers, by name: + - * from LLVM's overflow intrinsics (`add_ovf` etc.:
    the wrapped result and whether the exact one left int64; one instruction and its flag,
    never a test of a wrapped value, which LLVM may fold away since numba's integer
    arithmetic is "no signed wrap"; testing the operands first cost an integer division
    per product, 20x the time of nested_loops' inner loop); // and % test the divisor."""
    def py_int_add(a, b):
        value, over = add_ovf(a, b)
        if over:
            raise OverflowError(_LEFT_INT64)
        return value

    def py_int_sub(a, b):
        value, over = sub_ovf(a, b)
        if over:
            raise OverflowError(_LEFT_INT64)
        return value

    def py_int_mul(a, b):
        value, over = mul_ovf(a, b)
        if over:
            raise OverflowError(_LEFT_INT64)
        return value

    def py_int_floordiv(a, b):
        if b == 0:
            raise ZeroDivisionError("integer division or modulo by zero")
        if b == -1:
            if a == _INT64_MIN:
                raise OverflowError(_LEFT_INT64)
            return -a
        return a // b

    def py_int_mod(a, b):
        if b == 0:
            raise ZeroDivisionError("integer division or modulo by zero")
        if b == -1:
            return a - a  # (0 of a's type)
        return a % b

    def py_float_div(a, b):
        if b == 0.0:
            raise ZeroDivisionError("float division by zero")
        return a / b
    return {f.__name__: f for f in (py_int_add, py_int_sub, py_int_mul, py_int_floordiv, py_int_mod, py_float_div)}


_HELPERS: dict = {}


def _python_helpers() -> dict:
    """The checked helpers (by the names _python_expr writes) and read_flag, compiled once
    per process."""
    if not _HELPERS:
        import numba  # noqa: PLC0415 (optional; checked by require_numba)

        ovf = [_overflow_intrinsic(kind) for kind in ("sadd", "ssub", "smul")]
        _HELPERS.update({name: numba.njit(error_model="numpy", cache=False)(fn)
                         for name, fn in _checked_helpers(*ovf).items()})
        _HELPERS["read_flag"] = _read_flag_intrinsic()
    return _HELPERS


def _overflow_intrinsic(kind: str):
    """(a, b) -> (a op b modulo 2**64, 1 if the exact result is outside int64) on two int64,
    by LLVM's llvm.<kind>.with.overflow (sadd, ssub, smul)."""
    from llvmlite import ir  # noqa: PLC0415 (optional, with numba)
    from numba.core import types  # noqa: PLC0415
    from numba.extending import intrinsic  # noqa: PLC0415

    @intrinsic
    def with_overflow(typingctx, a, b):
        if a != types.int64 or b != types.int64:
            return None  # (int64 operands only: _python_expr writes these for int64 steps)
        signature = types.UniTuple(types.int64, 2)(types.int64, types.int64)

        def codegen(context, builder, sig, args):
            pair = getattr(builder, f"{kind}_with_overflow")(args[0], args[1])
            over = builder.zext(builder.extract_value(pair, 1), ir.IntType(64))
            return context.make_tuple(builder, sig.return_type, [builder.extract_value(pair, 0), over])
        return signature, codegen
    return with_overflow


def _read_flag_intrinsic():
    """read_flag(address): the int64 at `address` (a flag's: interrupt.Flag), by an atomic
    load, which the compiler must do each time the code asks (a plain load of memory the
    loop never writes could be done once, before the loop, and a flag set later never
    seen). An address, not the array: an int argument is dispatched faster."""
    from llvmlite import ir  # noqa: PLC0415 (optional, with numba)
    from numba.core import types  # noqa: PLC0415
    from numba.extending import intrinsic  # noqa: PLC0415

    @intrinsic
    def read_flag(typingctx, address):
        def codegen(context, builder, signature, args):
            pointer = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
            return builder.load_atomic(pointer, "acquire", 8)
        return types.int64(types.int64), codegen
    return read_flag


def _const(value, dtype) -> str:
    arr = np.asarray(value)
    if arr.shape != () or np.dtype(dtype) not in _TYPES:
        raise NumbaRefused(f"a constant of shape {list(arr.shape)} and dtype {np.dtype(dtype)}: scalars only")
    v = arr.item()
    if isinstance(v, float) and not np.isfinite(v) or not isinstance(v, (bool, int, float)):
        raise NumbaRefused("a constant that is not a finite number")  # (nan/inf literals: kept simple)
    return f"{_TYPES[np.dtype(dtype)]}({literal(v)})"


def numba_loop_kernel(attrs: dict, input_dtypes: list, input_shapes: list, name: str, fallback, where: str = ""):
    """The numba-compiled kernel of a CompiledLoop with these attributes; NumbaRefused, saying
    why, if some step has no exact form (a numpy loop, for arrays) or a value's rank is not known.
    `fallback()` gives the kernel to run instead should a call not fit the compiled signature or
    be handed over (its `handed_over` counts those calls)."""
    require_numba()
    ranks = []
    for k, (d, s) in enumerate(zip(input_dtypes, input_shapes)):
        if d is None or s.dims is None:
            what = "a tensor list" if d is None else "an array of unknown rank"
            raise NumbaRefused(f"its input {k} is {what}: numba loops take numbers and arrays of known rank")
        ranks.append(len(s.dims))
    if any(ranks) and (why := numpy_loops.unavailable()) is not None:
        raise NumbaRefused(why)
    fn, source = _compile(attrs, [np.dtype(d) for d in input_dtypes], name, ranks)
    # the compiled signature's own entry: numba's dispatcher would check each argument's type again
    entry = fn.overloads[fn.signatures[0]].entry_point
    types = [None if r else np.dtype(d).type for d, r in zip(input_dtypes, ranks)]  # (None: an array)
    arrays = [(k, np.dtype(d), r) for k, (d, r) in enumerate(zip(input_dtypes, ranks)) if r]
    out_types = [None if r else np.dtype(d.np_dtype).type for d, r in zip(attrs["dtypes"], fn.exit_ranks)]
    other: list = []
    stoppable = numba_loop(entry, attrs["n_vars"], len(attrs["exits"]), where)
    fp_checked = fn.fp_checked

    def loop(*inputs):
        try:
            for k, d, r in arrays:  # (the entry takes an array as compiled for without a check: checked here)
                x = inputs[k]
                if type(x) is not np.ndarray or x.dtype != d or x.ndim != r or not x.flags.c_contiguous \
                        or not x.flags.aligned:
                    raise TypeError("not the compiled signature")
            # (exactly the scalar type compiled for: a 0-d array or a Python number converted; a numpy
            # scalar's constructor costs a microsecond, so not called on one of that type already)
            values = [x if T is None or type(x) is T else T(x) for x, T in zip(inputs, types)]
            if fp_checked:  # the exceptions numpy would report under np.errstate now, none raised yet
                values.append(numpy_loops.reported_fp_exceptions())
                numpy_loops.fp_clear()
            result = stoppable(*values)
        except Exception as e:  # noqa: BLE001 (not the compiled signature, or handed over: the Python kernel decides)
            stop = _stop_behind(e)
            if stop is not None:
                raise stop from None
            loop.handed_over += 1
            if not other:
                other.append(python_loop(fallback(), where))
            return other[0](*inputs)
        if len(out_types) == 1:
            return result[0] if out_types[0] is None else out_types[0](result[0])
        return tuple(v if T is None else T(v) for T, v in zip(out_types, result))
    loop.source = source
    loop.backend = "numba"
    loop.handed_over = 0  # (calls the Python kernel ran instead)
    return loop


def _stop_behind(error: BaseException) -> BaseException | None:
    """A KeyboardInterrupt (or other BaseException) behind `error`: a signal's handler can run
    in the Python call numba makes to box an array it returns (_numba_unpickle, for its
    dtype), and CPython then reports "returned a result with an exception set", caused by it."""
    seen = 0
    while error is not None and seen < 8:
        if not isinstance(error, Exception):
            return error
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None


def _compile(a: dict, input_dtypes: list, name: str, input_ranks: list, outermost: bool = True):
    """The numba function of a loop: (inputs..., stop flag) -> (stopped, exits..., loop
    variables...). Each iteration ends reading the flag (executor/interrupt.py): one
    load, about 0.2 ns, where counting iterations to read it every few thousand cost
    0.8 ns (a loop-carried counter), and a `for` over a few thousand iterations inside
    the `while` let LLVM, which takes numba's integer arithmetic not to wrap, fold away
    wrap-arounds numpy has (tests/autograph/test_numba_loops.py). Set, it returns stopped
    with the variables the next iteration would start from (exits zero), so that the loop
    can go on from there; an inner loop that stopped makes its outer loop stop at the
    start of its iteration. A loop with arrays (the outermost one) takes one more input,
    fp_mask, the floating-point exceptions np.errstate does not ignore (its caller clears the
    status first, not at a resume: executor/numba_numpy_loops.py), and hands over if one was
    raised when it ends. The function's `exit_ranks` are its exits' ranks (0: a scalar)."""
    import numba  # noqa: PLC0415 (optional; checked by require_numba)

    n_in, n_vars = len(input_dtypes), a["n_vars"]
    dtypes, ranks = list(input_dtypes), list(input_ranks)
    env: dict = {"np": np, **_python_helpers()}
    cond_lines = [x for step in a["cond_steps"] for x in _step_lines(step, dtypes, ranks, env, name)]
    body_lines = [x for step in a["body_steps"] for x in _step_lines(step, dtypes, ranks, env, name)]
    for k, nxt in enumerate(a["nexts"]):
        if ranks[nxt] != ranks[k] or dtypes[nxt] != dtypes[k]:
            raise NumbaRefused(f"loop variable {k} changes from rank {ranks[k]} {dtypes[k]} to rank {ranks[nxt]} "
                               f"{dtypes[nxt]} in an iteration: a numba variable keeps one type")
    exit_values = [_zero(dtypes[k], ranks[k]) for k in a["exits"]]
    state = [ident("v", k) for k in range(n_vars)]
    returned = [ident("v", k) for k in a["exits"]]
    check = []
    fp_checked = any(ranks) and outermost
    if fp_checked:  # numpy would have warned or raised: its kernels run instead
        env["fp_raised"] = numpy_loops.fp_raised()
        env["HandOver"] = numpy_loops.HandOver
        check = ["if fp_raised() & fp_mask:", "    raise HandOver('a floating-point exception numpy reports')"]
    stopped = ["return (True, " + "".join(f"{x}, " for x in exit_values) + "".join(f"{v}, " for v in state) + ")"]
    params = args("x", range(n_in))
    src = Source()
    with src.block(f"def loop({params}{', ' if params else ''}{'fp_mask, ' if fp_checked else ''}stop_flag)"):
        src.line(args("v", range(n_in)) + f"{',' if n_in == 1 else ''} = {params}")
        with src.block("while True"):
            src.extend(_with_stopped(cond_lines, stopped))
            with src.block(f"if not {ident('v', a['pred'])}"):
                src.line("break")
            src.extend(_with_stopped(body_lines, stopped))
            src.line(f"{', '.join(state)}{',' if n_vars == 1 else ''} = {args('v', a['nexts'])}")
            with src.block("if read_flag(stop_flag)"):
                src.extend(stopped)
        src.extend(check)
        src.line("return (False, " + "".join(f"{x}, " for x in returned) + "".join(f"{v}, " for v in state) + ")")
    source = src.text()
    loop = compile_function(source, "loop", env, "numba loop", name)
    try:
        fn = numba.njit(error_model="numpy", cache=False, nogil=True)(loop)
        fn.compile((*(_numba_type(d, r) for d, r in zip(input_dtypes, input_ranks)),
                    *((numba.int64,) if fp_checked else ()), numba.int64))
        fn.disable_compile()  # one signature: other argument types go to the fallback
    except numba.core.errors.NumbaError as e:
        raise NumbaRefused(f"numba could not compile it: {str(e).strip().splitlines()[0][:200]}") from None
    fn.exit_ranks = [ranks[k] for k in a["exits"]]
    fn.fp_checked = fp_checked
    return fn, source


def _numba_type(dtype, rank: int):
    import numba  # noqa: PLC0415 (optional; checked by require_numba)

    item = numba.from_dtype(np.dtype(dtype))
    return numba.types.Array(item, rank, "C") if rank else item


def _with_stopped(lines: list[str], stopped: list[str]) -> list[str]:
    """The lines with an inner loop's stop (_STOPPED, indented) made the lines of this loop's."""
    out = []
    for x in lines:
        if x.strip() == _STOPPED:
            pad = x[:len(x) - len(x.lstrip())]
            out += [pad + y for y in stopped]
        else:
            out.append(x)
    return out


_STOPPED = "#STOPPED"  # (a line the loop's stopped return replaces: an inner loop stopped)


def _step_lines(step, dtypes: list, ranks: list, env: dict, name: str) -> list[str]:
    """The lines of one loop step; its values are numbered from len(dtypes), which grows
    (with `ranks`, 0 for a scalar). A refusal names the step (the innermost one, in an
    inner loop) and its line."""
    try:
        return _step_code(step, dtypes, ranks, env, name)
    except NumbaRefused as e:
        if getattr(e, "step", None) is None:
            e.step = step
            e.args = (f"{label(step[3])} ({step[TYPE]}, at {label(step[4])}): {e.args[0] if e.args else ''}",)
        raise


def _step_code(step, dtypes: list, ranks: list, env: dict, name: str) -> list[str]:
    if any(d.np_dtype is None for d in (step[DTYPE] if isinstance(step[DTYPE], tuple) else (step[DTYPE],))):
        raise NumbaRefused("a tensor list: numba loops take numbers and arrays only")
    i = len(dtypes)
    k = outputs_of(step)
    out_dtypes = [np.dtype(d.np_dtype) for d in step[DTYPE]] if k > 1 else [np.dtype(step[DTYPE].np_dtype)]
    kind, ins = step[TYPE], step[INPUTS]
    v = ident("v", i)
    values = [ident("v", x) for x in ins]
    in_dtypes, in_ranks = [dtypes[x] for x in ins], [ranks[x] for x in ins]
    out_ranks = [0] * k
    if kind == "Const":
        code = [f"{v} = {_const(step[ATTRS]['value'], out_dtypes[0])}"]
    elif kind == "Merge":  # a cond's: the value of the branch its predicate took
        t, f, p = values
        if in_ranks[0] != in_ranks[1]:
            raise NumbaRefused("a cond whose branches give values of different ranks")
        out_ranks = [in_ranks[0]]
        code = [f"{v} = {t} if {p} else {f}"]
    elif kind == "Fused":
        code, out_ranks[0] = _fused_lines(step, values, in_dtypes, in_ranks, v, env)
    elif kind == "CompiledLoop":
        kernel, result = ident("k", i), ident("r", i)
        env[kernel], _ = _compile(step[ATTRS], in_dtypes, name + "/inner", in_ranks, outermost=False)
        out_ranks = list(env[kernel].exit_ranks)
        code = [f"{result} = {kernel}({', '.join(values + ['stop_flag'])})", f"if {result}[0]:", f"    {_STOPPED}"]
        code += [f"{ident('v', i + x)} = {result}[{literal(1 + x)}]" for x in range(k)]
    elif kind == "PythonArith":
        if any(in_ranks):
            raise NumbaRefused("Python arithmetic on an array")
        code = [f"{v} = {_python_expr(step[ATTRS].get('op'), values, in_dtypes, out_dtypes[0])}"]
    else:
        expr, out_ranks[0] = _op_expr(kind, step[ATTRS], values, in_dtypes, in_ranks, out_dtypes[0], env, v)
        code = [f"{v} = {expr}"]
    dtypes += out_dtypes
    ranks += out_ranks
    if step[GUARD]:  # in a cond's branch: only when its predicates say so
        test = " and ".join(ident("v", p) if branch else f"not {ident('v', p)}" for p, branch in step[GUARD])
        # (a value of a branch not taken is never read, but numba types it on every path)
        code = [f"{ident('v', i + x)} = {_zero(d, r)}" for x, (d, r) in enumerate(zip(out_dtypes, out_ranks))] + \
            [f"if {test}:"] + [f"    {c}" for c in code]
    return code


def _op_expr(kind: str, attrs: dict, values: list[str], in_dtypes: list, in_ranks: list, out, env: dict,
             target: str) -> tuple[str, int]:
    """(the expression of one op, its value's rank): on scalars, its exact machine form
    (_expr); with an array among its operands, a call of numpy's own loop
    (executor/numba_numpy_loops.py) bound in `env` under a name made from `target`."""
    if kind == "Identity":
        return values[0], in_ranks[0]
    if not any(in_ranks):
        if attrs and kind != "Cast":
            raise NumbaRefused(f"{kind} with attributes: no numba form written for it")
        return _expr(kind, values, in_dtypes, out), 0
    helper = ident(f"{target}_numpy")
    env[helper], rank = _array_op(kind, attrs, in_dtypes, in_ranks, np.dtype(out))
    return f"{helper}({', '.join(values)})", rank


def _array_op(kind: str, attrs: dict, in_dtypes: list, in_ranks: list, out):
    """(the numba function computing an op with an array operand as numpy's kernel does,
    its value's rank), or NumbaRefused saying why not (numpy not giving its loop too)."""
    try:
        return _numpy_loop_op(kind, attrs, in_dtypes, in_ranks, out)
    except (ValueError, TypeError, AttributeError) as e:
        raise NumbaRefused(f"numpy did not give its loop for {kind}: {e}") from None


def _numpy_loop_op(kind: str, attrs: dict, in_dtypes: list, in_ranks: list, out):
    d0 = np.dtype(in_dtypes[0])
    if any(np.dtype(d) not in _TYPES for d in in_dtypes) or out not in _TYPES:
        raise NumbaRefused("arrays of bool, int32, int64, float32 and float64 only")
    if kind == "MatMul":
        if set(attrs) - {"transpose_a", "transpose_b"} or in_ranks != [2, 2] or in_dtypes[1] != d0 or out != d0:
            raise NumbaRefused(f"MatMul of ranks {in_ranks}: numba loops take 2-D @ 2-D (numpy's loop, one call)")
        return numpy_loops.matmul(d0, bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b"))), 2
    if kind == "StridedSlice":
        spec = attrs.get("spec")
        if set(attrs) != {"spec"} or not isinstance(spec, tuple) or len(spec) != 1 or spec[0][0] != "index" \
                or spec[0][1] != ("t", 0) or len(in_dtypes) != 2 or np.dtype(in_dtypes[1]) not in _INTS:
            raise NumbaRefused("a slice other than x[i] by an int value: numba loops take that one")
        return numpy_loops.index_first_axis(), in_ranks[0] - 1
    op_def = get_op_def(kind)
    ufunc = op_def.ufunc
    # numpy's loop is the kernel only where the kernel is the ufunc itself
    if ufunc is None or op_def.kernel is not ufunc or attrs or ufunc.nout != 1 or ufunc.nin != len(in_dtypes) \
            or ufunc.nin > 2:
        raise NumbaRefused(f"{kind} on an array: numba loops call numpy's own loop, and this op's kernel is not "
                           "a single numpy ufunc of one or two operands")
    ranks = {r for r in in_ranks if r}
    if len(ranks) > 1:
        raise NumbaRefused(f"{kind} of arrays of ranks {in_ranks}: numpy broadcasts them by its iterator, which "
                           "numba loops do not reproduce")
    if len({np.dtype(d) for d in in_dtypes}) != 1 or numpy_loops.resolved_dtypes(ufunc, in_dtypes) != \
            (*(np.dtype(d) for d in in_dtypes), out):
        raise NumbaRefused(f"{kind} on {', '.join(str(np.dtype(d)) for d in in_dtypes)} giving {out}: numpy's "
                           "loop for these dtypes would cast")
    kinds = tuple("a" if r else "s" for r in in_ranks)
    return numpy_loops.elementwise(ufunc, kinds, d0, out), ranks.pop()


def _zero(dtype, rank: int = 0) -> str:
    if rank:  # (an empty array of that rank: never read, typed alike)
        return f"np.empty(({'0, ' * rank}), {_TYPES[np.dtype(dtype)]})"
    return f"{_TYPES[np.dtype(dtype)]}(0)"


def _fused_lines(step, args: list[str], in_dtypes: list, in_ranks: list, target: str,
                 env: dict) -> tuple[list[str], int]:
    """A Fused step written out: one line per inner step, the last one into `target`;
    and the rank of its value."""
    inner = step[ATTRS]["steps"]
    names, dtypes, ranks, code = list(args), list(in_dtypes), list(in_ranks), []
    for j, s in enumerate(inner):
        name = target if j == len(inner) - 1 else ident(f"{target}_", j)
        d = np.dtype(s[DTYPE].np_dtype)
        if s[TYPE] == "Const":
            code.append(f"{name} = {_const(s[ATTRS]['value'], d)}")
            rank = 0
        else:
            expr, rank = _op_expr(s[TYPE], s[ATTRS], [names[x] for x in s[INPUTS]], [dtypes[x] for x in s[INPUTS]],
                                  [ranks[x] for x in s[INPUTS]], d, env, name)
            code.append(f"{name} = {expr}")
        names.append(name)
        dtypes.append(d)
        ranks.append(rank)
    return code, ranks[-1]
