"""The in-process engine: the devices' parts exchange values through one Rendezvous per
run. Parts of cheap ops only (scalar loops, control flow) take turns on the calling
thread: a message then costs no thread hand-off, and when every part waits for a value no
part will send, the run is known to be stuck and ends with an error instead of hanging.
Parts with heavy ops (matmuls, large arrays) each run on a thread of their own, so their
kernels overlap (numpy lets go of the GIL); the calling thread runs the first.

A failure on any device aborts the run's rendezvous, so every other device's waiting
_Recv ends at once with a CancelledError; the run then raises the first real error,
named with its device (the op and the user's line are in its message already). Nothing
outlives the run: the next one starts with a new rendezvous and new executor states.
"""
from __future__ import annotations

import threading

from graphcore.errors import CancelledError, ExecutionError

from .device_part import DevicePart, on_device
from .rendezvous import Rendezvous


class LocalEngine:
    """Runs the parts of a partitioned graph on threads of this process."""

    name = "local"

    def __init__(self, threads: bool | None = None):
        self.threads = threads  # None: threads only for parts with heavy ops
        self.last_messages = 0
        self.last_stats: dict = {}  # device -> RunStats of the last run

    def run(self, parts: list[DevicePart], feed_values: list, deadline=None, num_fetches: int = 0,
            partitioning=None) -> list:
        rendezvous = Rendezvous()
        states = [part.state(feed_values, rendezvous, deadline) for part in parts]
        rendezvous.on_abort += [state.cancel for state in states]
        threads = self.threads if self.threads is not None else any(p.heavy for p in parts)
        failures = (self._on_threads if threads else self._taking_turns)(parts, states, rendezvous)
        self.last_messages = rendezvous.messages
        self.last_stats = {part.device: state.stats for part, state in zip(parts, states)}
        if failures:
            device, error = next(((d, e) for d, e in failures if not isinstance(e, CancelledError)), failures[0])
            raise on_device(error, device)
        out = [None] * num_fetches
        for part, state in zip(parts, states):
            for pos, v in part.results(state):
                out[pos] = v
        return out

    def _taking_turns(self, parts, states, rendezvous: Rendezvous) -> list:
        """Every part on this thread, in turns, until each is over; the failures. Only the
        parts send, so when every part waits and no value has arrived, nothing ever will."""
        failures: list[tuple[str, BaseException]] = []
        started = []
        try:
            for state in states:
                state.wakeups = _NO_WAKEUPS  # (a value that arrives is taken at the part's next turn)
                state.start()
                started.append(state)
            live = list(zip(parts, states))
            while live:
                waiting = []
                for part, state in live:
                    try:
                        if not state.pump():
                            waiting.append((part, state))
                    except BaseException as e:  # noqa: BLE001 (the first real one is raised by run())
                        failures.append((part.device, state.failed(e)))
                        rendezvous.abort(CancelledError(f"the run was cancelled on device {part.device}: another "
                                                        "device failed or the run was interrupted"))
                live = waiting
                if live and not any(state.arrivals or state.ready for _, state in live):
                    if not failures:
                        stuck = ", ".join(f"{k[0][0]} from {k[0][1]} to {k[0][2]} in {k[1]}"
                                          for k in rendezvous.waiting_keys()[:3])
                        failures.append((live[0][0].device, ExecutionError(
                            f"the devices wait for each other: no device will send {stuck or 'what is awaited'}; "
                            "the partitioned graph is malformed")))
                    failures += [(part.device, state.failed(CancelledError("the run was cancelled")))
                                 for part, state in live]
                    break
        except BaseException as e:  # noqa: BLE001 (Ctrl-C)
            rendezvous.abort(CancelledError("the run was interrupted"))
            for state in started:
                state.failed(e)
            failures.append((parts[0].device, e))
        finally:
            for state in started:
                state.stop()
        return failures

    def _on_threads(self, parts, states, rendezvous: Rendezvous) -> list:
        """A thread per part (the calling thread runs the first); the failures."""
        failures: list[tuple[str, BaseException]] = []
        lock = threading.Lock()

        def work(part: DevicePart, state, done: threading.Event | None = None) -> None:
            try:
                state.run()
            except BaseException as e:  # noqa: BLE001 (the first real one is raised by run())
                with lock:
                    failures.append((part.device, e))
                rendezvous.abort(CancelledError(f"the run was cancelled on device {part.device}: another device "
                                                "failed or the run was interrupted"))
            finally:
                if done is not None:
                    done.set()

        ends = [threading.Event() for _ in parts[1:]]
        threads = [threading.Thread(target=work, args=(p, s, e), name=f"device {p.device}", daemon=True)
                   for p, s, e in zip(parts[1:], states[1:], ends)]
        for t in threads:
            t.start()
        interrupted = None
        try:
            work(parts[0], states[0])
        finally:
            for end in ends:
                interrupted = _wait(end, rendezvous) or interrupted
        if interrupted is not None:  # Ctrl-C while the other devices ran: what the run raises
            failures.insert(0, (parts[0].device, interrupted))
        return failures


class _NoWakeups:
    """The wake-up queue of a part that takes turns: nothing waits on it."""

    @staticmethod
    def put(_item) -> None:
        pass


_NO_WAKEUPS = _NoWakeups()


def _wait(end: threading.Event, rendezvous: Rendezvous):
    """Wait until a device's thread has ended its part; Ctrl-C meanwhile cancels the run
    (its devices stop: on_abort) and still waits. Returns the KeyboardInterrupt, if one
    came. (An Event, not Thread.join: on Python 3.11 a join interrupted by Ctrl-C may
    return at once the next time, before the thread has ended.)"""
    interrupted = None
    while True:
        try:
            end.wait()
            return interrupted
        except KeyboardInterrupt as e:
            interrupted = e
            rendezvous.abort(CancelledError("the run was interrupted"))
