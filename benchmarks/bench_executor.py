"""Executor cost per loop iteration on the seed's Fibonacci loop (not a test).

    python benchmarks/bench_executor.py [--iterations 10000]

Prints microseconds per iteration for num_threads=1 and the default, and the ratio
to a plain Python loop doing the same numpy scalar arithmetic."""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import graphcore as gc  # noqa: E402
from executor import Session  # noqa: E402


def fib_graph(n: int):
    g = gc.Graph()
    with g.as_default():
        limit = gc.placeholder(gc.int64, [], name="n")
        out = gc.while_loop(lambda a, b, i: i < limit, lambda a, b, i: (b, a + b, i + 1),
                            [np.float64(1), np.float64(1), np.int64(1)])
    return g, limit, out


def plain(n: int):
    a, b, i = np.float64(1), np.float64(1), np.int64(1)
    while i < n:
        a, b, i = b, a + b, i + 1
    return a, b, i


def best_of(fn, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> None:
    np.seterr(over="ignore")
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    n = args.iterations
    g, limit, out = fib_graph(n)
    expect = plain(n)
    t_plain = best_of(lambda: plain(n), args.repeat)
    print(f"Fibonacci while_loop, {n} iterations (samples/fibonacci.py's loop: a, b, i = b, a + b, i + 1)")
    print(f"  plain Python loop on numpy scalars: {t_plain / n * 1e6:8.3f} us/iteration")
    for label, threads in (("num_threads=1", 1), (f"default (num_threads={os.cpu_count()})", None)):
        s = Session(g, num_threads=threads)
        got = s.run(out, {limit: n})
        assert got[2] == expect[2] and np.isclose(got[1], expect[1]), (got, expect)
        t = best_of(lambda: s.run(out, {limit: n}), args.repeat)
        print(f"  executor, {label:24s}: {t / n * 1e6:8.3f} us/iteration  ({t / t_plain:6.1f}x plain Python)")
        s.close()


if __name__ == "__main__":
    main()
