"""Random programs for checking gradients through converted control flow.

Each seed gives one smooth numeric function `f` with tensor `if`/`else`, `while` and
`for` loops (nested, with `break` and early `return` on loop counters). `run_seed`
differentiates it through the traced graph, first and second order, and compares the
results with central finite differences of the same function run as plain Python.

Programs are generated so that the comparison is meaningful: every float condition
is far from its decision boundary at every point the finite-difference stencils
evaluate, every value stays moderate, and the stencils agree with themselves at two
step sizes. So a disagreement is a bug in the conversion, the gradients or the
executor, never noise in the reference.

Beside numpy's smooth functions the programs use what users write around them: `**`
with fractional and negative exponents, a lambda defined in the function, a module-level
helper with a default argument called by keyword, `a, b = b, f(a)`, `reversed(range(n))`
and for/else and while/else. These are drawn from a second random stream (`extra`), seeded
from the first without consuming it, so the seeds' other choices stay as they were.

`np.sin` and `np.cos` are not generated: graphcore has no Sin/Cos op, so a graph
tensor passed to them raises TypeError. Add "sin", "cos" to `UNARY_FUNCS` once it does.
"""
from __future__ import annotations

import atexit
import importlib.util
import inspect
import itertools
import os
import random
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .random_programs import value_source
from .time_limit import Timeout, time_limit

UNARY_FUNCS = ("tanh", "exp", "square")

FIRST_STEP, FIRST_RTOL, FIRST_ATOL = 1e-6, 1e-5, 1e-6
SECOND_STEP, SECOND_RTOL, SECOND_ATOL = 1e-4, 1e-4, 1e-4
MARGIN = 0.02          # smallest |lhs - threshold| a float condition may have at the test point
MAX_ABS_VALUE = 50.0   # larger outputs make the second-order stencil too noisy
MAX_ATTEMPTS = 500
TIME_LIMIT = 10.0      # seconds for one traced computation; the slowest of 1000 seeds takes < 5


@dataclass
class GradProgram:
    """One generated program: `source` defines `func_name`; differentiate it at `args`
    with respect to the arguments at positions `wrt`."""

    source: str
    func_name: str
    args: tuple
    wrt: tuple
    features: frozenset = field(default_factory=frozenset)


# -- generation ------------------------------------------------------------------------------

class _Line:
    """A source line; `probe` is its text in the instrumented copy that records the
    margin and outcome of every float condition (only conditions differ)."""

    def __init__(self, indent: int, text: str, probe: str | None = None):
        self.indent, self.text, self.probe = indent, text, text if probe is None else probe


