"""Run a program as plain Python and through `@autograph.function`, and classify how they differ.

The classes, checked in this order (the first that applies wins):

    unexpected_error  the converted call raised and plain Python did not (a hang counts, as
                      `Timeout`)
    missed_error      plain Python raised and the converted call did not
    different_error   both raised, with exception types that are not the same (or subclass)
    wrong_value       structure or value differs: None vs a value, tuple lengths, numbers.
                      Floats: np.allclose(rtol=1e-9, atol=1e-12, equal_nan=True); ints and
                      bools exactly (True == 1 here; the kind check below catches it)
    wrong_dtype_kind  equal values of different kinds. Kinds are numpy's b / i / u / f; a Python
                      bool is b, a Python int is i (or u), a Python float is f. So 3.0 or True for
                      Python's 3 does not agree. Two numpy values must have the same dtype
                      (np.float32 for np.float32, not np.float64)
    wrong_type        equal values of the same kind, one a Python number and the other numpy's
                      (np.int64(3) for Python's 3: `r ** 30` then wraps, json.dumps raises)
    wrong_side_effect the arguments after the call differ (an array or list the function changed
                      in place: Python changes the caller's object)
    wrong_output      the printed lines differ

Printed lines are compared as text, without normalisation. That is fair because both sides
print with str(): str(np.int64(3)) == str(3), str(np.float64(2.5)) == str(2.5) and
str(np.True_) == str(True), so the same values print the same; a value of another kind (3.0
for 3) prints differently, and that is a real difference.

`signature(outcome)` buckets a mismatch into a short failure class (kind, exception type and
message with names and numbers stripped, or the kinds that differ) so a long run reports counts
per class.
"""
from __future__ import annotations

import contextlib
import copy
import io
import itertools
import linecache
import re
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .random_programs import Program
from .time_limit import time_limit

AGREE = "agree"
KINDS = ("unexpected_error", "missed_error", "different_error", "wrong_value", "wrong_dtype_kind", "wrong_type",
         "wrong_side_effect", "wrong_output")
TIMEOUT_SECONDS = 20.0


@dataclass
class RunResult:
    """One call: its value or its exception, and what it printed."""

    value: Any = None
    error: str | None = None      # exception type name
    message: str = ""             # first line of the exception message
    exception: BaseException | None = field(default=None, repr=False)
    stdout: str = ""
    seconds: float = 0.0
    args_after: Any = None        # the arguments as the call left them

    def describe(self) -> str:
        if self.error is not None:
            return f"raised {self.error}: {self.message}"
        return f"returned {_show(self.value)}"


@dataclass
class Outcome:
    """Both runs of one program and their comparison."""

    program: Program
    kind: str                     # AGREE or one of KINDS
    detail: str
    plain: RunResult
    converted: RunResult
    staged: frozenset = frozenset()   # "cond" / "loop" / "print": graph constructs in the trace

    @property
    def ok(self) -> bool:
        return self.kind == AGREE

    @property
    def signature(self) -> str:
        return signature(self)

    def report(self) -> str:
        lines = [f"verdict:   {self.kind}" + (f" ({self.detail})" if self.detail else ""),
                 f"plain:     {self.plain.describe()}",
                 f"converted: {self.converted.describe()}"]
        if self.plain.stdout or self.converted.stdout:
            lines += ["plain printed:", *("  | " + s for s in self.plain.stdout.splitlines()),
                      "converted printed:", *("  | " + s for s in self.converted.stdout.splitlines())]
        return "\n".join(lines)


# -- running ----------------------------------------------------------------------------------

_counter = itertools.count()


def load_function(program: Program):
    """Execute the program's module text and return its function. The text is registered
    with linecache under a unique name so that AutoGraph finds the function's source."""
    filename = f"<fuzz seed {program.seed} #{next(_counter)}>"
    linecache.cache[filename] = (len(program.source), None, program.source.splitlines(True), filename)
    namespace: dict = {"__name__": f"fuzz_{program.seed}"}
    exec(compile(program.source, filename, "exec"), namespace)  # noqa: S102 (generated test programs)
    return namespace[program.func_name], filename


def call(fn, args, timeout: float | None = None) -> RunResult:
    """Call fn(*args) capturing stdout, the value or the exception, and the time (at most
    `timeout` seconds, TIMEOUT_SECONDS when not given)."""
    timeout = TIMEOUT_SECONDS if timeout is None else timeout
    buf = io.StringIO()
    result = RunResult()
    t0 = time.perf_counter()
    try:
        with time_limit(timeout), contextlib.redirect_stdout(buf), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result.args_after = copy.deepcopy(args)  # in-place numpy ops must not reach the other run
            result.value = fn(*result.args_after)
    except Exception as e:  # noqa: BLE001 (any exception is a result to compare)
        result.error = type(e).__name__
        result.message = str(e).splitlines()[0] if str(e) else ""
        result.exception = e
    result.seconds = time.perf_counter() - t0
    result.stdout = buf.getvalue()
    return result


