"""The Ray engine: each device is a Ray actor that holds its part of the partitioned
graph and runs it in its own executor; a _Send to another device goes down a channel (a
socket between the two actors) into the peer's rendezvous for the run. Ray places, starts
and watches the actors; the driver (the Session) starts every actor's part of a run
through Ray and waits for all of them.

Failure: an error in any actor's part, or an actor that dies, makes the driver abort
the run on every other actor (their waiting receives are cancelled at once) and raise
the first real error, named with its device, its op and the user's line. An actor that
died is replaced on the next run; the session stays usable.

Ray is an optional extra (pip install -e '.[distributed]'); only this module imports it.
Graphs with variables run with engine="local" (variable values live in this process).
"""
from __future__ import annotations

import builtins
import contextlib
import io
import itertools
import secrets
import os
import threading
import time
from collections import OrderedDict
from multiprocessing.connection import Client, Listener

from graphcore import errors as gc_errors
from graphcore.errors import CancelledError, ExecutionError, GraphError
from graphcore.graph import Graph

from ..deadline import Deadline
from .device_part import DevicePart, on_device
from .rendezvous import Rendezvous

try:
    import ray
except ImportError:  # pragma: no cover (the error says what to install)
    ray = None


def _node_address() -> str:
    """This node's address as the Ray cluster knows it (peers on other nodes connect to it)."""
    try:
        return ray.util.get_node_ip_address()
    except Exception:  # noqa: BLE001 (outside a Ray worker: this machine)
        return "127.0.0.1"


def _require_ray():
    if ray is None:
        raise GraphError("engine='ray' needs Ray: pip install -e '.[distributed]' (or pip install 'ray==2.60.0')")
    if not ray.is_initialized():
        ray.init(num_cpus=max(2, os.cpu_count() or 1), include_dashboard=False, log_to_driver=False,
                 ignore_reinit_error=True, configure_logging=False)


# -- errors cross processes as data: an ExecutionError's op is a graph object, and the
# -- combined classes (ExecutionError[IndexError]) exist only in the process that made them

def _error_to_wire(e: BaseException) -> dict:
    if not isinstance(e, ExecutionError):
        return {"base": "ExecutionError", "python": None, "message": f"{type(e).__name__}: {e}", "op": None,
                "frame": None, "iteration": None}
    base = next(c.__name__ for c in type(e).__mro__ if c.__module__ == gc_errors.__name__ and "[" not in c.__name__)
    python = next((t.__name__ for t in gc_errors._PYTHON_TYPES if isinstance(e, t)), None)
    # a staged assert's or raise's message with the values formatted in (logging_ops._assert_kernel)
    formatted = getattr(e.original, "formatted", None)
    return {"base": base, "python": python, "message": str(e.args[0]) if e.args else str(e),
            "op": getattr(e.op, "name", None), "frame": e.frame, "iteration": e.iteration,
            "formatted": formatted if isinstance(formatted, str) else None, "timeout": getattr(e, "timeout", None)}


def _error_from_wire(w: dict, graph: Graph) -> ExecutionError:
    base = getattr(gc_errors, w["base"], ExecutionError)
    if base is gc_errors.DeadlineExceededError:
        return base(w["message"], frame=w["frame"], iteration=w["iteration"], timeout=w.get("timeout"))
    original = getattr(builtins, w["python"])("") if w["python"] else None
    cls = gc_errors.execution_error_type(base, original)
    if w.get("formatted") is not None:  # what the driver's reraise_staged shows, as in process
        if original is None:
            original = base(w["message"])
        original.formatted = w["formatted"]
    op = graph.ops_by_name.get(w["op"]) if w["op"] else None
    return cls(w["message"], op=op, frame=w["frame"], iteration=w["iteration"], original=original)



class _StampedText(io.TextIOBase):
    """A stdout that keeps each write with the time it was made (monotonic, nanoseconds)."""

    def __init__(self):
        super().__init__()
        self.chunks: list[tuple[int, str]] = []

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            self.chunks.append((time.monotonic_ns(), text))
        return len(text)

class _ActorTransport:
    """What a part's executor sends and receives through, inside an actor: values for this
    device go to its own rendezvous, others down the channel to the peer actor."""

    def __init__(self, actor: "DeviceActor", run_id: int, rendezvous: Rendezvous):
        self.actor, self.run_id, self.rendezvous = actor, run_id, rendezvous

    def send(self, key, tag, value, dead) -> None:
        if key[2] == self.actor.device:
            self.rendezvous.send(key, tag, value, dead)
        else:
            self.actor.send_to(key[2], (self.run_id, key, tag, value, dead))

    def recv(self, key, tag, callback):
        return self.rendezvous.recv(key, tag, callback)


