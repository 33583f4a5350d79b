"""The one code emitter: every piece of Python the executor generates (handlers, compiled
loops in Python and numba, fused kernels, op kernels) and autograph's guards is written
with these helpers and compiled by `compile_function`.

What may appear in generated source, so that a graph file can never run code:
  - this module's callers' own templates (operators, keywords),
  - identifiers made here (`ident`: a fixed prefix and a checked non-negative int),
  - literals of checked bools, ints and finite floats (`literal`),
  - indices checked to be ints in range (`index`).
Text from a graph (op names, attribute strings) never is: other values are bound in the
function's namespace, and an op's name appears only in the file name, sanitized.
`check_steps` / `check_loop` check a Fused or CompiledLoop op's steps before a builder
reads them, so a malformed one is a GraphError naming the op, never a raw TypeError.

Each function is compiled under a file name registered in `linecache`, so tracebacks and
`autograph run --jit` listings show the generated lines.
"""
from __future__ import annotations

import contextlib
import itertools
import linecache
import math
import re
import types

import numpy as np

from graphcore.dtypes import DType, variant
from graphcore.errors import GraphError

_counter = itertools.count(1)
# source text -> its code object compiled once (under the first file name): the same text
# (kernels of the same structure, plan after plan) is not compiled again, only renamed
_compiled: dict[str, types.CodeType] = {}
_MAX_COMPILED = 512
_PREFIX = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\Z")
_INT_TYPES = (int, np.integer)


def _is_int(x) -> bool:
    return isinstance(x, _INT_TYPES) and not isinstance(x, (bool, np.bool_))


def ident(prefix: str, number=None) -> str:
    """An identifier: `prefix` (a fixed identifier of the caller's) and a non-negative int."""
    if not isinstance(prefix, str) or not _PREFIX.match(prefix) or not prefix.isascii():
        raise GraphError(f"generated code: {prefix!r} is not an identifier prefix")
    if number is None:
        return prefix
    if not _is_int(number) or number < 0:
        raise GraphError(f"generated code: a name's number must be a non-negative int, got {number!r}")
    return f"{prefix}{int(number)}"


def index(x, bound: int, what: str = "an index") -> int:
    """`x` as an int in range(bound), else GraphError."""
    if not _is_int(x) or not 0 <= x < bound:
        raise GraphError(f"{what} must be an int in range({bound}), got {x!r}")
    return int(x)


def literal(value) -> str:
    """The source of a bool, an int or a finite float (a numpy scalar of those kinds too)."""
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if _is_int(value):
        return repr(int(value))
    if isinstance(value, (float, np.floating)) and math.isfinite(float(value)):
        return repr(float(value))
    raise GraphError(f"generated code: {type(value).__name__} {value!r} is not a literal it writes "
                     "(bools, ints and finite floats only)")


def int_literal(value) -> str:
    """The source of an int (not a bool), else GraphError."""
    if not _is_int(value):
        raise GraphError(f"generated code: an int was expected, got {value!r}")
    return repr(int(value))


def args(prefix: str, numbers) -> str:
    """`x0, x1, x2` for prefix "x" and numbers 0, 1, 2."""
    return ", ".join(ident(prefix, n) for n in numbers)


class Source:
    """Lines of Python in blocks: `with src.block("while True"):` indents what it adds."""

    def __init__(self):
        self.lines: list[str] = []
        self.depth = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def extend(self, lines) -> None:
        for x in lines:
            self.line(x)

    @contextlib.contextmanager
    def block(self, header: str):
        self.line(header + ":")
        self.depth += 1
        try:
            yield self
        finally:
            self.depth -= 1

    def text(self) -> str:
        return "".join(x + "\n" for x in self.lines)


def label(text) -> str:
    """A name from a graph, fit for a file name (printable, short, no angle brackets)."""
    s = re.sub(r"[^A-Za-z0-9_./:, -]", "?", str(text))
    return s[:80]


def compile_code(source: str, kind: str, name="") -> object:
    """The code object of `source` (made by this module's rules), compiled under a file
    name `<kind name#n>` registered in linecache: a traceback through it, and a listing,
    show its generated lines."""
    title = f"{label(kind)} {label(name)}" if name else label(kind)
    filename = f"<{title}#{next(_counter)}>"
    code = _compiled.get(source)
    if code is None:
        code = compile(source, filename, "exec")
        if len(_compiled) >= _MAX_COMPILED:
            _compiled.clear()
        _compiled[source] = code
    else:
        code = _renamed(code, filename)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return code


