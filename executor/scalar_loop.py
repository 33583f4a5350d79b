"""The fast path of a compiled loop (executor/compiled_loop.py) whose values are numpy scalars.

The guarded kernel checks, on every op of every iteration, that its operands are numpy
scalars of the op's dtype and small enough not to overflow before it uses the Python
operator (executor/scalar_kernels.py); most of a loop's time went there. This kernel
checks once, at the loop's entry, which inputs are numpy scalars of their dtype, and
knows from there, statically, which values of an iteration are: an operator on known
scalars gives a known scalar of the op's dtype (checked against the kernel on this
numpy at import), a choice between two known scalars of one type too; anything else (a
kernel's result, an array) is unknown and keeps the guarded code. A loop variable is
known if its input is and its next value has its type, whatever the iteration (a fixed
point over the loop's variables).

Two variants are made per input signature, each handing over to the next on any
exception, the last to the guarded kernel (which gives numpy's values, warnings and
errors, and names a failing step through the reference):

1. Known integers as Python ints, bools as their truth, floats as numpy scalars. Python's
   + - * agree with numpy's modulo 2**bits, so a sum or product is checked to be in its
   dtype's range only where its value is used (a comparison, // or %, a kernel, the next
   iteration); out of range, numpy would have wrapped around: OverflowError, next variant.
   // and % of in-range ints are numpy's (floor division, the divisor's sign) but for a
   zero divisor (ZeroDivisionError) and the smallest integer // -1 (checked). A counted
   loop (`while i < n: ...; i += step`, a positive step, stop + step in range) runs as a
   `for` over a range.
2. Known values as numpy scalars, with numpy's scalar operators: integer overflow wraps
   around silently if no numpy step of the loop would report an overflow
   (np.errstate(over="ignore"): integer + - * never do), else raises.

Both run numpy's steps under `np.errstate(divide="raise", invalid="raise", over=...)`: a
zero divisor, a float overflow or an invalid operation (inf - inf, 0 / 0) raises where
numpy's kernel would have warned and given inf or NaN, and the guarded kernel then runs
the loop again from its inputs (the loop is pure) and warns as the frame executor does.
numpy 2's errstate is a context variable (thread- and asyncio-safe); `under` is left as
the caller has it (numpy ignores underflow by default). + and * of floats are written with
their operands in the order that gives numpy's kernel's very bits (which NaN of two NaNs
comes out; probed at import).

Where an input is not a numpy scalar of its dtype (a 0-d array, a Python number), a
variant that takes that input as unknown is made on first use (a few per loop). Inner
compiled loops become functions without errstate or fallback of their own (the outermost
loop's cover them), made for the types known at their call; a Fused step is written out
step by step; constants are written out or bound once, not assigned every iteration.
"""
from __future__ import annotations

import operator
import re

import numpy as np

from graphcore.ops.compiled_ops import GUARD, outputs_of
from graphcore.ops.fused_ops import ATTRS, DTYPE, INPUTS, TYPE
from graphcore.registry import get_op_def, registered_ops

from .codegen import compile_function, ident, index, label
from .fused_kernel import step_kernel
from .scalar_kernels import _binary_form, scalar_source

# numpy scalar types the fast path knows values of
SCALAR_TYPES = {np.dtype(t): t for t in (np.bool_, np.int32, np.int64, np.float32, np.float64)}
_INTS = (np.int32, np.int64)
_FLOATS = (np.float32, np.float64)
_INT_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))

# the op types written as Python operators on scalars (OpDef.expr), by family: binary ones
# as their operator's symbol, unary ones as their source
_FORMS = {t: f for t in registered_ops() if (f := _binary_form(t)) is not None}
_BINARY = {t: sym for t, (d, sym) in _FORMS.items() if d.family == "arithmetic"}
_COMPARE = {t: sym for t, (d, sym) in _FORMS.items() if d.family == "comparison"}
_LOGICAL = {t: sym for t, (d, sym) in _FORMS.items() if d.family == "logical"}
_UNARY = {t: d.expr for t, d in registered_ops().items() if d.expr is not None and "{1}" not in d.expr
          and d.family in ("arithmetic", "logical") and not d.expr.startswith("np.")}
_PY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "//": operator.floordiv,
       "%": operator.mod, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
       "==": operator.eq, "!=": operator.ne, "&": operator.and_, "|": operator.or_}
_MAX_VARIANTS = 8  # input signatures made per loop; beyond, the guarded kernel


def _bits(x) -> tuple:
    return type(x), np.asarray(x).tobytes()