class _Builder:
    """Draws one program from `rng`: statements, expressions, arguments."""

    MAX_DEPTH = 3      # nesting of if / loops
    MAX_LOOPS = 2      # nesting of loops
    COMPOUND = (0.6, 0.35, 0.15)  # chance that a statement at this depth is an if or a loop

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.lines: list[_Line] = []
        self.features: set[str] = set()
        self.names = itertools.count()
        self.array = rng.random() < 0.3
        self.size = rng.choice([2, 3])
        self.has_y = rng.random() < 0.4
        self.state = [f"v{i}" for i in range(rng.choice([1, 2, 2, 3]))]
        self.defined: list[str] = []   # state variables assigned so far
        self.ints = ["n"] + (["m"] if rng.random() < 0.4 else [])
        self.tensor_ints = {name: rng.random() < 0.75 for name in self.ints}
        self.extra = random.Random(repr(rng.getstate()[1][:8]))  # new forms: the main stream is left as it was
        self.lambda_ = self.extra.random() < 0.3   # `sq = lambda t: ...` at the top, called in expressions
        self.helper = self.extra.random() < 0.3    # a module-level `hs(t, c=...)`, called by keyword too

    def xconst(self, lo=-1.0, hi=1.0) -> str:
        return repr(round(self.extra.uniform(lo, hi), 2))

    # expressions ------------------------------------------------------------------------
    def const(self, lo=-1.0, hi=1.0) -> str:
        return repr(round(self.rng.uniform(lo, hi), 2))

    def leaf(self) -> str:
        pool = self.defined + ["x"] + (["y"] if self.has_y else [])
        return self.rng.choice(pool) if self.rng.random() < 0.8 else self.const()

    def live_expr(self, depth: int = 2) -> str:
        """An expression that reads at least one variable (so a condition on it is a
        tensor condition, and a return of it depends on the inputs)."""
        while True:
            e = self.expr(depth)
            if re.search(r"\b(v\d+|x|y)\b", e):
                return e

    def expr(self, depth: int = 2) -> str:
        """A smooth expression of x's shape (or scalar) with bounded growth."""
        if depth <= 0 or self.rng.random() < 0.25:
            return self.leaf()
        a = self.expr(depth - 1)
        if self.extra.random() < 0.04:
            return self.extra_expr(a)
        kind = self.rng.choice(["unary", "unary", "add", "sub", "mul", "div", "pow", "scale"]
                               + ([] if self.array else ["math"]))
        if kind == "math":  # Python's math functions on a scalar: the PythonMath op and its derivatives
            return self.rng.choice([f"math.sin({a})", f"math.cos({a})", f"math.tanh({a})", f"math.atan({a})",
                                    f"math.sqrt(1.0 + ({a}) ** 2)",
                                    f"math.exp({self.const(0.2, 0.6)} * math.tanh({a}))",
                                    f"math.hypot({a}, {self.const(0.5, 1.5)})", f"math.log(2.0 + math.tanh({a}))"])
        if kind == "unary":
            fn = self.rng.choice(UNARY_FUNCS)
            if fn == "exp":
                return f"np.exp({self.const(0.2, 0.7)} * np.tanh({a}))"
            return f"np.{fn}({a})"
        if kind == "pow":
            return f"({a}) ** 2"
        if kind == "scale":
            return f"{self.const()} * {a}"
        b = self.expr(depth - 1)
        if kind == "div":
            denominator = self.rng.choice([f"({self.const(1.5, 2.5)} + ({b}) ** 2)",
                                           f"({self.const(1.5, 2.5)} + np.tanh({b}))"])
            return f"{a} / {denominator}"
        return f"({a} {dict(add='+', sub='-', mul='*')[kind]} {b})"

    def extra_expr(self, a: str) -> str:
        """A smooth expression of `a` in one of the forms of the module docstring."""
        forms = ["pow_half", "pow_neg", "pow_three_halves", "div"] + (["lambda"] if self.lambda_ else []) \
            + (["helper"] if self.helper else [])
        form = self.extra.choice(forms)
        self.features.add("pow" if form.startswith("pow") else form)
        if form == "pow_half":
            return f"({self.xconst(0.5, 1.5)} + ({a}) ** 2) ** 0.5"
        if form == "pow_neg":
            return f"({self.xconst(1.5, 2.5)} + np.tanh({a})) ** {self.extra.choice(['-1', '-1.0', '-0.5', '-2'])}"
        if form == "pow_three_halves":
            return f"({self.xconst(1.5, 2.5)} + np.tanh({a})) ** 1.5"
        if form == "div":
            return f"({a}) / {self.extra.choice(['3', '3.0', '7.0', '0.9'])}"
        if form == "lambda":
            return f"sq({a})"
        c1, c2 = self.xconst(0.1, 0.9), self.xconst(0.1, 0.9)
        return self.extra.choice([f"hs({a})", f"hs({a}, c={c1})", f"hs(c={c2}, t={a})"])

    def scalar(self, e: str) -> str:
        return f"gc.reduce_sum({e})" if self.array else e

    def update(self, v: str) -> str:
        """A new value for state variable v; it keeps v's shape and stays bounded."""
        e = self.expr()
        forms = [f"{self.const(-0.9, 0.9)} * {v} + {self.const(-0.8, 0.8)} * np.tanh({e})",
                 f"{v} * (1.0 + {self.const(0.1, 0.4)} * np.tanh({e}))",
                 f"np.tanh({v} + {e})",
                 f"{v} + {e} / ({self.const(1.5, 3.0)} + ({self.expr(1)}) ** 2)",
                 f"0.5 * {v} + {self.const(0.1, 0.5)} * np.exp({self.const(0.2, 0.6)} * np.tanh({e}))"]
        return self.rng.choice(forms)

    # statements ------------------------------------------------------------------------
    def emit(self, indent, text, probe=None):
        self.lines.append(_Line(indent, text, probe))

    def bound(self) -> str:
        b = self.rng.choice(self.ints + self.ints + ["2", "3"])
        if b in self.tensor_ints:
            self.features.add("tensor_loop" if self.tensor_ints[b] else "python_int_loop")
        return b

    def counter_test(self, counter: str) -> str:
        c = self.rng.randint(0, 3)
        return self.rng.choice([f"{counter} == {c}", f"{counter} % 2 == {c % 2}", f"{counter} < {c}",
                                f"{counter} >= {max(c, 1)}"])

    def float_condition(self, indent: int) -> None:
        """`if <expression> > <threshold>:`; the probe copy records the margin instead."""
        lhs, c = self.scalar(self.live_expr(1)), self.const(-1.5, 1.5)
        self.emit(indent, f"if {lhs} > {c}:", f"if _probe({lhs}, {c}):")

    def block(self, indent: int, depth: int, loops: list[str], size: int = 0) -> None:
        for _ in range(size or self.rng.choice([1, 1, 2])):
            self.statement(indent, depth, loops)

    def loop_body(self, indent: int, depth: int, loops: list[str]) -> None:
        self.block(indent, depth, loops)
        if self.rng.random() < 0.7:  # mostly, a loop carries state
            v = self.rng.choice(self.state)
            self.emit(indent, f"{v} = {self.update(v)}")

    def statement(self, indent: int, depth: int, loops: list[str]) -> None:
        # compound statements get rarer with depth, which keeps programs (and repros) short
        if depth < self.MAX_DEPTH and self.rng.random() < self.COMPOUND[depth]:
            choices = ["if"]
            if len(loops) < self.MAX_LOOPS:
                choices += ["while", "for"]
            if loops:
                choices += ["counter_if"]
        else:
            choices = ["assign"] * 3 + (["break", "return"] if loops else ["float_return"])
        kind = self.rng.choice(choices)
        if kind == "assign" and len(self.state) >= 2 and self.extra.random() < 0.1:
            self.features.add("swap")
            a, b = self.extra.sample(self.state, 2)
            self.emit(indent, f"{a}, {b} = {b}, {self.update(a)}")
            return
        if kind == "assign":
            v = self.rng.choice(self.state)
            self.emit(indent, f"{v} = {self.update(v)}")
        elif kind == "if":
            self.features.add("if_in_loop" if loops else "if")
            self.float_condition(indent)
            self.block(indent + 1, depth + 1, loops)
            if self.rng.random() < 0.7:
                self.emit(indent, "else:")
                self.block(indent + 1, depth + 1, loops)
        elif kind == "counter_if":
            self.features.add("counter_if")
            self.emit(indent, f"if {self.counter_test(self.rng.choice(loops))}:")
            self.block(indent + 1, depth + 1, loops)
        elif kind in ("while", "for"):
            if loops:
                self.features.add("nested_loop")
            if depth > len(loops):
                self.features.add("loop_in_if")
            counter = f"{'i' if kind == 'while' else 'k'}{next(self.names)}"
            if kind == "while":
                self.features.add("while")
                self.emit(indent, f"{counter} = 0")
                self.emit(indent, f"while {counter} < {self.bound()}:")
                self.loop_body(indent + 1, depth + 1, loops + [counter])
                self.emit(indent + 1, f"{counter} += 1")
            else:
                self.features.add("for")
                if self.extra.random() < 0.2:
                    self.features.add("reversed")
                    self.emit(indent, f"for {counter} in reversed(range({self.bound()})):")
                else:
                    self.emit(indent, f"for {counter} in range({self.bound()}):")
                self.loop_body(indent + 1, depth + 1, loops + [counter])
            if self.extra.random() < 0.08:  # runs when the loop ends without break
                self.features.add("loop_else")
                v = self.extra.choice(self.state)
                self.emit(indent, "else:")
                self.emit(indent + 1, f"{v} = {self.update(v)}")
        elif kind == "break":
            self.features.add("break")
            self.emit(indent, f"if {self.counter_test(loops[-1])}:")
            self.emit(indent + 1, "break")
        elif kind == "return":
            self.features.add("return_in_loop")
            self.emit(indent, f"if {self.counter_test(self.rng.choice(loops))}:")
            self.emit(indent + 1, f"return {self.scalar(self.live_expr())}")
        else:
            self.features.add("float_return")
            self.float_condition(indent)
            self.emit(indent + 1, f"return {self.scalar(self.live_expr())}")

    def arguments(self) -> tuple[list[str], tuple, tuple]:
        rng = self.rng
        x = (np.array([round(rng.uniform(-1.5, 1.5), 3) for _ in range(self.size)]) if self.array
             else np.float64(round(rng.uniform(-1.5, 1.5), 3)))
        names, args = ["x"], [x]
        if self.has_y:
            names.append("y")
            args.append(np.float64(round(rng.uniform(-1.5, 1.5), 3)))
        for name in self.ints:
            value = rng.choice([0, 1, 2, 2, 3, 3, 4]) if rng.random() < 0.95 else 0
            names.append(name)
            args.append(np.int64(value) if self.tensor_ints[name] else value)
        floats = [0, 1] if self.has_y else [0]
        wrt = tuple(sorted(rng.sample(floats, rng.randint(1, len(floats)))))
        return names, tuple(args), wrt

    def build(self) -> tuple[str, str, tuple, tuple]:
        names, args, wrt = self.arguments()
        self.emit(0, f"def f({', '.join(names)}):")
        if self.lambda_:
            self.emit(1, f"sq = lambda t: t / ({self.xconst(1.0, 2.0)} + t * t)")
        for v in self.state:
            self.emit(1, f"{v} = {self.const(0.5, 1.5)} * x + {self.expr(1)}")
            self.defined.append(v)
        self.block(1, 0, [], size=self.rng.randint(2, 3))
        self.emit(1, f"return {self.scalar(' + '.join(f'{self.const()} * {v}' for v in self.state))}")
        header = "import math\n\nimport numpy as np\nimport graphcore as gc\n\n\n"
        if self.helper:
            header += f"def hs(t, c={self.xconst(0.2, 0.8)}):\n    return c * t + np.tanh(t)\n\n\n"
        plain = header + "\n".join("    " * ln.indent + ln.text for ln in self.lines) + "\n"
        probe = header + "\n".join("    " * ln.indent + ln.probe for ln in self.lines) + "\n"
        return plain, probe, args, wrt