class DeviceActor:
    """One device: its parts of partitioned graphs, the rendezvous of its runs, and a
    channel (a socket, multiprocessing.connection) to each peer actor: a value goes
    straight to the peer's rendezvous, without a Ray call (which costs ten times more)."""

    def __init__(self, device: str, authkey: bytes):
        self.device = device
        self.authkey = authkey
        self.parts: dict[int, DevicePart] = {}
        self.lock = threading.Lock()
        self.runs: dict[int, Rendezvous] = {}
        self.finished: OrderedDict = OrderedDict()
        self.running = 0  # parts running now (busy())
        self.peers: dict[str, tuple] = {}        # device -> its channel's address
        self.channels: dict[str, tuple] = {}     # device -> (connection, its send lock)
        self.listener = Listener((_node_address(), 0), authkey=authkey)
        threading.Thread(target=self._accept, name="channels", daemon=True).start()

    def ping(self) -> int:
        return os.getpid()

    def address(self) -> tuple:
        return self.listener.address

    def set_peers(self, peers: dict) -> None:
        """The peers' channel addresses; a channel to an address that changed (a peer
        replaced) is dropped."""
        with self.lock:
            for device, address in peers.items():
                if self.peers.get(device) != address:
                    old = self.channels.pop(device, None)
                    if old is not None:
                        old[0].close()
            self.peers = dict(peers)

    def send_to(self, device: str, message: tuple) -> None:
        with self.lock:
            channel = self.channels.get(device)
            if channel is None:
                try:
                    channel = self.channels[device] = (Client(self.peers[device], authkey=self.authkey),
                                                       threading.Lock())
                except (OSError, KeyError) as e:
                    raise CancelledError(f"device {device} cannot be reached from {self.device}: {e}") from None
        try:
            with channel[1]:
                channel[0].send(message)
        except (OSError, EOFError) as e:  # the peer went away: the driver reports why
            raise CancelledError(f"device {device} cannot be reached from {self.device}: {e}") from None

    def _accept(self) -> None:
        while True:
            try:
                conn = self.listener.accept()
            except (OSError, EOFError):
                continue  # a peer that could not authenticate, or went away while connecting
            threading.Thread(target=self._read, args=(conn,), name="channel", daemon=True).start()

    def _read(self, conn) -> None:
        """Values from one peer, into the rendezvous of their runs, until it closes."""
        try:
            while True:
                run_id, key, tag, value, dead = conn.recv()
                self._rendezvous(run_id).send(tuple(key), tag, value, dead)
        except (OSError, EOFError):
            conn.close()

    def load(self, part_id: int, graph_json: str, fetch_names: list, feed_names: list) -> None:
        g = Graph.from_json(graph_json)
        fetches = [g.get_tensor_by_name(n) for n in fetch_names]
        feeds = [g.get_tensor_by_name(n) for n in feed_names]
        part = DevicePart(g, self.device, fetches, feeds)
        uses = [it.op for it in part.plan.items if it.op is not None and it.op.op_def.uses_runtime]
        if uses:
            raise GraphError(f"{uses[0].describe()} uses variables, whose values live in the driver's process: run "
                             "graphs with variables with engine='local'")
        self.parts[part_id] = part

    def _rendezvous(self, run_id: int) -> Rendezvous:
        with self.lock:
            r = self.runs.get(run_id)
            if r is None:
                r = self.runs[run_id] = Rendezvous()
                if run_id in self.finished:  # a late value of a run that ended here: dropped
                    r.abort(CancelledError("the run has ended"))
            return r

    def run(self, part_id: int, run_id: int, feed_values: list, seconds_left: float | None, seconds: float | None = None):
        """This device's part of run `run_id`: ("ok", [(fetch position, value)], messages sent,
        printed (time, text) chunks) or ("error", the error as data, printed chunks)."""
        rendezvous = self._rendezvous(run_id)
        part = self.parts[part_id]
        # the time left on this machine's clock; the seconds given, for the message (as in process)
        deadline = None if seconds_left is None else Deadline(time.monotonic() + seconds_left, seconds or seconds_left)
        state = part.state(feed_values, _ActorTransport(self, run_id, rendezvous), deadline)
        rendezvous.on_abort.append(state.cancel)  # (abort() from the driver stops a compiled loop too)
        printed = _StampedText()  # what Print ops write goes back to the driver with the results
        with self.lock:
            self.running += 1
        try:
            with contextlib.redirect_stdout(printed):
                state.run()
            return "ok", part.results(state), state.stats.messages, printed.chunks
        except BaseException as e:  # noqa: BLE001 (sent to the driver as data)
            rendezvous.abort(CancelledError(f"the run was cancelled on device {self.device}"))
            return "error", _error_to_wire(e), printed.chunks
        finally:
            self._end(run_id)
            with self.lock:
                self.running -= 1

    def busy(self) -> int:
        """Parts this actor runs now (0 once every run has ended: none left running)."""
        return self.running

    def abort(self, run_id: int, message: str) -> None:
        self._rendezvous(run_id).abort(CancelledError(message))

    def _end(self, run_id: int) -> None:
        with self.lock:
            self.runs.pop(run_id, None)
            self.finished[run_id] = True
            while len(self.finished) > 256:
                self.finished.popitem(last=False)