def _operand_order(name: str, T) -> str:
    """The source of the op `name` on two numpy scalars of type T ({0}, {1}) that gives the
    kernel's very bits: for + and * on floats, the compiled scalar operator may take the
    operands the other way round from numpy's ufunc, which shows only in which NaN comes
    out of two NaNs of different signs (nan + -nan). Probed on this numpy; None if neither
    order matches."""
    sym = _BINARY[name]
    if T not in _FLOATS or sym not in "+*":
        return "({0} %s {1})" % sym
    kernel, fn = get_op_def(name).kernel, _PY[sym]
    a, b = T(np.nan), -T(np.nan)
    for x, y in ((a, b), (b, a)):
        want = _bits(kernel(x, y))
        if _bits(fn(x, y)) == want and _bits(fn(y, x)) != want:
            return "({0} %s {1})" % sym
        if _bits(fn(y, x)) == want and _bits(fn(x, y)) != want:
            return "({1} %s {0})" % sym
    return "({0} %s {1})" % sym if _bits(fn(a, b)) == _bits(kernel(a, b)) else None


def _make_rules() -> dict:
    """(op type, numpy scalar type of its operands) -> (source with {0}, {1}, the result's
    type), for each op whose Python operator on known scalars gives the kernel's value
    and type (the result type is checked here against the kernel's on this numpy)."""
    rules = {}
    for T in SCALAR_TYPES.values():
        cases = dict.fromkeys(_COMPARE)
        family = "logical" if T is np.bool_ else "arithmetic"
        cases.update(dict.fromkeys(_LOGICAL if T is np.bool_ else _BINARY))
        cases.update(dict.fromkeys(t for t in _UNARY if get_op_def(t).family == family))
        for name in cases:
            if name in _UNARY:
                source, arity = _UNARY[name], 1
            elif name in _BINARY:
                source, arity = _operand_order(name, T), 2
            else:
                source, arity = "({0} %s {1})" % (_COMPARE.get(name) or _LOGICAL[name]), 2
            if source is None:
                continue
            args = [T(1), T(1)][:arity]
            fast = eval("lambda a, b=None: " + source.format("a", "b"))  # noqa: S307 (our own source)
            out = get_op_def(name).kernel(*args)
            if type(fast(*args)) is type(out) and type(out) in SCALAR_TYPES.values():
                rules[name, T] = (source, type(out))
    return rules


RULES = _make_rules()

# Python's int operators where a numpy integer type holds their operands and results:
# (operands must be in range, result in range), by the operator's source form
_INT_RANGE = {"+": (False, False), "-": (False, False), "*": (False, False), "//": (True, True), "%": (True, True),
              "(-{0})": (False, False), "abs({0})": (True, False)}
# operators on known integers, as Python ints: (source, operands must be in range, result in range)
_INT_RULES = {t: (get_op_def(t).expr, *_INT_RANGE[sym]) for t, sym in _BINARY.items() if sym in _INT_RANGE}
_INT_RULES.update({t: (src, *_INT_RANGE[src]) for t, src in _UNARY.items() if src in _INT_RANGE})
_INT_RULES.update({k: ("({0} %s {1})" % v, True, True) for k, v in _COMPARE.items()})
# on known bools (numpy's or Python's: only their truth is used): logic, and == / != (the
# commutative comparisons); `not` for a unary one (~ of a Python bool is an int)
_BOOL_RULES = {t: get_op_def(t).expr for t in _LOGICAL}
_BOOL_RULES.update({t: get_op_def(t).numba for t in _UNARY if get_op_def(t).family == "logical"})
_BOOL_RULES.update({t: get_op_def(t).expr for t in _COMPARE if get_op_def(t).commutative})
# PythonArith (graphcore's op for two Python numbers) on two ints: Python's operators
_PYTHON_ARITH = {t: get_op_def(t).expr for t, sym in _BINARY.items() if sym in _INT_RANGE}


_SILENT: dict[str, bool] = {}


def _silent_on_ints(kind: str) -> bool:
    """Whether the op type's numpy kernel never reports an integer overflow (+ - * wrap
    around silently; the smallest integer // -1 is reported): probed on this numpy, on the
    extremes of int32 and int64, as numpy scalars and as arrays."""
    known = _SILENT.get(kind)
    if known is None:
        d = get_op_def(kind)
        known = True
        for t in _INTS:
            info = np.iinfo(t)
            values = np.array([0, 1, -1, 7, info.min, info.max], dtype=t)
            try:
                with np.errstate(over="raise", divide="ignore", invalid="ignore"):
                    if d.arity == 1:
                        d.kernel(values)
                        for x in values:
                            d.kernel(x)
                    else:
                        a, b = (v.ravel() for v in np.meshgrid(values, values))
                        d.kernel(a, b)
                        for x, y in zip(a, b):
                            d.kernel(x, y)
            except (FloatingPointError, ValueError):
                known = False
        _SILENT[kind] = known
    return known


def _plus(p: str, q: str) -> str:
    """The source of p + q (sources), 0 left out."""
    return q if p == "0" else p if q == "0" else f"({p} + {q})"


