"""How many threads BLAS uses now.

A multithreaded BLAS already spreads one large matmul over the cores, so the executor
does not also run matmuls side by side then: two matmuls on two executor threads would each
start a team of BLAS threads on every core, and one BLAS thread each loses more than the
overlap gains (measured on the RNN of benchmarks/bench_workloads.py: with BLAS on two
threads, 1.2x numpy inline, 2.2x with matmuls overlapped on one BLAS thread each). With BLAS
on one thread, matmuls are what the executor's threads overlap.

The count comes from threadpoolctl when it is installed (so `threadpool_limits` and
`openblas_set_num_threads` are seen), else from the usual environment variables, else it
is the number of cores (OpenBLAS's default).

Small matmuls (an RNN step: 32x256 by 256x256) gain little from a second BLAS thread, and
OpenBLAS's threads spin between calls: on a loaded machine they take the core the
executor's own Python work needs (rnn_forward under load: 1.44x numpy with BLAS as is,
0.94x with BLAS on one thread, numpy itself 24.5 ms against 14.8). A run whose every matmul
is small (plan.small_blas) therefore runs with BLAS on one thread (`one_thread`) when the
machine is busy (`machine_busy`), and gives the count back when it ends; on an idle machine
the second BLAS thread is worth its while (the same RNN in plain numpy: 7.1 ms on two BLAS
threads, 11.4 ms on one). Only runs on the main thread do: OpenBLAS lowers its
count from any thread but raises it again only from the main one, so a run on another
thread that ended last could not give the threads back, and BLAS stayed on one thread for
the rest of the process (the user's own numpy calls included). A run on another thread
keeps the count as it is.
"""
from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

_controllers: list | None = None
_CORES = os.cpu_count() or 1  # (os.cpu_count() costs microseconds a call: it reads the system each time)


def _blas_controllers() -> list:
    global _controllers
    if _controllers is None:
        try:
            from threadpoolctl import ThreadpoolController  # noqa: PLC0415 (optional dependency)
        except ImportError:
            _controllers = []
        else:
            _controllers = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
    return _controllers


def threads() -> int:
    """The number of threads BLAS runs a large matmul on."""
    controllers = _blas_controllers()
    if controllers:
        return max(c.num_threads for c in controllers)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        value = os.environ.get(var, "")
        if value.strip().isdigit():
            return int(value)
    return _CORES


_busy = [-10.0, False]  # (when the load was last read, the answer then)


def machine_busy() -> bool:
    """Other work keeps the cores busy: the last minute's load average is over the number of
    cores by more than one (a run's own threads, computing and spinning, count up to about
    the number of cores). Read at most once a second; False where the system has none."""
    now = time.monotonic()
    if now - _busy[0] > 1.0:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            load = 0.0
        _busy[0], _busy[1] = now, load > _CORES + 1
    return _busy[1]


# Runs inside one_thread now, and the thread count BLAS had before the first of them.
_limited = 0
_saved: list[int] = []
_MAIN = threading.main_thread().ident


@contextmanager
def one_thread():
    """BLAS on one thread while the block runs, on the main thread (threadpoolctl; nothing
    without it, nor on other threads: the module docstring says why). Nested runs share the
    limit: the outermost gives BLAS its threads back."""
    global _limited
    controllers = _blas_controllers()
    if not controllers or threading.get_ident() != _MAIN:
        yield
        return
    if _limited == 0:
        _saved[:] = [c.num_threads for c in controllers]
        for c in controllers:
            c.set_num_threads(1)
    _limited += 1
    try:
        yield
    finally:
        _limited -= 1
        if _limited == 0:
            for c, n in zip(controllers, _saved):
                c.set_num_threads(n)
