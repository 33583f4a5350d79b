"""The rendezvous of one run: a table of messages keyed by (edge key, frame tag), where
the edge key is (tensor name, sending device, receiving device) and the frame tag names
the frame instance and iteration (`root/while:3`), as both devices' executors write it.

A send stores its value (or dead token) or hands it to the receive waiting for it; a
receive takes the value if it is there, else leaves a callback, called on the sending
thread when the value comes. `abort(error)` ends the run's exchange: every waiting
receive is called back with the error, later receives raise it, later sends are dropped;
no device keeps waiting for a value that will not come, and each device's running
compiled loop is stopped (`on_abort`).
"""
from __future__ import annotations

import threading

from graphcore.errors import ExecutionError

_SENT, _WAITING = 0, 1


class Rendezvous:
    """Keyed send/receive between the devices of one run (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._table: dict = {}
        self.error: BaseException | None = None
        self.messages = 0
        self.on_abort: list = []  # called by abort(): each device's run cancels its running kernels

    def send(self, key: tuple, tag: str, value, dead: bool) -> None:
        k = (key, tag)
        with self._lock:
            if self.error is not None:
                return
            self.messages += 1
            entry = self._table.pop(k, None)
            if entry is None:
                self._table[k] = (_SENT, value, dead)
                return
            if entry[0] == _SENT:
                self._table[k] = entry
                raise ExecutionError(f"{key[0]} was sent twice from {key[1]} to {key[2]} in {tag}")
        entry[1](value, dead, None)

    def recv(self, key: tuple, tag: str, callback):
        """(value, dead) if it was sent; else None, and `callback(value, dead, error)` is
        called when it is (or with the error if the run is aborted first)."""
        k = (key, tag)
        with self._lock:
            if self.error is not None:
                raise self.error
            entry = self._table.get(k)
            if entry is None:
                self._table[k] = (_WAITING, callback)
                return None
            if entry[0] == _WAITING:
                raise ExecutionError(f"{key[0]} is received twice on {key[2]} in {tag}")
            del self._table[k]
            return entry[1], entry[2]

    def abort(self, error: BaseException) -> None:
        """End the exchange: waiting receives get `error`, and so does every later one."""
        with self._lock:
            if self.error is not None:
                return
            self.error = error
            waiting = [e[1] for e in self._table.values() if e[0] == _WAITING]
            self._table.clear()
        for callback in waiting:
            callback(None, False, error)
        for cancel in self.on_abort:
            cancel()

    def waiting_keys(self) -> list:
        """(edge key, frame tag) of the receives waiting for a value."""
        with self._lock:
            return [k for k, e in self._table.items() if e[0] == _WAITING]

    def pending(self) -> int:
        """Entries not taken yet (sent and not received, or waiting)."""
        with self._lock:
            return len(self._table)
