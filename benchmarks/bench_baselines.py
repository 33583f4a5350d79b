"""This project beside TensorFlow's `tf.function` and JAX's `jax.jit` on the same programs,
measured in one run (not a test; TensorFlow and JAX are optional: `pip install -e '.[bench]'`,
a system that is not installed shows '-' in its column):

    python benchmarks/bench_baselines.py [--quick] [--only NAME ...] [--repeat N] [--clock cpu]

The workloads of issue 10: fib_loop, collatz (a while in a while with an if/else),
nested_loops (`for` in `for`), call overhead (`x + 1`), rnn_forward and rnn_grad (T=100,
hidden 256, batch 32, float32: the forward loop, a graph loop over xs, and the gradient of
its sum with respect to both weight matrices), parallel_branches (two chains of 8 matmuls 512x512, numpy's BLAS on
one thread) and the first call of a function with three nested constructs (`nested`).
Each row is one workload; each column the best of a few samples after a warm-up (so compile
time is left out), as a ratio to the same program in plain numpy; a sample is as many calls
as plain numpy makes in about 2 ms, so microsecond calls are timed in a batch. Results are
checked to agree before anything is timed. This project runs every workload through
`@function`: interpreted (`graph`, default options), compiled (`graph jit`, jit_compile=True)
and with numba (`graph numba`, jit_compile="numba"; '-' without numba). The call row's
numpy figure is the plain Python call (its ratio: the call overhead), and its times per call
in microseconds follow the table. The first-call row is the best of a few first calls, each of
a function never converted before (benchmarks.bench_autograph.fresh_nested: conversion,
tracing, optimizing, compiling and the run), in milliseconds.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from autograph import function, grad  # noqa: E402
from executor.numba_loop import numba_available  # noqa: E402
from benchmarks.bench_autograph import fresh_nested, nested  # noqa: E402
from benchmarks import bench_workloads  # noqa: E402
from benchmarks.bench_workloads import best_of_each, blas_threads, collatz_total, fib_loop, nested_loops  # noqa: E402

DEPTH = 8  # matmuls per chain in parallel_branches


def add_one(x):
    return x + 1


def rnn_numpy(h, xs, w, u):
    for t in range(xs.shape[0]):
        h = np.tanh(h @ w + xs[t] @ u)
    return h


def rnn_graph(h, xs, w, u):
    """The loop over xs's rows: a graph loop (a `for` over a tensor), not unrolled while
    tracing as a loop to a static bound is; under jit_compile it is one compiled loop, and
    rnn_grad's forward and backward loops are two."""
    for x in xs:
        h = np.tanh(h @ w + x @ u)
    return h


def rnn_loss(h, xs, w, u):
    return np.sum(rnn_graph(h, xs, w, u))


def rnn_grad_graph(h, xs, w, u):
    """d sum(h_T) / d(w, u), by autograph.grad through the converted loop."""
    return grad(rnn_loss, argnums=(2, 3))(h, xs, w, u)


def rnn_grad_numpy(h, xs, w, u):
    """The same gradient written out by hand (bench_workloads': backpropagation through time)."""
    return bench_workloads.rnn_grad_numpy(w, u, h, xs)


def branches_with(total):
    """Two independent chains of matmuls, each summed by `total` (np.sum, tf.reduce_sum,
    jnp.sum): an executor can run the chains at once."""
    def branches(a, b, wa, wb):
        x, y = a, b
        for _ in range(DEPTH):
            x = x @ wa
            y = y @ wb
        return total(x) + total(y)
    return branches


