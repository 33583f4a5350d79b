"""The workloads of issue 10, each timed beside the same program in plain numpy in the same
run (not a test): control-flow-bound ones (collatz, nested_loops), call overhead, the first
call, and numpy-bound ones (rnn_forward, rnn_grad, parallel_branches).

    python benchmarks/bench_workloads.py [--quick] [--only NAME ...] [--repeat N] [--clock cpu]

Each line gives the graph's time, plain numpy's, and their ratio (below 1: the graph is
faster). Times are the best of --repeat runs after a warm-up run, graph and numpy taking
turns, so a shared machine disturbs them less (--clock cpu: in CPU time, less still).
rnn_forward runs on a new session and again in steady state (rnn_forward's docstring),
with BLAS as it is and with BLAS on one thread (needs threadpoolctl); parallel_branches
with BLAS on one thread: there the executor's threads are the parallelism measured.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import graphcore as gc  # noqa: E402
from autograph import function  # noqa: E402
from executor import Session, handlers  # noqa: E402
from executor.numba_loop import numba_available  # noqa: E402


# What the times are measured with: wall-clock time, or (--clock cpu) the CPU time of the
# process, which a loaded machine inflates far less (right where the work runs on the calling
# thread, or BLAS and the executor's pool add their threads' CPU time to what they save).
CLOCK = time.perf_counter


def best_of(fn, repeat: int) -> float:
    """The shortest of `repeat` timed calls, after one warm-up call."""
    return best_of_each([fn], repeat)[0]


def best_of_each(fns, repeat: int) -> list[float]:
    """The shortest of `repeat` timed calls of each function, taking turns (so that a
    machine busy for a while slows them alike), after one warm-up call each."""
    for fn in fns:
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = CLOCK()
            fn()
            best[i] = min(best[i], CLOCK() - t0)
    return best


def _report(name: str, graph_s: float, numpy_s: float, unit: str = "ms", note: str = "") -> dict:
    scale = {"ms": 1e3, "us": 1e6}[unit]
    print(f"  {name:18s} graph {graph_s * scale:9.3f} {unit}   numpy {numpy_s * scale:9.3f} {unit}   "
          f"ratio {graph_s / numpy_s:7.2f}x{('   ' + note) if note else ''}")
    return {"graph_s": graph_s, "numpy_s": numpy_s, "ratio": graph_s / numpy_s}


@contextlib.contextmanager
def blas_threads(n: int | None):
    """BLAS on `n` threads inside the block (needs threadpoolctl; else unchanged)."""
    try:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415
    except ImportError:
        yield False
        return
    with threadpool_limits(limits=n, user_api="blas"):
        yield True


# -- control flow ---------------------------------------------------------------------

# The control-flow workloads start from numpy scalars, so that run as plain Python they
# compute on numpy scalars too ("plain numpy"), as the graph does.

def collatz_total(n):
    """Collatz steps of every k in 1..n: a while in a while with an if/else."""
    total = np.int64(0)
    k = np.int64(1)
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


def nested_loops(n):
    """`for` in `for`: n * n steps."""
    s = np.int64(0)
    for i in range(n):
        for j in range(n):
            s += i * j
    return s


def fib_loop(n):
    """The executor walk-through's loop: three loop variables, two adds per iteration."""
    a, b, i = np.int64(1), np.int64(1), np.int64(1)
    while i < n:
        a, b, i = b, a + b, i + 1
    return a


def _control_flow(name: str, fn, arg, repeat: int) -> dict:
    """The graph interpreted, compiled (jit_compile=True) and, with numba installed,
    compiled with numba (its compile time, the first call's, beside), beside plain numpy."""
    f, fj = function(fn), function(fn, jit_compile=True)
    variants = [f, fj]
    if numba_available():
        fn_numba = function(fn, jit_compile="numba")
        t0 = time.perf_counter()
        fn_numba(arg)
        numba_first = time.perf_counter() - t0
        variants.append(fn_numba)
    assert all(v(arg) == fn(arg) for v in variants), name
    times = best_of_each([(lambda v=v: v(arg)) for v in variants] + [lambda: fn(arg)], repeat)
    graph_s, jit_s, numpy_s = times[0], times[1], times[-1]
    out = _report(name, graph_s, numpy_s)
    jit = _report(name + " (jit)", jit_s, numpy_s, note=f"{graph_s / jit_s:.1f}x faster than interpreted")
    out.update(jit_s=jit_s, jit_ratio=jit["ratio"])
    if len(variants) == 3:
        nb = _report(name + " (numba)", times[2], numpy_s,
                     note=f"{graph_s / times[2]:.0f}x faster than interpreted; first call {numba_first * 1e3:.0f} ms")
        out.update(numba_s=times[2], numba_ratio=nb["ratio"], numba_first_s=numba_first)
    return out