# One actor per device name in this process, shared by every Session with engine="ray"
# (a part is loaded into it once); an actor that died is replaced on the next run.
_actors: dict[str, object] = {}
_AUTHKEY = secrets.token_bytes(16)  # the actors' channels accept only each other
_loaded: dict[str, set] = {}
_actors_lock = threading.Lock()


class RayEngine:
    """Runs the parts of a partitioned graph in one Ray actor per device."""

    name = "ray"
    _ids = itertools.count(1)

    def __init__(self):
        _require_ray()
        self.part_ids: dict[int, int] = {}   # id(partitioning) -> part id
        self.last_messages = 0

    @property
    def actors(self) -> dict:
        return _actors

    def _actor(self, device: str):
        with _actors_lock:
            a = _actors.get(device)
            if a is None:
                cls = ray.remote(num_cpus=0, max_concurrency=16)(DeviceActor)
                a = _actors[device] = cls.remote(device, _AUTHKEY)
                _loaded[device] = set()
            return a

    def _prepare(self, partitioning) -> int:
        pid = self.part_ids.get(id(partitioning))
        if pid is None:
            pid = self.part_ids[id(partitioning)] = next(self._ids)
        actors = {d: self._actor(d) for d in partitioning.devices}
        addresses = dict(zip(actors, ray.get([a.address.remote() for a in actors.values()])))
        waits = [a.set_peers.remote(addresses) for a in actors.values()]
        todo = [d for d in partitioning.devices if pid not in _loaded.get(d, ())]
        if todo:
            text = partitioning.graph.to_json()
            fetches = [t.name for t in partitioning.fetches]
            feeds = [t.name for t in partitioning.feeds]
            waits += [actors[d].load.remote(pid, text, fetches, feeds) for d in todo]
        try:
            ray.get(waits)
        except ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            raise (cause if isinstance(cause, GraphError) else GraphError(str(e))) from None
        for d in todo:
            _loaded.setdefault(d, set()).add(pid)
        return pid

    def run(self, parts, feed_values: list, deadline=None, num_fetches: int = 0, partitioning=None) -> list:
        pid = self._prepare(partitioning)
        run_id = next(self._ids)
        seconds = None if deadline is None else max(deadline.when - time.monotonic(), 1e-3)
        given = None if deadline is None else deadline.seconds
        refs = {_actors[d].run.remote(pid, run_id, feed_values, seconds, given): d for d in partitioning.devices}
        out, failures, printed, done = [None] * num_fetches, [], [], set()
        try:
            messages = self._wait(refs, run_id, out, failures, printed, done, partitioning)
        except BaseException:  # Ctrl-C while the actors run: end their runs too (no actor left running)
            pending = [r for r in refs if r not in done]
            for ref in pending:
                _actors[refs[ref]].abort.remote(run_id, "the run was interrupted")
            with contextlib.suppress(Exception):
                ray.wait(pending, num_returns=len(pending), timeout=10)
            raise
        self.last_messages = messages
        # what the parts' Print ops wrote, in the order they wrote it: the effect chain orders the
        # prints (each waits for the one before, on whatever device), so their times on this
        # machine's monotonic clock are that order
        for _, text in sorted(chunk for _, chunks in printed for chunk in chunks):
            print(text, end="")
        if failures:
            raise next((e for _, e in failures if not isinstance(e, CancelledError)), failures[0][1])
        return out

    def _wait(self, refs, run_id, out, failures, printed, done: set, partitioning) -> int:
        """Take each actor's reply as it comes (its fetched values into `out`, the refs
        taken into `done`); a failure aborts the others' runs. The messages sent."""
        pending, messages = list(refs), 0
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            done.add(ready[0])
            device = refs[ready[0]]
            try:
                reply = ray.get(ready[0])
            except (ray.exceptions.RayActorError, ray.exceptions.ActorDiedError) as e:
                self._forget(device)
                failures.append((device, ExecutionError(
                    f"on device {device}: the Ray actor running it died during the run ({type(e).__name__}); the "
                    "session starts a new one for the next run")))
                self._abort_others(pending, refs, run_id, device)
                continue
            if reply[-1]:
                printed.append((device, reply[-1]))
            if reply[0] == "ok":
                for pos, v in reply[1]:
                    out[pos] = v
                messages += reply[2]
                continue
            error = _error_from_wire(reply[1], partitioning.graph)
            failures.append((device, on_device(error, device)))
            self._abort_others(pending, refs, run_id, device)
        return messages

    def _abort_others(self, pending, refs, run_id: int, failed: str) -> None:
        for ref in pending:
            actor = _actors.get(refs[ref])
            if actor is not None:
                actor.abort.remote(run_id, f"the run was cancelled: device {failed} failed")

    def _forget(self, device: str) -> None:
        with _actors_lock:
            _actors.pop(device, None)
            _loaded.pop(device, None)

    def close(self) -> None:
        """Nothing to release: the actors are shared by the process's sessions."""


def shutdown_actors() -> None:
    """Kill every device actor of this process (the next ray run starts new ones)."""
    with _actors_lock:
        for a in _actors.values():
            ray.kill(a)
        _actors.clear()
        _loaded.clear()