branches = branches_with(np.sum)


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
    def nested_loops_tf(n):
        s = tf.constant(0, tf.int64)
        for i in tf.range(n):
            for j in tf.range(n):
                s += i * j
        return s

    def rnn_plain(h, xs, w, u):
        for t in tf.range(tf.shape(xs)[0]):
            h = tf.tanh(h @ w + xs[t] @ u)
        return h

    @tf.function
    def rnn_grad(h, xs, w, u):
        with tf.GradientTape() as tape:
            tape.watch([w, u])
            loss = tf.reduce_sum(rnn_plain(h, xs, w, u))
        return tape.gradient(loss, [w, u])

    def nested_tf(n):
        s = tf.constant(0, tf.int64)
        for i in tf.range(n):
            j = tf.constant(0, tf.int64)
            while j < i:
                if (i + j) % 3 == 0:
                    s += j
                else:
                    s -= 1
                j += 1
        return s

    rnn, branches_tf = tf.function(rnn_plain), tf.function(branches_with(tf.reduce_sum))
    return {"fib_loop": lambda n: fib(tf.constant(n)).numpy(),
            "collatz": lambda n: collatz(tf.constant(n)).numpy(),
            "nested_loops": lambda n: nested_loops_tf(tf.constant(n)).numpy(),
            "call (x + 1)": lambda x: call(tf.constant(x)).numpy(),
            "rnn_forward": lambda *a: rnn(*map(tf.constant, a)).numpy(),
            "rnn_grad": lambda *a: [g.numpy() for g in rnn_grad(*map(tf.constant, a))],
            "parallel_branches": lambda *a: branches_tf(*map(tf.constant, a)).numpy(),
            "first call": lambda n: tf.function(nested_tf)(tf.constant(n, tf.int64)).numpy()}


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
    def nested_loops_jax(n):
        return lax.fori_loop(jnp.int64(0), n, lambda i, s: lax.fori_loop(jnp.int64(0), n, lambda j, s: s + i * j, s),
                             jnp.int64(0))

    def rnn_plain(h, xs, w, u):
        return lax.scan(lambda h, x: (jnp.tanh(h @ w + x @ u), None), h, xs)[0]

    rnn = jax.jit(rnn_plain)
    rnn_grad = jax.jit(jax.grad(lambda *a: jnp.sum(rnn_plain(*a)), argnums=(2, 3)))
    branches_jax = jax.jit(branches_with(jnp.sum))

    def nested_jax(n):
        def outer(i, s):
            def body(js):
                j, s = js
                return j + 1, lax.cond((i + j) % 3 == 0, lambda s: s + j, lambda s: s - 1, s)
            return lax.while_loop(lambda js: js[0] < i, body, (jnp.int64(0), s))[1]
        return lax.fori_loop(jnp.int64(0), n, outer, jnp.int64(0))

    return {"fib_loop": lambda n: np.asarray(fib(jnp.int64(n))),
            "collatz": lambda n: np.asarray(collatz(jnp.int64(n))),
            "nested_loops": lambda n: np.asarray(nested_loops_jax(jnp.int64(n))),
            "call (x + 1)": lambda x: np.asarray(call(x)),
            "rnn_forward": lambda *a: np.asarray(rnn(*a)),
            "rnn_grad": lambda *a: [np.asarray(g) for g in rnn_grad(*a)],
            "parallel_branches": lambda *a: np.asarray(branches_jax(*a)),
            "first call": lambda n: np.asarray(jax.jit(lambda n: nested_jax(n))(jnp.int64(n)))}


