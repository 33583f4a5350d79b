"""A time limit for one checked call, so that a converted program that never stops is a
finding (a class of its own) rather than a tester that hangs."""
from __future__ import annotations

import contextlib
import signal
import threading


class Timeout(Exception):
    """The call ran longer than its time limit (a converted loop that does not stop)."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise Timeout in this thread after `seconds`, by SIGALRM: only on the main thread
    (elsewhere, and for 0, no limit). The executor runs scalar graphs on the calling thread,
    so this stops a graph loop that never ends."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum, frame):
        raise Timeout(f"no result after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
