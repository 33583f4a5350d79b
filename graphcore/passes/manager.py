"""The pass manager: run passes in order, round after round, until a round changes
nothing (or `max_rounds`), and report per pass the ops removed / added / rewritten and
the time it took.

Switches: `optimize(..., skip=["cse"])` leaves passes out; the environment variable
AUTOGRAPH_OPTIMIZE=0 turns the optimizer off wherever it runs by default
(`@function`, `Session(optimize=True)`), and AUTOGRAPH_OPTIMIZE_SKIP=cse,arithmetic
skips named passes there.
"""
from __future__ import annotations

import gc as _gc
import os
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from ..errors import GraphError
from ..graph import Graph
from . import (arithmetic, compile_loops, constant_folding, control_flow, cse, fusion, identical_branches, licm,
               lower_functional, pruning)
from .state import PassState, created_since

@dataclass(frozen=True)
class Pass:
    """A graph pass and how the manager schedules it.

    Attributes:
      name, run: `run(graph, state) -> rewrites`.
      default: in DEFAULT_PASSES (else run only when asked for: compile_loops, numba_loops).
      only_erases: its changes give the others nothing new (pruning): it runs when the others
        are done, and again only after they changed something.
      last: runs once, after the others reached their fixed point.
      worklist: run again, it looks only at the ops near a change (state.py: the worklist;
        cse: cse._near).
      readers_too: its worklist holds the readers and waiters of a touched op too.
      own_touches_done: it deals with all that its own rewrites touch within the run that
        makes them (cse: a merge touches the op merged into and the merged op, whose keys
        stay): its next run looks at what was touched since its last run ended.
    """

    name: str
    run: Callable
    default: bool = True
    only_erases: bool = False
    last: bool = False
    worklist: bool = False
    readers_too: bool = False
    own_touches_done: bool = False


# the order of one round
PASS_LIST: tuple[Pass, ...] = (
    Pass("lower_functional", lower_functional.run),  # first: If/While inlined, the others see v1 only
    Pass("pruning", pruning.run, only_erases=True),
    Pass("licm", licm.run, worklist=True),  # first: the constant subgraphs it moves out of loops are folded next
    Pass("constant_folding", constant_folding.run, worklist=True),
    Pass("arithmetic", arithmetic.run, worklist=True, readers_too=True),
    Pass("cse", cse.run, worklist=True, own_touches_done=True),
    Pass("control_flow", control_flow.run, worklist=True),
    Pass("identical_branches", identical_branches.run),  # looks at every top-level Merge every time
    Pass("fusion", fusion.run, last=True),  # once, at the end: the others see plain ops
    Pass("compile_loops", compile_loops.run, default=False, last=True),  # asked for (jit_compile=True)
    Pass("numba_loops", compile_loops.mark_numba, default=False, last=True),  # jit_compile="numba", after those
)
RECORDS: dict[str, Pass] = {p.name: p for p in PASS_LIST}
# name -> run(graph, state) -> rewrites: what the manager calls (tests wrap these)
PASSES: dict[str, Callable] = {p.name: p.run for p in PASS_LIST}
DEFAULT_PASSES: tuple[str, ...] = tuple(p.name for p in PASS_LIST if p.default)


def optimization_enabled(flag: bool | None = None) -> bool:
    """`flag` if given, else the environment's AUTOGRAPH_OPTIMIZE (on unless "0"/"false"/"off")."""
    if flag is not None:
        return bool(flag)
    return os.environ.get("AUTOGRAPH_OPTIMIZE", "1").strip().lower() not in ("0", "false", "off", "no")


def worklists_enabled() -> bool:
    """False when AUTOGRAPH_OPTIMIZE_WORKLIST=0: every run of every pass looks at every op (the
    same rewrites, slower; tests compare the two)."""
    return os.environ.get("AUTOGRAPH_OPTIMIZE_WORKLIST", "1").strip().lower() not in ("0", "false", "off", "no")


def skipped_by_environment() -> tuple[str, ...]:
    raw = os.environ.get("AUTOGRAPH_OPTIMIZE_SKIP", "")
    return tuple(s.strip() for s in raw.split(",") if s.strip())


@dataclass
class PassStats:
    """What one pass did over all rounds."""

    name: str
    removed: int = 0
    added: int = 0
    rewritten: int = 0
    seconds: float = 0.0
    runs: int = 0


@dataclass
class OptimizeReport:
    """The per-pass figures of one `optimize` call and the fetches to run afterwards."""

    fetches: list
    ops_before: int
    ops_after: int
    rounds: int  # the most runs of any one pass
    seconds: float
    passes: list[PassStats] = field(default_factory=list)

    def table(self) -> str:
        """A per-pass table a person can read."""
        lines = [f"{'pass':<18}{'removed':>9}{'added':>7}{'rewritten':>11}{'ms':>9}",
                 "-" * 54]
        for p in self.passes:
            lines.append(f"{p.name:<18}{p.removed:>9}{p.added:>7}{p.rewritten:>11}{p.seconds * 1e3:>9.2f}")
        lines.append("-" * 54)
        lines.append(f"ops {self.ops_before} -> {self.ops_after} in {self.rounds} round(s), "
                     f"{self.seconds * 1e3:.2f} ms")
        return "\n".join(lines)