def _times(p: str, q: str) -> str:
    """The source of p * q (sources), 0 and 1 folded."""
    if "0" in (p, q):
        return "0"
    return q if p == "1" else p if q == "1" else f"({p} * {q})"


def _outside(name: str, T) -> str:
    """The test that a Python int is outside T's range: first a cheap one (small ints are
    one digit, which CPython compares fastest)."""
    high = 2 ** (np.iinfo(T).bits - 1)
    return f"not -1073741823 <= {name} <= 1073741823 and not {-high} <= {name} <= {high - 1}"


_TYPE_NAMES = {np.bool_: "B_", np.int32: "I32", np.int64: "I64", np.float32: "F32", np.float64: "F64"}


class _Loops:
    """Makes the functions of one loop, its inner loops and their variants: Python source
    whose names are bound in one shared namespace.

    A known integer is a Python int: Python's + - * give the same value as numpy's modulo
    2**bits, so a sum or product may stay out of range (`loose`) until a use needs its
    value (a comparison, // or %, a kernel, the next iteration), where one comparison
    checks it and, if out of range, wraps it around as numpy would have; // and % of
    in-range ints are numpy's (floor division, the divisor's sign), but for a zero
    divisor (Python raises) and the smallest integer // -1 (checked: numpy warns). A
    known bool is a numpy or Python bool (only its truth is used), a known float a numpy
    scalar (its operators are numpy's, under errstate)."""

    def __init__(self, py_ints: bool):
        self.py_ints = py_ints  # known ints and bools as Python's (else numpy scalars, numpy's operators)
        self.env = {"np": np, **{v: k for k, v in _TYPE_NAMES.items()}}
        self.sources = []
        self._count = 0
        self._inner = {}  # (id(attrs), input types) -> (function name, output types)
        self._keep = []   # the attrs whose id keys _inner
        self.unguarded = 0  # operators written without a guard
        self.numpy_ops = 0  # steps that run numpy (need its errstate)
        self.over_silent = True  # no numpy step would report an overflow (see _wraps_silently)
        self.consts = {}  # a constant's source -> its value
        self.loose = set()  # names of known ints that may be out of range, in the loop made now
        self.need = set()   # those of them whose value is used
        self.lazy = set()   # the loop's variables checked after the loop only
        self.counter = None  # in a counted loop's body: the counter's name
        self.affine = {}     # then: values a * counter + b, as (a, b)
        self.hoisted = []    # then: checks of such values, made once before the loop

    def bind(self, prefix: str, value) -> str:
        name = f"{prefix}{self._count}"
        self._count += 1
        self.env[name] = value
        return name

    def exact(self, name: str, T) -> str:
        """`name`, a value of known type T, where its exact value is used."""
        if name in self.loose:
            self.need.add(name)
        return name

    def as_numpy(self, name: str, T) -> str:
        """The source of a value as numpy has it (a known int or bool: converted)."""
        if self.py_ints and (T in _INTS or T is np.bool_):
            return f"{_TYPE_NAMES[T]}({self.exact(name, T)})"
        return name

    def _numpy_step(self, kind: str, args: list, dtypes: list) -> None:
        self.numpy_ops += 1
        if not self._wraps_silently(kind, args, dtypes):
            self.over_silent = False

    def _wraps_silently(self, kind: str, args: list, dtypes: list) -> bool:
        """Would this step's numpy kernel never report an overflow, whatever numpy's
        errstate (integer + - * wrap around silently in numpy's kernels)? Then the loop
        runs with overflows ignored: no fallback where such a kernel wraps around."""
        family = get_op_def(kind).family
        if family in ("logical", "comparison"):
            return True
        if not dtypes or any(d not in _INT_DTYPES for d in dtypes):
            return False
        if family == "arithmetic" and _silent_on_ints(kind):
            return True
        # the smallest integer // -1 overflows, and numpy's kernel says so: a constant divisor other than -1
        return kind == "FloorDiv" and args[1] in self.consts and not np.any(np.asarray(self.consts[args[1]]) == -1)

    # -- one step ------------------------------------------------------------------------

    def step(self, step, args: list, types: list, dtypes: list, target: str):
        """(lines, output names, output types) of one step on values named `args`, of
        known types `types` (None: unknown) and dtypes `dtypes`, its first output named
        `target` (a constant needs no name: its value is written or bound)."""
        kind, k = step[TYPE], outputs_of(step)
        if kind == "Const":
            return [], *self.const(step[ATTRS]["value"], step[DTYPE].np_dtype)
        if kind == "Merge":  # a cond's: the value of the branch its predicate took
            t, f, p = args
            if types[0] is not None and types[0] is types[1]:  # (a sum is checked in its branch only)
                t, f = self.exact(t, types[0]), self.exact(f, types[1])
                return [f"{target} = {t} if {p} else {f}"], [target], [types[0]]
            t, f = self.as_numpy(t, types[0]), self.as_numpy(f, types[1])
            return [f"{target} = {t} if {p} else {f}"], [target], [None]
        if kind == "Fused":
            return self.fused(step, args, types, dtypes, target)
        targets = [target] + [f"{target}_{x}" for x in range(1, k)]
        if kind == "CompiledLoop":
            args = [self.exact(x, T) if T is not None else x for x, T in zip(args, types)]
            name, out_types = self.inner(step[ATTRS], dtypes, tuple(types), step[3])
            return [f"{', '.join(targets)} = {name}({', '.join(args)})"], targets, list(out_types)
        T = types[0] if types and all(t is types[0] for t in types) else None
        out_T = SCALAR_TYPES.get(step[DTYPE].np_dtype) if k == 1 else None
        if T is not None and k == 1 and (not step[ATTRS] or kind == "PythonArith"):
            line = self.known(kind, args, T, out_T, target, step[ATTRS])
            if line is not None:
                self.unguarded += 1
                return line, [target], [out_T]
        self._numpy_step(kind, args, dtypes)
        args = [self.as_numpy(x, t) for x, t in zip(args, types)]
        if not step[ATTRS] and k == 1:
            k_name, t_name = self.bind("k", get_op_def(kind).kernel), self.bind("T", None)
            inline = scalar_source(kind, dtypes, list(args), k_name, t_name)
            if inline is not None:  # the guarded operator, as the guarded kernel writes it
                self.env[t_name] = inline[1]
                return [f"{target} = {inline[0]}"], [target], [None]
        name = self.bind("k", step_kernel(step, dtypes))
        return [f"{', '.join(targets)} = {name}({', '.join(args)})"], targets, [None] * k

    def const(self, value, dtype):
        """(names, types) of a constant: a known int or bool written out, others bound."""
        T = SCALAR_TYPES.get(dtype)
        if T is None or type(value) is not T:
            return [self.bind("c", value)], [None]
        if self.py_ints and (T in _INTS or T is np.bool_):
            source = repr(int(value)) if T in _INTS else repr(bool(value))
            source = f"({source})" if source.startswith("-") else source
        else:
            source = self.bind("c", value)
        self.consts[source] = value
        return [source], [T]

    def known(self, kind: str, args: list, T, out_T, target: str, attrs=None):
        """The lines of an op on known values of type T, or None (its kernel runs)."""
        if not self.py_ints:  # numpy's operators on numpy scalars
            if kind == "PythonArith":  # Python's value of two int64s (not numpy's errstate: others may wrap)
                op = (attrs or {}).get("op")
                if T is not np.int64 or out_T is not np.int64 or op not in _PYTHON_ARITH or len(attrs) != 1:
                    return None
                return [f"{target} = {_PYTHON_ARITH[op].format(*(f'int({x})' for x in args))}",
                        f"if {_outside(target, T)}: raise OverflowError", f"{target} = I64({target})"]
            if (kind, T) in RULES and RULES[kind, T][1] is out_T:
                self._numpy_step(kind, args, [np.dtype(T)])
                return [f"{target} = {RULES[kind, T][0].format(*args)}"]
            return None
        if kind == "PythonArith":  # two Python ints: Python's value, refused beyond int64
            op = (attrs or {}).get("op")
            if T is not np.int64 or out_T is not np.int64 or op not in _PYTHON_ARITH or len(attrs) != 1:
                return None
            args = [self.exact(x, T) for x in args]
            self._affine(op, args, target)
            return [f"{target} = {_PYTHON_ARITH[op].format(*args)}", f"#check {target} int64"]
        if T in _INTS and kind in _INT_RULES:
            source, exact_in, exact_out = _INT_RULES[kind]
            want = np.bool_ if kind in _COMPARE else T
            if out_T is not want:
                return None
            if exact_in:
                args = [self.exact(x, T) for x in args]
            lines = [f"{target} = {source.format(*args)}"]
            self._affine(kind, args, target)
            if not exact_out:
                self.loose.add(target)
                lines.append(f"#loose {target} {T.__name__}")
            elif kind == "FloorDiv" and not (args[1] in self.consts and self.consts[args[1]] != -1):
                lines.append(f"if {target} == {2 ** (np.iinfo(T).bits - 1)}: raise FloatingPointError")
            return lines
        if T is np.bool_ and kind in _BOOL_RULES and out_T is np.bool_:
            return [f"{target} = {_BOOL_RULES[kind].format(*args)}"]
        if T in _FLOATS and (kind, T) in RULES and RULES[kind, T][1] is out_T:
            self._numpy_step(kind, args, [np.dtype(T)])
            return [f"{target} = {RULES[kind, T][0].format(*args)}"]
        return None

    def _affine(self, kind: str, args: list, target: str) -> None:
        """In a counted loop's body: note `target` as (a, b), sources of a * counter + b
        with a and b loop invariants, where the op keeps it so (+, -, * by an invariant)."""
        if self.counter is None:
            return
        forms = [self._form(x) for x in args]
        if None in forms:
            return
        if kind == "Neg":
            (a, b), = forms
            self.affine[target] = (_times("(-1)", a), _times("(-1)", b))
        elif kind in ("Add", "Sub"):
            (a, b), (c, d) = forms
            if kind == "Sub":
                c, d = _times("(-1)", c), _times("(-1)", d)
            self.affine[target] = (_plus(a, c), _plus(b, d))
        elif kind == "Mul" and "0" in (forms[0][0], forms[1][0]):
            (a, b), (c, d) = forms if forms[0][0] == "0" else forms[::-1]  # b is the invariant factor
            self.affine[target] = (_times(b, c), _times(b, d))

    def _form(self, name: str):
        """(a, b) of a value a * counter + b, or None."""
        if name == self.counter:
            return "1", "0"
        if name in self.affine:
            return self.affine[name]
        if re.fullmatch(r"x\d+|\(?-?\d+\)?", name):  # a loop invariant, or a constant written out
            return "0", name
        return None

    def fused(self, step, args, types, dtypes, target):
        """A Fused step written out: its steps one after the other."""
        names, types, dtypes = list(args), list(types), list(dtypes)
        lines = []
        sub_steps = step[ATTRS]["steps"]
        for j, sub in enumerate(sub_steps):
            ins = sub[INPUTS]
            last = j == len(sub_steps) - 1
            more, out, out_types = self.step(sub, [names[i] for i in ins], [types[i] for i in ins],
                                             [dtypes[i] for i in ins], target if last else f"{target}_{j}")
            lines += more
            names += out
            types += out_types
            dtypes += [d.np_dtype for d in sub[DTYPE]] if isinstance(sub[DTYPE], tuple) else [sub[DTYPE].np_dtype]
        return lines, [names[-1]], [types[-1]]

    # -- a loop ----------------------------------------------------------------------------

    def body(self, a: dict, input_dtypes: list, input_types: list):
        """(lines of the loop from its inputs x0... to its `while`'s end, the returned
        expression, the types of its outputs): the loop variables' types are a fixed
        point (a variable stays known if its next value has its type every iteration).
        A counted loop (`while i < n: ... i = i + step`, all Python ints) runs as a
        `for i in range(...)` where the step is positive and i cannot overflow.

        A sum (`s = s + e` with numpy's + or -, e in range) whose value nothing in the
        loop reads but the sum itself is `lazy`: it may leave its range (by at most e's
        range each iteration) and is wrapped around once, after the loop."""
        n = a["n_vars"]
        var_types = list(input_types[:n])
        outer_sets = self.loose, self.need, self.lazy, self.counter, self.affine, self.hoisted
        self.lazy, self.counter = set(), None
        while True:
            self.loose, self.need = set(), set()
            cond, body, names, types = self.iteration(a, input_dtypes, var_types + list(input_types[n:]))
            known = [T if T is not None and types[a["nexts"][k]] is T else None for k, T in enumerate(var_types)]
            if known == var_types:
                break
            var_types = known
        sums = self._sums(a, var_types, len(input_dtypes)) if self.py_ints else {}
        while sums:
            self.lazy = {f"v{k}" for k in sums}
            self.loose, self.need = set(self.lazy), set()
            cond, body, names, types = self.iteration(a, input_dtypes, var_types + list(input_types[n:]))
            for k, x in enumerate(a["nexts"]):  # the next values of the other variables are read
                if k not in sums and var_types[k] is not None:
                    self.exact(names[x], var_types[k])
            read = {k for k, e in sums.items() if f"v{k}" in self.need or names[e] in self.loose}
            if not read:
                break
            sums = {k: e for k, e in sums.items() if k not in read}
        self.lazy = {f"v{k}" for k in sums}
        state = [f"v{k}" for k in range(n)]
        # a variable known at the entry but not throughout: as numpy has it
        starts = [f"x{k}" if T is not None else self.as_numpy(f"x{k}", input_types[k]) for k, T in enumerate(var_types)]
        lines = [f"{', '.join(state)} = {', '.join(starts)}"] if n else []
        loop = self._while(a, cond, body, names, types, var_types)
        counted = self._counted(a, input_dtypes, var_types + list(input_types[n:]))
        if counted is not None:
            lines += counted[0] + [f"    {x}" for x in counted[1]] + ["else:"] + [f"    {x}" for x in loop]
        else:
            lines += loop
        for k in sorted(sums):  # numpy's value, wrapped around: Python's + - agree with it modulo 2**bits
            if k in a["exits"]:
                high = 2 ** (np.iinfo(var_types[k]).bits - 1)
                lines.append(f"if {_outside(f'v{k}', var_types[k])}: v{k} = ((v{k} + {high}) % {2 * high}) - {high}")
        self.loose, self.need, self.lazy, self.counter, self.affine, self.hoisted = outer_sets
        exits = [ident("v", k) for k in a["exits"]]
        result = exits[0] if len(exits) == 1 else "(" + ", ".join(exits) + ")"
        return lines, result, [var_types[k] for k in a["exits"]]

    def _while(self, a, cond, body, names, types, var_types, skip: int | None = None) -> list:
        """The `while` of one iteration's lines (its marks resolved), or, `skip` being a
        counted variable, the body of its `for`."""
        state = [f"v{k}" for k in range(a["n_vars"])]
        nexts = [names[x] if f"v{k}" in self.lazy else self.exact(names[x], T) if T is not None else
                 self.as_numpy(names[x], types[x]) for k, (x, T) in enumerate(zip(a["nexts"], var_types))]
        moves = [(v, x) for k, (v, x) in enumerate(zip(state, nexts)) if x != v and k != skip]
        if skip is None:
            lines = ["while True:"] + [f"    {x}" for x in cond]
            lines += [f"    if not {names[a['pred']]}:", "        break"] + [f"    {x}" for x in body]
        else:
            lines = [f"    {x}" for x in body]
        if moves:
            lines.append(f"    {', '.join(m[0] for m in moves)} = {', '.join(m[1] for m in moves)}")
        lines = [self._checked(x) for x in lines]
        return [x for x in lines if x is not None]

    def _counted(self, a: dict, input_dtypes: list, types: list):
        """(the lines before, the body of) `for v in range(v, stop, step)` standing for
        the loop, or None: the loop's test is `v < stop` (or <=) of a known integer
        variable and a loop invariant, its body adds a positive invariant step to v (as
        numpy's Add or Python's) and nothing else reads the test or the sum; at run
        time the step must be positive and stop + step within range (no wrap-around,
        no overflow: the `while` runs otherwise)."""
        n, n_in = a["n_vars"], len(input_dtypes)
        if len(a["cond_steps"]) != 1:
            return None
        test = a["cond_steps"][0]
        pred = n_in
        if test[TYPE] not in ("Less", "LessEqual") or test[GUARD] or test[ATTRS] or a["pred"] != pred:
            return None
        if len(test[INPUTS]) != 2:
            return None
        k, stop = (index(x, n_in, "a loop test's input") for x in test[INPUTS])
        if not (k < n and n <= stop < n_in and types[k] in _INTS and types[stop] is types[k]):
            return None
        nxt = a["nexts"][k]
        first = [pred + 1]  # the number of each body step's first value
        for s in a["body_steps"]:
            first.append(first[-1] + outputs_of(s))
        if nxt not in first[:-1]:
            return None
        j = first.index(nxt)  # the body step that makes the next value
        add = a["body_steps"][j]
        python_add = add[TYPE] == "PythonArith" and add[ATTRS] == {"op": "Add"} and types[k] is np.int64
        if not (add[TYPE] == "Add" and not add[ATTRS] or python_add) or add[GUARD] or k not in add[INPUTS]:
            return None
        if len(add[INPUTS]) != 2:
            return None
        step = add[INPUTS][1] if add[INPUTS][0] == k else add[INPUTS][0]
        if not (n <= step < n_in and types[step] is types[k]):
            return None
        steps = list(a["cond_steps"]) + list(a["body_steps"])
        if any(x in (pred, nxt) for s in steps for x in (*s[INPUTS], *(p for p, _ in s[GUARD]))) or \
                sorted(a["nexts"]).count(nxt) != 1 or nxt in a["exits"] or outputs_of(add) != 1:
            return None
        self.loose, self.need = set(self.lazy), set()
        if self.py_ints:
            self.counter, self.affine, self.hoisted = f"v{k}", {}, []
        cond, body, names, out_types = self.iteration(a, input_dtypes, types, skip=j)
        body = self._while(a, cond, body, names, out_types, types[:n], skip=k) or ["    pass"]
        hoisted, self.counter, self.hoisted = self.hoisted, None, []
        checks = []
        for (a_, b_), T in hoisted:
            for end_ in ("counted[0]", "counted[-1]"):
                checks += [f"        h = {_plus(_times(a_, end_), b_)}", f"        if {_outside('h', T)}: raise OverflowError"]
        high = 2 ** (np.iinfo(types[k]).bits - 1)
        v, stop_, by = f"v{k}", f"x{stop}", f"x{step}"
        if not self.py_ints:  # the range of Python ints, the variable as numpy has it (where read)
            v, stop_, by = f"int(v{k})", f"int(x{stop})", f"int(x{step})"
            reads = any(k in (*s[INPUTS], *(p for p, _ in s[GUARD])) for x, s in enumerate(a["body_steps"]) if x != j)
            reads = reads or any(x == k for var, x in enumerate(a["nexts"]) if var != k)
            body = ([f"    v{k} = {_TYPE_NAMES[types[k]]}(counted_)"] if reads else []) + body
        end = stop_ if test[TYPE] == "Less" else f"{stop_} + 1"
        # the last v + step, at most stop - 1 + step (stop + step for <=), stays in range
        before = [f"if x{step} > 0 and {stop_} + {by} <= {high - (test[TYPE] == 'LessEqual')}:",
                  f"    counted = range({v}, {end}, {by})"]
        before += (["    if counted:"] + checks if checks else [])
        before += [f"    for {f'v{k}' if self.py_ints else 'counted_'} in counted:"]
        last = "counted.start + len(counted) * counted.step"
        return before, body + [f"v{k} = {last}" if self.py_ints else f"v{k} = {_TYPE_NAMES[types[k]]}({last})"]

    def _sums(self, a: dict, var_types: list, n_in: int) -> dict:
        """{variable k: the value e} where k's next value is k + e, k - e or e + k, by a
        body step of its own (numpy's Add or Sub, unguarded): candidates for `lazy`."""
        first = n_in + sum(outputs_of(s) for s in a["cond_steps"])
        made = {}
        for step in a["body_steps"]:
            made[first] = step
            first += outputs_of(step)
        out = {}
        for k, x in enumerate(a["nexts"]):
            step = made.get(x)
            if var_types[k] not in _INTS or step is None or step[GUARD] or step[ATTRS] or \
                    step[TYPE] not in ("Add", "Sub") or outputs_of(step) != 1:
                continue
            i0, i1 = step[INPUTS]
            if i0 == k and i1 != k:
                out[k] = i1
            elif step[TYPE] == "Add" and i1 == k and i0 != k:
                out[k] = i0
        return out

    def _checked(self, line: str):
        """A `#loose name type` mark: where the value is used, a check that it is in its
        type's range (else numpy's kernel would have wrapped it around: the loop starts
        again with numpy scalars); else nothing. A `#check` mark: a check always (Python's
        OverflowError). In a counted loop's body, the check of a value a * counter + b
        moves before the loop: at the range's two ends (the values between lie between;
        failing early is the same: the loop runs again on the next variant)."""
        if not line.lstrip().startswith(("#loose ", "#check ")):
            return line
        mark, name, type_name = line.split()
        if mark == "#loose" and name not in self.need:
            return None
        if self.counter is not None and name in self.affine and not line.startswith("        "):
            self.hoisted.append((self.affine[name], getattr(np, type_name)))  # (an unguarded step's)
            return None
        indent = line[:len(line) - len(line.lstrip())]
        return f"{indent}if {_outside(name, getattr(np, type_name))}: raise OverflowError"

    def iteration(self, a: dict, input_dtypes: list, input_types: list, skip: int | None = None):
        """The lines of one iteration's test and body, and the names and types of its
        values (body step number `skip` left out: a counted loop's `range` does it)."""
        n = a["n_vars"]
        names = [f"v{k}" for k in range(n)] + [f"x{i}" for i in range(n, len(input_dtypes))]
        types, dtypes = list(input_types), list(input_dtypes)
        cond, body = [], []
        for region, steps in ((cond, a["cond_steps"]), (body, a["body_steps"])):
            last_test = None  # the guard of the block the region's lines end with
            for number, step in enumerate(steps):
                ins = step[INPUTS]
                if region is body and number == skip:
                    names.append(f"v{len(names)}")  # (read by nothing)
                    types.append(None)
                    dtypes.append(step[DTYPE].np_dtype)
                    continue
                lines, out, out_types = self.step(step, [names[x] for x in ins], [types[x] for x in ins],
                                                  [dtypes[x] for x in ins], f"v{len(names)}")
                names += out
                types += out_types
                dtypes += [d.np_dtype for d in step[DTYPE]] if isinstance(step[DTYPE], tuple) else \
                    [step[DTYPE].np_dtype]
                if step[GUARD] and lines:  # in a cond's branch: only when its predicates say so
                    test = " and ".join(names[p] if branch else f"not {names[p]}" for p, branch in step[GUARD])
                    if test == last_test:  # the block above runs under the same test: in it
                        lines = [f"    {x}" for x in lines]
                    elif last_test is not None and " " not in last_test and test == f"not {last_test}":
                        lines = ["else:"] + [f"    {x}" for x in lines]
                    else:
                        lines = [f"if {test}:"] + [f"    {x}" for x in lines]
                    last_test = test if not lines[0].startswith("else") else None
                elif lines:
                    last_test = None
                region += lines
        return cond, body, names, types

    def inner(self, a: dict, input_dtypes: list, input_types: tuple, name: str):
        """The function an inner loop runs as, for inputs of these known types (known
        ones as the fast path has them: Python ints; no errstate and no fallback of its
        own, the outermost loop's cover it)."""
        key = (id(a), input_types)
        if key not in self._inner:
            self._keep.append(a)
            fn = f"loop{self._count}"
            self._count += 1
            lines, result, out_types = self.body(a, input_dtypes, list(input_types))
            params = ", ".join(f"x{i}" for i in range(len(input_dtypes)))
            self.sources.append(f"def {fn}({params}):  # {label(name)}\n" + "".join(f"    {x}\n" for x in lines)
                                + f"    return {result}\n")
            self._inner[key] = (fn, tuple(out_types))
        return self._inner[key]

    def outer(self, a: dict, input_dtypes: list, input_types: list, check: list, name: str):
        """The source of the outermost loop's function for inputs of these known types:
        known ints taken as Python ints (with py_ints), the loop under numpy's errstate
        if a step runs numpy, `fallback` run on any exception. `check`: the inputs whose
        type the function checks first (else it hands over to `dispatch`)."""
        lines, result, out_types = self.body(a, input_dtypes, input_types)
        n_in = len(input_dtypes)
        params = ", ".join(f"a{i}" for i in range(n_in))
        head = []
        if check:
            test = " and ".join(f"type(a{i}) is {_TYPE_NAMES[input_types[i]]}" for i in check)
            head = [f"if not ({test}):", f"    return dispatch({params})"]
        taken = [f"int(a{i})" if T in _INTS and self.py_ints else f"a{i}" for i, T in enumerate(input_types)]
        lines = [f"{', '.join(f'x{i}' for i in range(n_in))} = {', '.join(taken)}"] + lines
        if self.numpy_ops:
            over = "ignore" if self.over_silent else "raise"
            lines = [f'with np.errstate(over="{over}", divide="raise", invalid="raise"):'] + \
                [f"    {x}" for x in lines]
        exits = [ident("v", k) for k in a["exits"]]
        outs = [self.as_numpy(v, T) for v, T in zip(exits, out_types)]
        result = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
        body = head + ["try:"] + [f"    {x}" for x in lines]
        body += [f"    return {result}", "except Exception:", f"    return fallback({params})"]
        return f"def loop({params}):  # {label(name)}\n" + "".join(f"    {x}\n" for x in body)


