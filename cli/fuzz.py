"""`autograph fuzz`: run many random programs plain and converted, and report the failures.

    autograph fuzz --n 2000 --seed 0 --out fuzz-failures/          # values (the default)
    autograph fuzz --n 500 --kind grads                              # gradients, by random_grad_programs

Seeds seed .. seed+n-1 run in worker processes (--jobs). Every failing program is written to
OUT/<failure class>/seed_<seed>.py, a runnable file that prints the plain and the converted
result. Shrinking costs dozens of runs per program, so with --shrink the smallest
--shrink-per-class failures of each class are shrunk (0: all of them); the table names the
smallest shrunk file of each class. Exit code 1 when any program fails.
"""
from __future__ import annotations

import hashlib
import importlib
import multiprocessing
import os
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import typer

from .loading import CliError
from .render import console, table

GRAD_MODULE = "autograph.testing.random_grad_programs"
HEADER_MARK = "Differential-test program"   # the first line of every file we write
SHOWN_CONSTRUCTS = ("If", "elif", "else", "While", "for_range", "range_step", "for_array", "break_in_loop",
                    "continue_in_loop", "return_in_loop", "may_fall_off", "IfExp", "BoolOp", "and_or_on_values",
                    "Not", "AugAssign", "tuple_return", "print", "arg int64", "arg int32", "arg float64", "arg int",
                    "arg float")


@dataclass
class Failure:
    seed: int
    signature: str
    detail: str
    program: object = None   # a random_programs.Program (values) or None (grads)
    source: str = ""         # the file to write (grads)
    lines: int = 0
    shrunk_from: int = 0


@dataclass
class SeedResult:
    seed: int
    failure: Failure | None
    staged: frozenset = frozenset()       # graph constructs in the trace
    constructs: frozenset = frozenset()   # source constructs
    lines: int = 0
    plain_seconds: float = 0.0
    converted_seconds: float = 0.0


@dataclass
class Summary:
    n: int = 0
    jobs: int = 1
    seconds: float = 0.0
    staged: Counter = field(default_factory=Counter)
    constructs: Counter = field(default_factory=Counter)
    lines: int = 0
    plain_seconds: float = 0.0
    converted_seconds: float = 0.0
    failures: list = field(default_factory=list)

    def add(self, r: SeedResult) -> None:
        self.staged.update(r.staged)
        self.constructs.update(r.constructs)
        self.lines += r.lines
        self.plain_seconds += r.plain_seconds
        self.converted_seconds += r.converted_seconds
        if r.failure is not None:
            self.failures.append(r.failure)


# -- workers (top-level functions: they run in other processes) -------------------------------

def _run_values_seed(seed: int) -> SeedResult:
    from autograph.testing.random_programs import generate  # noqa: PLC0415

    return _run_program_seed(generate(seed))


def _run_arrays_seed(seed: int) -> SeedResult:
    from autograph.testing.random_array_programs import generate  # noqa: PLC0415

    return _run_program_seed(generate(seed))


def _run_program_seed(program) -> SeedResult:
    from autograph.testing.differential import run_program  # noqa: PLC0415
    from autograph.testing.program_facts import constructs  # noqa: PLC0415

    seed = program.seed
    outcome = run_program(program)
    failure = None
    if not outcome.ok:
        failure = Failure(seed, outcome.signature, outcome.detail, program, lines=program.num_lines)
    return SeedResult(seed, failure, outcome.staged, frozenset(constructs(program)), program.num_lines,
                      outcome.plain.seconds, outcome.converted.seconds)


def _run_grads_seed(seed: int):
    module = importlib.import_module(GRAD_MODULE)
    from autograph.testing.differential import normalize_message  # noqa: PLC0415

    try:
        message = module.run_seed(seed)
    except Exception as e:  # noqa: BLE001 (a crash of the checker is a failure to report too)
        message = f"{type(e).__name__}: {e}"
    failure = None
    if message:
        first = message.strip().splitlines()[0] if message.strip() else "failed"
        source = module.program_source(seed)
        failure = Failure(seed, "grads: " + normalize_message(first), message.strip(), source=source,
                          lines=len(source.splitlines()))
    return SeedResult(seed, failure)


def _shrink_failure(failure: Failure) -> Failure:
    from autograph.testing.differential import run_program  # noqa: PLC0415
    from autograph.testing.shrinker import shrink  # noqa: PLC0415

    small = shrink(failure.program, max_checks=400, max_seconds=120)
    outcome = run_program(small)
    if outcome.signature != failure.signature:  # cannot happen unless the converter is not deterministic
        return failure
    return Failure(failure.seed, failure.signature, outcome.detail, small, lines=small.num_lines,
                   shrunk_from=failure.lines)


def _pool(jobs: int):
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return multiprocessing.get_context(method).Pool(jobs, maxtasksperchild=500)


def _map(fn, items, jobs: int, progress, task):
    """fn over items, in worker processes when jobs > 1, advancing the progress bar."""
    if jobs <= 1:
        for item in items:
            yield fn(item)
            progress.advance(task)
        return
    with _pool(jobs) as pool:
        for result in pool.imap_unordered(fn, items, chunksize=4):
            yield result
            progress.advance(task)


# -- output ---------------------------------------------------------------------------------------

def slug(signature: str) -> str:
    """A directory name for a failure class: readable, and unique by a hash of the whole class."""
    readable = re.sub(r"[^a-z0-9]+", "-", signature.lower()).strip("-")[:60].strip("-") or "failure"
    return f"{readable}-{hashlib.sha1(signature.encode()).hexdigest()[:6]}"


