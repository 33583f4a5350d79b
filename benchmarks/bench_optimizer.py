"""Graph optimizer figures, on every sample (measured in one run):

  - ops before / after the passes;
  - the optimizer's own time against the first call's conversion + trace (the issue's "first
    call's trace time"; must be < 10%): a fresh conversion + trace and then the optimizer on
    that trace, back to back, each in CPU time of the calling thread, 5 times; the ratio is
    the median of the 5 pairs' ratios (both are single-threaded work of milliseconds, which
    another process on the machine slows alike when they run back to back); and against the
    whole first call (wall clock: convert, trace, optimize, run);
  - the steady-call speed-up of the optimized graph over the unoptimized one.

    python benchmarks/bench_optimizer.py            # --quick for fewer repeats
"""
from __future__ import annotations

import contextlib
import io
import os
import statistics
import sys
import time

import autograph
from autograph import transpiler
from samples import available_samples


def _median_calls(fns, args, min_repeats: int, budget: float) -> list[float]:
    """Median time of a call of each of `fns`, calls interleaved (so that a machine that
    gets slower or faster meanwhile affects them alike)."""
    times: list[list[float]] = [[] for _ in fns]
    start = time.perf_counter()
    while len(times[0]) < min_repeats or (time.perf_counter() - start < budget and len(times[0]) < 200):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                fn(*args)
            ts.append(time.perf_counter() - t0)
    return [statistics.median(ts) for ts in times]


def _forget_conversion(sample) -> None:
    transpiler._cache.pop(sample.python_function.__code__, None)
    transpiler._instances.pop(sample.python_function, None)


def measure(sample, quick: bool = False) -> dict:
    args = sample.examples[0]
    off = autograph.function(sample.python_function, optimize=False)
    on = autograph.function(sample.python_function, optimize=True)
    _forget_conversion(sample)  # as on a first call: convert + trace + optimize + run
    first_call = autograph.function(sample.python_function, optimize=True)
    with contextlib.redirect_stdout(io.StringIO()):
        t0 = time.perf_counter()
        first_call(*args)
        first = time.perf_counter() - t0
    traces, opts = [], []  # as on a first call: convert + trace, then optimize that trace (CPU time)
    for _ in range(1 if quick else 5):
        _forget_conversion(sample)
        fresh = autograph.function(sample.python_function, optimize=True)
        t0 = time.thread_time()
        concrete = fresh.get_concrete_function(*args)
        t1 = time.thread_time()
        before = len(concrete.graph)
        concrete.optimize()
        opts.append(time.thread_time() - t1)
        traces.append(t1 - t0)
    trace, opt = statistics.median(traces), statistics.median(opts)
    cost = statistics.median(o / t for o, t in zip(opts, traces))
    t0 = time.perf_counter()
    off.get_concrete_function(*args)
    retrace = time.perf_counter() - t0           # a trace alone (the source is converted already)
    repeats, budget = (3, 0.2) if quick else (7, 1.0)
    with contextlib.redirect_stdout(io.StringIO()):
        on(*args)
        off(*args)
    t_off, t_on = _median_calls([off, on], args, repeats, budget)
    return {"sample": sample.name, "ops_before": before, "ops_after": len(concrete.graph),
            "trace_ms": trace * 1e3, "first_ms": first * 1e3, "optimize_ms": opt * 1e3,
            "cost": cost, "cost_first": opt / first, "retrace_ms": retrace * 1e3, "off_ms": t_off * 1e3, "on_ms": t_on * 1e3, "speedup": t_off / t_on}


def main(quick: bool = False) -> list[dict]:
    load = os.getloadavg()[0]
    rows = [measure(s, quick) for s in available_samples()]
    print("trace ms, opt ms: CPU time of the calling thread, medians of 5 back-to-back pairs (opt/trace: the "
          "median of the pairs' ratios); 1st call: wall clock")
    head = (f"{'sample':<20}{'ops':>12}{'trace ms':>10}{'1st call':>10}{'opt ms':>8}{'opt/trace':>10}{'opt/1st':>8}"
            f"{'retrace ms':>11}{'off ms':>9}{'on ms':>9}{'speed-up':>9}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['sample']:<20}{r['ops_before']:>6} ->{r['ops_after']:>4}{r['trace_ms']:>10.1f}{r['first_ms']:>10.1f}"
              f"{r['optimize_ms']:>8.2f}{r['cost']:>10.1%}{r['cost_first']:>8.1%}{r['retrace_ms']:>11.1f}"
              f"{r['off_ms']:>9.2f}{r['on_ms']:>9.2f}{r['speedup']:>8.2f}x")
    print("-" * len(head))
    total_before = sum(r["ops_before"] for r in rows)
    total_after = sum(r["ops_after"] for r in rows)
    geo = statistics.geometric_mean([r["speedup"] for r in rows])
    print(f"ops {total_before} -> {total_after} ({1 - total_after / total_before:.0%} fewer); optimizer time "
          f"{max(r['cost'] for r in rows):.1%} of the first call's convert + trace at most "
          f"({max(r['cost_first'] for r in rows):.1%} of the whole first call); steady-call speed-up "
          f"geometric mean {geo:.2f}x")
    # the optimizer's few milliseconds and the steady calls' waits for the pool's threads suffer most from
    # other work on the machine: figures taken at a load above the cores' number say little
    print(f"load average {load:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} cores")
    return rows


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
