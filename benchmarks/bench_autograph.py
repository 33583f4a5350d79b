"""AutoGraph figures: the first call of a fresh function (never converted) with three
nested control-flow constructs (convert + trace + run) and the steady-state call, each as a
ratio to calling the plain Python function.

    python benchmarks/bench_autograph.py
"""
from __future__ import annotations

import inspect
import itertools
import linecache
import statistics
import textwrap
import time

import numpy as np

from autograph import function


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


def main(n: int = 10, repeats: int = 30) -> dict:
    python_time = _median_time(lambda: nested(n), 200)
    f = function(fresh_nested())
    t0 = time.perf_counter()
    first = f(np.int64(n))
    first_time = time.perf_counter() - t0
    assert first == nested(n)
    steady = _median_time(lambda: f(np.int64(n)), repeats)
    graph = f.get_concrete_function(np.int64(n)).graph
    figures = {
        "python_call_s": python_time,
        "first_call_s": first_time,
        "steady_call_s": steady,
        "first_call_ratio": first_time / python_time,
        "steady_call_ratio": steady / python_time,
        "graph_ops": len(graph),
    }
    print(f"function with 3 nested control-flow constructs, n={n}")
    print(f"  plain Python call        {python_time * 1e6:10.1f} us")
    print(f"  first call (convert+trace+run) {first_time * 1e3:8.1f} ms  = {figures['first_call_ratio']:9.0f} x Python")
    print(f"  steady-state call        {steady * 1e3:10.2f} ms  = {figures['steady_call_ratio']:9.0f} x Python")
    print(f"  graph size               {len(graph):10d} ops")
    return figures


if __name__ == "__main__":
    main()