def _write(failure: Failure, out: Path) -> Path:
    path = out / slug(failure.signature) / f"seed_{failure.seed}.py"
    note = f"{failure.signature}"
    if failure.shrunk_from:
        note += f" (shrunk from {failure.shrunk_from} lines)"
    if failure.program is not None:
        return failure.program.write_repro(path, note=f"\nFailure class: {note}\nDetail: {failure.detail}")
    path.parent.mkdir(parents=True, exist_ok=True)
    body = failure.source.rstrip() + "\n"
    detail = "\n".join("# " + line for line in failure.detail.splitlines())
    path.write_text(f"# {HEADER_MARK}, gradient seed {failure.seed}.\n# Failure class: {note}\n{detail}\n\n{body}",
                    encoding="utf-8")
    return path


# -- the command ------------------------------------------------------------------------------------

def fuzz(n: int = typer.Option(10000, "--n", min=1, help="How many programs (seeds SEED .. SEED+N-1)."),
         seed: int = typer.Option(0, "--seed", help="The first seed."),
         out: Path = typer.Option(Path("fuzz-failures"), "--out", help="Where to write the failing programs."),
         shrink: bool = typer.Option(True, "--shrink/--no-shrink", help="Shrink failing programs before writing them."),
         shrink_per_class: int = typer.Option(3, "--shrink-per-class",
                                              help="Shrink this many (the smallest) of each failure class; 0: all."),
         kind: str = typer.Option("values", "--kind", help="values: results, dtypes and prints of scalar control flow; arrays: numpy programs "
                                                         "(vectors, reductions, lists); grads: gradients."),
         jobs: int = typer.Option(0, "--jobs", "-j", min=0, help="Worker processes (0: one per core)."),
         plain: bool = typer.Option(False, "--plain", help="Plain text, no progress bar.")):
    """Differential testing: random programs, run as plain Python and converted, compared."""
    from rich.progress import Progress  # noqa: PLC0415

    if kind not in ("values", "arrays", "grads"):
        raise CliError(f"--kind {kind}: use values, arrays or grads")
    if kind == "grads":
        try:
            importlib.import_module(GRAD_MODULE)
        except ModuleNotFoundError as e:
            if e.name not in (GRAD_MODULE, GRAD_MODULE.rsplit(".", 1)[0]):
                raise
            raise CliError(f"--kind grads needs {GRAD_MODULE} (run_seed and program_source), which is not in this "
                           "checkout yet; --kind values works without it") from None
    # every kernel's output is checked against its op's declared dtype and shape (a
    # mismatch fails where it happens); the workers inherit the setting
    os.environ.setdefault("AUTOGRAPH_CHECK_KERNELS", "1")
    jobs = jobs or os.cpu_count() or 1
    con = console(plain)
    summary = Summary(n=n, jobs=jobs)
    worker = {"values": _run_values_seed, "arrays": _run_arrays_seed, "grads": _run_grads_seed}[kind]
    t0 = time.perf_counter()
    with Progress(console=con, transient=True, disable=plain or not con.is_terminal) as progress:
        task = progress.add_task(f"{kind} programs", total=n)
        for result in _map(worker, range(seed, seed + n), jobs, progress, task):
            summary.add(result)
            if result.failure is not None:
                progress.update(task, description=f"{kind} programs, {len(summary.failures)} failing")
        summary.seconds = time.perf_counter() - t0
        failures = summary.failures
        if shrink and kind != "grads" and failures:
            chosen = _to_shrink(failures, shrink_per_class)
            task = progress.add_task("shrinking", total=len(chosen))
            shrunk = {f.seed: f for f in _map(_shrink_failure, chosen, jobs, progress, task)}
            failures = [shrunk.get(f.seed, f) for f in failures]
    _report(summary, failures, kind, out, plain)
    if failures:
        raise typer.Exit(1)


def _to_shrink(failures: list, per_class: int) -> list:
    by_class = defaultdict(list)
    for f in failures:
        by_class[f.signature].append(f)
    chosen = []
    for group in by_class.values():
        group.sort(key=lambda f: (f.lines, f.seed))
        chosen += group if per_class <= 0 else group[:per_class]
    return chosen


def _report(summary: Summary, failures: list, kind: str, out: Path, plain: bool) -> None:
    # earlier runs' files are kept (a clean run must not erase failures not yet looked at);
    # a file of the same class and seed is the same failure, written again
    by_class = defaultdict(list)
    for f in failures:
        by_class[f.signature].append((f, _write(f, out)))
    rows = []
    for signature, items in sorted(by_class.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        example, path = min(items, key=lambda item: (not item[0].shrunk_from, item[0].lines, item[0].seed))
        rows.append([signature, str(len(items)), f"{path} ({example.lines} lines)"])
    n = summary.n
    per = summary.seconds / n * 1000 if n else 0.0
    typer.echo(f"{n} {kind} programs in {summary.seconds:.1f} s on {summary.jobs} worker(s) ({per:.1f} ms each); "
               f"{n - len(failures)} agree, {len(failures)} fail in {len(rows)} classes")
    if kind != "grads" and n:
        staged, used = summary.staged, summary.constructs
        typer.echo(f"per program: {summary.lines / n:.1f} lines; converted call {summary.converted_seconds / n * 1000:.1f} ms "
                   f"(convert, trace, run), plain {summary.plain_seconds / n * 1000:.2f} ms")
        typer.echo(f"traced into the graph: cond in {staged['cond'] / n:.0%}, while loop in {staged['loop'] / n:.0%}, "
                   f"Print in {staged['print'] / n:.0%} of the programs")
        shown = [c for c in SHOWN_CONSTRUCTS if used[c]]
        typer.echo("source constructs: " + ", ".join(f"{c} {used[c] / n:.0%}" for c in shown))
    if rows:
        table(f"failure classes (files in {out}/)", ["class", "count", "smallest example"], rows, plain)
