"""The fast path of a compiled loop (executor/compiled_loop.py) whose values are numpy scalars.

The guarded kernel checks, on every op of every iteration, that its operands are numpy
scalars of the op's dtype and small enough not to overflow before it uses the Python
operator (executor/scalar_kernels.py). Most of a loop's time goes there. This kernel checks
once, at the loop's entry, which inputs are numpy scalars of their dtype, and knows from
there, statically, which values of an iteration are: a Python operator on known scalars
gives a known scalar of the op's dtype (checked below on this numpy), a choice between two
known scalars of one type too; anything else (a kernel's result, an array) is unknown and
keeps the guarded code. A loop variable is known if its input is and its next value is of
the same type, whatever the iteration (a fixed point over the loop's variables).

Operators on known scalars then run without a guard, under
`np.errstate(over="raise", divide="raise", invalid="raise")`: an integer overflow, a zero
divisor, the smallest integer divided by -1, a float overflow or an invalid operation
(inf - inf, 0 / 0) raises FloatingPointError where numpy's kernel would have wrapped
around, warned or given inf / NaN. On any exception the guarded kernel runs the whole
loop again from its inputs (the loop is pure): it gives numpy's values, its warnings and
its errors, which name the failing step (it falls back to the reference in its turn).
Where an input is not a numpy scalar of its dtype (a 0-d array, a Python number, an
array), a variant that takes that input as unknown runs, made on first use.

numpy's errstate is a context variable in numpy 2 (thread- and asyncio-safe), so another
thread's numpy keeps its own error handling; `under` is left as the caller has it (numpy
ignores underflow by default; if the caller raises on it, so does this path, and the
guarded kernel then raises as it would have).

Inner compiled loops become functions without their own errstate or fallback (the outer
loop's cover them), made for the types known at their call; a Fused step is written out
step by step; constants are bound once, not assigned every iteration.
"""
from __future__ import annotations

import operator

import numpy as np

from graphcore.ops.compiled_ops import GUARD, outputs_of
from graphcore.ops.fused_ops import ATTRS, DTYPE, INPUTS, TYPE
from graphcore.registry import get_op_def

from .fused_kernel import step_kernel
from .scalar_kernels import scalar_source

# numpy scalar types the fast path knows values of
SCALAR_TYPES = {np.dtype(t): t for t in (np.bool_, np.int32, np.int64, np.float32, np.float64)}
_NUMBERS = (np.int32, np.int64, np.float32, np.float64)
_FLOATS = (np.float32, np.float64)
_INT_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))

_BINARY = {"Add": "+", "Sub": "-", "Mul": "*", "RealDiv": "/", "FloorDiv": "//", "Mod": "%"}
_COMPARE = {"Less": "<", "LessEqual": "<=", "Greater": ">", "GreaterEqual": ">=", "Equal": "==", "NotEqual": "!="}
_LOGICAL = {"LogicalAnd": "&", "LogicalOr": "|"}
_UNARY = {"Neg": "-{0}", "Abs": "abs({0})", "LogicalNot": "~{0}"}
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
        if T is np.bool_:
            cases.update(dict.fromkeys(_LOGICAL), LogicalNot=None)
        else:
            cases.update(dict.fromkeys(_BINARY), Neg=None, Abs=None)
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