def optimize(graph: Graph, fetches: Sequence, *, passes: Iterable[str] | None = None, skip: Iterable[str] = (),
             max_rounds: int = 8, validate: bool = False) -> OptimizeReport:
    """Rewrite `graph` in place so that `fetches` (tensors and ops) and every effect (prints,
    asserts, variable updates) stay as they were; return the report, whose `fetches` are
    the tensors to fetch from now on (in the same order).

    Args:
      passes: names of the passes to run, in order (default: DEFAULT_PASSES).
      skip: names of passes to leave out.
      validate: run `graph.validate()` after every pass (tests do).

    Raises GraphError on an unknown pass name.

    Example:
        report = optimize(g, [y], skip=["cse"])
        print(report.table())
    """
    names = list(DEFAULT_PASSES if passes is None else passes)
    skip = set(skip)
    unknown = [n for n in list(names) + list(skip) if n not in PASSES]
    if unknown:
        raise GraphError(f"unknown graph pass(es) {', '.join(map(repr, unknown))}; known: {', '.join(PASSES)}")
    names = [n for n in names if n not in skip]
    if not graph.library:  # no If/While to lower (a v1 graph): its report stays as it was
        names = [n for n in names if n != "lower_functional"]
    # the passes allocate little; a collection of the tracer's garbage in the middle of
    # them would cost more than all of them
    was_enabled = _gc.isenabled()
    _gc.disable()
    try:
        return _run(graph, fetches, names, max_rounds, validate)
    finally:
        if was_enabled:
            _gc.enable()


def _run(graph: Graph, fetches, names: list[str], max_rounds: int, validate: bool) -> OptimizeReport:
    start = time.perf_counter()
    state = PassState(graph, fetches)
    stats = {n: PassStats(n) for n in names}
    before = len(graph)
    # Each pass is idempotent (one run leaves nothing for a second run on the same graph),
    # so a pass runs again only after another pass changed the graph (Graph.version counts
    # every change), and then (if it is a worklist pass) looks only at the ops near what
    # changed since its last run began (state.py: the worklist). Pruning only erases, which
    # gives no other pass anything new to do: it runs once, at the end (a traced graph has
    # few unused ops; the other passes leave the ops they replace unused, and skip unused
    # ops). The last passes run once after that.
    last = [n for n in names if RECORDS[n].last]
    later = [n for n in names if not RECORDS[n].only_erases and not RECORDS[n].last]
    first = [n for n in names if RECORDS[n].only_erases]
    dirty = list(later) or list(first)
    runs = 0
    changed_since = {n: True for n in first}
    use_worklists = worklists_enabled()
    began: dict[str, int] = {}  # pass -> len(state.log) when its last run began
    retry: dict[str, list] = {}  # pass -> the ops its last run left for the next one (state.later)
    while (dirty or last) and runs < max_rounds * len(names) + len(last):
        name = dirty.pop(0) if dirty else last.pop(0)
        runs += 1
        s, p = stats[name], RECORDS[name]
        if p.last:
            _erase_leftovers(state, stats)
        version, created, size = graph.version, graph.checkpoint(), len(graph)
        state.readers_too = p.readers_too
        state.visit = _worklist(state, began[name], retry.get(name, ())) \
            if p.worklist and name in began and use_worklists else None
        began[name] = len(state.log)
        state.begin_run()
        state.retry, state.running = [], name
        t0 = time.perf_counter()
        n = PASSES[name](graph, state)
        s.seconds += time.perf_counter() - t0
        if p.own_touches_done:
            began[name] = len(state.log)
        s.runs += 1
        retry[name], state.visit = state.retry, None
        added = graph.checkpoint() - created  # op ids are never reused
        if added:  # the new ops are changes for the other passes' worklists
            state.touch(*created_since(graph, created))
        s.added += added
        s.removed += size + added - len(graph)
        for owner, k in state.leftover_counts.items():  # pruning erased them for others: theirs
            stats[owner].removed += k
            s.removed -= k
        state.leftover_counts = {}
        s.rewritten += n
        if p.only_erases:
            changed_since[name] = False
        elif not p.last and (graph.version != version or n):
            changed_since = {k: True for k in changed_since}
            i = later.index(name)
            dirty = [p for p in later[i + 1:] + later[:i] if p != name]
        if not dirty:
            dirty = [k for k, v in changed_since.items() if v]
        if validate:
            try:
                graph.validate()
            except GraphError as e:
                raise GraphError(f"the graph is invalid after pass {name!r} (run {runs}): {e}") from e
    _erase_leftovers(state, stats)
    rounds = max((p.runs for p in stats.values()), default=0)
    return OptimizeReport(state.fetches, before, len(graph), rounds, time.perf_counter() - start,
                          list(stats.values()))


def _erase_leftovers(state: PassState, stats: dict) -> None:
    """Erase what passes left unused for the next erase (state.erase_later) if pruning has not
    (it is skipped, or did not run yet): before the passes that run last, and at the end. The
    time and the ops count as the passes' that left them."""
    t0 = time.perf_counter()
    doomed = state.take_leftovers()
    if doomed:
        state.erase(doomed)
    seconds = time.perf_counter() - t0
    for name, k in state.leftover_counts.items():
        stats[name].removed += k
        stats[name].seconds += seconds
        seconds = 0.0
    state.leftover_counts = {}


def _worklist(state: PassState, since: int, retry) -> set:
    """The ops touched since `since` (and, for a readers_too pass, their readers and waiters),
    and the ops in `retry`."""
    visit = set(state.log[since:])
    if state.readers_too:
        near = set()  # (spread, written out: it is asked of every touched op)
        for op in visit:
            for t in op.outputs:
                if t.readers:
                    near.update(t.readers)
            if op.waiters:
                near.update(op.waiters)
        visit |= near
    visit.update(retry)
    return visit