def generate(seed: int) -> GradProgram:
    """The program of `seed` (the same on every call): the first candidate drawn from
    random.Random(seed) that is smooth and well conditioned around its arguments."""
    rng = random.Random(seed)
    for _ in range(MAX_ATTEMPTS):
        builder = _Builder(rng)
        source, probe, args, wrt = builder.build()
        if _well_conditioned(probe, args, wrt):
            return GradProgram(source, "f", args, wrt, frozenset(builder.features))
    raise RuntimeError(f"seed {seed}: no well-conditioned program in {MAX_ATTEMPTS} attempts")


def _well_conditioned(probe_source: str, args: tuple, wrt: tuple) -> bool:
    """True if every stencil point takes the branches the test point takes, with margin,
    values stay moderate, and each finite-difference estimate agrees at two step sizes."""
    trace: list = []

    def record(lhs, threshold):
        lhs = float(lhs)
        trace.append((lhs > threshold, abs(lhs - threshold)))
        return lhs > threshold

    namespace = {"_probe": record}
    exec(compile(probe_source, "<gradfuzz probe>", "exec"), namespace)  # noqa: S102 (our own generated text)
    f = namespace["f"]

    reference = None

    def traced(*a):
        nonlocal reference
        trace.clear()
        with np.errstate(all="raise"):
            value = float(f(*a))
        branches = [taken for taken, _ in trace]
        if reference is None:
            reference = branches
            if any(margin < MARGIN for _, margin in trace):
                raise _Rejected
        elif branches != reference:
            raise _Rejected
        if not np.isfinite(value) or abs(value) > MAX_ABS_VALUE:
            raise _Rejected
        return value

    try:
        traced(*args)
        far = 1e-3  # wider than every stencil below
        for i in wrt:
            for delta in _directions(args[i]):
                for s in (far, -far):
                    traced(*_shifted(args, i, s * delta))
        for i in wrt:
            g1, g2 = first_order_fd(traced, args, i, FIRST_STEP), first_order_fd(traced, args, i, 10 * FIRST_STEP)
            if not np.allclose(g1, g2, rtol=1e-6, atol=1e-7) or np.max(np.abs(g1)) > 1e3:
                return False
            h1, h2 = second_order_fd(traced, args, i, SECOND_STEP), second_order_fd(traced, args, i, 2 * SECOND_STEP)
            if not np.allclose(h1, h2, rtol=1e-5, atol=1e-5):
                return False
    except (_Rejected, FloatingPointError, ZeroDivisionError, OverflowError):
        return False
    return True


