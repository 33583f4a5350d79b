"""A seeded generator of small random Python programs for differential testing.

`generate(seed)` returns a `Program`: the text of a module (`import numpy as np` and one
`def f(...)`) and the arguments to call `f` with. The programs use what a user writes in
AutoGraph code: nested if/elif/else, while and for loops (over `range` with tensor or Python
bounds, `reversed(range(...))`, numpy arrays, their slices with steps, `reversed` and
`enumerate(..., start=k)`), for/else and while/else with `break`, break/continue/return at any
depth, conditional expressions (nested too), chained comparisons, and/or/not (also on plain
values), tuple returns and tuple assignment (`a, b = b, a + b`), augmented assignment, print,
`**`, `//` and `%` of either sign, math and numpy functions, and closures: a lambda or nested
function reading a local that later statements change, sometimes counting calls by `nonlocal`.

The rules below exist so that plain Python and the graph *must* agree, and any disagreement is a
converter bug rather than noise:

- termination: a `while` loop has a fresh counter incremented by the first statement of its body
  and compared with a small bound in its condition; `range` bounds are small; steps are constants.
- no error in plain Python: a divisor is a nonzero constant or `abs(e) + 1` (either sign); every
  variable read is defined on every path reaching it; int magnitudes stay far below 2**31
  (loop-carried values are wrapped with `% 97` when they could grow) and `_within_limits` rejects
  the rare program that still overflows, before it is handed out. A program with a nan or
  infinite argument (8%) may raise Python's ValueError / OverflowError (`int(nan)`): that is
  a result the converted program must match.
- floats: most programs use constants that are not exact in binary (0.1, 1/3, 1e-3), divide by
  3, 10, 0.1 or a computed value, and call math.exp / log / sqrt / hypot and `**` with
  fractional or negative exponents on positive values: the graph must compute every float bit
  for bit as Python does (results are compared with rtol 1e-9 and printed digits exactly, and
  `<` on a value off by one ulp takes another branch). Floats are compared with == and !=
  rarely. A quarter of the programs keep exact floats (multiples of 1/4, scaled by 0.5, 2, -1).
- float32 programs (12%): float arguments are np.float32, met by Python numbers (numpy 2 keeps
  float32), with exact floats only: a Python float on one path and a float32 on another is
  one graph value of one dtype, rounded to float32 (an int-or-float-by-path case, left to the
  joins' own tests).
- one kind per variable: a name is int, float or bool on every path, every return has the same
  structure and kinds, and all integer arguments of one program share one numpy dtype (a graph
  variable has one dtype; a variable that is int64 on one path and int32 or float on another is a
  user error in graph code, not a converter bug).
- prints: most carry a tensor argument, some only Python values (staged too: they print when the
  graph runs, on every path that reaches them).
- exceptions: `raise ValueError(...)` and `assert` under a condition, so a converted program must
  raise exactly where Python does (a staged raise fails the run only on the path that raises).
- returns: of values, and sometimes a bare `return` / `return None` (the call gives None on that
  path, as when the function falls off its end).
- names first bound in both branches of an if, in a loop body after an early `return` (or
  break / continue) under a condition, then read (7% of the statements in loops; drawn
  from a second stream, so programs without it are as they were).
- arguments changed in place: the array argument at the function's top level (`xs[i] = e`,
  `xs += e`, `xs *= 2`); the caller's arrays after the call are compared too.
- sequences repeated by a Python int count (`len([0] * k)`).
- issue 25's third round (from a third stream; `generate(seed, python_behaviour=False)` gives
  the programs as they were without it): text of numbers, tensors most often (`len(str(x))`,
  `str(n).startswith('-')`, `int(str(n))`, prints of `str(x).zfill(8)`...); sequences repeated
  by int variables, tensors too (`len([0] * n)`, `3 in [1, 3] * n`, `int(sum([1, 2] * n))`); a
  list argument `ys` appended to, extended, popped at the top level before any return or raise
  (inside control flow on a tensor that is refused), and read by `len(ys)`; the array argument
  changed in place inside ifs and loops (never one iterating over it); conversions that give
  Python numbers (`round(x)`, `math.floor(x)`, `n.item()`, `math.isfinite(x)`). The caller's
  list after the call is compared too.
- effects in tests (issue 27; from a fourth stream, `generate(seed, effects_in_tests=False)` gives
  the programs as they were without them): an operand of a while loop's test (first, or after the
  counter's comparison) and of the test of an if inside a loop (after `and`, after `or`, or first)
  that prints (`print('W1:', k, x) is None`, `(print(...) or k > 2)`), prints in a conditional
  expression, or calls a helper that prints (`wnote`) or asserts (`wcheck1`, a small bound fails
  now and then: the graph must raise where Python does, after the same prints).
- helpers: module-level functions (with an `if` or a loop with an early return, or with a
  default and a keyword-only parameter, called by position and by keyword) called from
  expressions; they return a number on every path, and are converted when `f` calls them.

Deliberately left out: reading possibly-undefined variables, containers, recursion.
"""
from __future__ import annotations

import ast
import contextlib
import copy
import dataclasses
import io
import random
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

INT, FLOAT, BOOL = "int", "float", "bool"

MIN_LINES, MAX_LINES = 5, 25   # of the function, its def line included
MAX_DEPTH = 3         # nesting of blocks inside the function body
MAX_LOOP_DEPTH = 2    # nesting of loops
LOOP_LIMIT = 1000     # assumed |value| of a variable carried through a loop
STRAIGHT_LIMIT = 10 ** 5
INT_LIMIT = 2 ** 31 - 1
FLOAT_LIMIT = 2.0 ** 40

_INT_LITERALS = [0, 1, 1, 2, 2, 3, 3, 4, 5, 7, -1, -2]
_FLOAT_LITERALS = [0.0, 0.5, 1.5, 2.0, -0.5, 0.25, 3.0, -1.25, 1.0]
# not exact in binary: results depend on rounding, so any difference in the order or the
# precision of float operations between Python and the graph shows
_INEXACT_LITERALS = [0.1, 0.3, -0.7, 1 / 3, 1e-3, 2.5e-2, 1.1, 2.2, -0.1, 0.9]
_NON_FINITE = [float("nan"), float("inf"), float("-inf")]
_LOCAL_NAMES = {INT: ["acc", "total", "s", "c", "d", "best", "cnt", "r"],
                FLOAT: ["z", "w", "avg", "fsum", "h"],
                BOOL: ["flag", "found", "ok", "done"]}
_TEMP_NAMES = {INT: ["tmp", "delta", "sign", "q"], FLOAT: ["ft", "scale", "g"], BOOL: ["cond", "hit"]}


@dataclass
class Program:
    """A generated program: module text, the function's name and the arguments to call it with."""

    seed: int
    source: str
    args: tuple
    func_name: str = "f"

    def args_source(self) -> str:
        """The arguments as Python source (numpy values spelled with their dtype)."""
        items = [value_source(a) for a in self.args]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    def repro_source(self, note: str = "") -> str:
        """A runnable file: the program, its arguments, and a main that runs it plain and
        converted and prints both (exit code 1 when they disagree)."""
        header = f'"""Differential-test program, seed {self.seed}.\n' + (note.strip() + "\n" if note.strip() else "") + '\n' \
                 'Run: python <this file>   (plain Python vs @autograph.function)\n"""\n'
        return (header + self.source.rstrip() + "\n\n\n" + f"ARGS = {self.args_source()}\n\n"
                "if __name__ == '__main__':\n"
                "    from autograph.testing.differential import report_main\n"
                f"    raise SystemExit(report_main({self.func_name}, ARGS))\n")

    def write_repro(self, path, note: str = "") -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.repro_source(note), encoding="utf-8")
        return path

    def with_source(self, source: str, args: tuple | None = None) -> "Program":
        return dataclasses.replace(self, source=source, args=self.args if args is None else args)

    @property
    def num_lines(self) -> int:
        return len(ast.unparse(self.function_node()).splitlines())

    def function_node(self) -> ast.FunctionDef:
        return next(n for n in ast.parse(self.source).body if isinstance(n, ast.FunctionDef)
                    and n.name == self.func_name)

    def helpers_source(self) -> str:
        """The module's other functions (helpers `f` calls), as source."""
        return "".join(ast.unparse(n) + "\n\n\n" for n in ast.parse(self.source).body
                       if isinstance(n, ast.FunctionDef) and n.name != self.func_name)


def value_source(v) -> str:
    """Python source that rebuilds an argument value (numpy dtype included)."""
    if isinstance(v, np.ndarray):
        return f"np.array([{', '.join(value_source(x) for x in v.tolist())}], dtype=np.{v.dtype.name})"
    if isinstance(v, np.generic):
        return f"np.{v.dtype.name}({value_source(v.item())})"
    if isinstance(v, float) and not np.isfinite(v):
        return f"float('{v!r}')"  # nan, inf, -inf: no Python literal
    return repr(v)


def module_source(func: ast.FunctionDef, helpers: str = "") -> str:
    """The module text of a program: the imports, the helper functions and the function."""
    return "import math\n\nimport numpy as np\n\n\n" + helpers + ast.unparse(func) + "\n"


def generate(seed: int, *, python_behaviour: bool = True, effects_in_tests: bool = True) -> Program:
    """The program for `seed` (always the same one). `python_behaviour=False`: without the
    shapes of issue 25's third round (strings of tensors, repetition by a tensor count, a list
    argument, arguments changed inside control flow, Python-typed conversions), the programs
    as they were before them. `effects_in_tests=False`: without the prints, asserts and calls
    written into loop tests and into the tests of ifs inside loops (issue 27)."""
    rng = random.Random(seed)
    for _ in range(100):  # a rejected program is followed by the next one from the same stream
        source, args = _Generator(rng, behaviour=python_behaviour, effects=effects_in_tests).function()
        program = Program(seed, source, args)
        if MIN_LINES <= program.num_lines <= MAX_LINES and _within_limits(program):
            return program
    raise RuntimeError(f"seed {seed}: no program within the limits in 100 attempts")


