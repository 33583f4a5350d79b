"""A seeded generator of random numpy programs: the array side of differential testing.

`random_programs` writes scalar control flow; users also write numpy: vectors updated in
loops, reductions (`np.sum(v)`, `v.max()`, `np.mean`), `np.where`, `np.clip`, `np.dot`,
indexing with a computed index, `for e in v`, lists appended in a loop and stacked, and
float32 data next to int64 counters (where numpy's promotion rules decide the dtype).
`generate(seed)` returns a `Program` in the same form, so `differential.run_program`
compares it with plain Python, dtypes included.

The rules that make plain Python and the graph *have to* agree:
- termination: loops run over `range(n)` (n <= 4) or a vector's rows, or a `while` with a
  fresh counter compared with a small bound;
- no error in plain Python: indices are taken modulo the length; lists start non-empty;
- floats: values are kept small with `np.clip`. Most programs use constants that are
  multiples of 1/4 and scale only by 0.5, 2 or -1; the others (`inexact`) also use 0.1,
  1/3, 1e-3, divisions by 3 or by a computed value, np.sqrt / np.exp / np.log / np.tanh, and
  arguments that are not multiples of 1/4 or hold a nan or an infinity: the graph runs
  numpy's own kernels in the program's order, so it must give the same bits (the
  differential compares with rtol 1e-9, and prints compare every digit);
- one dtype per variable on every path: a float32 vector is never combined with an int
  tensor in a way that would make it float64 on some paths only (that is a user error in
  graph code: the graph refuses or promotes, see test_random_array_programs).

In-place updates (`v += w`, `v *= 0.5`, `v[k] = s`, `v[2:] *= 0.5`) are made only on arrays
no other name refers to (numpy would change the other name too: the graph refuses that,
with advice).

Deliberately left out: shapes that change in a loop, and reading possibly-undefined variables.
"""
from __future__ import annotations

import ast
import random
from dataclasses import dataclass, field

import numpy as np

from .random_programs import Program, module_source

VEC, SCAL, INT = "vec", "scal", "int"

_CONSTS = [0.0, 0.25, 0.5, 1.0, 1.5, -0.5, -1.0, 2.0, 3.0]
_INEXACT = [0.1, 1 / 3, 1e-3, -0.7, 0.3, 2.2]
MIN_LINES, MAX_LINES = 5, 30
CLIP = 8.0