class _Rejected(Exception):
    """A stencil point takes another branch, or a value is out of range."""


# -- finite differences of plain Python -----------------------------------------------------

def _directions(value) -> list:
    if np.ndim(value) == 0:
        return [1.0]
    unit = np.eye(np.size(value))
    return [unit[j] for j in range(np.size(value))] + [np.ones(np.size(value))]


def _shifted(args: tuple, i: int, delta) -> tuple:
    out = list(args)
    out[i] = np.float64(args[i] + delta) if np.ndim(args[i]) == 0 else np.asarray(args[i], np.float64) + delta
    return tuple(out)


def first_order_fd(f: Callable, args: tuple, i: int, h: float = FIRST_STEP):
    """d f / d args[i] by central differences (an array for an array argument)."""
    if np.ndim(args[i]) == 0:
        return np.float64((f(*_shifted(args, i, h)) - f(*_shifted(args, i, -h))) / (2 * h))
    unit = np.eye(np.size(args[i]))
    return np.array([(f(*_shifted(args, i, h * e)) - f(*_shifted(args, i, -h * e))) / (2 * h) for e in unit])


def second_order_fd(f: Callable, args: tuple, i: int, h: float = SECOND_STEP):
    """d2 f / d args[i]2 for a scalar (5-point stencil); for an array, the Hessian times a
    vector of ones (what differentiating the first gradient again gives), by the 4-point
    mixed stencil along e_j and the ones vector."""
    if np.ndim(args[i]) == 0:
        at = [f(*_shifted(args, i, k * h)) for k in (-2, -1, 0, 1, 2)]
        return np.float64((-at[0] + 16 * at[1] - 30 * at[2] + 16 * at[3] - at[4]) / (12 * h * h))
    n = np.size(args[i])
    unit, ones = np.eye(n), np.ones(n)
    out = []
    for e in unit:
        pp, pm = f(*_shifted(args, i, h * (e + ones))), f(*_shifted(args, i, h * (e - ones)))
        mp, mm = f(*_shifted(args, i, h * (ones - e))), f(*_shifted(args, i, -h * (e + ones)))
        out.append((pp - pm - mp + mm) / (4 * h * h))
    return np.array(out)