# -- the generator ----------------------------------------------------------------------

@dataclass
class _Var:
    kind: str
    tensor: bool            # probably a tensor in the graph (steers choices only)
    bound: float            # a bound on |value|
    tainted: bool = False   # depends on values carried across iterations of the current loop
    assignable: bool = True  # parameters, loop targets and while counters are never assigned


@dataclass
class _E:
    """A generated expression and what the generator knows about it."""

    text: str
    bound: float
    tainted: bool = False
    tensor: bool = False


@dataclass(frozen=True)
class _Ctx:
    depth: int = 0
    loop_depth: int = 0
    staged: bool = False                  # inside control flow that depends on a tensor
    carried: frozenset = frozenset()      # names defined before the innermost loop


@dataclass
class _Generator:
    rng: random.Random
    lines: list = field(default_factory=list)
    kinds: dict = field(default_factory=dict)      # name -> kind, one per program
    arrays: dict = field(default_factory=dict)     # array parameter -> element kind
    tensor_params: list = field(default_factory=list)
    assigned: list = field(default_factory=list)   # a stack of name sets, one per open loop
    labels: int = 0
    counters: int = 0
    helpers: dict = field(default_factory=dict)    # kind -> (name, source)
    lambdas: dict = field(default_factory=dict)    # kind -> (name, captured local, source)
    # the choices of constructs added later draw from their own stream (seeded from the main
    # one's state without drawing from it), so programs without them stay as they were
    extra: random.Random | None = None
    array_sizes: dict = field(default_factory=dict)  # array parameter -> its length
    returned: bool = False  # a return written so far (the rest of the function is then a branch)
    python_ints: list = field(default_factory=list)  # int parameters given Python ints
    # issue 25's third round: its shapes draw from a third stream (`more`), so that the
    # programs without them (behaviour False) are as they were
    behaviour: bool = False
    more: random.Random | None = None
    list_params: dict = field(default_factory=dict)  # list parameter -> its length (known while straight)
    iterating: list = field(default_factory=list)     # arrays enclosing `for` loops iterate over
    raised: bool = False  # a `raise` under a condition written so far
    # issue 27: effects in loop tests and in the tests of ifs inside loops, from a fourth stream
    # (`effect_rng`) and written only by hand (no expr(): it would make helpers and draw from the
    # other streams), so the programs without them (effects False) are as they were
    effects: bool = False
    effect_rng: random.Random | None = None
    effect_labels: int = 0
    effect_helpers: dict = field(default_factory=dict)  # form -> (name, source)

    def __post_init__(self):
        if self.extra is None:
            self.extra = random.Random(repr(self.rng.getstate()[1][:8]))
        if self.more is None:
            self.more = random.Random("more:" + repr(self.rng.getstate()[1][:8]))
        if self.effect_rng is None:
            self.effect_rng = random.Random("effects:" + repr(self.rng.getstate()[1][:8]))

    # -- the function ---------------------------------------------------------------------
    def function(self) -> tuple[str, tuple]:
        r = self.rng
        self.int_dtype = np.int64 if r.random() < 0.75 else np.int32
        # float32 programs: float32 tensors with Python numbers (numpy 2's weak promotion).
        # Their floats stay exact (a Python float joined with a float32 on another path is
        # rounded to float32, the int-or-float-by-path class; see the module docstring)
        self.float_dtype = np.float32 if r.random() < 0.12 else np.float64
        self.exact = self.float_dtype is np.float32 or r.random() < 0.25
        self.non_finite = r.random() < 0.08  # a float argument is nan or an infinity
        self.budget = r.randint(3, 10)
        scope, params, args = self.parameters()
        self.ret_kinds = [r.choice([INT, INT, FLOAT, BOOL]) for _ in range(r.choice([1, 1, 1, 2, 2, 3]))]
        self.fall_off = r.random() < 0.12
        if r.random() < 0.25:
            scope = self.closure(scope)
        if self.list_params and self.more.random() < 0.5:  # (class 5: most list arguments are changed)
            main, self.rng = self.rng, self.more
            try:
                self.list_argument_change(scope, 1)
            finally:
                self.rng = main
        end = self.block(scope, _Ctx(), 1, min_stmts=max(3, self.budget // 2))
        if end is not None and not self.fall_off:
            self.emit(1, self.return_stmt(end, _Ctx()))
        text = f"def f({', '.join(params)}):\n" + "\n".join(self.lines) + "\n"
        func = ast.parse(text).body[0]
        helpers = "".join(source + "\n\n" for _, source in
                          list(self.helpers.values()) + list(self.effect_helpers.values()))
        return module_source(func, helpers), tuple(args)

    def parameters(self):
        r = self.rng
        kinds = [r.choice([INT, INT, FLOAT]) for _ in range(r.choice([1, 2, 2, 3]))]
        if r.random() < 0.25:
            kinds.append("array")
        scope, params, args = {}, [], []
        names = {INT: iter(["n", "m", "p"]), FLOAT: iter(["x", "y", "u"]), "array": iter(["xs"])}
        any_tensor = r.random() < 0.9
        for i, kind in enumerate(kinds):
            name = next(names[kind])
            params.append(name)
            if kind == "array":
                elem = r.choice([INT, FLOAT])
                size = r.choice([0, 1, 2, 3, 3, 4, 5])
                if elem == INT:
                    value = np.array([r.randint(-3, 6) for _ in range(size)], dtype=self.int_dtype)
                else:
                    items = [r.randint(-12, 24) / 4 if self.exact or r.random() < 0.5 else round(r.uniform(-3, 6), 3)
                             for _ in range(size)]
                    value = np.array(items, dtype=self.float_dtype)
                self.arrays[name] = elem
                self.array_sizes[name] = size
                self.kinds[name] = "array"
                self.tensor_params.append(name)
                args.append(value)
                continue
            tensor = any_tensor and (i == 0 or r.random() < 0.7)
            if kind == INT:
                py = r.randint(-2, 9)
                value = self.int_dtype(py) if tensor else py
                bound = 9
            else:
                py = r.randint(-12, 24) / 4
                if not self.exact and r.random() < 0.3:
                    py = round(r.uniform(-3, 6), r.choice([1, 2, 6]))
                if self.non_finite and not any(isinstance(a, (float, np.floating)) and not np.isfinite(a)
                                               for a in args):
                    py = r.choice(_NON_FINITE)
                value = self.float_dtype(py) if tensor else py
                bound = 6
            if tensor:
                self.tensor_params.insert(0, name)
            elif kind == INT:
                self.python_ints.append(name)
            self.kinds[name] = kind
            scope[name] = _Var(kind, tensor, bound, assignable=False)
            args.append(value)
        if self.behaviour and self.more.random() < 0.3:  # a list the function may append to (class 5)
            items = [self.more.randint(-3, 9) for _ in range(self.more.choice([0, 1, 2, 3]))]
            self.list_params["ys"] = len(items)
            self.kinds["ys"] = "list"
            params.append("ys")
            args.append(items)
        return scope, params, args

    def emit(self, indent: int, text: str):
        self.lines.append("    " * indent + text)

    # -- blocks -----------------------------------------------------------------------------
    def block(self, scope: dict, ctx: _Ctx, indent: int, *, min_stmts: int = 1, tail=None,
              jump_ok: bool = False) -> dict | None:
        """Emit statements; the scope at the end, or None when the block always jumps away.
        `tail` = (name, kind): assign that name last (temporaries defined in every branch)."""
        r = self.rng
        scope = dict(scope)
        n = max(min_stmts, r.choice([1, 1, 2, 2, 3]) if ctx.depth else min_stmts)
        emitted = 0
        for _ in range(n):
            if self.budget <= 0 and emitted:
                break
            self.budget -= 1
            scope = self.statement(scope, ctx, indent)
            emitted += 1
            if scope is None:
                return None
        if tail is not None:
            name, kind = tail
            self.assign(scope, ctx, indent, name=name, kind=kind)
        if jump_ok and r.random() < 0.25:
            self.emit(indent, self.jump(scope, ctx))
            return None
        return scope

    def jump(self, scope, ctx) -> str:
        choices = ["return"] + (["break", "continue"] if ctx.loop_depth else [])
        what = self.rng.choice(choices)
        if what == "return" and self.rng.random() < 0.15:
            self.returned = True
            return self.rng.choice(["return", "return None"])  # the call gives None on this path
        return self.return_stmt(scope, ctx) if what == "return" else what

    def statement(self, scope: dict, ctx: _Ctx, indent: int) -> dict | None:
        if self.behaviour and self.more.random() < 0.12:
            done = self.behaviour_statement(scope, ctx, indent)
            if done is not None:
                return done
        if ctx.loop_depth and ctx.depth < MAX_DEPTH and self.extra.random() < 0.07:
            return self.branch_bound_after_return(scope, ctx, indent)
        if not ctx.depth and self.arrays and not self.returned and self.extra.random() < 0.25:
            return self.array_in_place(scope, ctx, indent)
        r = self.rng
        mutable = [n for n, v in scope.items() if v.assignable]
        nested = ctx.depth < MAX_DEPTH and self.budget > 0
        loops = nested and ctx.loop_depth < MAX_LOOP_DEPTH
        options = {
            "new": 3 if len(mutable) < 5 else 0.5,
            "assign": 3 if mutable else 0,
            "aug": 3 if any(scope[n].kind != BOOL for n in mutable) else 0,
            "if": 4 if nested else 0,
            "for": 2.5 if loops else 0,
            "for_array": 4 if loops and self.arrays else 0,
            "while": 2 if loops else 0,
            "print": 0.8,
            "cond_jump": 1.5 if ctx.loop_depth else 0.3,
            "unpack": 1.2 if len(mutable) >= 1 else 0,
            "raise": 0.08,
            "assert": 0.08,
        }
        kind = r.choices(list(options), weights=list(options.values()))[0]
        if kind in ("new", "assign", "aug"):
            if kind == "new" or not mutable:
                name = None
            else:
                name = r.choice([n for n in mutable if kind == "assign" or scope[n].kind != BOOL])
            return self.assign(scope, ctx, indent, name=name, augmented=kind == "aug")
        if kind == "unpack":
            return self.unpack(scope, ctx, indent)
        if kind == "if":
            return self.if_stmt(scope, ctx, indent)
        if kind == "for":
            return self.for_range(scope, ctx, indent)
        if kind == "for_array":
            return self.for_array(scope, ctx, indent)
        if kind == "while":
            return self.while_stmt(scope, ctx, indent)
        if kind == "print":
            self.emit(indent, self.print_stmt(scope))
            return scope
        if kind == "raise":
            self.labels += 1
            self.emit(indent, f"if {self.condition(scope).text}:")
            self.emit(indent + 1, f"raise ValueError('E{self.labels}')")
            self.raised = True  # (the rest is a branch, as after a return)
            return scope
        if kind == "assert":
            self.labels += 1
            self.emit(indent, f"assert {self.condition(scope).text}, 'A{self.labels}'")
            return scope
        # `if cond: break / continue / return ...`
        cond = self.condition(scope)
        self.emit(indent, f"if {self.with_effect(cond.text, scope, ctx)}:")
        self.emit(indent + 1, self.jump(scope, ctx))
        return scope

    # -- assignments ----------------------------------------------------------------------------
    def new_name(self, kind: str, pool=None) -> str:
        pool = pool or _LOCAL_NAMES
        names = [n for n in pool[kind] if self.kinds.get(n, kind) == kind]
        free = [n for n in names if n not in self.kinds]
        name = self.rng.choice(free or names) if (free or names) else f"v{len(self.kinds)}"
        self.kinds[name] = kind
        return name

    def assign(self, scope: dict, ctx: _Ctx, indent: int, *, name=None, kind=None, augmented=False) -> dict:
        r = self.rng
        if name is None:
            kind = kind or r.choice([INT, INT, INT, FLOAT, FLOAT, BOOL])
            name = self.new_name(kind)
        kind = self.kinds[name]
        old = scope.get(name)
        carried = old is not None and name in ctx.carried
        limit = LOOP_LIMIT if ctx.loop_depth else STRAIGHT_LIMIT
        if augmented and old is not None and kind != BOOL:
            text, e = self.augmented(name, old, scope)
            tainted = e.tainted or carried
            if e.bound > limit:
                if (text.split()[1] in ("+=", "-=")) and e.bound - old.bound <= 20 and not (e.tainted and carried):
                    e.bound = limit  # slow additive growth: the loops are short
                else:
                    text, e.bound = self.wrapped(name, text, kind)
        else:
            e = self.expr(kind, scope, r.choice([1, 2, 2, 3]))
            tainted = e.tainted
            if kind != BOOL and e.bound > limit:
                e = _E(f"({e.text}) % {97 if kind == INT else 64.0}", 97 if kind == INT else 64.0, e.tainted, e.tensor)
            text = f"{name} = {e.text}"
        self.emit(indent, text)
        for names in self.assigned:
            names.add(name)
        scope = dict(scope)
        scope[name] = _Var(kind, e.tensor or ctx.staged, e.bound, tainted or (old is not None and old.tainted))
        return scope

    def augmented(self, name: str, old: _Var, scope: dict) -> tuple[str, _E]:
        r = self.rng
        if old.kind == INT:
            op = r.choice(["+=", "+=", "-=", "*=", "//=", "%="])
            if op in ("+=", "-="):
                e = self.expr(INT, scope, r.choice([0, 1, 1, 2]))
                return f"{name} {op} {e.text}", _E("", old.bound + e.bound, e.tainted, e.tensor)
            c = r.choice({"*=": [2, 3, -1], "//=": [2, 3, 4], "%=": [3, 5, 7, 10]}[op])
            bound = {"*=": old.bound * abs(c), "//=": old.bound, "%=": c}[op]
            return f"{name} {op} {c}", _E("", bound, False, old.tensor)
        op = r.choice(["+=", "+=", "-=", "*=", "/="])
        if op in ("+=", "-="):
            e = self.expr(FLOAT, scope, r.choice([0, 1, 1, 2]))
            return f"{name} {op} {e.text}", _E("", old.bound + e.bound, e.tainted, e.tensor)
        c = r.choice([0.5, 2.0, -1.0]) if op == "*=" else r.choice([2, 4])
        return f"{name} {op} {c}", _E("", old.bound * (abs(c) if op == "*=" else 1), False, old.tensor)

    def unpack(self, scope: dict, ctx: _Ctx, indent: int) -> dict:
        """`a, b = b, a + b` (a step of Fibonacci's), `a, b = b, a` (a swap) or two values
        at once: every value on the right is computed before any name is bound."""
        r = self.rng
        limit = LOOP_LIMIT if ctx.loop_depth else STRAIGHT_LIMIT
        kind = r.choice([INT, INT, FLOAT])
        names = [n for n, v in scope.items() if v.assignable and v.kind == kind]
        if len(names) < 2 or r.random() < 0.3:
            names = names[:1] + [self.new_name(kind)] if names else [self.new_name(kind), self.new_name(kind)]
            if names[0] == names[1]:
                names[1] = self.new_name(kind, _TEMP_NAMES)
        a, b = r.sample(names, 2) if len(names) > 2 else names
        if a in scope and b in scope and r.random() < 0.6:
            if r.random() < 0.5:
                rhs = [_E(b, scope[b].bound, scope[b].tainted, scope[b].tensor),
                       _E(a, scope[a].bound, scope[a].tainted, scope[a].tensor)]
            else:
                second = _join(f"{a} + {b}", scope[a].bound + scope[b].bound,
                               _E(a, 0, scope[a].tainted, scope[a].tensor), _E(b, 0, scope[b].tainted, scope[b].tensor))
                if second.bound > limit:
                    second = _join(f"({second.text}) % {97 if kind == INT else 64.0}", 97, second)
                rhs = [_E(b, scope[b].bound, scope[b].tainted, scope[b].tensor), second]
        else:
            rhs = []
            for _ in range(2):
                e = self.expr(kind, scope, r.choice([0, 1, 2]))
                if e.bound > limit:
                    e = _join(f"({e.text}) % {97 if kind == INT else 64.0}", 97, e)
                rhs.append(e)
        self.emit(indent, f"{a}, {b} = {rhs[0].text}, {rhs[1].text}")
        scope = dict(scope)
        for name, e in zip((a, b), rhs):
            for names_ in self.assigned:
                names_.add(name)
            old = scope.get(name)
            scope[name] = _Var(kind, e.tensor or ctx.staged, e.bound,
                               e.tainted or (old is not None and (old.tainted or name in ctx.carried)))
        return scope

    def wrapped(self, name: str, aug_text: str, kind: str) -> tuple[str, float]:
        """`v op= e` whose growth could overflow, as `v = (v op e) % M`."""
        _, op, rhs = aug_text.split(" ", 2)
        m = 97 if kind == INT else 64.0
        return f"{name} = ({name} {op[:-1]} ({rhs})) % {m}", m

    # -- control flow ---------------------------------------------------------------------------
    def if_stmt(self, scope: dict, ctx: _Ctx, indent: int) -> dict | None:
        r = self.rng
        cond = self.condition(scope)
        inner = dataclasses.replace(ctx, depth=ctx.depth + 1, staged=ctx.staged or cond.tensor)
        n_elif = r.choice([0, 0, 0, 1, 1, 2])
        has_else = r.random() < 0.6
        tail = None
        if has_else and r.random() < 0.4:
            kind = r.choice([INT, INT, FLOAT, BOOL])
            tail = (self.new_name(kind, _TEMP_NAMES), kind)
        ends = []
        self.emit(indent, f"if {self.with_effect(cond.text, scope, ctx)}:")
        ends.append(self.block(scope, inner, indent + 1, tail=tail, jump_ok=True))
        for _ in range(n_elif):
            c = self.condition(scope)
            self.emit(indent, f"elif {c.text}:")
            ends.append(self.block(scope, inner, indent + 1, tail=tail, jump_ok=True))
        if has_else:
            self.emit(indent, "else:")
            ends.append(self.block(scope, inner, indent + 1, tail=tail, jump_ok=True))
        else:
            ends.append(scope)
        live = [s for s in ends if s is not None]
        if not live:
            return None
        joined = {}
        for name in [n for n in live[0] if all(n in s for s in live[1:])]:  # in order: no set iteration
            vs = [s[name] for s in live]
            joined[name] = _Var(vs[0].kind, any(v.tensor for v in vs) or (cond.tensor and vs != [scope.get(name)] * len(vs)),
                                max(v.bound for v in vs), any(v.tainted for v in vs), vs[0].assignable)
        # a temporary used right after the if (it is defined on every path that gets here)
        if tail is not None and tail[0] in joined and r.random() < 0.4:
            self.emit(indent, self.print_stmt(joined, must=[tail[0]]))
        return joined

    def loop_body(self, scope: dict, ctx: _Ctx, indent: int, staged: bool, prelude=()) -> dict:
        """The body of a loop, sometimes with an `else` (run when the loop ends without
        `break`; the body then gets an `if ...: break`); returns the scope after the loop
        (what was defined before it)."""
        r = self.rng
        inner_scope = {n: (dataclasses.replace(v, bound=max(v.bound, LOOP_LIMIT), tainted=True) if v.assignable else v)
                       for n, v in scope.items()}
        for name, var in prelude:
            inner_scope[name] = var
        inner = _Ctx(ctx.depth + 1, ctx.loop_depth + 1, ctx.staged or staged,
                     frozenset(n for n, v in scope.items() if v.assignable))
        with_else = r.random() < 0.2
        self.assigned.append(set())
        end = self.block(inner_scope, inner, indent + 1, min_stmts=r.choice([1, 2, 2, 3]), jump_ok=not with_else)
        if with_else:
            self.emit(indent + 1, f"if {self.condition(end if end is not None else inner_scope).text}:")
            self.emit(indent + 2, "break")
        changed = self.assigned.pop()
        after = {}
        for name, var in scope.items():
            if name in changed:
                var = dataclasses.replace(var, tensor=var.tensor or staged or ctx.staged, bound=max(var.bound, LOOP_LIMIT))
            after[name] = var
        if with_else:
            self.emit(indent, "else:")
            orelse = self.block(after, dataclasses.replace(ctx, depth=ctx.depth + 1, staged=ctx.staged or staged),
                                indent + 1, jump_ok=True)
            if orelse is not None:  # the names defined before the loop, as either way out leaves them
                for name, var in after.items():
                    if name in orelse:
                        o = orelse[name]
                        after[name] = dataclasses.replace(var, tensor=var.tensor or o.tensor,
                                                          bound=max(var.bound, o.bound), tainted=var.tainted or o.tainted)
        return after

    def int_bound_atom(self, scope: dict) -> _E:
        """A small int for loop bounds: a parameter, a small local, a literal or len(xs)."""
        r = self.rng
        cands = [n for n, v in scope.items() if v.kind == INT and v.bound <= 12 and not v.tainted]
        tensors = [n for n in cands if scope[n].tensor]
        roll = r.random()
        if tensors and roll < 0.55:
            name = r.choice(tensors)
        elif cands and roll < 0.8:
            name = r.choice(cands)
        elif self.arrays and roll < 0.9:
            return _E(f"len({r.choice(list(self.arrays))})", 5, tensor=False)
        else:
            return _E(str(r.randint(0, 6)), 6)
        e = _E(name, scope[name].bound, tensor=scope[name].tensor)
        if r.random() < 0.3:
            c = r.randint(1, 3)
            op = r.choice(["+", "-"])
            e = _E(f"{name} {op} {c}", e.bound + c, tensor=e.tensor)
        return e

    def for_range(self, scope: dict, ctx: _Ctx, indent: int) -> dict:
        r = self.rng
        target = self.loop_target(scope, ["i", "j", "t"])
        form = r.choice(["stop", "stop", "start_stop", "step", "down", "reversed"])
        a, b = self.int_bound_atom(scope), self.int_bound_atom(scope)
        if form == "stop":
            args, b = a.text, a
        elif form == "start_stop":
            args = f"{b.text}, {a.text}" if r.random() < 0.5 else f"{r.randint(-2, 3)}, {a.text}"
        elif form == "step":
            args, b = f"{r.randint(-2, 2)}, {a.text}, {r.choice([2, 3])}", a
        elif form == "down":
            lo = r.choice(["-1", "0", "1", b.text])
            args = f"{a.text}, {lo}, {r.choice([-1, -1, -2])}"
        else:
            inner = a.text if r.random() < 0.6 else f"{r.randint(-2, 2)}, {a.text}"
            args, b = f"range({inner})", a
        staged = a.tensor or b.tensor
        predefine = r.random() < 0.1
        if predefine:
            self.emit(indent, f"{target} = -1")
        self.emit(indent, f"for {target} in reversed({args}):" if form == "reversed" else
                  f"for {target} in range({args}):")
        after = self.loop_body(scope, ctx, indent, staged, prelude=[(target, _Var(INT, staged, 12, assignable=False))])
        if predefine:
            after[target] = _Var(INT, staged, 12, assignable=False)
        return after

    def for_array(self, scope: dict, ctx: _Ctx, indent: int) -> dict:
        name = self.rng.choice(list(self.arrays))
        self.iterating.append(name)  # (not changed in place inside: numpy's loop would see the change)
        try:
            return self._for_array(name, scope, ctx, indent)
        finally:
            self.iterating.pop()

    def _for_array(self, name: str, scope: dict, ctx: _Ctx, indent: int) -> dict:
        kind = self.arrays[name]
        target = self.loop_target(scope, ["v", "e"] if kind == INT else ["xv", "fe"], kind)
        r = self.rng
        over = r.choice([name] * 4 + [f"{name}[::-1]", f"{name}[1:]", f"{name}[::2]", f"{name}[-2:]",
                                      f"reversed({name})"])
        prelude = [(target, _Var(kind, True, 6, assignable=False))]
        if r.random() < 0.25:  # with the index, counted from 0 or another start
            index = self.loop_target(scope, ["i", "j", "t"])
            start = r.choice(["", "", ", 1", f", start={r.randint(-2, 3)}", ", -1"])
            self.emit(indent, f"for {index}, {target} in enumerate({over}{start}):")
            prelude.append((index, _Var(INT, True, 12, assignable=False)))
        else:
            self.emit(indent, f"for {target} in {over}:")
        return self.loop_body(scope, ctx, indent, True, prelude=prelude)

    def branch_bound_after_return(self, scope: dict, ctx: _Ctx, indent: int) -> dict:
        """In a loop: an early `return` (or break / continue) under a condition, then a name
        first bound in both branches of an if, then read (issue 25's nonlocal class: the rest
        of the body after the return becomes a branch whose locals the inner if sets)."""
        main, self.rng = self.rng, self.extra
        try:
            r = self.rng
            self.emit(indent, f"if {self.condition(scope).text}:")
            self.emit(indent + 1, self.return_stmt(scope, ctx) if r.random() < 0.75 else self.jump(scope, ctx))
            kind = r.choice([INT, INT, FLOAT])
            name = self.new_name(kind, _TEMP_NAMES)
            if name in {v[0] for v in self.lambdas.values()}:  # (a closure's name: not a number)
                name = self.loop_target(scope, ["br", "bq"], kind)
            cond = self.condition(scope)
            inner = dataclasses.replace(ctx, depth=ctx.depth + 1, staged=ctx.staged or cond.tensor)
            self.emit(indent, f"if {cond.text}:")
            a = self.assign(scope, inner, indent + 1, name=name)[name]
            self.emit(indent, "else:")
            b = self.assign(scope, inner, indent + 1, name=name)[name]
            scope = dict(scope)
            scope[name] = _Var(kind, a.tensor or b.tensor or cond.tensor, max(a.bound, b.bound), a.tainted or b.tainted)
            if r.random() < 0.7:
                return self.assign(scope, ctx, indent, name=name, augmented=True)
            self.emit(indent, self.print_stmt(scope, must=[name]))
            return scope
        finally:
            self.rng = main

    def array_in_place(self, scope: dict, ctx: _Ctx, indent: int) -> dict:
        """At the function's top level: the array argument changed in place (`xs[i] = e`,
        `xs += e`, `xs *= 2`), which Python does to the caller's array (issue 25: written back
        after the run). Never inside a block, nor after an early return (which makes the rest
        a branch): there the graph refuses it."""
        main, self.rng = self.rng, self.extra
        try:
            r = self.rng
            name = r.choice(sorted(self.arrays))
            elem, size = self.arrays[name], self.array_sizes[name]
            form = r.choice(["item", "item", "add", "scale"] if size else ["add", "scale"])
            if form == "item":
                e = self.expr(elem, scope, r.choice([0, 1]))
                if e.bound > STRAIGHT_LIMIT:
                    e = _E(f"({e.text}) % {97 if elem == INT else 64.0}", 97)
                self.emit(indent, f"{name}[{r.randrange(-size, size)}] = {e.text}")
            elif form == "add":
                e = self.expr(elem, scope, 0)
                self.emit(indent, f"{name} {r.choice(['+=', '-='])} {e.text}")
            else:
                self.emit(indent, f"{name} *= {r.choice([2, -1, 3])}")
            return scope
        finally:
            self.rng = main

    # -- issue 25, third round: what Python does with strings, repetitions, arguments, types ------
    def behaviour_statement(self, scope: dict, ctx: _Ctx, indent: int) -> dict | None:
        """A statement of the third round's classes (None: none fits here): a print of text made
        from a tensor (class 1), the list argument appended to (5; at the top level, before any
        return: inside control flow on a tensor it is refused), the array argument changed in
        place inside a loop or an if (5; never inside a loop over it)."""
        main, self.rng = self.rng, self.more
        try:
            r = self.rng
            forms = ["text_print"]
            if self.list_params and not ctx.depth and not self.returned and not self.raised:
                forms += ["list_arg"] * 3
            if ctx.depth and any(a not in self.iterating for a in self.arrays):
                forms += ["array_arg"] * 2
            form = r.choice(forms)
            if form == "text_print":
                v = self.number_name(scope)
                if v is None:
                    return None
                self.labels += 1
                shown = r.choice([f"str({v}).upper()", f"str({v}).zfill(8)", f"str({v})[::-1]",
                                  f"str({v}).split('.')", f"len(str({v}))", f"str({v}).replace('.', ',')",
                                  f"(str({v}) + '|') * 2", f"f'<{{{v}}}>'.center(12, '*')"])
                self.emit(indent, f"print('T{self.labels}:', {shown})")
                return scope
            if form == "list_arg":
                self.list_argument_change(scope, indent)
                return scope
            name = r.choice(sorted(a for a in self.arrays if a not in self.iterating))
            elem, size = self.arrays[name], self.array_sizes[name]
            if size and r.random() < 0.6:
                e = self.expr(elem, scope, r.choice([0, 1]))
                if e.bound > LOOP_LIMIT:
                    e = _E(f"({e.text}) % {97 if elem == INT else 64.0}", 97)
                self.emit(indent, f"{name}[{r.randrange(-size, size)}] {r.choice(['=', '=', '+='])} {e.text}")
            else:  # bounded growth: the loops are short
                step = r.choice([1, -1, 2]) if elem == INT else r.choice([0.5, -0.25, 1.0])
                self.emit(indent, f"{name} {r.choice(['+=', '-='])} {step!r}")
            return scope
        finally:
            self.rng = main

    def list_argument_change(self, scope: dict, indent: int) -> None:
        """`ys.append(e)`, `ys += [e]`, `ys[i] = e`, `ys.pop()`... on the list argument (class 5)."""
        r = self.rng
        name = r.choice(sorted(self.list_params))
        e = self.expr(INT, scope, r.choice([0, 1]))
        if e.bound > STRAIGHT_LIMIT:
            e = _E(f"({e.text}) % 97", 97, e.tainted, e.tensor)
        size = self.list_params[name]
        how = r.choice(["append", "append", "extend", "iadd", "insert"] + (["item", "pop"] if size else []))
        text = {"append": f"{name}.append({e.text})", "extend": f"{name}.extend([{e.text}, 1])",
                "iadd": f"{name} += [{e.text}]", "insert": f"{name}.insert(0, {e.text})",
                "item": f"{name}[{r.randrange(-size, size) if size else 0}] = {e.text}",
                "pop": f"{name}.pop()"}[how]
        self.list_params[name] = size + {"extend": 2, "pop": -1, "item": 0}.get(how, 1)
        self.emit(indent, text)

    def number_name(self, scope: dict, kinds=(INT, FLOAT)) -> str | None:
        """A number variable (a tensor, most often) whose text a program may look at."""
        names = [n for n, v in scope.items() if v.kind in kinds]
        if not names:
            return None
        return self.more.choices(names, weights=[4 if scope[n].tensor else 1 for n in names])[0]

    def behaviour_atom(self, kind: str, scope: dict) -> _E | None:
        """An expression of the third round's classes, of `kind` (None: none fits): text of a
        number (class 1: `len(str(x))`, `str(n).startswith('-')`), a sequence repeated by an
        int variable, a tensor too (class 2: `len([0] * n)`, `3 in [1, 3] * n`), a length of
        the list argument, and conversions whose result is a Python number (class 6:
        `round(x)`, `math.floor(x)`, `n.item()`, `math.isfinite(x)`)."""
        r = self.more
        forms = ["text", "text", "repeat", "typed"] + (["list_len"] if kind == INT and self.list_params else [])
        form = r.choice(forms)
        if form == "list_len":
            return _E(f"len({r.choice(sorted(self.list_params))})", 40)
        if form == "repeat":
            counts = [n for n, v in scope.items() if v.kind == INT and v.bound <= 12]
            if not counts or kind == FLOAT:
                return None
            k = r.choice(counts)
            var = scope[k]
            if kind == BOOL:
                return _E(f"({r.choice([1, 3, 0])} {r.choice(['in', 'not in'])} [1, 3] * {k})", 1, var.tainted,
                          var.tensor)
            text = r.choice([f"len([0] * {k})", f"len({k} * (1, 2))", f"int(sum([1, 2] * {k}))",
                             f"([5, 6] * {k}).count(5)", f"len([{k}] * {k})"])
            return _E(text, 24, var.tainted, var.tensor)
        if form == "text":
            v = self.number_name(scope)
            if v is None:
                return None
            var = scope[v]
            if kind == INT:
                forms = [f"len(str({v}))", f"str({v}).count('{r.choice('0125.-')}')", f"str({v}).find('.')",
                         f"len(f'{{{v}}}')", f"len(str({v}).zfill(6))", f"len(str({v}).strip('-'))",
                         f"len(str({v}).split('.'))"]
                if var.kind == INT:
                    forms += [f"int(str({v}))"] * 2
                text = r.choice(forms)
                return _E(text, var.bound if text.startswith("int(") else 32, var.tainted, var.tensor)
            if kind == BOOL:
                lit = r.choice(["'3'", "'-1'", "'0'", "'2.5'", "'nan'"])
                text = r.choice([f"str({v}).startswith('-')", f"('.' in str({v}))", f"(str({v}) == {lit})",
                                 f"str({v}).isdigit()", f"str({v}).endswith('5')",
                                 f"(str({v}).upper() != str({v}))", f"(len(str({v})) > 3)"])
                return _E(text, 1, var.tainted, var.tensor)
            if var.kind == INT:  # a float from the text of an int: exact
                return _E(f"float(str({v}))", var.bound, var.tainted, var.tensor)
            return None
        # class 6: Python's number types
        floats = [n for n, v in scope.items() if v.kind == FLOAT]
        params = [n for n in self.tensor_params if n in scope and scope[n].kind == kind and n not in self.arrays]
        if params and r.random() < 0.35:  # a numpy scalar argument's .item(): a Python number
            name = r.choice(params)
            return _E(f"{name}.item()", scope[name].bound, scope[name].tainted, True)
        if not floats:
            return None
        f = r.choice(floats)
        var = scope[f]
        if kind == INT:
            return _E(f"{r.choice(['round', 'math.floor', 'math.ceil'])}({f})", var.bound + 1,
                      var.tainted, var.tensor)
        if kind == BOOL:
            return _E(f"{r.choice(['math.isfinite', 'math.isnan', 'math.isinf'])}({f})", 1, var.tainted, var.tensor)
        if self.exact:
            return _E(f"math.fabs({f})", var.bound, var.tainted, var.tensor)
        return _E(f"{r.choice(['math.sqrt(abs({f}) + 0.25)', 'math.fabs({f})'])}".format(f=f), var.bound + 1,
                  var.tainted, var.tensor)

    def loop_target(self, scope: dict, names: list, kind: str = INT) -> str:
        for name in names:
            if name not in scope and self.kinds.get(name, kind) == kind:
                self.kinds[name] = kind
                return name
        name = f"{names[0]}{len(self.kinds)}"
        self.kinds[name] = kind
        return name

    def while_stmt(self, scope: dict, ctx: _Ctx, indent: int) -> dict:
        r = self.rng
        self.counters += 1
        k = "k" if self.counters == 1 else f"k{self.counters}"
        self.kinds[k] = INT
        bound = self.int_bound_atom(scope) if r.random() < 0.7 else _E(str(r.randint(2, 8)), 8)
        test = f"{k} < {bound.text}"
        extra = None
        if r.random() < 0.5:
            extra = self.condition(scope)
            test = f"{test} and {extra.text}" if r.random() < 0.5 else f"{extra.text} and {test}"
        staged = bound.tensor or (extra is not None and extra.tensor)
        if self.effects and self.effect_rng.random() < 0.4:
            effect = self.effect_operand(dict(scope, **{k: _Var(INT, False, 12, assignable=False)}), k)
            test = f"{effect} and {test}" if self.effect_rng.random() < 0.4 else f"{test} and {effect}"
        self.emit(indent, f"{k} = 0")
        self.emit(indent, f"while {test}:")
        self.emit(indent + 1, f"{k} += 1")
        counter = _Var(INT, staged, 12, assignable=False)
        scope = dict(scope, **{k: dataclasses.replace(counter, tensor=False)})
        after = self.loop_body(scope, ctx, indent, staged, prelude=[(k, counter)])
        after[k] = counter
        return after

    # -- effects in tests (issue 27) ------------------------------------------------------------------
    def with_effect(self, test: str, scope: dict, ctx: _Ctx) -> str:
        """The test of an if inside a loop, sometimes with an effect among its operands: after
        `and` (run only when the test so far is true), after `or`, or first."""
        if not (self.effects and ctx.loop_depth) or self.effect_rng.random() >= 0.15:
            return test
        r = self.effect_rng
        effect = self.effect_operand(scope, None)
        form = r.choice(["and", "or", "first"])
        if form == "and":
            return f"({test}) and {effect}"
        if form == "or":
            return f"({test}) or {effect}"
        return f"{effect} and ({test})"

    def effect_operand(self, scope: dict, counter: str | None) -> str:
        """An operand of a test with an effect in it, true or false as Python computes it: a
        print (`print(...) is None`, or `print(...) or c`), a print in a conditional expression,
        a call of a helper that prints or asserts. Its comparisons are written here, from
        `effect_rng` only (see the field)."""
        r = self.effect_rng
        self.effect_labels += 1
        label = f"W{self.effect_labels}"
        names = [n for n, v in scope.items() if v.kind in (INT, FLOAT, BOOL) and n != counter]
        # (Python values only, now and then: a print with no tensor input, at the top of a loop's test too)
        shown = ([counter] if counter and r.random() < 0.8 else []) + \
            r.sample(names, min(len(names), r.choice([0, 1, 1, 2])))
        printed = f"print({', '.join([repr(label + ':')] + shown)})"
        numbers = [n for n in names if scope[n].kind in (INT, FLOAT)] + ([counter] if counter else [])
        form = r.choice(["is_none", "is_none", "or", "ifexp", "note", "check", "check"])
        if form in ("ifexp", "or", "note", "check") and not numbers:
            form = "is_none"
        if form == "is_none":
            return f"{printed} is None"
        if form == "or":
            return f"({printed} or {self.effect_comparison(r.choice(numbers), scope, counter)})"
        if form == "ifexp":
            c, d = (self.effect_comparison(r.choice(numbers), scope, counter) for _ in range(2))
            return (f"({printed} is None if {c} else {d})" if r.random() < 0.5 else
                    f"({d} if {c} else {printed} is not None)")
        if form == "note":
            name = self.effect_helper("note", "def wnote(label, c):\n    print(label, c)\n    return c\n")
            return f"{name}({label!r}, {self.effect_comparison(r.choice(numbers), scope, counter)})"
        v = r.choice(numbers)
        limit = r.choice([3, 5, 9, 100])  # (a small one fails now and then: Python raises there, so must the graph)
        name = self.effect_helper(f"check{self.effect_labels}",
                                  f"def wcheck{self.effect_labels}(a):\n    assert a < {limit}, 'A9{self.effect_labels}'\n"
                                  f"    return True\n")
        return f"{name}({v})"

    def effect_comparison(self, name: str, scope: dict, counter: str | None) -> str:
        kind = INT if name == counter else scope[name].kind
        if kind == INT:
            return f"{name} {self.effect_rng.choice(['<', '<=', '>', '>=', '!='])} {self.effect_rng.randint(-1, 4)}"
        return f"{name} {self.effect_rng.choice(['<', '>'])} {self.effect_rng.choice([0.5, 1.5, -0.25, 2.0])}"

    def effect_helper(self, key: str, source: str) -> str:
        if key not in self.effect_helpers:
            self.effect_helpers[key] = (source.split("(", 1)[0][4:], source)
        return self.effect_helpers[key][0]

    # -- returns and prints ------------------------------------------------------------------------
    def return_stmt(self, scope: dict, ctx: _Ctx) -> str:
        r = self.rng
        self.returned = True
        parts = []
        for kind in self.ret_kinds:
            if r.random() < 0.2:
                parts.append(self.literal(kind).text)
            else:
                parts.append(self.expr(kind, scope, r.choice([0, 1, 1, 2]), prefer_tensor=True).text)
        return "return " + ", ".join(parts)

    def print_stmt(self, scope: dict, must=()) -> str:
        r = self.rng
        self.labels += 1
        values = list(must)
        scalar_tensors = [n for n in self.tensor_params if n in scope]
        python_only = r.random() < 0.3  # a print of Python values only: staged as well
        if python_only:
            pass
        elif scalar_tensors:
            values.insert(0, r.choice(scalar_tensors))
        elif self.tensor_params:
            values.insert(0, self.tensor_params[0])
        others = [n for n in scope if n not in values]
        values += r.sample(others, min(len(others), r.choice([0, 1, 1, 2])))
        if values and r.random() < 0.35:  # an f-string: formatted when the graph runs, specs included
            return "print(f'L%d: %s')" % (self.labels, " ".join(self.fstring_field(n) for n in values))
        return f"print('L{self.labels}:', {', '.join(values)})" if values else f"print('L{self.labels}')"

    def fstring_field(self, name: str) -> str:
        r = self.rng
        kind = self.kinds.get(name)
        if kind == "array" or r.random() < 0.4:
            return "{%s}" % name
        specs = {INT: ["d", ">5", "+d", "03d", "x", "!r", "", "<4"],
                 FLOAT: [".2f", ".3e", "g", ">8.1f", "!r", "+.1f", ".0%"],
                 BOOL: ["!r", "", "!s"]}[kind]
        spec = r.choice(specs)
        if spec.startswith("!") or not spec:
            return "{%s%s}" % (name, spec)
        return "{%s:%s}" % (name, spec)

    # -- expressions ---------------------------------------------------------------------------------
    def literal(self, kind: str) -> _E:
        r = self.rng
        if kind == INT:
            v = r.choice(_INT_LITERALS)
            return _E(str(v), abs(v))
        if kind == FLOAT:
            v = r.choice(_FLOAT_LITERALS if self.exact or r.random() < 0.5 else _INEXACT_LITERALS)
            return _E(repr(v), abs(v))
        return _E(r.choice(["True", "False"]), 1)

    def atom(self, kind: str, scope: dict, prefer_tensor: bool = False, literal_ok: bool = True) -> _E:
        if self.behaviour and self.more.random() < 0.06:
            e = self.behaviour_atom(kind, scope)
            if e is not None:
                return e
        if kind == INT and self.extra.random() < 0.02:
            return self.repetition(scope)
        r = self.rng
        names = [n for n, v in scope.items() if v.kind == kind]
        if not names or (literal_ok and r.random() < (0.12 if prefer_tensor else 0.25)):
            return self.literal(kind)
        weights = [(4 if prefer_tensor else 2) if scope[n].tensor else 1 for n in names]
        name = r.choices(names, weights=weights)[0]
        v = scope[name]
        return _E(name, v.bound, v.tainted, v.tensor)

    def repetition(self, scope: dict) -> _E:
        """`len([0] * k)` / `len((1, 2) * k)` with a Python-int count: Python's list (a tensor
        count is refused, issue 25, so only Python counts are generated)."""
        r = self.extra
        counts = [n for n in self.python_ints if n in scope]  # (a local may be a tensor: a loop's counter)
        k = r.choice(counts) if counts and r.random() < 0.6 else str(r.randint(0, 4))
        seq, width = r.choice([("[0]", 1), ("(1, 2)", 2), ("[7, 8, 9]", 3)])
        return _E(f"len({seq} * {k})", 12 * width)

    def expr(self, kind: str, scope: dict, depth: int, prefer_tensor: bool = False) -> _E:
        if kind == BOOL:
            return self.bool_expr(scope, depth)
        if depth <= 0:
            return self.atom(kind, scope, prefer_tensor)
        r = self.rng
        sub = lambda k=kind: self.expr(k, scope, depth - 1, prefer_tensor)  # noqa: E731
        inexact = kind == FLOAT and not self.exact
        forms = {"atom": 3, "addsub": 3, "scale": 1.5, "mul": 0.6, "div": 1, "mod": 1 if kind == INT else 0.3,
                 "neg": 0.3, "abs": 0.4, "minmax": 0.5, "ifexp": 0.8, "andor": 0.15, "convert": 0.4,
                 "len": 0.3 if kind == INT and self.arrays else 0, "math": 0.35,
                 # (a Python int times a numpy bool is an int64: int32 programs would mix dtypes)
                 "boolnum": 0.3 if kind == FLOAT or self.int_dtype is np.int64 else 0,
                 "bits": 0.4 if kind == INT else 0, "divmod": 0.15 if kind == INT else 0, "call": 0.35,
                 "inexact": 0.8 if inexact else 0, "pow": 0.3 if kind == INT or inexact else 0,
                 # np.maximum of two Python numbers is an np.int64 / np.float64: not in int32 or float32 programs
                 "np_minmax": 0.25 if (self.int_dtype if kind == INT else self.float_dtype) in (np.int64, np.float64)
                 else 0,
                 "ifexp2": 0.2, "kwcall": 0.25, "lambda": 0.5 if kind in self.lambdas else 0,
                 "item": 0.3 if any(k == kind for k in self.arrays.values()) else 0}
        form = r.choices(list(forms), weights=list(forms.values()))[0]
        if form == "atom":
            return self.atom(kind, scope, prefer_tensor)
        if form == "inexact":  # math functions and divisions whose results are rounded
            a = sub()
            fn = r.choice(["exp", "exp2", "log", "sqrt", "hypot", "div_var", "div_const", "np_sqrt", "np_exp",
                           "log10"])
            if fn == "exp":
                return _join(f"math.exp(-abs({a.text}))", 1, a)
            if fn == "exp2":
                return _join(f"math.exp({a.text} % 3.0)", 21, a)
            if fn == "np_exp":
                return _join(f"np.exp(-abs({a.text}))", 1, a)
            if fn == "log":
                return _join(f"math.log(abs({a.text}) + {r.choice(['1.0', '0.5', '1e-3'])})", a.bound + 7, a)
            if fn == "log10":
                return _join(f"math.log10(abs({a.text}) + 1.0)", a.bound, a)
            if fn in ("sqrt", "np_sqrt"):
                return _join(f"{'math' if fn == 'sqrt' else 'np'}.sqrt(abs({a.text}) + 0.1)", a.bound + 1, a)
            b = sub()
            if fn == "hypot":
                return _join(f"math.hypot({a.text}, {b.text})", a.bound + b.bound, a, b)
            if fn == "div_var":
                return _join(f"({a.text} / (abs({b.text}) + {r.choice(['1.0', '0.5', '3'])}))", 2 * a.bound, a, b)
            c = r.choice(["3", "10", "0.1", "7.0", "1.5", "3.0"])
            return _join(f"({a.text} / {c})", a.bound / float(c), a)
        if form == "pow":
            a = sub()
            if kind == INT:
                e = _join(f"({a.text} ** 2)" if r.random() < 0.7 else f"(({a.text}) % 5) ** 3", a.bound ** 2, a)
                return _join(f"({e.text} % 97)", 97, e) if e.bound > 1000 else e
            form = r.choice(["half", "neg", "neg_half", "three_halves", "square"])
            if form == "half":
                return _join(f"(abs({a.text}) ** 0.5)", a.bound + 1, a)
            if form == "neg":
                return _join(f"((abs({a.text}) + 1.0) ** -1)", 1, a)
            if form == "neg_half":
                return _join(f"((abs({a.text}) + 0.5) ** -0.5)", 2, a)
            if form == "three_halves":
                return _join(f"(abs({a.text}) ** 1.5)", (a.bound + 1) ** 1.5, a)
            return _join(f"({a.text} ** 2)", a.bound ** 2, a)
        if form == "np_minmax":
            a, b = sub(), sub()
            return _join(f"np.{r.choice(['maximum', 'minimum'])}({a.text}, {b.text})", max(a.bound, b.bound), a, b)
        if form == "ifexp2":  # a nested conditional expression, right-associated as written
            c1, c2 = self.bool_expr(scope, depth - 1), self.bool_expr(scope, depth - 1)
            a, b, c = sub(), sub(), sub()
            return _join(f"({a.text} if {c1.text} else {b.text} if {c2.text} else {c.text})",
                         max(a.bound, b.bound, c.bound), a, b, c, c1, c2)
        if form == "kwcall":
            return self.kw_call(kind, sub())
        if form == "lambda":
            a = sub()
            name, cap = self.lambdas[kind]
            return _join(f"{name}({a.text})", 2 * a.bound + scope[cap].bound if cap in scope else 2 * a.bound + 12, a)
        if form == "item":
            return self.item(kind, scope)
        if form == "call":
            a = sub()
            return _join(f"{self.helper(kind)}({a.text})", 2 * a.bound + 20, a)
        if form == "boolnum":  # a bool counts as 0 or 1 next to a number, as in Python and numpy
            a, c = sub(), self.bool_expr(scope, max(depth - 1, 0))
            if self.float_dtype is np.float32 and kind == FLOAT:  # (a Python float + np.bool_ is an np.float64:
                c = _join(f"float({c.text})", 1, c)               # float64 on one path, float32 on another)
            text = f"({a.text} + {c.text})" if r.random() < 0.5 else f"({a.text} * {c.text})"
            return _join(text, a.bound + 1, a, c)
        if form == "bits":
            a = sub()
            op = r.choice(["&", "|", "^", ">>", "<<", "~"])
            if op == "~":
                return _join(f"(~{a.text})", a.bound + 1, a)
            if op in (">>", "<<"):
                c = r.randint(0, 3 if op == ">>" else 2)
                return _join(f"({a.text} {op} {c})", a.bound * (2 ** c if op == "<<" else 1), a)
            b = sub()
            return _join(f"({a.text} {op} {b.text})", 2 * max(a.bound, b.bound) + 1, a, b)
        if form == "divmod":
            a = sub()
            c = r.choice([2, 3, 5, -2])
            return _join(f"divmod({a.text}, {c})[{r.choice([0, 1])}]", a.bound + abs(c), a)
        if form == "math":
            if kind == INT:
                f = self.expr(FLOAT, scope, depth - 1, prefer_tensor)
                # (math.trunc of an np.float32 is a TypeError: float32 defines no __trunc__)
                fn = r.choice(["math.floor", "math.ceil", "round"] + (["math.trunc"] if self.float_dtype is np.float64
                                                                      else []))
                return _join(f"{fn}({f.text})", f.bound + 1, f)
            a = sub()
            fn = r.choice(["fabs", "round1", "floor_f"] + ([] if self.float_dtype is np.float32 else ["sqrt"]))
            if fn == "sqrt":
                return _join(f"math.sqrt(abs({a.text}))", max(a.bound, 1.0), a)
            if fn == "round1":
                return _join(f"round({a.text}, 1)", a.bound + 1, a)
            if fn == "floor_f":
                return _join(f"float(math.floor({a.text}))", a.bound + 1, a)
            return _join(f"math.fabs({a.text})", a.bound, a)
        if form == "addsub":
            a, b = sub(), sub()
            return _join(f"({a.text} {r.choice('+-')} {b.text})", a.bound + b.bound, a, b)
        if form == "scale":
            a = sub()
            c = r.choice([2, 3, -1]) if kind == INT else r.choice([0.5, 2.0, -1.0] + ([] if self.exact else
                                                                                     [0.1, 1.5, 1 / 3, -0.3, 0.9]))
            return _join(f"({a.text} * {c!r})" if r.random() < 0.7 else f"({c!r} * {a.text})", a.bound * abs(c), a)
        if form == "mul":
            a, b = sub(), sub()
            e = _join(f"({a.text} * {b.text})", a.bound * b.bound, a, b)
            if e.bound > 1000:
                e = _join(f"({e.text} % {97 if kind == INT else 64.0})", 97, e)
            return e
        if form == "div":
            a = sub()
            if kind == INT and r.random() < 0.3:  # a divisor computed at run time, of either sign
                b = sub()
                d = f"(abs({b.text}) + 1)" if r.random() < 0.6 else f"-(abs({b.text}) + 2)"
                return _join(f"({a.text} // {d})", a.bound + 1, a, b)
            c = r.choice([2, 3, 4, -2, -3]) if kind == INT else \
                r.choice([2, 4] + ([] if self.exact else [3, 0.1, -2.5]))
            op = "//" if kind == INT else r.choice(["/", "/", "//"])
            return _join(f"({a.text} {op} {c})", a.bound / abs(c) + 1, a)
        if form == "mod":
            a = sub()
            if kind == INT and r.random() < 0.3:
                b = sub()
                d = f"(abs({b.text}) + 1)" if r.random() < 0.6 else f"-(abs({b.text}) + 2)"
                return _join(f"({a.text} % {d})", b.bound + 2, a, b)
            c = r.choice([2, 3, 5, 7, 97, -2, -5]) if kind == INT else r.choice([2.0, 4.0] + ([] if self.exact else
                                                                                             [0.3, -0.7, 1.1]))
            return _join(f"({a.text} % {c})", abs(c), a)
        if form == "neg":
            a = sub()
            return _join(f"(-{a.text})", a.bound, a)
        if form == "abs":
            a = sub()
            return _join(f"abs({a.text})", a.bound, a)
        if form == "minmax":
            a, b = sub(), sub()
            return _join(f"{r.choice(['min', 'max'])}({a.text}, {b.text})", max(a.bound, b.bound), a, b)
        if form == "ifexp":
            c, a, b = self.bool_expr(scope, depth - 1), sub(), sub()
            return _join(f"({a.text} if {c.text} else {b.text})", max(a.bound, b.bound), a, b, c)
        if form == "andor":  # on plain values: Python gives back one of the operands
            a, b = sub(), sub()
            return _join(f"({a.text} {r.choice(['and', 'or'])} {b.text})", max(a.bound, b.bound), a, b)
        if form == "convert":
            if kind == FLOAT:
                a = self.expr(INT, scope, depth - 1, prefer_tensor)
                if r.random() < 0.5 or self.float_dtype is np.float32:
                    return _join(f"float({a.text})", a.bound, a)
                return _join(f"({a.text} * {0.5 if self.exact else r.choice([0.5, 0.1, 1 / 3])!r})", a.bound, a)
            if self.int_dtype is np.int64:  # int(x) is an int64 tensor: it would clash with int32 arguments
                a = self.expr(FLOAT, scope, depth - 1, prefer_tensor)
                return _join(f"int({a.text})", a.bound, a)
            return self.atom(kind, scope, prefer_tensor)
        return _E(f"len({r.choice(list(self.arrays))})", 5)

    def closure(self, scope: dict) -> dict:
        """A lambda or nested function reading a local that later statements may change (it
        reads the value at the call, not at the definition), sometimes counting its calls
        through `nonlocal`."""
        r = self.rng
        kind = r.choice([INT, INT, FLOAT])
        cap = self.new_name(kind)
        lit = self.literal(kind)
        self.emit(1, f"{cap} = {lit.text}")
        scope = dict(scope, **{cap: _Var(kind, False, lit.bound)})
        body = r.choice(["v + {c}", "v * 2 - {c}", "(v - {c}) % 7"] if kind == INT else
                        ["v * 0.5 + {c}", "abs(v - {c})", "v - {c} * 2.0"]).format(c=cap)
        name = "g" if kind == INT else "gf"
        if r.random() < 0.5:
            self.emit(1, f"{name} = lambda v: {body}")
        else:
            counter = None
            if r.random() < 0.5:
                counter = self.new_name(INT)
                self.emit(1, f"{counter} = 0")
                scope[counter] = _Var(INT, False, LOOP_LIMIT)
            self.emit(1, f"def {name}(v):")
            if counter is not None:
                self.emit(2, f"nonlocal {counter}")
                self.emit(2, f"{counter} += 1")
            self.emit(2, f"return {body}")
        self.lambdas[kind] = (name, cap)
        return scope

    def kw_call(self, kind: str, a: _E) -> _E:
        """A call of a module-level helper with a default and a keyword-only parameter, by
        position, by keyword, or with the defaults."""
        r = self.rng
        key = "kw_" + kind
        if key not in self.helpers:
            name = f"hk{len(self.helpers)}"
            if kind == INT:
                b, scale = r.choice([0, 1, 2, -1]), r.choice([2, 3, -1])
            else:
                b = r.choice([0.5, 0.0, -1.5] + ([] if self.exact else [0.1]))
                scale = r.choice([0.5, 2.0] + ([] if self.exact else [0.1, 1 / 3]))
            self.helpers[key] = (name, f"def {name}(a, b={b!r}, *, scale={scale!r}):\n    if a > b:\n"
                                       f"        return (a - b) * scale\n    return a + scale\n")
        name = self.helpers[key][0]
        c = self.literal(kind)
        d = self.literal(kind)
        text, bound = r.choice([(f"{name}({a.text})", 0), (f"{name}({a.text}, {c.text})", c.bound),
                                (f"{name}({a.text}, scale={d.text})", 0), (f"{name}(b={c.text}, a={a.text})", c.bound),
                                (f"{name}({a.text}, b={c.text}, scale={d.text})", c.bound)])
        return _join(text, (a.bound + max(bound, 2)) * max(d.bound, 3) + 3, a)

    def item(self, kind: str, scope: dict) -> _E:
        """An item of an array argument by a negative or computed index, or the sum of a
        slice with a step (guarded where the array may be too short)."""
        r = self.rng
        name = r.choice([n for n, k in self.arrays.items() if k == kind])
        zero = "0" if kind == INT else "0.0"
        form = r.choice(["last", "first", "second_last", "middle", "sum_step", "sum_rev"])
        if form == "last":
            return _E(f"({name}[-1] if len({name}) > 0 else {zero})", 6, tensor=True)
        if form == "first":
            return _E(f"({name}[0] if len({name}) else {zero})", 6, tensor=True)
        if form == "second_last":
            return _E(f"({name}[-2] if len({name}) > 1 else {zero})", 6, tensor=True)
        if form == "middle":
            return _E(f"({name}[len({name}) // 2] if len({name}) else {zero})", 6, tensor=True)
        if form == "sum_step":
            return _E(f"sum({name}[{r.choice(['::2', '1::2', '::-2', '-2:', ':-1'])}], {zero})", 30, tensor=True)
        return _E(f"sum({name}[::-1], {zero})", 30, tensor=True)

    def helper(self, kind: str) -> str:
        """The name of a module-level function of one `kind` argument giving that kind (made
        on first use); |result| <= 2 |argument| + 20."""
        if kind not in self.helpers:
            r = self.rng
            name = f"h{len(self.helpers)}"
            lit = (lambda: r.choice([1, 2, 3, 5])) if kind == INT else (lambda: r.choice([0.5, 1.5, 2.0, 0.25]))
            c1, c2, c3 = lit(), lit(), lit()
            if r.random() < 0.5:
                body = (f"    if a > {c1}:\n        return a - {c2}\n"
                        f"    {'elif' if r.random() < 0.5 else 'if'} a < -{c1}:\n        return {c3} - a\n"
                        f"    return a * {r.choice([2, -1]) if kind == INT else r.choice([0.5, 2.0, -1.0])}\n")
            else:  # a loop with an early return; every path returns a number
                zero = "0" if kind == INT else "0.0"
                body = (f"    s = {zero}\n    for i in range(3):\n        if s > a:\n            return s - {c2}\n"
                        f"        s = s + {c1}\n    return a + s\n")
            self.helpers[kind] = (name, f"def {name}(a):\n{body}")
        return self.helpers[kind][0]

    def bool_expr(self, scope: dict, depth: int) -> _E:
        if self.behaviour and self.more.random() < 0.04:
            e = self.behaviour_atom(BOOL, scope)
            if e is not None:
                return e
        r = self.rng
        forms = {"compare": 5, "var": 1 if any(v.kind == BOOL for v in scope.values()) else 0,
                 "not": 1 if depth > 0 else 0, "andor": 2 if depth > 0 else 0, "chain": 0.6, "literal": 0.1,
                 "in": 0.3, "anyall": 0.2 if depth > 0 else 0}
        form = r.choices(list(forms), weights=list(forms.values()))[0]
        if form == "in":  # membership in a tuple, list or set of int literals: element by element
            a = self.expr(INT, scope, max(depth - 1, 0), prefer_tensor=True)
            items = sorted(r.sample(range(-2, 8), r.randint(1, 3)))
            box = r.choice(["({},)", "[{}]", "{{{}}}"]).format(", ".join(map(str, items)))
            return _join(f"({a.text} {r.choice(['in', 'not in'])} {box})", 1, a)
        if form == "anyall":
            parts = [self.bool_expr(scope, depth - 1) for _ in range(r.randint(2, 3))]
            return _join(f"{r.choice(['any', 'all'])}([{', '.join(p.text for p in parts)}])", 1, *parts)
        if form == "var":
            return self.atom(BOOL, scope, True)
        if form == "literal":
            return self.literal(BOOL)
        if form == "not":
            a = self.bool_expr(scope, depth - 1) if r.random() < 0.85 else self.expr(INT, scope, depth - 1, True)
            return _join(f"(not {a.text})", 1, a)
        if form == "andor":
            a, b = self.bool_expr(scope, depth - 1), self.bool_expr(scope, depth - 1)
            return _join(f"({a.text} {r.choice(['and', 'or'])} {b.text})", 1, a, b)
        kinds = [INT, INT, FLOAT]
        lk, rk = r.choice(kinds), r.choice(kinds)
        d = max(0, min(depth, 2) - 1)
        if not any(v.kind == lk for v in scope.values()):
            lk = INT if any(v.kind == INT for v in scope.values()) else FLOAT
        a = self.expr(lk, scope, d, prefer_tensor=True)
        if _is_literal(a.text):  # compare a variable, not two constants
            a = self.atom(lk, scope, prefer_tensor=True, literal_ok=False)
        b = self.expr(rk, scope, d) if r.random() < 0.6 else self.literal(rk)
        exact = lk == INT and rk == INT
        # floats compared for equality only where they are exact or rounded the same way on
        # both sides (the graph must compute every float bit for bit as Python does)
        ops = ["<", "<=", ">", ">=", "==", "!="] if exact else \
            ["<", "<=", ">", ">="] + (["==", "!="] if r.random() < 0.1 else [])
        if form == "chain":
            if r.random() < 0.5:
                c = self.literal(INT)
                return _join(f"({c.text} {r.choice(['<', '<='])} {a.text} {r.choice(['<', '<='])} {b.text})", 1, a, b)
            c = self.expr(r.choice(kinds), scope, d)  # a < b <= c: b is computed once
            ops3 = [r.choice(["<", "<=", ">", ">=", "!="]) for _ in range(2)]
            return _join(f"({a.text} {ops3[0]} {b.text} {ops3[1]} {c.text})", 1, a, b, c)
        return _join(f"({a.text} {r.choice(ops)} {b.text})", 1, a, b)

    def condition(self, scope: dict) -> _E:
        """The test of an if, elif or while: a bool expression, sometimes an int's truth value."""
        if self.rng.random() < 0.025:
            return self.expr(INT, scope, 1, prefer_tensor=True)
        return self.bool_expr(scope, self.rng.choice([1, 1, 2]))


def _is_literal(text: str) -> bool:
    try:
        return isinstance(ast.literal_eval(text), (int, float))
    except (ValueError, SyntaxError):
        return False


def _join(text: str, bound: float, *parts: _E) -> _E:
    return _E(text, bound, any(p.tainted for p in parts), any(p.tensor for p in parts))


# -- the safety check ---------------------------------------------------------------------------

class _Rejected(Exception):
    pass


def _within_limits(program: Program, max_lines: int = 200_000) -> bool:
    """Run the program as plain Python and say whether it stays well inside the limits the
    graph shares with it: ints within int32, floats within 2**40, no numpy overflow warning,
    and a bounded number of executed lines. Other exceptions propagate (a generator bug)."""
    namespace: dict = {"__name__": "fuzz_check"}
    code = compile(program.source, f"<fuzz-check {program.seed}>", "exec")
    exec(code, namespace)  # noqa: S102 (our own generated program)
    fn = namespace[program.func_name]
    steps = [0]

    def check(frame, event, arg):
        if frame.f_code is not fn.__code__:
            return None
        steps[0] += 1
        if steps[0] > max_lines:
            raise _Rejected("too long")
        for value in list(frame.f_locals.values()) + ([arg] if event == "return" else []):
            _check_value(value)
        return check

    old = sys.gettrace()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            if has_non_finite(program.args):  # numpy warns of nan made from inf; Python floats do not
                warnings.filterwarnings("ignore", "invalid value", RuntimeWarning)
            sys.settrace(check)
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    # (on copies: a program changes its list and array arguments in place)
                    result = raised_by_program(fn, copy.deepcopy(program.args))
            finally:
                sys.settrace(old)
        _check_value(result)
    except (_Rejected, OverflowError, RuntimeWarning, FloatingPointError):
        return False
    return True


def raised_by_program(fn, args):
    """Call the program; the exceptions of its own `raise` / `assert` are a result too, and
    so are Python's errors on a nan or infinite argument (`int(nan)` raises ValueError,
    `math.floor(inf)` OverflowError: the converted program must raise them too)."""
    try:
        return fn(*args)
    except (ValueError, AssertionError) as e:
        if str(e)[:1] in ("E", "A") and str(e)[1:].isdigit():
            return None
        if isinstance(e, ValueError) and has_non_finite(args):
            return None
        raise
    except OverflowError:
        if has_non_finite(args):
            return None
        raise


def has_non_finite(args) -> bool:
    return any(isinstance(a, (float, np.floating)) and not np.isfinite(a) for a in args)


def _check_value(value):
    if isinstance(value, tuple):
        for v in value:
            _check_value(v)
    elif isinstance(value, (bool, np.bool_)):
        return
    elif isinstance(value, (int, np.integer)):
        if abs(int(value)) > INT_LIMIT:
            raise _Rejected("int out of range")
    elif isinstance(value, (float, np.floating)):
        if np.isfinite(value) and not abs(float(value)) < FLOAT_LIMIT:
            raise _Rejected("float out of range")
