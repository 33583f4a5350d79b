"""Ending a kernel that runs long (a compiled loop) when its run must end: at the run's
deadline, when the run is cancelled (another device failed, Ctrl-C on another thread), and
on Ctrl-C in the kernel's own thread.

The frame executor meets these between nodes (executor/deadline.py); a compiled loop is one
node that may never end, so it is told:

- Python code (jit_compile=True) gets KernelStopped raised in its thread
  (PyThreadState_SetAsyncExc), which costs the loop nothing per iteration; Ctrl-C reaches it
  as KeyboardInterrupt like any Python code on the main thread. It is sent again every
  RESEND_S while the loop runs: CPython raises it in whatever Python code the thread runs
  next, which may be a finalizer or weakref callback the garbage collector calls in the
  middle of the loop (numba's, for one), where it is printed and dropped.
- numba code (jit_compile="numba") cannot be: it releases the GIL (nogil) and reads a flag
  (an int64 array of one) at the end of each iteration, returning its loop state when set.
  Its wrapper then raises KernelStopped if the run ended, or lets a signal's Python handler
  run (KeyboardInterrupt) and resumes the loop from that state otherwise. On the main
  thread the flag is also set on a signal: Python's C handler writes to the wakeup fd
  (signal.set_wakeup_fd), and a watcher thread reading it sets the flag. (A program that
  sets a wakeup fd of its own after the first numba loop, as asyncio does, displaces ours:
  Ctrl-C then reaches a numba loop only when it returns.)

A run whose plan has such kernels makes a RunStop; the threads that run its nodes make it
current (`running(stop)`), and the kernels ask `current()`.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
import time

import numpy as np

from .deadline import WATCHDOG

DEADLINE, CANCELLED = "deadline", "cancelled"
RESEND_S = 0.05  # how often a stop is sent again to a Python loop still running


class KernelStopped(BaseException):  # (not an Exception: the loops' fallbacks must not catch it)
    """Raised in a kernel's thread when its run ends early; the run turns it into its error.
    args: (why, the kernel's op as the error should name it), as far as known."""


_local = threading.local()
_active_lock = threading.Lock()
_active = [0]  # stoppable kernels running now, in this process (for tests: none left behind)


def current():
    """The RunStop of the run this thread runs nodes for, or None."""
    return getattr(_local, "stop", None)


@contextlib.contextmanager
def running(stop):
    """Make `stop` this thread's current RunStop (a kernel may run a graph itself: nested)."""
    old = getattr(_local, "stop", None)
    _local.stop = stop
    try:
        yield
    finally:
        _local.stop = old


def active_kernels() -> int:
    """How many stoppable kernels run now in this process for runs that can stop them
    (a run without a deadline may run its loops straight-line, where only Ctrl-C can)."""
    return _active[0]


def _set_async_exc(tid: int, exc) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), ctypes.py_object(exc) if exc else None)


class RunStop:
    """What a run's long kernels are told when it ends early; `reason` is set once."""

    __slots__ = ("lock", "reason", "threads", "flags")

    def __init__(self):
        self.lock = threading.Lock()
        self.reason: str | None = None
        self.threads: dict[int, int] = {}   # thread id -> Python loops of this run running on it
        self.flags: list = []               # the flags of numba loops of this run running now

    def stop(self, reason: str) -> None:
        """End the run's kernels (from any thread); the first reason stays."""
        with self.lock:
            if self.reason is not None:
                return
            self.reason = reason
            for flag in self.flags:
                flag[0] = 1
        self._send()

    def _send(self) -> None:
        """Raise KernelStopped in the threads still running Python loops of this run, and
        again in RESEND_S while any does (a delivery may be dropped: the module docstring)."""
        with self.lock:
            running = [tid for tid, n in self.threads.items() if n]
            for tid in running:
                _set_async_exc(tid, KernelStopped)
        if running:
            WATCHDOG.arm(time.monotonic() + RESEND_S, self._send)

    def run_python(self, fn, args, where: str = ""):
        """fn(*args), a Python loop, raising KernelStopped in it if the run ends meanwhile
        (`where`: the op it runs for, for the error)."""
        tid = threading.get_ident()
        with self.lock:
            if self.reason is not None:
                raise KernelStopped(self.reason, where)
            self.threads[tid] = self.threads.get(tid, 0) + 1
        _count(1)
        try:
            try:
                return fn(*args)
            finally:
                self._leave(tid)
        except KernelStopped:
            raise KernelStopped(self.reason, where) from None

    def _leave(self, tid: int) -> None:
        """The loop on thread `tid` is done: count it out, and let a KernelStopped sent as it
        returned be raised and dropped here, not in what the thread runs next. The stop may
        be raised anywhere in here (CPython raises it at a call): the counting is done once."""
        counted = False
        while True:
            try:
                if not counted:
                    with self.lock:
                        self.threads[tid] -= 1; counted = True  # noqa: E702 (nothing raises in between)
                        sent = self.reason is not None and not self.threads[tid]
                    if sent:
                        _drain_stop()
                    _count(-1)
                return
            except KernelStopped:
                if counted:
                    _count(-1)
                    return