def run_program(program: Program, timeout: float | None = None, engine: dict | None = None) -> Outcome:
    """Run `program` plain and converted (`@autograph.function(**engine)`) and compare the two runs."""
    import autograph  # noqa: PLC0415 (autograph imports this package lazily, not the other way)

    fn, filename = load_function(program)
    try:
        plain = call(fn, program.args, timeout)
        converted_fn = autograph.function(fn, **(engine or {}))
        converted = call(converted_fn, program.args, timeout)
        staged = _staged_constructs(converted_fn, program.args) if converted.error is None else frozenset()
    finally:
        linecache.cache.pop(filename, None)
        _forget_conversion(fn)
    kind, detail = compare(plain, converted)
    return Outcome(program, kind, detail, plain, converted, staged)


def check_seed(seed: int) -> tuple[int, str, str, frozenset]:
    """Generate and run the program of `seed`: (seed, signature, detail, staged constructs),
    small and picklable, for worker processes."""
    from .random_programs import generate  # noqa: PLC0415

    outcome = run_program(generate(seed))
    return seed, outcome.signature, outcome.detail, outcome.staged


def _staged_constructs(converted_fn, args) -> frozenset:
    """Which control flow became graph control flow (for the construct statistics)."""
    try:
        ops = converted_fn.get_concrete_function(*args).graph.get_operations()
    except Exception:  # noqa: BLE001 (statistics only)
        return frozenset()
    found = set()
    for op in ops:
        if op.type == "LoopCond":
            found.add("loop")
        elif op.type == "Switch" and any(part.startswith("cond") for part in op.name.split("/")[:-1]):
            found.add("cond")
        elif op.type == "Print":
            found.add("print")
    return frozenset(found)


def _forget_conversion(fn) -> None:
    """Drop the converter's cache entry for a function that will never be called again
    (a long run converts tens of thousands of them)."""
    try:
        from autograph import transpiler  # noqa: PLC0415

        transpiler._cache.pop(fn.__code__, None)
    except Exception:  # noqa: BLE001 (only memory is at stake)
        pass


# -- comparing --------------------------------------------------------------------------------

def compare(plain: RunResult, converted: RunResult) -> tuple[str, str]:
    """(AGREE, "") or (mismatch class, what differs)."""
    if plain.error is None and converted.error is not None:
        return "unexpected_error", f"{converted.error}: {converted.message}"
    if plain.error is not None and converted.error is None:
        return "missed_error", f"plain raised {plain.error}: {plain.message}"
    if plain.error is not None:
        if not isinstance(converted.exception, type(plain.exception)):
            return "different_error", f"{plain.error} -> {converted.error}: {converted.message}"
    else:
        mismatch = compare_values(plain.value, converted.value)
        if mismatch is not None:
            return mismatch
        changed = compare_values(plain.args_after, converted.args_after)
        if changed is not None:
            return "wrong_side_effect", changed[1]
    if plain.stdout != converted.stdout:
        return "wrong_output", _output_difference(plain.stdout.splitlines(), converted.stdout.splitlines())
    return AGREE, ""


def compare_values(plain, converted) -> tuple[str, str] | None:
    """None when they agree, else ("wrong_value" | "wrong_dtype_kind", detail)."""
    pairs = []
    problem = _pair_leaves(plain, converted, "result", pairs)
    if problem is not None:
        return "wrong_value", problem
    for path, a, b in pairs:
        if not _same_value(a, b):
            return "wrong_value", f"{path}: plain {_show(a)} ({kind_name(a)}), converted {_show(b)} " \
                                  f"({kind_name(b)})"
    for path, a, b in pairs:
        if not _same_kind(a, b):
            return "wrong_dtype_kind", f"{path}: plain {_show(a)} ({kind_name(a)}), converted " \
                                       f"{_show(b)} ({kind_name(b)})"
    for path, a, b in pairs:
        if _python_number(a) != _python_number(b):
            return "wrong_type", f"{path}: plain {_show(a)} ({type(a).__name__}), converted {_show(b)} " \
                                 f"({type(b).__name__})"
    return None


def _python_number(v) -> bool:
    return type(v) in (bool, int, float)


def _pair_leaves(a, b, path: str, out: list) -> str | None:
    """Match the two structures; a description of the first structural difference, if any."""
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        if type(a) is not type(b) or len(a) != len(b):
            return f"{path}: plain {_show(a)} ({kind_name(a)}), converted {_show(b)} ({kind_name(b)})"
        for i, (x, y) in enumerate(zip(a, b)):
            problem = _pair_leaves(x, y, f"{path}[{i}]", out)
            if problem is not None:
                return problem
        return None
    if (a is None) != (b is None):
        return f"{path}: plain {_show(a)} ({kind_name(a)}), converted {_show(b)} ({kind_name(b)})"
    out.append((path, a, b))
    return None


def _numeric(v) -> bool:
    return isinstance(v, (bool, int, float, np.generic, np.ndarray)) and not isinstance(v, (np.str_, np.bytes_))


