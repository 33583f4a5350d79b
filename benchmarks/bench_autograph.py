"""AutoGraph figures: the first call of a fresh function (never converted) with three
nested control-flow constructs (convert + trace + run) and the steady-state call, each as a
ratio to calling the plain Python function. The first call is the median of several, each of
a new function, after one to warm the process up (imports, the converters' templates), with
its phases: conversion, tracing, optimizing, and the first run (building the plan, running).

    python benchmarks/bench_autograph.py
"""
from __future__ import annotations

import inspect
import itertools
import linecache
import os
import statistics
import textwrap
import time

import numpy as np

from autograph import function
from autograph.transpiler import convert


def nested(n):
    s = 0
    for i in range(n):            # 1: for over a range
        j = 0
        while j < i:              # 2: while
            if (i + j) % 3 == 0:  # 3: if
                s += j
            else:
                s -= 1
            j += 1
    return s


_fresh = itertools.count(1)


def fresh_nested():
    """A new function with `nested`'s source, never converted before: its own code object
    (a new first line, as code objects that differ only in their file name compare equal,
    and conversions are cached per code object) in a file of its own kept in linecache."""
    k = next(_fresh)
    name = f"<benchmark nested #{k}>"
    source = "\n" * k + textwrap.dedent(inspect.getsource(nested))
    linecache.cache[name] = (len(source), None, source.splitlines(keepends=True), name)
    namespace: dict = {}
    exec(compile(source, name, "exec"), namespace)  # noqa: S102 (our own benchmark's source)
    return namespace["nested"]


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _first_call_phases(n: int) -> dict:
    """One first call of a new function, timed phase by phase (seconds)."""
    fn = fresh_nested()
    t0 = time.perf_counter()
    convert(fn)                                   # conversion (cached for the function's code)
    t1 = time.perf_counter()
    concrete = function(fn).get_concrete_function(np.int64(n))  # tracing
    t2 = time.perf_counter()
    concrete.optimize()                           # the graph optimizer
    t3 = time.perf_counter()
    value = concrete(np.int64(n))                 # the plan, the run
    t4 = time.perf_counter()
    assert value == nested(n)
    return {"convert": t1 - t0, "trace": t2 - t1, "optimize": t3 - t2, "plan and run": t4 - t3, "total": t4 - t0}


def main(n: int = 10, repeats: int = 30, firsts: int = 15) -> dict:
    load_before = os.getloadavg()[0]  # (shared machines: a figure means little without the load beside it)
    python_time = _median_time(lambda: nested(n), 200)
    function(fresh_nested())(np.int64(n))  # (warm-up: the process's first conversion loads what every one uses)
    firsts_s = []
    for _ in range(firsts):
        f = function(fresh_nested())
        t0 = time.perf_counter()
        first = f(np.int64(n))
        firsts_s.append(time.perf_counter() - t0)
        assert first == nested(n)
    first_time = statistics.median(firsts_s)
    phases = [_first_call_phases(n) for _ in range(firsts)]
    phase_s = {k: statistics.median(p[k] for p in phases) for k in phases[0]}
    steady = _median_time(lambda: f(np.int64(n)), repeats)
    graph = f.get_concrete_function(np.int64(n)).graph
    figures = {
        "python_call_s": python_time,
        "first_call_s": first_time,
        "first_call_min_s": min(firsts_s),
        "first_call_phases_s": phase_s,
        "steady_call_s": steady,
        "first_call_ratio": first_time / python_time,
        "steady_call_ratio": steady / python_time,
        "graph_ops": len(graph),
        "load_average": (load_before, os.getloadavg()[0]),
    }
    print(f"function with 3 nested control-flow constructs, n={n} (load average {load_before:.2f} before, "
          f"{figures['load_average'][1]:.2f} after, {os.cpu_count()} cores)")
    print(f"  plain Python call        {python_time * 1e6:10.1f} us")
    print(f"  first call (convert+trace+run) {first_time * 1e3:8.1f} ms  = {figures['first_call_ratio']:9.0f} x Python"
          f"  (median of {firsts} new functions; best {min(firsts_s) * 1e3:.1f} ms)")
    print("    phases (medians, timed apart): " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in phase_s.items()))
    print(f"  steady-state call        {steady * 1e3:10.2f} ms  = {figures['steady_call_ratio']:9.0f} x Python")
    print(f"  graph size               {len(graph):10d} ops")
    return figures


if __name__ == "__main__":
    main()