@dataclass
class _Gen:
    rng: random.Random
    lines: list = field(default_factory=list)
    names: int = 0
    lists: list = field(default_factory=list)
    fresh: set = field(default_factory=set)   # vectors no other name refers to: safe to change in place
    held: set = field(default_factory=set)    # vectors put into a list: never changed in place
    aliased: set = field(default_factory=set)  # vectors ever assigned from another name (or to one)
    changed: set = field(default_factory=set)  # vectors changed in place: never put into a list
    iterated: list = field(default_factory=list)  # vectors enclosing `for e in v` loops iterate: never changed
    # in place there (numpy's later iterations would see the change; the graph refuses it)

    def function(self) -> tuple[str, tuple]:
        r = self.rng
        self.length = r.choice([2, 3, 3, 4, 5])
        self.np_dtype = r.choice([np.float64, np.float64, np.float32])
        self.dtype_name = np.dtype(self.np_dtype).name
        self.inexact = r.random() < 0.5
        x = np.array([self.arg_item(_CONSTS + [-2.0, 1.25]) for _ in range(self.length)], dtype=self.np_dtype)
        y = np.array([self.arg_item(_CONSTS + [-0.25, 0.75]) for _ in range(self.length)], dtype=self.np_dtype)
        if self.inexact and r.random() < 0.1:  # nan and infinities through comparisons, reductions, np.where
            x[r.randrange(self.length)] = r.choice([np.nan, np.inf, -np.inf])
        n = np.int64(r.randint(0, 4))
        scope = {"x": VEC, "y": VEC, "n": INT}
        self.budget = r.randint(4, 10)
        if r.random() < 0.4:
            self.statement(scope, 1, depth=0, loop_depth=0, what="list")
        self.block(scope, 1, depth=0, loop_depth=0)
        outs = self.pick_returns(scope)
        self.lines.append(f"    return {', '.join(outs)}" + ("," if len(outs) == 1 and r.random() < 0.3 else ""))
        text = "def f(x, y, n):\n" + "\n".join(self.lines) + "\n"
        return module_source(ast.parse(text).body[0]), (x, y, n)

    # -- statements -------------------------------------------------------------------------
    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def new_name(self, kind: str) -> str:
        self.names += 1
        return {VEC: "v", SCAL: "s", INT: "k"}[kind] + str(self.names)

    def block(self, scope: dict, indent: int, depth: int, loop_depth: int, min_stmts: int = 1) -> None:
        count = 0
        while count < min_stmts or (self.budget > 0 and self.rng.random() < 0.7):
            self.budget -= 1
            count += 1
            self.statement(scope, indent, depth, loop_depth)

    def statement(self, scope: dict, indent: int, depth: int, loop_depth: int, what: str | None = None) -> None:
        r = self.rng
        choices = ["assign"] * 4
        if depth < 2:
            choices += ["if"] * 2 + (["for_range", "for_rows", "while"] if loop_depth < 2 else [])
        if loop_depth > 0 and self.lists:
            choices += ["append"] * 3
        if depth == 0 and not self.lists:
            choices += ["list"]
        if self.rng.random() < 0.3:
            choices += ["print"]
        what = what or r.choice(choices)
        if what == "assign":
            self.assign(scope, indent)
        elif what == "if":
            self.emit(indent, f"if {self.condition(scope)}:")
            self.block(dict(scope), indent + 1, depth + 1, loop_depth)
            if r.random() < 0.5:
                self.emit(indent, "else:")
                self.block(dict(scope), indent + 1, depth + 1, loop_depth)
        elif what == "for_range":
            i = f"i{self.names}"
            self.names += 1
            self.emit(indent, f"for {i} in range({r.choice(['n', 'n', 'n + 1', str(r.randint(1, 3))])}):")
            inner = dict(scope)
            inner[i] = INT
            self.block(inner, indent + 1, depth + 1, loop_depth + 1)
            self.clip_carried(scope, indent + 1)
        elif what == "for_rows":
            e = f"e{self.names}"
            self.names += 1
            over = self.vec_atom(scope)
            self.emit(indent, f"for {e} in {over}:")
            inner = dict(scope)
            inner[e] = SCAL
            self.iterated.append(over)
            self.block(inner, indent + 1, depth + 1, loop_depth + 1)
            self.iterated.pop()
            self.clip_carried(scope, indent + 1)
        elif what == "while":
            c = f"c{self.names}"
            self.names += 1
            self.emit(indent, f"{c} = 0")
            cond = f"{c} < {r.choice(['n', '3', 'n + 1'])}"
            if r.random() < 0.5:
                cond += f" and {self.condition(scope)}"
            self.emit(indent, f"while {cond}:")
            self.emit(indent + 1, f"{c} += 1")
            self.block(dict(scope), indent + 1, depth + 1, loop_depth + 1)
            self.clip_carried(scope, indent + 1)
        elif what == "list":
            name = f"acc{self.names}"
            self.names += 1
            self.lists.append(name)
            self.emit(indent, f"{name} = [{self.held_expr(scope, 0)}]")
        elif what == "print":  # numpy's str of arrays and scalars, as the graph's Print formats them
            v, a = self.vec_atom(scope), self.scal_expr(scope, 1)
            label = f"P{self.names}"
            self.emit(indent, r.choice([f"print('{label}:', {v}, {a})", f"print(f'{label}: {{{a}:.4f}} {{{v}}}')",
                                        f"print(f'{label}: {{{v}[0]!r}} {{{a}}}')"]))
            self.names += 1
        elif what == "append":
            self.emit(indent, f"{r.choice(self.lists)}.append({self.held_expr(scope, 1)})")

    def held_expr(self, scope: dict, depth: int) -> str:
        """A vector expression to put into a list: a name changed in place is copied first."""
        e = self.vec_expr(scope, depth)
        if e in self.changed:
            return f"{e} * 1.0"
        if e in scope:
            self.held.add(e)
        return e

    def clip_carried(self, scope: dict, indent: int) -> None:
        """Keep the loop's carried vectors and scalars small (exact, and no overflow)."""
        carried = [n for n, k in scope.items() if k in (VEC, SCAL) and n not in ("x", "y")]
        for name in self.rng.sample(carried, min(len(carried), 2)):
            self.emit(indent, f"{name} = np.clip({name}, -{CLIP}, {CLIP})")

    def assign(self, scope: dict, indent: int) -> None:
        r = self.rng
        kind = r.choice([VEC, VEC, SCAL, SCAL, INT])
        existing = [n for n, k in scope.items() if k == kind and n not in ("x", "y", "n") and n[0] not in "iec"]
        name = r.choice(existing) if existing and r.random() < (0.5 if indent == 1 else 0.8) else self.new_name(kind)
        if kind == VEC:
            value = self.vec_expr(scope, 0)
        elif kind == SCAL:
            value = self.scal_expr(scope, 0)
        else:
            value = self.int_expr(scope)
        if name in scope and kind == SCAL and r.random() < 0.3:
            self.emit(indent, f"{name} {r.choice(['+=', '-='])} {self.scal_expr(scope, 1)}")
        elif (name in self.fresh and not {name} & (self.held | self.aliased | set(self.iterated)) and kind == VEC
              and r.random() < 0.5):
            self.changed.add(name)
            # in place: numpy changes the array itself, which no other name refers to
            form = r.random()
            if form < 0.25:  # an item: at a computed index
                self.emit(indent, f"{name}[({self.int_expr(scope)}) % {self.length}] = {self.scal_expr(scope, 1)}")
            elif form < 0.4:  # a slice, changed in place
                lo = r.randint(0, self.length - 1)
                self.emit(indent, f"{name}[{lo}:] {r.choice(['+=', '*='])} {r.choice(['0.5', self.scal_atom(scope)])}")
            else:
                op = r.choice(["+=", "-=", "*="])
                rhs = self.vec_expr(scope, 1) if op != "*=" else r.choice(["0.5", "-1.0", self.scal_atom(scope)])
                self.emit(indent, f"{name} {op} {rhs}")
        else:
            if kind == VEC and name not in scope and r.random() < 0.3:
                dtype = f"dtype=np.{self.dtype_name}"  # (a float64 zeros next to float32 data: two dtypes)
                value = r.choice([f"np.zeros({self.length}, {dtype})",
                                  f"np.ones({self.length}, {dtype}) * {self.const()}",
                                  f"np.zeros_like(x) + {self.const()}"])
            self.emit(indent, f"{name} = {value}")
            if kind == VEC:
                if value in scope:  # `w = v`: one array under two names, on some path: never changed in place
                    self.aliased.update((name, value))
                elif value.endswith("]"):  # `w = v[::-1]`: a view of v's memory in numpy
                    self.aliased.add(name)
                elif name not in self.aliased:
                    self.fresh.add(name)
        scope[name] = kind

    def arg_item(self, exact: list) -> float:
        r = self.rng
        return r.choice(exact) if not self.inexact or r.random() < 0.5 else round(r.uniform(-3, 3), r.choice([1, 3, 7]))

    # -- expressions ------------------------------------------------------------------------
    def const(self) -> str:
        return repr(self.rng.choice(_CONSTS + (_INEXACT if self.inexact else [])))

    def vec_atom(self, scope: dict) -> str:
        return self.rng.choice([n for n, k in scope.items() if k == VEC])

    def scal_atom(self, scope: dict) -> str:
        names = [n for n, k in scope.items() if k == SCAL]
        if names and self.rng.random() < 0.6:
            return self.rng.choice(names)
        return self.reduction(scope)

    def reduction(self, scope: dict) -> str:
        v = self.vec_atom(scope)
        w = self.vec_atom(scope)
        return self.rng.choice([f"np.sum({v})", f"{v}.max()", f"np.min({v})", f"{v}.sum()", f"np.max({v} * 0.5)",
                                f"max({v})", f"min({v})", f"sum({v})",
                                f"{v}[({self.int_expr(scope)}) % {self.length}]", f"np.dot({v}, {w}) * 0.25",
                                f"np.mean({v})", f"{v}[-1]", f"{v}[0]", f"np.var({v})", f"np.std({w}) * 0.5",
                                f"np.sum(np.floor({v} * 0.5))",
                                # slices with steps and negative bounds (never empty: length >= 2)
                                f"np.sum({v}[::2])", f"{v}[-2:].mean()", f"{v}[1::2].max()", f"{v}[::-1][0]",
                                f"np.min({v}[:-1])", f"{v}[-2]"]
                               + ([f"np.mean({v}) / 3", f"np.sum(np.sqrt(np.abs({v})))", f"np.max({v}) * 0.1",
                                   f"np.prod(np.tanh({v}))"] if self.inexact else []))

    def int_expr(self, scope: dict) -> str:
        ints = [n for n, k in scope.items() if k == INT]
        v = self.vec_atom(scope)
        return self.rng.choice([f"np.argmax({v})", f"np.argmin({v})", "n", "len(x)", f"{self.rng.choice(ints)}"]
                               + [f"{self.rng.choice(ints)} + 1"])

    def vec_expr(self, scope: dict, depth: int) -> str:
        r = self.rng
        if depth >= 2 or r.random() < 0.25:
            return self.vec_atom(scope)
        a = self.vec_expr(scope, depth + 1)
        b = self.vec_expr(scope, depth + 1)
        return r.choice([
            f"{a} + {b}", f"{a} - {b}", f"{a} * 0.5", f"-{a}", f"np.abs({a})", f"np.maximum({a}, {b})",
            f"np.minimum({a}, {self.const()})", f"np.where({a} > {self.const()}, {a}, {b})",
            f"np.clip({a}, -1.0, 2.0)", f"{a} + {self.scal_atom(scope)}", f"{a} * 2.0",
            f"({a})[::-1]", f"np.where({a} < {b}, {self.const()}, {a})",
        ] + ([f"{a} * 0.1", f"{a} / 3", f"{a} + 1e-3", f"np.sqrt(np.abs({a}))", f"np.exp(-np.abs({a}))",
              f"np.log(np.abs({a}) + 1.0)", f"np.tanh({a})", f"{a} / (np.abs({b}) + 1.0)", f"{a} * (1 / 3)",
              f"{a} ** 2", f"np.abs({a}) ** 0.5"] if self.inexact else []))

    def scal_expr(self, scope: dict, depth: int) -> str:
        r = self.rng
        if depth >= 2 or r.random() < 0.4:
            return self.scal_atom(scope)
        a = self.scal_expr(scope, depth + 1)
        return r.choice([f"{a} + {self.scal_expr(scope, depth + 1)}", f"{a} * 0.5", f"-{a}", f"{a} - {self.const()}",
                         f"abs({a})", f"max({a}, {self.scal_atom(scope)})", f"min({a}, {self.scal_atom(scope)})"]
                        + ([f"{a} / 3", f"{a} * 0.1", f"np.sqrt(abs({a}) + 0.1)", f"np.exp(-abs({a}))",
                            f"{a} / (abs({self.scal_atom(scope)}) + 1.0)", f"np.maximum({a}, {self.scal_atom(scope)})"]
                           if self.inexact else []))

    def condition(self, scope: dict) -> str:
        r = self.rng
        a = self.scal_expr(scope, 1)
        v = self.vec_atom(scope)
        return r.choice([f"{a} > {self.const()}", f"{a} < {self.scal_atom(scope)}",
                         f"np.sum({v}) >= {self.const()}", f"{self.int_expr(scope)} > 1",
                         f"np.any({v} > {self.const()})", f"({v} < {self.const()}).all()",
                         f"any({v} > {self.const()})", f"all({v} <= {a})", f"{self.const()} in {v}"])

    def pick_returns(self, scope: dict) -> list[str]:
        r = self.rng
        names = [n for n in scope if n not in ("x", "y", "n") and n[0] in "vsk"]
        outs = r.sample(names, min(len(names), r.choice([1, 2, 3]))) if names else ["x"]
        if self.lists:
            outs.append(f"np.stack({r.choice(self.lists)})")
        return outs


def generate(seed: int) -> Program:
    """The array program for `seed` (always the same one)."""
    rng = random.Random(seed)
    for _ in range(100):
        source, args = _Gen(rng).function()
        program = Program(seed, source, args)
        if MIN_LINES <= program.num_lines <= MAX_LINES:
            return program
    raise RuntimeError(f"seed {seed}: no array program within the limits in 100 attempts")


def check_seed(seed: int) -> tuple[int, str, str, frozenset]:
    """Generate and run the array program of `seed` (as differential.check_seed)."""
    from .differential import run_program  # noqa: PLC0415

    outcome = run_program(generate(seed))
    return seed, outcome.signature, outcome.detail, outcome.staged