def _drain_stop() -> None:
    """Let a KernelStopped sent to this thread, and not raised yet, be raised here and
    dropped. (PyThreadState_SetAsyncExc(id, NULL) would clear it but leaves the
    interpreter's "async exception pending" flag set for good: every thread of the process
    then took CPython's slow path at every instruction, tens of times slower.)"""
    try:
        for _ in range(8):  # (a backward jump: where CPython raises a pending exception)
            pass
    except KernelStopped:
        pass


def _count(d: int) -> None:
    with _active_lock:
        _active[0] += d


def python_loop(fn, where: str = ""):
    """`fn` (a compiled loop in Python) as a kernel that ends when its run does (`where`:
    the op it runs for, as the run's error names it)."""
    def stoppable(*args):
        stop = getattr(_local, "stop", None)
        if stop is None:
            return fn(*args)
        return stop.run_python(fn, args, where)
    stoppable.__dict__.update(fn.__dict__)  # (its source, for listings and tests)
    stoppable.__wrapped__ = fn
    return stoppable


# -- numba loops: a flag -------------------------------------------------------------

class _SignalWatcher:
    """Sets `flag` (read by the numba loops running on the main thread) when a signal
    comes: Python's handler cannot run before the loop returns. Python's C handler writes
    to the wakeup fd; this thread reads it."""

    def __init__(self):
        self.flag = Flag()
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.write_fd, False)
        threading.Thread(target=self._watch, name="executor-signals", daemon=True).start()
        # Ours stays set (setting it costs microseconds, a numba call a few): unless the
        # program has its own (asyncio's), which is then swapped for ours per call.
        self.installed = signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False) == -1
        if not self.installed:
            signal.set_wakeup_fd(-1)

    def _watch(self) -> None:
        while True:
            os.read(self.read_fd, 512)
            self.flag.array[0] = 1


_watcher: _SignalWatcher | None = None
_MAIN_ID = threading.main_thread().ident
get_ident = threading.get_ident


def _main_flag():
    """(On the main thread) the flag a signal sets, cleared; the program's own wakeup fd,
    which ours stands in for until the loop returns (-1 if none)."""
    global _watcher
    if _watcher is None:
        _watcher = _SignalWatcher()
    w = _watcher
    w.flag.array[0] = 0
    if w.installed:
        return w.flag, -1
    return w.flag, signal.set_wakeup_fd(w.write_fd, warn_on_full_buffer=False)


class Flag:
    """An int64 a numba loop reads (by its address) and others set: 1 means stop."""

    __slots__ = ("array", "address")

    def __init__(self):
        self.array = np.zeros(1, np.int64)
        self.address = self.array.ctypes.data

    def __setitem__(self, i, v):  # (RunStop.stop sets flag[0] = 1)
        self.array[i] = v


def _thread_flag() -> Flag:
    """This thread's flag (a thread runs one numba loop at a time), cleared."""
    flag = getattr(_local, "flag", None)
    if flag is None:
        flag = _local.flag = Flag()
    flag.array[0] = 0
    return flag


def numba_loop(fn, n_vars: int, n_exits: int, where: str = ""):
    """A kernel running `fn`, a numba loop taking (inputs..., its flag's address) and
    returning (stopped, exits..., loop variables...): stopped, it raises KernelStopped
    if the run ended, else (a signal) lets Python's handler run and resumes from the loop
    variables."""
    def run(*inputs):
        stop = getattr(_local, "stop", None)
        theirs = -1
        w = _watcher
        if get_ident() != _MAIN_ID:
            flag = _thread_flag()
        elif w is not None and w.installed:  # (the usual case: no call, no system call)
            flag = w.flag
            flag.array[0] = 0
        else:
            flag, theirs = _main_flag()
        if stop is not None:  # (a run that may end it: counted, for active_kernels)
            with stop.lock:
                if stop.reason is not None:
                    raise KernelStopped(stop.reason, where)
                stop.flags.append(flag)
            _count(1)
        try:
            while True:
                out = fn(*inputs, flag.address)
                if not out[0]:
                    return out[1:1 + n_exits]
                if stop is not None and stop.reason is not None:
                    raise KernelStopped(stop.reason, where)
                _handle_signals()  # (KeyboardInterrupt, raised by Python's handler here)
                flag.array[0] = 0
                inputs = tuple(out[1 + n_exits:]) + tuple(inputs[n_vars:])
        finally:
            if theirs != -1:
                signal.set_wakeup_fd(theirs)
            if stop is not None:
                with stop.lock:
                    stop.flags.remove(flag)
                _count(-1)
    return run


def _handle_signals() -> None:
    """A Python call: the interpreter runs pending signal handlers on entering it."""