def add_one(x):
    return x + 1


def call_overhead(repeat: int, calls: int) -> dict:
    f = function(add_one)
    x = np.float64(1.5)
    f(x)

    def many(g):
        def run():
            for _ in range(calls):
                g(x)
        return run
    return _report("call (x + 1)", best_of(many(f), repeat) / calls, best_of(many(add_one), repeat) / calls, "us")


def first_call(repeat: int) -> dict:
    """Convert + trace + run of a function with three nested constructs (a fresh one each time)."""
    from benchmarks.bench_autograph import fresh_nested, nested  # noqa: PLC0415

    def once():
        function(fresh_nested())(np.int64(4))   # a function never converted: converts and traces
    return _report("first call", best_of(once, repeat), best_of(lambda: nested(np.int64(4)), repeat),
                   note="(numpy: the plain call)")


# -- numpy-bound ----------------------------------------------------------------------------

def rnn_graph(T: int, H: int, B: int, D: int):
    """h_t = tanh(h_{t-1} W + x_t U), batch-major, as a graphcore while loop."""
    g = gc.Graph()
    with g.as_default():
        W = gc.placeholder(gc.float32, [H, H], name="W")
        U = gc.placeholder(gc.float32, [D, H], name="U")
        h0 = gc.placeholder(gc.float32, [B, H], name="h0")
        xs = gc.placeholder(gc.float32, [T, B, D], name="xs")
        _, h = gc.while_loop(lambda t, h: t < T,
                             lambda t, h: (t + 1, gc.tanh(gc.matmul(h, W) + gc.matmul(xs[t], U))),
                             [gc.constant(np.int64(0)), h0])
    return g, (W, U, h0, xs), h


def rnn_numpy(W, U, h, xs):
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t] @ U)
    return h


def loop_handler_tiers(session) -> str:
    """How many of the loop nodes of the session's plans run on each tier of handler
    (executor/handlers.py: generic, quick, generated; "inlined": run inside the others'
    handlers, none of its own), e.g. "quick 2, inlined 12", and how many loops a loop runner
    runs whole (executor/loop_runner.py: their nodes' handlers then no longer run)."""
    tiers = Counter()
    whole = 0
    for plan in session._plans.values():
        whole += sum(1 for info in plan.frames.values() if info.runner)
        for item in plan.items:
            if item.frame is not plan.root and item.kind in (0, 1, 2, 5):  # (ops, Switch, Merge, NextIteration)
                tiers[getattr(item.fast, "tier", "generic")] += 1
    runners = f"; loops run whole by a loop runner: {whole}" if whole else ""
    return ", ".join(f"{k} {v}" for k, v in sorted(tiers.items())) + runners


