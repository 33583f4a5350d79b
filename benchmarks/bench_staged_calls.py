"""What one staged Python call (a PyFunction op) costs next to a Print op, in one run:

  - a graph of 2000 ops chained by control dependencies (Print / PyFunction / a baseline of
    Identity), run by the frame executor: per op, over the baseline;
  - converted loops of 5000 iterations: `print(i)`, `s = str(i)` (staged, s returned), `print(str(i))`,
    per iteration over the same loop's without them.

Best of repeated runs, the kinds interleaved (the machine may be shared).

    python benchmarks/bench_staged_calls.py
"""
import io
import sys
import time

import numpy as np
import graphcore as gc
from executor import Session
from autograph import function

N = 2000
def chain(kind):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.int64, shape=[], name="x")
        prev = None
        for _ in range(N):
            with g.control_dependencies([prev] if prev is not None else []):
                if kind == "print":
                    prev = gc.print(x)
                elif kind == "py":
                    prev = gc.py_function(lambda v: None, [x], [])
                else:
                    prev = gc.no_op() if hasattr(gc, "no_op") else gc.identity(x).op
        with g.control_dependencies([prev]):
            out = gc.identity(x)
    return g, x, out

def best(f, reps=7):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return min(ts)

sink = io.StringIO()
runs = {}
for kind in ("none", "print", "py"):
    g, x, out = chain(kind)
    s = Session(g)
    def run(s=s, x=x, out=out):
        old, sys.stdout = sys.stdout, sink
        try:
            s.run(out, {x: np.int64(3)})
        finally:
            sys.stdout = old
        sink.seek(0)
        sink.truncate()
    run()
    runs[kind] = run
res = {k: float("inf") for k in runs}
for _ in range(25):  # interleaved, best of 25 each: the machine is shared
    for k, r in runs.items():
        res[k] = min(res[k], best(r, 1))
base = res["none"]
p_us = (res["print"] - base) / N * 1e6
q_us = (res["py"] - base) / N * 1e6
print(f"graph chain of {N}: per Print op {p_us:.2f} us, per PyFunction op {q_us:.2f} us, ratio {q_us / p_us:.2f}")

def loop_print(n):
    t = 0
    for i in range(n):
        print(i)
        t += i
    return t

def loop_str(n):
    t = 0
    s = ""
    for i in range(n):
        s = str(i)
        t += i
    return t, s

def loop_both(n):
    t = 0
    for i in range(n):
        print(str(i))
        t += i
    return t

def loop_empty(n):
    t = 0
    for i in range(n):
        t += i
    return t

M = 5000
fs = {name: function(fn) for name, fn in [("empty", loop_empty), ("print", loop_print), ("str", loop_str),
                                          ("both", loop_both)]}
lruns = {}
for name, f in fs.items():
    def run(f=f):
        old, sys.stdout = sys.stdout, sink
        try:
            f(np.int64(M))
        finally:
            sys.stdout = old
        sink.seek(0)
        sink.truncate()
    run()
    lruns[name] = run
t = {k: float("inf") for k in lruns}
for _ in range(9):
    for k, r in lruns.items():
        t[k] = min(t[k], best(r, 1))
pp = (t["print"] - t["empty"]) / M * 1e6
ss = (t["str"] - t["empty"]) / M * 1e6
bb = (t["both"] - t["empty"]) / M * 1e6
print(f"converted loop of {M}: print(i) {pp:.2f} us/iter, str(i) staged {ss:.2f} us/iter, "
      f"print(str(i)) {bb:.2f} us/iter "
      f"over an empty loop's {t['empty'] / M * 1e6:.2f} us; staged/print ratio {ss / pp:.2f}")
