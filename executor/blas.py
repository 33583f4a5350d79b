"""One BLAS thread per kernel while the executor runs kernels concurrently.

A multithreaded BLAS starts a team of threads on every core for each large matmul; two
matmuls running on two executor threads would then fight over the cores. While some run
has kernels on its worker threads, BLAS is held to one thread (process-wide, as BLAS's own
setting is); the last such run to end gives it back its former thread count. This needs
threadpoolctl (optional: without it, BLAS is left alone).
"""
from __future__ import annotations

import threading

_lock = threading.Lock()
_users = 0
_saved: list = []          # (library controller, its thread count before)
_controllers: list | None = None


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


def hold_to_one_thread() -> None:
    """BLAS on one thread until the matching `release()`."""
    global _users
    with _lock:
        _users += 1
        if _users == 1:
            for c in _blas_controllers():
                n = c.num_threads
                if n != 1:
                    _saved.append((c, n))
                    c.set_num_threads(1)


def release() -> None:
    global _users
    with _lock:
        _users -= 1
        if _users == 0:
            for c, n in _saved:
                c.set_num_threads(n)
            _saved.clear()
