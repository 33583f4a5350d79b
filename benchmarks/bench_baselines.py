"""This project beside TensorFlow's `tf.function` and JAX's `jax.jit` on the same programs,
measured in one run (not a test; TensorFlow and JAX are optional: `pip install -e '.[bench]'`,
a system that is not installed is left out of the table):

    python benchmarks/bench_baselines.py [--quick]

Each row is one workload; each column the best of a few samples after a warm-up (so compile
time is left out), as a ratio to the same program in plain numpy; a sample is as many calls
as plain numpy makes in about 2 ms, so microsecond calls are timed in a batch. Results are checked to agree before anything is timed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from autograph import function  # noqa: E402
from executor.numba_loop import numba_available  # noqa: E402
from benchmarks.bench_workloads import best_of_each, collatz_total, fib_loop  # noqa: E402


def add_one(x):
    return x + 1


def rnn_numpy(h, xs, w, u):
    for t in range(xs.shape[0]):
        h = np.tanh(h @ w + xs[t] @ u)
    return h


def rnn_graph(h, xs, w, u):
    t = 0
    while t < xs.shape[0]:
        h = np.tanh(h @ w + xs[t] @ u)
        t += 1
    return h


def _tensorflow():
    try:
        import tensorflow as tf  # noqa: PLC0415
    except ImportError:
        return None

    @tf.function
    def fib(n):
        a, b, i = tf.constant(1, tf.int64), tf.constant(1, tf.int64), tf.constant(1, tf.int64)
        while i < n:
            a, b, i = b, a + b, i + 1
        return a

    @tf.function
    def collatz(n):
        total = tf.constant(0, tf.int64)
        k = tf.constant(1, tf.int64)
        while k <= n:
            m = k
            while m != 1:
                if m % 2 == 0:
                    m = m // 2
                else:
                    m = 3 * m + 1
                total += 1
            k += 1
        return total

    @tf.function
    def call(x):
        return x + 1

    @tf.function
    def rnn(h, xs, w, u):
        for t in tf.range(tf.shape(xs)[0]):
            h = tf.tanh(h @ w + xs[t] @ u)
        return h

    return {"fib_loop": lambda n: fib(tf.constant(n)).numpy(),
            "collatz": lambda n: collatz(tf.constant(n)).numpy(),
            "call (x + 1)": lambda x: call(tf.constant(x)).numpy(),
            "rnn_forward": lambda *a: rnn(*map(tf.constant, a)).numpy()}


def _jax():
    try:
        import jax  # noqa: PLC0415
        import jax.numpy as jnp  # noqa: PLC0415
        from jax import lax  # noqa: PLC0415
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    @jax.jit
    def fib(n):
        return lax.while_loop(lambda s: s[2] < n, lambda s: (s[1], s[0] + s[1], s[2] + 1),
                              (jnp.int64(1), jnp.int64(1), jnp.int64(1)))[0]

    @jax.jit
    def collatz(n):
        def steps(k):
            def body(s):
                m, c = s
                return lax.cond(m % 2 == 0, lambda m: m // 2, lambda m: 3 * m + 1, m), c + 1
            return lax.while_loop(lambda s: s[0] != 1, body, (k, jnp.int64(0)))[1]
        return lax.while_loop(lambda s: s[0] <= n, lambda s: (s[0] + 1, s[1] + steps(s[0])),
                              (jnp.int64(1), jnp.int64(0)))[1]

    @jax.jit
    def call(x):
        return x + 1

    @jax.jit
    def rnn(h, xs, w, u):
        return lax.scan(lambda h, x: (jnp.tanh(h @ w + x @ u), None), h, xs)[0]

    return {"fib_loop": lambda n: np.asarray(fib(jnp.int64(n))),
            "collatz": lambda n: np.asarray(collatz(jnp.int64(n))),
            "call (x + 1)": lambda x: np.asarray(call(x)),
            "rnn_forward": lambda *a: np.asarray(rnn(*a))}


def workloads(quick: bool) -> dict:
    rng = np.random.default_rng(0)
    T, H, B = (5, 16, 4) if quick else (100, 256, 32)
    rnn_args = tuple(a.astype(np.float32) for a in (rng.normal(size=(B, H)) * 0.1, rng.normal(size=(T, B, H)) * 0.1,
                                                     rng.normal(size=(H, H)) * 0.05, rng.normal(size=(H, H)) * 0.05))
    return {"fib_loop": (fib_loop, fib_loop, (np.int64(10 if quick else 10_000),)),
            "collatz": (collatz_total, collatz_total, (np.int64(5 if quick else 100),)),
            "call (x + 1)": (add_one, add_one, (np.float64(1.5),)),
            "rnn_forward": (rnn_numpy, rnn_graph, rnn_args)}


def _agree(a, b) -> bool:
    return np.allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=1e-4, atol=1e-5)


def main(argv=None) -> dict:
    np.seterr(over="ignore")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat (a smoke run)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    repeat = 1 if args.quick else args.repeat
    systems = {"TensorFlow": _tensorflow(), "JAX": _jax()}
    missing = [name for name, s in systems.items() if s is None]
    systems = {name: s for name, s in systems.items() if s is not None}
    modes = {"graph": False, "graph jit": True}
    if numba_available():
        modes["graph numba"] = "numba"
    columns = [*modes, *systems]
    print(f"time as a ratio to plain numpy, best of {repeat} after a warm-up ({os.cpu_count()} cores)"
          + (f"; not installed: {', '.join(missing)}" if missing else ""))
    print(f"{'workload':16s}{'numpy':>12s}" + "".join(f"{c:>12s}" for c in columns))
    figures, first_calls = {}, {}
    for name, (plain, graph_fn, fargs) in workloads(args.quick).items():
        runs = {label: function(graph_fn, jit_compile=mode) for label, mode in modes.items()}
        runs.update({s: impl[name] for s, impl in systems.items()})
        expected = plain(*fargs)
        for label, fn in runs.items():
            t0 = time.perf_counter()
            got = fn(*fargs)
            first_calls.setdefault(name, {})[label] = time.perf_counter() - t0
            if not _agree(got, expected):
                raise AssertionError(f"{name}: {label} gave {got!r}, numpy {expected!r}")
        t0 = time.perf_counter()
        plain(*fargs)
        calls = max(1, min(2000, int(2e-3 / max(time.perf_counter() - t0, 1e-7))))  # a sample lasts ~2 ms

        def batch(fn):
            def run():
                for _ in range(calls):
                    fn(*fargs)
            return run
        fns = [batch(plain)] + [batch(fn) for fn in runs.values()]
        times = [t / calls for t in best_of_each(fns, repeat)]
        figures[name] = dict(zip(["numpy", *runs], times))
        unit, scale = ("us", 1e6) if times[0] < 1e-3 else ("ms", 1e3)
        print(f"{name:16s}{times[0] * scale:>9.2f} {unit}" + "".join(f"{t / times[0]:>11.2f}x" for t in times[1:]))
    print("first call in ms (convert/trace, compile, run):")
    for name, firsts in first_calls.items():
        print(f"{name:16s}{'':12s}" + "".join(f"{firsts[c] * 1e3:>11.1f} " for c in columns))
    figures["first_call_s"] = first_calls
    return figures


if __name__ == "__main__":
    main()