# -- the checks ---------------------------------------------------------------------------------

def _close(got, want, rtol, atol) -> bool:
    got = np.asarray(got, dtype=np.float64)
    return got.shape == np.shape(want) and bool(np.allclose(got, want, rtol=rtol, atol=atol))


def _fmt(value) -> str:
    return np.array2string(np.asarray(value, dtype=np.float64), precision=10) if value is not None else "None"


def check_function(f: Callable, args: tuple, wrt: tuple, options: dict | None = None) -> Optional[str]:
    """Compare f's value and gradients computed through the graph (autograph.value_and_grad,
    autograph.grad twice, gc.gradients twice on the traced graph) with plain Python and
    its finite differences at `args`. None if all agree, else what disagreed.

    `options`: how every one of them runs, as `autograph.function` takes them
    (`jit_compile`, `devices`, `control_flow`, `functional`...): the gradients of
    `function(f, **options)`, and a Session with them for gc.gradients. With `devices`,
    each graph's ops are spread over the devices round-robin, so every run crosses them
    (left alone, all would sit on the first)."""
    import autograph  # noqa: PLC0415 (the generator alone needs neither)
    import graphcore as gc  # noqa: PLC0415
    from executor import Session  # noqa: PLC0415
    from executor.session import functional_mode  # noqa: PLC0415
    from graphcore.placement import spread  # noqa: PLC0415

    options = dict(options or {})
    devices = options.get("devices")
    target = autograph.function(f, **options) if options else f

    def spread_over_devices(run: Callable) -> Callable:
        """`run` (a gradient function) with its traced graph's ops spread over `devices`."""
        if devices:
            spread(run.get_concrete_function(*args).graph, devices, "round-robin", keep_given=False)
        return run

    names = list(inspect.signature(f).parameters)
    problems: list[str] = []
    hung: list[str] = []

    def attempt(what: str, fn: Callable):
        if hung:  # the other computations would hang the same way: say so once, quickly
            problems.append(f"{what} skipped after the hang")
            return None
        try:
            with time_limit(TIME_LIMIT):
                return fn()
        except Timeout as e:
            hung.append(what)
            problems.append(f"{what} {e}")
            return None
        except Exception as e:  # noqa: BLE001 (any exception is a finding)
            problems.append(f"{what} raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            return None

    def compare(what: str, got, want, rtol, atol):
        if got is None and any(p.startswith(what) for p in problems):
            return
        if not _close(got, want, rtol, atol):
            problems.append(f"{what} is {_fmt(got)}, finite differences give {_fmt(want)}")

    plain = float(f(*args))
    first = {i: first_order_fd(f, args, i) for i in wrt}
    second = {i: second_order_fd(f, args, i) for i in wrt}

    # first order, autograph
    argnums = wrt[0] if len(wrt) == 1 else wrt
    result = attempt(f"autograph.value_and_grad(f, argnums={argnums})",
                     lambda: spread_over_devices(autograph.value_and_grad(target, argnums=argnums))(*args))
    if result is not None:
        value, grads = result
        if not _close(value, plain, 1e-9, 1e-12):
            problems.append(f"the value from autograph.value_and_grad is {_fmt(value)}, plain Python gives {plain!r}")
        grads = (grads,) if len(wrt) == 1 else grads
        for i, g in zip(wrt, grads):
            compare(f"first order d/d{names[i]} by autograph.grad", g, first[i], FIRST_RTOL, FIRST_ATOL)

    # second order, autograph.grad twice (single-argument differentiation of a scalar)
    scalars = [i for i in wrt if np.ndim(args[i]) == 0]
    if scalars:
        i = scalars[0]
        what = f"second order d2/d{names[i]}2 by autograph.grad(autograph.grad(f, argnums={i}), argnums={i})"
        got = attempt(what, lambda: spread_over_devices(autograph.grad(autograph.grad(target, argnums=i),
                                                                       argnums=i))(*args))
        compare(what, got, second[i], SECOND_RTOL, SECOND_ATOL)

    # first and second order, gc.gradients twice on the traced graph
    def graph_derivatives():
        concrete = autograph.function(f, **options).get_concrete_function(*args)
        out = concrete.structured_outputs
        if not isinstance(out, gc.Tensor):
            raise TypeError(f"the traced function returned a Python value {out!r}, not a tensor")
        inputs = iter(concrete.inputs)
        placeholders = {k: next(inputs) for k, a in enumerate(args) if isinstance(a, (np.ndarray, np.generic))}
        fetches = []
        with concrete.graph.as_default():
            for k in wrt:
                d1 = gc.gradients(out, [placeholders[k]])[0]
                d1 = gc.zeros_like(placeholders[k]) if d1 is None else d1
                d2 = gc.gradients(gc.reduce_sum(d1), [placeholders[k]])[0]  # H @ ones for an array
                fetches += [d1, gc.zeros_like(placeholders[k]) if d2 is None else d2]
        feeds = {p: args[k] for k, p in placeholders.items()}
        if devices:
            spread(concrete.graph, devices, "round-robin", keep_given=False)
        jit = options.get("jit_compile", False)
        functional = options.get("functional")
        if jit and functional_mode(functional) == "direct":
            functional = "lower"  # (as @function does: with jit_compile the Whiles are lowered and compiled)
        return Session(concrete.graph, num_threads=1, jit_compile=jit, devices=devices,
                       engine=options.get("engine", "local"), engine_options=options.get("engine_options"),
                       functional=functional).run(fetches, feed_dict=feeds)

    derivatives = attempt("gc.gradients on the traced graph", graph_derivatives)
    if derivatives is not None:
        for j, i in enumerate(wrt):
            compare(f"first order d/d{names[i]} by gc.gradients", derivatives[2 * j], first[i],
                    FIRST_RTOL, FIRST_ATOL)
            compare(f"second order d/d{names[i]} (d/d{names[i]} f) by gc.gradients twice", derivatives[2 * j + 1],
                    second[i], SECOND_RTOL, SECOND_ATOL)
    return "; ".join(problems) or None


# -- seeds ---------------------------------------------------------------------------------------

_TMPDIR: list[str] = []
_loaded = itertools.count()


def _load(program: GradProgram) -> Callable:
    """Import the program from a real file: AutoGraph converts only functions whose
    source it can read."""
    if not _TMPDIR:
        _TMPDIR.append(tempfile.mkdtemp(prefix="autograph_gradfuzz_"))
        atexit.register(shutil.rmtree, _TMPDIR[0], True)
    name = f"gradfuzz_program_{next(_loaded)}"
    path = os.path.join(_TMPDIR[0], name + ".py")
    with open(path, "w") as fh:
        fh.write(program.source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return getattr(module, program.func_name)


def check_program(program: GradProgram) -> Optional[str]:
    """check_function on a generated program, loaded from a file."""
    return check_function(_load(program), program.args, program.wrt)


def run_seed(seed: int) -> Optional[str]:
    """None if the gradients of seed's program agree with finite differences, else a
    one-paragraph description of each disagreement (order, values, exception)."""
    program = generate(seed)
    problem = check_program(program)
    if problem is None:
        return None
    args = ", ".join(value_source(a) for a in program.args)
    return f"seed {seed}: f({args}), wrt {program.wrt}: {problem}."


def program_source(seed: int) -> str:
    """A runnable file that repeats seed's check: the program, then the comparison."""
    program = generate(seed)
    args = ", ".join(value_source(a) for a in program.args)
    return (f"# autograph fuzz --kind grads, seed {seed}\n{program.source}\n\n"
            "if __name__ == \"__main__\":\n"
            "    from autograph.testing.random_grad_programs import check_function\n\n"
            f"    problem = check_function({program.func_name}, ({args},), wrt={program.wrt!r})\n"
            "    print(problem or \"value and gradients agree with finite differences\")\n")
