"""Run deadlines (TensorFlow's RunOptions.timeout_in_ms): `Session.run(..., timeout=s)`
and `with executor.deadline(s):` for every run on this thread inside the block.

The run loop never looks at the clock: one watchdog thread, at the deadline, puts a
wake-up token on the run's ready queue (and its completion queue, in case the loop is
waiting for a worker), and the loop raises when it pops that token. So a run with a
deadline costs one heap push, and each node costs nothing more.
"""
from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Deadline:
    """A point in time (time.monotonic), and the seconds given, for the error message."""

    when: float
    seconds: float


class _Scope(threading.local):
    deadline: Deadline | None = None  # (a class default: reading it on a thread that set none raises nothing)


_scope = _Scope()


def _check_seconds(seconds: float, what: str) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ValueError(f"{what} must be a positive number of seconds, got {seconds!r}")
    return float(seconds)


@contextlib.contextmanager
def deadline(seconds: float):
    """Every graph run started on this thread inside the block ends by `seconds` from now
    (they share the budget), or raises DeadlineExceededError. Scopes nest: the earlier
    deadline wins. Python code run while tracing is not bounded, only graph runs.

    Example:
        with executor.deadline(5):
            collatz(np.int64(27))       # an @function: its Session.run is bounded
    """
    seconds = _check_seconds(seconds, "executor.deadline")
    new = Deadline(time.monotonic() + seconds, seconds)
    old = _scope.deadline
    _scope.deadline = new if old is None or new.when < old.when else old
    try:
        yield
    finally:
        _scope.deadline = old


def run_deadline(timeout: float | None) -> Deadline | None:
    """The deadline of a run started now: the earlier of `timeout` and the thread's scope."""
    scoped = _scope.deadline
    if timeout is None:
        return scoped
    timeout = _check_seconds(timeout, "Session.run's timeout")
    own = Deadline(time.monotonic() + timeout, timeout)
    return scoped if scoped is not None and scoped.when < own.when else own


class Watchdog:
    """One daemon thread that calls each armed callback at its time. Cancelling only
    marks the entry; the heap is compacted when most of it is cancelled."""

    def __init__(self):
        self._cv = threading.Condition()
        self._heap: list[list] = []   # [when, sequence number, callback or None]
        self._cancelled = 0
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, when: float, callback: Callable[[], None]) -> list:
        """Call `callback()` on the watchdog thread at `when`; returns a handle for `cancel`."""
        entry = [when, next(self._seq), callback]
        with self._cv:
            if self._cancelled > 64 and self._cancelled * 2 > len(self._heap):
                self._heap = [e for e in self._heap if e[2] is not None]
                heapq.heapify(self._heap)
                self._cancelled = 0
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="executor-deadline", daemon=True)
                self._thread.start()
            if self._heap[0] is entry:
                self._cv.notify()
        return entry

    def cancel(self, entry: list) -> None:
        with self._cv:
            if entry[2] is not None:
                entry[2] = None
                self._cancelled += 1

    def _loop(self) -> None:
        while True:
            with self._cv:
                while True:
                    while self._heap and self._heap[0][2] is None:
                        heapq.heappop(self._heap)
                        self._cancelled -= 1
                    if not self._heap:
                        self._cv.wait()
                        continue
                    delay = self._heap[0][0] - time.monotonic()
                    if delay <= 0:
                        break
                    self._cv.wait(delay)
                entry = heapq.heappop(self._heap)
                callback, entry[2] = entry[2], None  # a late cancel() must not count it
            callback()


WATCHDOG = Watchdog()