def _renamed(code: types.CodeType, filename: str) -> types.CodeType:
    """`code` as compiling its source under `filename` would make it (nested code included)."""
    consts = tuple(_renamed(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def define(code, env: dict, fn_name: str):
    """Run a module-level code object from compile_code in `env`; its function `fn_name`."""
    exec(code, env)  # noqa: S102 (source made by the rules above)
    return env[fn_name]


def compile_function(source: str, fn_name: str, env: dict, kind: str, name="") -> object:
    """compile_code and define in one: the function `fn_name` that `source` defines."""
    return define(compile_code(source, kind, name), env, fn_name)


# -- checks of the steps of Fused and CompiledLoop ops, before a builder reads them --------

TYPE, INPUTS, ATTRS, NAME, LOCATION, DTYPE, GUARD = range(7)  # (graphcore.ops.fused_ops / compiled_ops)


def _is_dtype(d) -> bool:
    """A graphcore dtype: a numpy one's, or `variant` (a tensor list a loop carries)."""
    return isinstance(d, DType) and (isinstance(d.np_dtype, np.dtype) or d is variant)


def _fail(op_name, what: str) -> GraphError:
    return GraphError(f"op {label(op_name)!r}: {what}; the graph (file) is malformed")


def _int_list(x, bound: int, op_name, what: str) -> list[int]:
    if not isinstance(x, (list, tuple)):
        raise _fail(op_name, f"{what} must be a list of ints, got {type(x).__name__}")
    try:
        return [index(k, bound, what) for k in x]
    except GraphError as e:
        raise _fail(op_name, str(e)) from None


def check_steps(op_name, steps, n_values: int, loop: bool = False) -> int:
    """Check the steps of a Fused op (or, `loop`, one region of a CompiledLoop's) on
    `n_values` values before them: each a tuple of the right fields, its type a string
    naming an op, its inputs and guard predicates ints naming values made before it, its
    attributes a dict, its dtype a dtype (a tuple of them for an inner loop). Returns the
    number of values after them."""
    from graphcore.ops.compiled_ops import outputs_of  # noqa: PLC0415 (graphcore loads its ops first)
    from graphcore.registry import get_op_def  # noqa: PLC0415

    if not isinstance(steps, (list, tuple)):
        raise _fail(op_name, f"its steps must be a list, got {type(steps).__name__}")
    for j, step in enumerate(steps):
        where = f"step {j}"
        if not isinstance(step, (list, tuple)) or len(step) != (7 if loop else 6):
            raise _fail(op_name, f"{where} must be a tuple of {7 if loop else 6} fields")
        kind = step[TYPE]
        if not isinstance(kind, str) or not _PREFIX.match(kind):
            raise _fail(op_name, f"{where}'s op type must be an op type's name, got {kind!r}")
        if kind != "Merge":
            try:
                get_op_def(kind)
            except Exception:  # noqa: BLE001 (any failure: not an op type this process knows)
                raise _fail(op_name, f"{where}'s op type {label(kind)!r} is not registered") from None
        _int_list(step[INPUTS], n_values, op_name, f"{where}'s inputs")
        if kind == "Merge" and len(step[INPUTS]) != 3:
            raise _fail(op_name, f"{where} (a cond's Merge) must read (true value, false value, predicate)")
        if not isinstance(step[ATTRS], dict) or not all(isinstance(k, str) and _PREFIX.match(k) for k in step[ATTRS]):
            raise _fail(op_name, f"{where}'s attributes must be a dict keyed by names")
        dts = step[DTYPE] if isinstance(step[DTYPE], tuple) else (step[DTYPE],)
        if not dts or not all(_is_dtype(d) for d in dts):
            raise _fail(op_name, f"{where}'s dtype must be a dtype")
        if kind == "Fused":
            check_steps(op_name, step[ATTRS].get("steps"), len(step[INPUTS]))
        if kind == "CompiledLoop":
            check_loop(op_name, step[ATTRS], len(step[INPUTS]))
            if len(dts) != len(step[ATTRS]["exits"]):
                raise _fail(op_name, f"{where} (an inner loop) must have a dtype per exit")
        if loop:
            guard = step[GUARD]
            if not isinstance(guard, (list, tuple)) or not all(
                    isinstance(g, (list, tuple)) and len(g) == 2 and isinstance(g[1], (bool, np.bool_)) for g in guard):
                raise _fail(op_name, f"{where}'s guard must be (value, bool) pairs")
            _int_list([g[0] for g in guard], n_values, op_name, f"{where}'s guard")
        n_values += outputs_of(step) if loop else 1
    return n_values


def check_loop(op_name, a, n_inputs: int) -> None:
    """Check a CompiledLoop's attributes `a` for a loop of `n_inputs` inputs (see check_steps)."""
    if not isinstance(a, dict) or any(k not in a for k in ("n_vars", "cond_steps", "pred", "body_steps", "nexts",
                                                           "exits")):
        raise _fail(op_name, "a CompiledLoop needs n_vars, cond_steps, pred, body_steps, nexts and exits")
    try:
        n_vars = index(a["n_vars"], n_inputs + 1, "n_vars")
    except GraphError as e:
        raise _fail(op_name, str(e)) from None
    if n_vars == 0:
        raise _fail(op_name, "a loop needs a loop variable")
    after_cond = check_steps(op_name, a["cond_steps"], n_inputs, loop=True)
    _int_list([a["pred"]], after_cond, op_name, "pred")
    after_body = check_steps(op_name, a["body_steps"], after_cond, loop=True)
    if len(_int_list(a["nexts"], after_body, op_name, "nexts")) != n_vars:
        raise _fail(op_name, f"nexts must name one value per loop variable ({n_vars})")
    exits = _int_list(a["exits"], n_vars, op_name, "exits")  # (loop variables: run_loop returns state[k])
    if not exits:
        raise _fail(op_name, "a loop needs an exit")
    dts = a.get("dtypes")
    if dts is not None and (not isinstance(dts, (list, tuple)) or len(dts) != len(exits) or not all(
            _is_dtype(d) for d in dts)):
        raise _fail(op_name, "dtypes must give one dtype per exit")
