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
"""
from __future__ import annotations

import os

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