def rnn_forward(T: int, H: int, B: int, repeat: int, threads: int | None, blas_one: bool) -> dict:
    """The graph interpreted (as is, and optimized as @function runs it) and compiled, beside
    plain numpy, twice: on a new session (the runs of the timing only: a loop node runs about
    a thousand times in them, so it never reaches its generated handler), then in steady
    state, after a warm-up long enough for the loop's nodes run from the queue to get theirs
    (a training loop runs thousands of steps). numpy is the same program both times, run
    plainly."""
    g, (W, U, h0, xs), h = rnn_graph(T, H, B, H)
    rng = np.random.default_rng(0)
    values = [(rng.normal(size=(H, H)) / np.sqrt(H)).astype(np.float32),
              (rng.normal(size=(H, H)) / np.sqrt(H)).astype(np.float32),
              rng.normal(size=(B, H)).astype(np.float32), rng.normal(size=(T, B, H)).astype(np.float32)]
    feeds = dict(zip((W, U, h0, xs), values))
    s = Session(g, num_threads=threads)
    so = Session(g, num_threads=threads, optimize=True)  # as @function runs it: matmuls, add and tanh fused
    sj = Session(g, num_threads=threads, jit_compile=True)  # the loop as one CompiledLoop op
    with blas_threads(1 if blas_one else None) as limited:
        for session in (s, so, sj):
            np.testing.assert_allclose(session.run(h, feeds), rnn_numpy(*values), rtol=1e-4, atol=1e-5)
        t_graph, t_opt, t_jit, t_numpy = best_of_each([lambda: s.run(h, feeds), lambda: so.run(h, feeds),
                                                       lambda: sj.run(h, feeds), lambda: rnn_numpy(*values)], repeat)
        tiers = loop_handler_tiers(s)
        # steady state: every loop node past the runs after which it gets its generated handler (if run
        # from the queue)
        warm = -(-handlers.COMPILE_AFTER // T) + 1
        for _ in range(warm):
            s.run(h, feeds)
            so.run(h, feeds)
        t_graph_ss, t_opt_ss, t_numpy_ss = best_of_each([lambda: s.run(h, feeds), lambda: so.run(h, feeds),
                                                         lambda: rnn_numpy(*values)], repeat)
    blas_note = ("BLAS on 1 thread" + ("" if limited else ": not set, no threadpoolctl")) if blas_one else "BLAS as is"
    out = _report("rnn_forward", t_graph, t_numpy, note=f"(T={T}, hidden {H}, batch {B}, float32; {blas_note})")
    print(f"  {'':18s} a new session, {repeat + 2} runs: loop nodes' handlers {tiers}")
    opt = _report("rnn_forward (opt)", t_opt, t_numpy, note="(optimized, as @function runs it)")
    jit = _report("rnn_forward (jit)", t_jit, t_numpy)
    steady = _report("  steady state", t_graph_ss, t_numpy_ss, note=f"(handlers {loop_handler_tiers(s)})")
    steady_opt = _report("  steady (opt)", t_opt_ss, t_numpy_ss)
    print(f"  {'':18s} steady state: after {warm} more runs ({warm * T} loop steps), past the "
          f"{handlers.COMPILE_AFTER} runs after which a loop node gets its generated handler, as a training loop "
          "of thousands of steps does")
    out.update(opt_s=t_opt, opt_ratio=opt["ratio"], jit_s=t_jit, jit_ratio=jit["ratio"], steady_s=t_graph_ss,
               steady_numpy_s=t_numpy_ss, steady_ratio=steady["ratio"], steady_opt_s=t_opt_ss,
               steady_opt_ratio=steady_opt["ratio"], warmup_runs=warm)
    return out


def rnn_grad_numpy(W, U, h, xs):
    """d sum(h_T) / d(W, U) by hand: backpropagation through time, the hidden states kept."""
    hs = [h]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(hs[-1] @ W + xs[t] @ U))
    dh, dW, dU = np.ones_like(h), np.zeros_like(W), np.zeros_like(U)
    for t in reversed(range(xs.shape[0])):
        dz = dh * (1 - hs[t + 1] * hs[t + 1])
        dW += hs[t].T @ dz
        dU += xs[t].T @ dz
        dh = dz @ W.T
    return dW, dU


def rnn_grad(T: int, H: int, B: int, repeat: int, threads: int | None) -> dict:
    """rnn_graph's loop and its gradient (gc.gradients: a forward loop pushing the values the
    backward loop pops), optimized as @function runs it and compiled (jit_compile=True: both
    loops one CompiledLoop op each), beside the same gradient written out in numpy; BLAS as is."""
    g, (W, U, h0, xs), h = rnn_graph(T, H, B, H)
    with g.as_default():
        grads = gc.gradients(gc.reduce_sum(h), [W, U])
    rng = np.random.default_rng(0)
    values = [(rng.normal(size=(H, H)) / np.sqrt(H)).astype(np.float32),
              (rng.normal(size=(H, H)) / np.sqrt(H)).astype(np.float32),
              rng.normal(size=(B, H)).astype(np.float32), rng.normal(size=(T, B, H)).astype(np.float32)]
    feeds = dict(zip((W, U, h0, xs), values))
    so = Session(g, num_threads=threads, optimize=True)
    sj = Session(g, num_threads=threads, jit_compile=True)
    want = rnn_grad_numpy(*values)
    for session in (so, sj):
        for got, w in zip(session.run(grads, feeds), want):
            np.testing.assert_allclose(got, w, rtol=1e-3, atol=1e-3)
    compiled = {p.name: p.rewritten for p in sj.last_optimize_report.passes}["compile_loops"]
    t_opt, t_jit, t_numpy = best_of_each([lambda: so.run(grads, feeds), lambda: sj.run(grads, feeds),
                                          lambda: rnn_grad_numpy(*values)], repeat)
    out = _report("rnn_grad (opt)", t_opt, t_numpy, note=f"(T={T}, hidden {H}, batch {B}, float32; BLAS as is)")
    jit = _report("rnn_grad (jit)", t_jit, t_numpy, note=f"({compiled} compiled loops: forward and backward)")
    out.update(jit_s=t_jit, jit_ratio=jit["ratio"], compiled_loops=compiled)
    return out


def branches_graph(n: int, depth: int):
    """Two independent chains of `depth` matmuls (n x n, float64), summed at the end."""
    g = gc.Graph()
    with g.as_default():
        a = gc.placeholder(gc.float64, [n, n], name="a")
        b = gc.placeholder(gc.float64, [n, n], name="b")
        wa = gc.placeholder(gc.float64, [n, n], name="wa")
        wb = gc.placeholder(gc.float64, [n, n], name="wb")
        x, y = a, b
        for _ in range(depth):
            x = gc.matmul(x, wa)
            y = gc.matmul(y, wb)
        out = gc.reduce_sum(x) + gc.reduce_sum(y)
    return g, (a, b, wa, wb), out


