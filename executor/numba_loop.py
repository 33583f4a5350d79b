"""`jit_compile="numba"`: a CompiledLoop whose values are all numeric scalars and whose
steps all have an exact machine form runs as one numba-compiled function (numba is an
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
Transcendental functions (exp, tanh, ...) may differ from numpy's in the last bit and
arrays follow other rules: a loop with any of those keeps the generated Python kernel
(executor/compiled_loop.py). A Fused step is written out step by step; an inner compiled
loop becomes a numba function it calls.
"""
from __future__ import annotations

import numpy as np

from graphcore.errors import GraphError
from graphcore.ops.compiled_ops import GUARD, outputs_of
from graphcore.ops.fused_ops import ATTRS, DTYPE, INPUTS, TYPE
from graphcore.registry import registered_ops

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
    why, if some step has no exact machine form or a value is not a scalar. `fallback()` gives the
    kernel to run instead should a call not fit the compiled signature."""
    require_numba()
    for k, (d, s) in enumerate(zip(input_dtypes, input_shapes)):
        if d is None or s.dims is None or tuple(s.dims) != ():
            what = "a tensor list" if d is None else f"an array of shape {s}"
            raise NumbaRefused(f"its input {k} is {what}: numba loops take numeric scalars only (arrays keep "
                               "numpy's kernels: numba's matmul and tanh are not numpy's to the last bit)")
    fn, source = _compile(attrs, [np.dtype(d) for d in input_dtypes], name)
    # the compiled signature's own entry: numba's dispatcher would check each argument's type again
    entry = fn.overloads[fn.signatures[0]].entry_point
    types = [np.dtype(d).type for d in input_dtypes]
    out_types = [np.dtype(d.np_dtype).type for d in attrs["dtypes"]]
    other: list = []
    stoppable = numba_loop(entry, attrs["n_vars"], len(attrs["exits"]), where)

    def loop(*inputs):
        try:  # (exactly the scalar type compiled for: a 0-d array or a Python number converted; a numpy
            # scalar's constructor costs a microsecond, so not called on one of that type already)
            result = stoppable(*[x if type(x) is T else T(x) for x, T in zip(inputs, types)])
        except Exception:  # noqa: BLE001 (not the compiled signature: the Python kernel decides)
            if not other:
                other.append(python_loop(fallback(), where))
            return other[0](*inputs)
        if len(out_types) == 1:
            return out_types[0](result[0])
        return tuple(T(v) for T, v in zip(out_types, result))
    loop.source = source
    loop.backend = "numba"
    return loop


def _compile(a: dict, input_dtypes: list, name: str):
    """The numba function of a loop: (inputs..., stop flag) -> (stopped, exits..., loop
    variables...). Each iteration ends reading the flag (executor/interrupt.py): one
    load, about 0.2 ns, where counting iterations to read it every few thousand cost
    0.8 ns (a loop-carried counter), and a `for` over a few thousand iterations inside
    the `while` let LLVM, which takes numba's integer arithmetic not to wrap, fold away
    wrap-arounds numpy has (tests/autograph/test_numba_loops.py). Set, it returns stopped
    with the variables the next iteration would start from (exits zero), so that the loop
    can go on from there; an inner loop that stopped makes its outer loop stop at the
    start of its iteration."""
    import numba  # noqa: PLC0415 (optional; checked by require_numba)

    n_in, n_vars = len(input_dtypes), a["n_vars"]
    dtypes = list(input_dtypes)
    env: dict = {"np": np, **_python_helpers()}
    cond_lines = [x for step in a["cond_steps"] for x in _step_lines(step, dtypes, env, name)]
    exit_dtypes = [dtypes[k] for k in a["exits"]]
    state = [ident("v", k) for k in range(n_vars)]
    stopped = "return (True, " + "".join(f"{_zero(d)}, " for d in exit_dtypes) + "".join(f"{v}, " for v in state) + ")"
    body_lines = [x for step in a["body_steps"] for x in _step_lines(step, dtypes, env, name)]
    params = args("x", range(n_in))
    out = [ident("v", k) for k in a["exits"]]
    src = Source()
    with src.block(f"def loop({params}{', ' if params else ''}stop_flag)"):
        src.line(args("v", range(n_in)) + f"{',' if n_in == 1 else ''} = {params}")
        with src.block("while True"):
            src.extend(x.replace(_STOPPED, stopped) for x in cond_lines)
            with src.block(f"if not {ident('v', a['pred'])}"):
                src.line("break")
            src.extend(x.replace(_STOPPED, stopped) for x in body_lines)
            src.line(f"{', '.join(state)}{',' if n_vars == 1 else ''} = {args('v', a['nexts'])}")
            with src.block("if read_flag(stop_flag)"):
                src.line(stopped)
        src.line("return (False, " + "".join(f"{x}, " for x in out) + "".join(f"{v}, " for v in state) + ")")
    source = src.text()
    loop = compile_function(source, "loop", env, "numba loop", name)
    try:
        fn = numba.njit(error_model="numpy", cache=False, nogil=True)(loop)
        fn.compile((*(numba.from_dtype(d) for d in input_dtypes), numba.int64))
        fn.disable_compile()  # one signature: other argument types go to the fallback
    except numba.core.errors.NumbaError as e:
        raise NumbaRefused(f"numba could not compile it: {str(e).strip().splitlines()[0][:200]}") from None
    return fn, source


_STOPPED = "#STOPPED"  # (a line the loop's stopped return replaces: an inner loop stopped)


def _step_lines(step, dtypes: list, env: dict, name: str) -> list[str]:
    """The lines of one loop step; its values are numbered from len(dtypes), which grows.
    A refusal names the step (the innermost one, in an inner loop) and its line."""
    try:
        return _step_code(step, dtypes, env, name)
    except NumbaRefused as e:
        if getattr(e, "step", None) is None:
            e.step = step
            e.args = (f"{label(step[3])} ({step[TYPE]}, at {label(step[4])}): {e.args[0] if e.args else ''}",)
        raise


def _step_code(step, dtypes: list, env: dict, name: str) -> list[str]:
    if any(d.np_dtype is None for d in (step[DTYPE] if isinstance(step[DTYPE], tuple) else (step[DTYPE],))):
        raise NumbaRefused("a tensor list: numba loops take numeric scalars only")
    i = len(dtypes)
    k = outputs_of(step)
    out_dtypes = [np.dtype(d.np_dtype) for d in step[DTYPE]] if k > 1 else [np.dtype(step[DTYPE].np_dtype)]
    dtypes += out_dtypes
    kind, ins = step[TYPE], step[INPUTS]
    v = ident("v", i)
    values = [ident("v", x) for x in ins]
    if kind == "Const":
        code = [f"{v} = {_const(step[ATTRS]['value'], out_dtypes[0])}"]
    elif kind == "Merge":  # a cond's: the value of the branch its predicate took
        t, f, p = values
        code = [f"{v} = {t} if {p} else {f}"]
    elif kind == "Fused":
        code = _fused_lines(step, values, [dtypes[x] for x in ins], v)
    elif kind == "CompiledLoop":
        kernel, result = ident("k", i), ident("r", i)
        env[kernel], _ = _compile(step[ATTRS], [dtypes[x] for x in ins], name + "/inner")
        code = [f"{result} = {kernel}({', '.join(values + ['stop_flag'])})", f"if {result}[0]:", f"    {_STOPPED}"]
        code += [f"{ident('v', i + x)} = {result}[{literal(1 + x)}]" for x in range(k)]
    elif kind == "PythonArith":
        code = [f"{v} = {_python_expr(step[ATTRS].get('op'), values, [dtypes[x] for x in ins], out_dtypes[0])}"]
    elif step[ATTRS] and kind != "Cast":
        raise NumbaRefused(f"{kind} with attributes: no numba form written for it")
    else:
        code = [f"{v} = {_expr(kind, values, [dtypes[x] for x in ins], out_dtypes[0])}"]
    if step[GUARD]:  # in a cond's branch: only when its predicates say so
        test = " and ".join(ident("v", p) if branch else f"not {ident('v', p)}" for p, branch in step[GUARD])
        # (a value of a branch not taken is never read, but numba types it on every path)
        code = [f"{ident('v', i + x)} = {_zero(d)}" for x, d in enumerate(out_dtypes)] + [f"if {test}:"] + \
            [f"    {c}" for c in code]
    return code


def _zero(dtype) -> str:
    return f"{_TYPES[np.dtype(dtype)]}(0)"


def _fused_lines(step, args: list[str], in_dtypes: list, target: str) -> list[str]:
    """A Fused step written out: one line per inner step, the last one into `target`."""
    inner = step[ATTRS]["steps"]
    names, dtypes, code = list(args), list(in_dtypes), []
    for j, s in enumerate(inner):
        name = target if j == len(inner) - 1 else ident(f"{target}_", j)
        d = np.dtype(s[DTYPE].np_dtype)
        if s[TYPE] == "Const":
            code.append(f"{name} = {_const(s[ATTRS]['value'], d)}")
        elif s[ATTRS] and s[TYPE] != "Cast":
            raise NumbaRefused(f"{s[TYPE]} with attributes: no numba form written for it")
        else:
            code.append(f"{name} = {_expr(s[TYPE], [names[x] for x in s[INPUTS]], [dtypes[x] for x in s[INPUTS]], d)}")
        names.append(name)
        dtypes.append(d)
    return code
