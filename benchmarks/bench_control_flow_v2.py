"""Control Flow v2: If/While run directly (Session(functional="direct")) against the same
graph lowered to the v1 primitives and run by the frame executor (the default), and
against the graph v1 builds. Not a test: `python benchmarks/bench_control_flow_v2.py`.

Workloads of bench_workloads: fib_loop, collatz, nested_loops (control-flow bound: many
cheap iterations), rnn_forward and rnn_grad (numpy bound: few iterations of matmuls)."""
from __future__ import annotations

import sys
import time

import numpy as np

import graphcore as gc
from autograph import function
from executor import Session

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_workloads import collatz_total, fib_loop, nested_loops  # noqa: E402


def best(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _traced(fn, arg, v2: bool):
    cf = function(fn, control_flow="v2" if v2 else "v1", optimize=False).get_concrete_function(arg)
    return cf.graph, cf._all_fetches(), {cf.inputs[0]: arg}


def _rnn(T: int, H: int, B: int, v2: bool, grad: bool):
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2(v2):
        W = gc.placeholder(gc.float64, [H, H], name="W")
        xs = gc.placeholder(gc.float64, [T, B, H], name="xs")
        h0 = gc.zeros([B, H], dtype=gc.float64)
        _, h = gc.while_loop(lambda t, h: t < T, lambda t, h: (t + 1, gc.tanh(gc.matmul(h, W) + xs[t])),
                             [gc.constant(np.int64(0)), h0])
        out = [gc.gradients(gc.reduce_sum(h), [W])[0]] if grad else [h]
    rng = np.random.default_rng(0)
    return g, out, {W: rng.normal(size=(H, H)) * 0.1, xs: rng.normal(size=(T, B, H))}


def main(repeat: int = 20) -> dict:
    cases = {
        "fib_loop": lambda v2: _traced(fib_loop, np.int64(300), v2),
        "collatz": lambda v2: _traced(collatz_total, np.int64(12), v2),
        "nested_loops": lambda v2: _traced(nested_loops, np.int64(15), v2),
        "rnn_forward": lambda v2: _rnn(40, 64, 16, v2, grad=False),
        "rnn_grad": lambda v2: _rnn(40, 64, 16, v2, grad=True),
    }
    figures = {}
    print(f"{'workload':14s} {'v1 frames':>11s} {'v2 lowered':>11s} {'v2 direct':>11s}  direct/lowered")
    for name, make in cases.items():
        g1, f1, feeds1 = make(False)
        g2, f2, feeds2 = make(True)
        # (all on one thread: a Session with a worker pool starts its threads when made, which
        # slowed the timings right after it several times over)
        s1, lowered, direct = Session(g1, num_threads=1), Session(g2, num_threads=1), \
            Session(g2, functional="direct", num_threads=1)
        a, b, c = s1.run(f1, feeds1), lowered.run(f2, feeds2), direct.run(f2, feeds2)
        for x, y, z in zip(a, b, c):
            np.testing.assert_allclose(np.asarray(y, dtype=float), np.asarray(x, dtype=float), rtol=1e-12)
            np.testing.assert_allclose(np.asarray(z, dtype=float), np.asarray(y, dtype=float), rtol=1e-12)
        t1 = best(lambda: s1.run(f1, feeds1), repeat)
        t2 = best(lambda: lowered.run(f2, feeds2), repeat)
        t3 = best(lambda: direct.run(f2, feeds2), repeat)
        figures[name] = (t1, t2, t3)
        print(f"{name:14s} {t1 * 1e3:9.2f}ms {t2 * 1e3:9.2f}ms {t3 * 1e3:9.2f}ms  {t3 / t2:.2f}")
    return figures


def calls(repeat: int = 20) -> dict:
    """The same loops called as @function runs them (optimized), v1 and v2 lowered and
    direct, and compiled (jit_compile=True): a v2 While is lowered, then its frame compiled
    by compile_loops, so the compiled loop is the one v1 gets."""
    cases = {"fib_loop": (fib_loop, np.int64(300)), "collatz": (collatz_total, np.int64(12)),
             "nested_loops": (nested_loops, np.int64(15))}
    modes = {"v1": {"control_flow": "v1"}, "v2 lowered": {"control_flow": "v2"},
             "v2 direct": {"control_flow": "v2", "functional": "direct"},
             "v1 jit": {"control_flow": "v1", "jit_compile": True},
             "v2 jit": {"control_flow": "v2", "jit_compile": True}}
    figures = {}
    print("\n@function calls (optimized)\n" + f"{'workload':14s}" + "".join(f"{m:>12s}" for m in modes))
    for name, (fn, arg) in cases.items():
        row, want = [], fn(arg)
        for options in modes.values():
            f = function(fn, **options)
            assert f(arg) == want
            row.append(best(lambda: f(arg), repeat))
        figures[name] = row
        print(f"{name:14s}" + "".join(f"{t * 1e3:10.2f}ms" for t in row))
    return figures


if __name__ == "__main__":
    main()
    calls()