def branches_numpy(a, b, wa, wb, depth: int):
    x, y = a, b
    for _ in range(depth):
        x = x @ wa
        y = y @ wb
    return x.sum() + y.sum()


def two_numpy_threads(n: int, depth: int, repeat: int) -> float:
    """The same two chains on two plain Python threads, over one after the other: the best
    any executor can do on this machine now (0.5 with two free cores)."""
    import threading  # noqa: PLC0415

    rng = np.random.default_rng(2)
    a, w = rng.normal(size=(n, n)), rng.normal(size=(n, n)) / np.sqrt(n)

    def chain():
        x = a
        for _ in range(depth):
            x = x @ w

    def both():
        ts = [threading.Thread(target=chain) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    t_both, t_one = best_of_each([both, chain], repeat)
    return t_both / (2 * t_one)


def parallel_branches(n: int, depth: int, repeat: int, threads: int | None) -> dict:
    g, names, out = branches_graph(n, depth)
    rng = np.random.default_rng(1)
    values = [rng.normal(size=(n, n)), rng.normal(size=(n, n)),
              rng.normal(size=(n, n)) / np.sqrt(n), rng.normal(size=(n, n)) / np.sqrt(n)]
    feeds = dict(zip(names, values))
    s = Session(g, num_threads=threads)
    with blas_threads(1) as limited:
        assert np.isclose(s.run(out, feeds), branches_numpy(*values, depth))
        t_graph, t_numpy = best_of_each([lambda: s.run(out, feeds), lambda: branches_numpy(*values, depth)], repeat)
        limit = two_numpy_threads(n, depth, repeat)
    blas_note = "BLAS on 1 thread" + ("" if limited else ": not set, no threadpoolctl")
    note = f"(2 chains of {depth} matmuls {n}x{n}; {blas_note}"
    figures = _report("parallel_branches", t_graph, t_numpy, note=note + f"; {os.cpu_count()} cores)")
    print(f"  {'':18s} two plain Python threads running the chains: {limit:.2f}x (the limit on this machine now)")
    figures["two_threads_limit"] = limit
    return figures


WORKLOADS = ("fib_loop", "collatz", "nested_loops", "call", "first_call", "rnn_forward", "rnn_grad",
             "parallel_branches")


def main(argv=None) -> dict:
    np.seterr(over="ignore")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat (a smoke run)")
    ap.add_argument("--only", nargs="*", choices=WORKLOADS, default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None, help="the Session's num_threads (default: cores)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time by wall clock (default) or by the process's CPU time (steadier on a loaded machine)")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    quick, repeat = args.quick, (1 if args.quick else args.repeat)
    todo = args.only or WORKLOADS
    print(f"workloads beside plain numpy, best of {repeat} ({os.cpu_count()} cores; {args.clock} time; "
          f"load average {os.getloadavg()[0]:.1f})")
    figures = {}
    if "fib_loop" in todo:
        n = 10 if quick else 10_000
        figures["fib_loop"] = _control_flow("fib_loop", fib_loop, np.int64(n), repeat)
        for key in ("graph_s", "jit_s", "numpy_s"):
            print(f"    fib_loop {key[:-2]:>6}: {figures['fib_loop'][key] / n * 1e6:.3f} us per iteration")
    if "collatz" in todo:
        figures["collatz"] = _control_flow("collatz", collatz_total, np.int64(5 if quick else 100), repeat)
    if "nested_loops" in todo:
        figures["nested_loops"] = _control_flow("nested_loops", nested_loops, np.int64(4 if quick else 100), repeat)
    if "call" in todo:
        figures["call"] = call_overhead(repeat, 10 if quick else 2000)
    if "first_call" in todo:
        figures["first_call"] = first_call(repeat)
    if "rnn_forward" in todo:
        size = (5, 16, 4) if quick else (100, 256, 32)
        figures["rnn_forward"] = rnn_forward(*size, repeat, args.threads, blas_one=False)
        figures["rnn_forward_blas1"] = rnn_forward(*size, repeat, args.threads, blas_one=True)
    if "rnn_grad" in todo:
        figures["rnn_grad"] = rnn_grad(*((5, 16, 4) if quick else (100, 256, 32)), repeat, args.threads)
    if "parallel_branches" in todo:
        figures["parallel_branches"] = parallel_branches(*((32, 2) if quick else (512, 8)), repeat, args.threads)
    return figures


if __name__ == "__main__":
    main()
