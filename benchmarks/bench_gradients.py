"""Gradients through a while loop: cost of the backward pass and memory it keeps.

A 100-step RNN, h = tanh(W @ h + U @ x_t), hidden size 256, float32, built with
graphcore.while_loop and differentiated with graphcore.gradients (w.r.t. W, U, h0).
Prints:
  - the time of forward + gradient over the time of the forward pass alone;
  - the bytes the forward loop accumulated for the backward pass, next to the
    minimum (T x hidden x 4 bytes for the hidden states, plus T x input x 4 for the
    inputs the gradient of U needs), and the list of accumulated tensors.

Times are the median and the minimum of --repeat runs (the minimum is the steadier
figure on a shared machine). BLAS runs single-threaded unless OPENBLAS_NUM_THREADS /
OMP_NUM_THREADS say otherwise: the executor already runs ops on its own threads, and a
multithreaded BLAS waking its threads for one larger matmul on a busy machine costs from
0.1 to 7 ms per call, which swamped what this measures.

Run: python benchmarks/bench_gradients.py [--steps 100] [--hidden 256] [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy loads its BLAS

import numpy as np  # noqa: E402 (after the BLAS thread variables are set)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import graphcore as gc  # noqa: E402
from executor import Session  # noqa: E402
from graphcore.gradients import accumulators  # noqa: E402
from graphcore.testing.models import rnn  # noqa: E402


def timeit(fn, repeat: int) -> tuple[float, float]:
    """(median, minimum) seconds of `repeat` runs after one warm-up run."""
    fn()  # warm up (plans are built once per fetch set)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--inputs", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    T, H, D = args.steps, args.hidden, args.inputs
    model = rnn(T, H, D, dtype=gc.float32)
    loss, grads, loop = model.loss, model.grads, model.forward_loop
    feeds = model.feeds(np.random.default_rng(0))
    s = Session(model.graph, num_threads=args.threads)
    (t_fwd, m_fwd), (t_both, m_both) = (timeit(lambda: s.run(loss, feeds), args.repeat),
                                        timeit(lambda: s.run([loss] + grads, feeds), args.repeat))
    acc = accumulators(loop)
    exits = [e for _, e in acc]
    lists = s.run(exits, feeds)
    total = sum(lst.nbytes() for lst in lists)
    minimum = T * H * 4 + T * D * 4
    print(f"RNN: {T} steps, hidden {H}, input {D}, float32, {s.num_threads} thread(s), "
          f"BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS')}")
    print(f"                          median      min   (of {args.repeat})")
    print(f"forward alone:          {t_fwd * 1e3:8.1f} {m_fwd * 1e3:8.1f} ms")
    print(f"forward + gradient:     {t_both * 1e3:8.1f} {m_both * 1e3:8.1f} ms   "
          f"ratio {t_both / t_fwd:.2f}x (median), {m_both / m_fwd:.2f}x (min)")
    print(f"accumulated for backward: {total:,} bytes in {len(exits)} lists "
          f"(minimum {minimum:,} = T x hidden x 4 + T x input x 4; ratio {total / minimum:.2f}x)")
    for (t, _), lst in zip(acc, lists):
        print(f"  {t.name:40s} {t.op.type:14s} {lst.length:4d} x {str(t.shape):10s} {lst.nbytes():>10,} bytes")
    print(f"accumulated tensors: {[t.op.type for t, _ in acc]}")


if __name__ == "__main__":
    main()