def _machine() -> str:
    """When and where: the UTC date, the CPU model, cores, Python, numpy and BLAS threads."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    blas = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or "default"
    return (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {model}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, numpy {np.__version__}, BLAS threads {blas}")


def _function(fn, jit_compile):
    """`@function` with its default options (jit_compile None), else with that jit_compile."""
    return function(fn) if jit_compile is None else function(fn, jit_compile=jit_compile)


def workloads(quick: bool) -> dict:
    """name -> (plain numpy program, the program this project converts, arguments, BLAS threads)."""
    rng = np.random.default_rng(0)
    T, H, B = (5, 16, 4) if quick else (100, 256, 32)
    rnn_args = tuple(a.astype(np.float32) for a in (rng.normal(size=(B, H)) * 0.1, rng.normal(size=(T, B, H)) * 0.1,
                                                     rng.normal(size=(H, H)) * 0.05, rng.normal(size=(H, H)) * 0.05))
    n = 32 if quick else 512
    branch_args = (rng.normal(size=(n, n)), rng.normal(size=(n, n)),
                   rng.normal(size=(n, n)) / np.sqrt(n), rng.normal(size=(n, n)) / np.sqrt(n))
    return {"fib_loop": (fib_loop, fib_loop, (np.int64(10 if quick else 10_000),), None),
            "collatz": (collatz_total, collatz_total, (np.int64(5 if quick else 100),), None),
            "nested_loops": (nested_loops, nested_loops, (np.int64(4 if quick else 100),), None),
            "call (x + 1)": (add_one, add_one, (np.float64(1.5),), None),
            "rnn_forward": (rnn_numpy, rnn_graph, rnn_args, None),
            "rnn_grad": (rnn_grad_numpy, rnn_grad_graph, rnn_args, None),
            "parallel_branches": (branches, branches, branch_args, 1)}


def _flat(value) -> list:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [np.asarray(value, dtype=np.float64)]


def _agree(a, b) -> bool:
    fa, fb = _flat(a), _flat(b)
    return len(fa) == len(fb) and all(x.shape == y.shape and np.allclose(x, y, rtol=1e-3, atol=1e-4)
                                      for x, y in zip(fa, fb))


def _first_call(fresh, repeat: int) -> float:
    """The best of `repeat` first calls, each of a function made anew (convert/trace, compile, run)."""
    best = float("inf")
    clock = bench_workloads.CLOCK
    for _ in range(repeat):
        t0 = clock()
        fresh()
        best = min(best, clock() - t0)
    return best


def main(argv=None) -> dict:
    np.seterr(over="ignore")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat (a smoke run)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", nargs="*", default=None, help="workloads by name (default: all)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall-clock time, or the process's CPU time (less disturbed on a shared machine; all "
                         "threads counted, so parallel_branches shows work, not elapsed time)")
    args = ap.parse_args(argv)
    bench_workloads.CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    clock = bench_workloads.CLOCK
    repeat = 1 if args.quick else args.repeat
    systems = {"TensorFlow": _tensorflow(), "JAX": _jax()}
    missing = [name for name, s in systems.items() if s is None]
    systems = {name: s for name, s in systems.items() if s is not None}
    modes = {"graph": None, "graph jit": True}  # (None: @function's default options)
    if numba_available():
        modes["graph numba"] = "numba"
    else:
        missing.append("numba")
    columns = ["graph", "graph jit", "graph numba", "TensorFlow", "JAX"]  # ('-' for one not installed)
    todo = workloads(args.quick)
    if args.only:
        unknown = sorted(set(args.only) - set(todo) - {"first call"})
        if unknown:
            ap.error(f"no workload named {', '.join(unknown)}; choose from {', '.join([*todo, 'first call'])}")
        todo = {k: v for k, v in todo.items() if k in args.only}
    print(f"{_machine()}\n{'CPU' if args.clock == 'cpu' else 'wall-clock'} time as a ratio to plain numpy, "
          f"best of {repeat} after a warm-up"
          + (f"; not installed: {', '.join(missing)}" if missing else ""))
    print(f"{'workload':18s}{'numpy':>12s}" + "".join(f"{c:>12s}" for c in columns))
    figures, first_calls = {}, {}
    for name, (plain, graph_fn, fargs, blas) in todo.items():
        runs = {label: _function(graph_fn, mode) for label, mode in modes.items()}
        runs.update({s: impl[name] for s, impl in systems.items() if name in impl})
        with blas_threads(blas):
            expected = plain(*fargs)
            for label, fn in runs.items():
                t0 = clock()
                got = fn(*fargs)
                first_calls.setdefault(name, {})[label] = clock() - t0
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
        cells = {label: f"{t / times[0]:>11.2f}x" for label, t in zip(runs, times[1:])}
        print(f"{name:18s}{times[0] * scale:>9.2f} {unit}" + "".join(cells.get(c, f"{'-':>12s}") for c in columns))
    if not args.only or "first call" in args.only:
        n = np.int64(4)
        fresh = {label: (lambda m=mode: _function(fresh_nested(), m)(n)) for label, mode in modes.items()}
        fresh.update({s: (lambda impl=impl: impl["first call"](4)) for s, impl in systems.items()})
        for label, f in fresh.items():
            if not _agree(f(), nested(4)):
                raise AssertionError(f"first call: {label} disagrees with plain Python")
        first_calls["first call"] = {label: _first_call(f, max(repeat, 3)) for label, f in fresh.items()}
        firsts = first_calls["first call"]
        print(f"{'first call':18s}{'':12s}" + "".join(f"{firsts[c] * 1e3:>9.1f} ms" if c in firsts else f"{'-':>12s}"
                                                     for c in columns) + "   (3 nested constructs, best of fresh)")
    if "call (x + 1)" in figures:
        call = figures["call (x + 1)"]
        print(f"{'call (x + 1), us':18s}{call['numpy'] * 1e6:>9.2f} us" + "".join(
            f"{call[c] * 1e6:>9.2f} us" if c in call else f"{'-':>12s}" for c in columns)
            + "   (numpy: the plain Python call)")
    print("each workload's first call in ms (convert/trace, compile, run):")
    for name, firsts in first_calls.items():
        if name != "first call":
            print(f"{name:18s}{'':12s}" + "".join(f"{firsts[c] * 1e3:>11.1f} " if c in firsts else f"{'-':>12s}"
                                                  for c in columns))
    figures["first_call_s"] = first_calls
    return figures


if __name__ == "__main__":
    main()