def _same_value(a, b) -> bool:
    if a is None and b is None:
        return True
    if not (_numeric(a) and _numeric(b)):
        return type(a) is type(b) and a == b
    x, y = np.asarray(a), np.asarray(b)
    if x.shape != y.shape:
        return False
    if x.dtype.kind in "fc" or y.dtype.kind in "fc":
        return bool(np.allclose(x, y, rtol=1e-9, atol=1e-12, equal_nan=True))
    return bool(np.array_equal(x, y))


def value_kind(v) -> str:
    """numpy's dtype kind of a value; Python bool/int/float map to b/i/f."""
    if isinstance(v, bool):
        return "b"
    if isinstance(v, int):
        return "i"
    if isinstance(v, float):
        return "f"
    if isinstance(v, (np.generic, np.ndarray)):
        return v.dtype.kind
    return type(v).__name__


def _same_kind(a, b) -> bool:
    """Same dtype kind; and where both are numpy values, the same dtype (float32 is not
    float64: the graph must keep numpy's dtypes, not just their kinds)."""
    if isinstance(a, (np.generic, np.ndarray)) and isinstance(b, (np.generic, np.ndarray)):
        return a.dtype == b.dtype
    ka, kb = value_kind(a), value_kind(b)
    if ka == kb:
        return True
    python_int = (isinstance(a, int) and not isinstance(a, bool)) or (isinstance(b, int) and not isinstance(b, bool))
    return python_int and {ka, kb} <= {"i", "u"}


_KIND_NAMES = {"b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex", "NoneType": "None"}


def kind_name(v) -> str:
    if isinstance(v, (tuple, list)):
        return f"{type(v).__name__}[{len(v)}]"
    if isinstance(v, (np.generic, np.ndarray)):
        return v.dtype.name
    return _KIND_NAMES.get(value_kind(v), value_kind(v))


def _show(v) -> str:
    if isinstance(v, (tuple, list)):
        inner = ", ".join(_show(x) for x in v)
        return f"({inner}{',' if len(v) == 1 else ''})" if isinstance(v, tuple) else f"[{inner}]"
    if isinstance(v, np.generic):
        return f"np.{v.dtype.name}({v.item()!r})"
    return repr(v)


def _output_difference(plain: list[str], converted: list[str]) -> str:
    for i, (a, b) in enumerate(zip(plain, converted)):
        if a != b:
            return f"line {i + 1}: plain {a!r}, converted {b!r}"
    if len(plain) > len(converted):
        return f"converted printed {len(plain) - len(converted)} line(s) fewer; first missing: {plain[len(converted)]!r}"
    return f"converted printed {len(converted) - len(plain)} line(s) more; first extra: {converted[len(plain)]!r}"


# -- bucketing ---------------------------------------------------------------------------------

def normalize_message(message: str) -> str:
    """An error message without what varies between programs: file names and line numbers,
    quoted names, numbers."""
    text = re.sub(r"<[^<>]*>(:\d+)?(:\d+)?:?", "", message)          # <fuzz seed 3 #1>:12:
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'_'", text)                # 'acc'
    text = re.sub(r"\s*\([\w/.]+:\d+\)", "", text)                   # (cond_1/Merge:0)
    text = re.sub(r"^[A-Z]\w*: ", "OP: ", text.strip())              # Add: the operands ...
    text = re.sub(r"\b(?!(?:u?int|float)(?:8|16|32|64)\b)([A-Za-z_]*)\d+(\.\d+)?", r"\1N", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text[:110]


def signature(outcome: Outcome) -> str:
    """The failure class of a mismatch ("" when the runs agree)."""
    kind = outcome.kind
    if kind == AGREE:
        return ""
    p, c = outcome.plain, outcome.converted
    if kind == "unexpected_error":
        return f"unexpected_error: {c.error}: {normalize_message(c.message)}"
    if kind == "missed_error":
        return f"missed_error: {p.error}"
    if kind == "different_error":
        return f"different_error: {p.error} -> {c.error}"
    if kind in ("wrong_value", "wrong_dtype_kind", "wrong_type", "wrong_side_effect"):
        m = re.search(r"\(([^()]*)\), converted .*\(([^()]*)\)$", outcome.detail)
        return f"{kind}: plain {m.group(1)}, converted {m.group(2)}" if m else kind
    detail = outcome.detail
    if "fewer" in detail:
        return "wrong_output: missing lines"
    if "more" in detail:
        return "wrong_output: extra lines"
    return "wrong_output: lines differ"


# -- repro files --------------------------------------------------------------------------------

def report_main(fn, args) -> int:
    """The main of a repro file: run `fn` (defined in that file) both ways, print the
    comparison, return 1 when they differ."""
    import autograph  # noqa: PLC0415

    plain = call(fn, args)
    converted = call(autograph.function(fn), args)
    kind, detail = compare(plain, converted)
    outcome = Outcome(Program(-1, "", tuple(args)), kind, detail, plain, converted)
    print(outcome.report())
    if converted.exception is not None and kind != AGREE:
        print("converted traceback (last lines):")
        tb = traceback.format_exception(type(converted.exception), converted.exception,
                                        converted.exception.__traceback__)
        print("".join(tb[-3:]).rstrip())
    return 0 if kind == AGREE else 1
