"""A small pool of worker threads for heavy kernels. numpy releases the GIL inside
large operations, so big matmuls and reductions from independent branches or loop
iterations run in parallel. A task is a run's own function: it runs the kernel and then,
under the run's lock, sends the outputs on and runs what they made ready (executor.py)."""
from __future__ import annotations

import queue
import threading
from typing import Callable


class WorkerPool:
    def __init__(self, num_threads: int):
        self.num_threads = num_threads
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def _start(self) -> None:
        with self._lock:
            while len(self._threads) < self.num_threads:
                t = threading.Thread(target=self._work, name=f"executor-worker-{len(self._threads)}", daemon=True)
                t.start()
                self._threads.append(t)

    def submit(self, task: Callable[[], None]) -> None:
        """Run `task()` on a worker thread; it reports its own outcome (and must not raise)."""
        if len(self._threads) < self.num_threads:
            self._start()
        self._tasks.put(task)

    def _work(self) -> None:
        """A worker's life: the pools are shared by the whole process and never stopped, so
        their (daemon) threads wait for tasks until the process ends."""
        while True:
            self._tasks.get()()


_shared: dict[int, WorkerPool] = {}
_shared_lock = threading.Lock()


def shared_pool(num_threads: int) -> WorkerPool:
    """One pool per thread count for the whole process: every Session (and so every traced
    function) shares it, so tracing many functions does not pile up idle threads. Each
    run keeps its own state and lock, so runs never see each other's results."""
    with _shared_lock:
        pool = _shared.get(num_threads)
        if pool is None:
            pool = _shared[num_threads] = WorkerPool(num_threads)
        return pool
