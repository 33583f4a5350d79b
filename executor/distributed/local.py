"""The in-process engine: each device's part runs on its own thread (the calling thread
runs the first), all of them exchanging values through one Rendezvous per run.

A failure on any device aborts the run's rendezvous, so every other device's waiting
_Recv ends at once with a CancelledError; the run then raises the first real error,
named with its device (the op and the user's line are in its message already). Nothing
outlives the run: the next one starts with a new rendezvous and new executor states.
"""
from __future__ import annotations

import threading

from graphcore.errors import CancelledError

from .device_part import DevicePart, on_device
from .rendezvous import Rendezvous


class LocalEngine:
    """Runs the parts of a partitioned graph on threads of this process."""

    name = "local"

    def __init__(self):
        self.last_messages = 0
        self.last_stats: dict = {}  # device -> RunStats of the last run

    def run(self, parts: list[DevicePart], feed_values: list, deadline=None, num_fetches: int = 0,
            partitioning=None) -> list:
        rendezvous = Rendezvous()
        states = [part.state(feed_values, rendezvous, deadline) for part in parts]
        failures: list[tuple[str, BaseException]] = []
        lock = threading.Lock()

        def work(part: DevicePart, state) -> None:
            try:
                state.run()
            except BaseException as e:  # noqa: BLE001 (the first real one is raised by run())
                with lock:
                    failures.append((part.device, e))
                rendezvous.abort(CancelledError(f"the run was cancelled on device {part.device}: another device "
                                                "failed or the run was interrupted"))

        threads = [threading.Thread(target=work, args=(p, s), name=f"device {p.device}", daemon=True)
                   for p, s in zip(parts[1:], states[1:])]
        for t in threads:
            t.start()
        try:
            work(parts[0], states[0])
        finally:
            for t in threads:
                _join(t, rendezvous)
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


def _join(thread: threading.Thread, rendezvous: Rendezvous) -> None:
    """Wait for a device's thread; Ctrl-C meanwhile cancels the run (and still waits)."""
    while True:
        try:
            thread.join()
            return
        except KeyboardInterrupt:
            rendezvous.abort(CancelledError("the run was interrupted"))