def scalar_loop_kernel(a: dict, input_dtypes: list, name: str, guarded, shapes=None):
    """The fast kernel of a CompiledLoop with attributes `a` on inputs of these numpy dtypes
    (and, if known, static shapes), handing over to `guarded` (the guarded kernel, taking
    the same inputs) on any exception; None where no value would be known."""
    n_in = len(input_dtypes)
    types = [SCALAR_TYPES.get(np.dtype(d)) if d is not None else None for d in input_dtypes]
    if shapes is not None:  # an input known not to be a scalar: not expected to be a numpy scalar
        types = [T if s is None or s.dims is None or s.dims == () else None for T, s in zip(types, shapes)]
    candidates = [i for i, T in enumerate(types) if T is not None]
    variants = {}

    def make(known: tuple):
        """The function for inputs whose types are `known` (None: unknown), or None: with
        Python ints, handing over to the one with numpy scalars, handing over to the
        guarded kernel."""
        check = [i for i in range(n_in) if known[i] is not None] if known == tuple(types) else []
        fn = guarded
        for py_ints in (False, True):
            loops = _Loops(py_ints)
            loops.env.update(fallback=fn, dispatch=dispatch)
            source = loops.outer(a, input_dtypes, list(known), check if py_ints else [], name)
            if not loops.unguarded:  # nothing known: the next one is as fast
                continue
            full = "".join(x + "\n" for x in loops.sources) + source
            fn = compile_function(full, "loop", loops.env, "compiled loop on scalars", name)
            fn.source, fn.inner_sources, fn.unguarded, fn.fallback = source, list(loops.sources), loops.unguarded, \
                loops.env["fallback"]
        return None if fn is guarded else fn

    def dispatch(*xs):
        """A call whose inputs are not all numpy scalars of their dtypes: the variant for
        those that are."""
        key = tuple(T if T is not None and type(xs[i]) is T else None for i, T in enumerate(types))
        fn = variants.get(key, False)
        if fn is False:
            fn = make(key) if len(variants) < _MAX_VARIANTS else None
            variants[key] = fn
        return (fn or guarded)(*xs)

    if not candidates:
        return None
    loop = make(tuple(types))
    if loop is None:
        return None
    variants[tuple(types)] = loop
    return loop