class _Loops:
    """Makes the functions of one loop, its inner loops and their variants: Python source
    whose names are bound in one shared namespace."""

    def __init__(self):
        self.env = {"np": np}
        self.sources = []
        self._count = 0
        self._inner = {}  # (id(attrs), input types) -> (function name, output types)
        self._keep = []   # the attrs whose id keys _inner
        self.unguarded = 0  # operators written without a guard
        self.consts = {}  # bound name -> a constant's value
        self.over_silent = True  # no step's kernel would report an overflow (see _wraps_silently)

    def bind(self, prefix: str, value) -> str:
        name = f"{prefix}{self._count}"
        self._count += 1
        self.env[name] = value
        return name

    # -- one step ------------------------------------------------------------------------

    def step(self, step, args: list, types: list, dtypes: list, target: str):
        """(lines, output names, output types) of one step on values named `args`, of
        known types `types` (None: unknown) and dtypes `dtypes`, its first output named
        `target` (a constant needs no name: its bound one is used)."""
        kind, k = step[TYPE], outputs_of(step)
        if kind == "Const":
            value = step[ATTRS]["value"]
            T = SCALAR_TYPES.get(step[DTYPE].np_dtype)
            name = self.bind("c", value)
            self.consts[name] = value
            return [], [name], [T if T is not None and type(value) is T else None]
        if not self._wraps_silently(kind, args, dtypes):
            self.over_silent = False
        if kind == "Merge":  # a cond's: the value of the branch its predicate took
            t, f, p = args
            T = types[0] if types[0] is types[1] else None
            return [f"{target} = {t} if {p} else {f}"], [target], [T]
        if kind == "Fused":
            return self.fused(step, args, types, dtypes, target)
        if kind == "CompiledLoop":
            name, out_types = self.inner(step[ATTRS], dtypes, tuple(types), step[3])
            targets = [target] + [f"{target}_{x}" for x in range(1, k)]
            return [f"{', '.join(targets)} = {name}({', '.join(args)})"], targets, list(out_types)
        rule = None
        if not step[ATTRS] and k == 1 and types and types[0] is not None and all(t is types[0] for t in types):
            rule = RULES.get((kind, types[0]))
        if rule is not None and rule[1] is SCALAR_TYPES.get(step[DTYPE].np_dtype):
            self.unguarded += 1
            return [f"{target} = {rule[0].format(*args)}"], [target], [rule[1]]
        if not step[ATTRS] and k == 1:
            k_name, t_name = self.bind("k", get_op_def(kind).kernel), self.bind("T", None)
            inline = scalar_source(kind, dtypes, list(args), k_name, t_name)
            if inline is not None:  # the guarded operator, as the guarded kernel writes it
                self.env[t_name] = inline[1]
                return [f"{target} = {inline[0]}"], [target], [None]
        targets = [target] + [f"{target}_{x}" for x in range(1, k)]
        name = self.bind("k", step_kernel(step, dtypes))
        return [f"{', '.join(targets)} = {name}({', '.join(args)})"], targets, [None] * k

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

    def _wraps_silently(self, kind: str, args: list, dtypes: list) -> bool:
        """Would this step's kernel never report an overflow, whatever numpy's errstate
        (integer + - * wrap around silently in numpy's kernels, as numpy's scalar
        operators do when overflows are ignored)? Then the loop can run with overflows
        ignored and need not start again where an integer wraps around."""
        if kind in ("Merge", "Fused", "CompiledLoop", "LogicalNot") or kind in _COMPARE or kind in _LOGICAL:
            return True  # (a Fused step's and an inner loop's steps are looked at one by one)
        if not dtypes or any(d not in _INT_DTYPES for d in dtypes):
            return False
        if kind in ("Add", "Sub", "Mul", "Neg", "Abs", "Mod", "Maximum", "Minimum"):
            return True
        # the smallest integer // -1 overflows, and numpy's kernel says so: a constant divisor other than -1
        return kind == "FloorDiv" and args[1] in self.consts and not np.any(np.asarray(self.consts[args[1]]) == -1)

    # -- a loop ----------------------------------------------------------------------------

    def body(self, a: dict, input_dtypes: list, input_types: list):
        """(lines of the loop from its inputs x0... to its `while`'s end, the returned
        expression, the types of its outputs): the loop variables' types are a fixed
        point (a variable stays known if its next value has its type every iteration)."""
        n = a["n_vars"]
        var_types = list(input_types[:n])
        while True:
            cond, body, names, types = self.iteration(a, input_dtypes, var_types + list(input_types[n:]))
            known = [T if T is not None and types[a["nexts"][k]] is T else None for k, T in enumerate(var_types)]
            if known == var_types:
                break
            var_types = known
        state = [f"v{k}" for k in range(n)]
        lines = [f"{', '.join(state)} = {', '.join(f'x{k}' for k in range(n))}"] if n else []
        lines += ["while True:"] + [f"    {x}" for x in cond]
        lines += [f"    if not {names[a['pred']]}:", "        break"] + [f"    {x}" for x in body]
        moves = [(v, names[x]) for v, x in zip(state, a["nexts"]) if names[x] != v]
        if moves:
            lines.append(f"    {', '.join(m[0] for m in moves)} = {', '.join(m[1] for m in moves)}")
        exits = [f"v{k}" for k in a["exits"]]
        result = exits[0] if len(exits) == 1 else "(" + ", ".join(exits) + ")"
        return lines, result, [var_types[k] for k in a["exits"]]

    def iteration(self, a: dict, input_dtypes: list, input_types: list):
        """The lines of one iteration's test and body, and the names and types of its values."""
        n = a["n_vars"]
        names = [f"v{k}" for k in range(n)] + [f"x{i}" for i in range(n, len(input_dtypes))]
        types, dtypes = list(input_types), list(input_dtypes)
        cond, body = [], []
        for region, steps in ((cond, a["cond_steps"]), (body, a["body_steps"])):
            for step in steps:
                ins = step[INPUTS]
                lines, out, out_types = self.step(step, [names[x] for x in ins], [types[x] for x in ins],
                                                  [dtypes[x] for x in ins], f"v{len(names)}")
                names += out
                types += out_types
                dtypes += [d.np_dtype for d in step[DTYPE]] if isinstance(step[DTYPE], tuple) else \
                    [step[DTYPE].np_dtype]
                if step[GUARD] and lines:  # in a cond's branch: only when its predicates say so
                    test = " and ".join(names[p] if branch else f"not {names[p]}" for p, branch in step[GUARD])
                    lines = [f"if {test}:"] + [f"    {x}" for x in lines]
                region += lines
        return cond, body, names, types

    def inner(self, a: dict, input_dtypes: list, input_types: tuple, name: str):
        """The function an inner loop runs as, for inputs of these known types (no errstate
        and no fallback of its own: the outermost loop's cover it)."""
        key = (id(a), input_types)
        if key not in self._inner:
            self._keep.append(a)
            fn = f"loop{self._count}"
            self._count += 1
            lines, result, out_types = self.body(a, input_dtypes, list(input_types))
            params = ", ".join(f"x{i}" for i in range(len(input_dtypes)))
            self.sources.append(f"def {fn}({params}):  # {name}\n" + "".join(f"    {x}\n" for x in lines)
                                + f"    return {result}\n")
            self._inner[key] = (fn, tuple(out_types))
        return self._inner[key]

    def outer(self, a: dict, input_dtypes: list, input_types: list, check: list, name: str):
        """The source of the outermost loop's function for inputs of these known types:
        under errstate, the guarded kernel run on any exception. `check`: the inputs whose
        type the function checks first (else it hands over to `dispatch`)."""
        lines, result, _ = self.body(a, input_dtypes, input_types)
        params = ", ".join(f"x{i}" for i in range(len(input_dtypes)))
        head = []
        if check:
            test = " and ".join(f"type(x{i}) is {self.bind('T', input_types[i])}" for i in check)
            head = [f"if not ({test}):", f"    return dispatch({params})"]
        over = "ignore" if self.over_silent else "raise"
        body = head + ["try:", f'    with np.errstate(over="{over}", divide="raise", invalid="raise"):']
        body += [f"        {x}" for x in lines]
        body += [f"    return {result}", "except Exception:", f"    return guarded({params})"]
        return f"def loop({params}):  # {name}\n" + "".join(f"    {x}\n" for x in body)


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
        """The function for inputs whose types are `known` (None: unknown), or None."""
        loops = _Loops()
        loops.env.update(guarded=guarded, dispatch=dispatch)
        check = [i for i in range(n_in) if known[i] is not None] if known == tuple(types) else []
        source = loops.outer(a, input_dtypes, list(known), check, name)
        if not loops.unguarded:  # nothing known: the guarded kernel is as fast
            return None
        full = "".join(s + "\n" for s in loops.sources) + source
        exec(compile(full, f"<compiled loop {name}, on numpy scalars>", "exec"), loops.env)  # noqa: S102 (ours)
        fn = loops.env["loop"]
        fn.source, fn.inner_sources, fn.unguarded = source, list(loops.sources), loops.unguarded
        return fn

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
