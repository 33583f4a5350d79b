"""The Ray engine: each device is a Ray actor that holds its part of the partitioned
graph and runs it in its own executor; a _Send to another device goes down a channel (a
socket between the two actors) into the peer's rendezvous for the run. Ray places, starts
and watches the actors; the driver (the Session) starts every actor's part of a run
through Ray and waits for all of them.

Failure: an error in any actor's part, or an actor that dies, makes the driver abort
the run on every other actor (their waiting receives are cancelled at once) and raise
the first real error, named with its device, its op and the user's line. An actor that
died is replaced on the next run; the session stays usable.

Machines: a device whose name names a task (`/job:worker/task:1/cpu:0`) runs on the
node that task is mapped to (ray_options.py: engine_options, else a node with the
resource `task:N`, else the N-th node); `ray.init` joins the cluster at
engine_options["address"] or RAY_ADDRESS, else starts one on this machine.

Messages: the values a part sends another device while it has work are kept, and go as
one message when the part has nothing left to run until a value comes (or its run
ends, or 64 are waiting, or the first has waited 2 ms): the values crossing in one loop
iteration travel together. A part with heavy kernels sends each value at once, so the
peer's work overlaps its own.

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
from .device_part import DevicePart, on_device, op_at, op_path
from .ray_options import RayOptions, cluster_address, placement_of
from .rendezvous import Rendezvous

try:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError:  # pragma: no cover (the error says what to install)
    ray = None


def _node_address() -> str:
    """This node's address as the Ray cluster knows it (peers on other nodes connect to it)."""
    try:
        return ray.util.get_node_ip_address()
    except Exception:  # noqa: BLE001 (outside a Ray worker: this machine)
        return "127.0.0.1"


def _require_ray(options: RayOptions) -> None:
    """Ray connected: to the cluster the options or RAY_ADDRESS name, else to a new one on
    this machine. Connected already to another cluster than the options name: refused."""
    if ray is None:
        raise GraphError("engine='ray' needs Ray: pip install -e '.[distributed]' (or pip install 'ray==2.60.0')")
    if ray.is_initialized():
        connected = ray.get_runtime_context().gcs_address
        if options.address is not None and options.address not in ("auto", connected):
            raise GraphError(f"engine_options['address'] is {options.address!r}, but Ray is connected to the "
                             f"cluster at {connected!r} in this process; call ray.shutdown() first, or give "
                             f"{connected!r}")
        return
    address = cluster_address(options)
    if address is not None:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    else:
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
            "function": op_path(e.op)[0] if e.op is not None else None,  # (an op of an If/While's function)
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
    op = op_at(graph, (w.get("function"), w["op"])) if w["op"] else None
    return cls(w["message"], op=op, frame=w["frame"], iteration=w["iteration"], original=original)



class _LogicalClock:
    """A Lamport clock: a write stamped after a value arrived is later than the send of that
    value on any machine, whatever the machines' own clocks say (they need not agree)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.time = 0

    def tick(self, seen: int = 0) -> int:
        """The next time, after `seen` (the stamp of a message that arrived)."""
        with self._lock:
            self.time = max(self.time, seen) + 1
            return self.time


class _StampedText(io.TextIOBase):
    """A stdout that keeps each write with its device's logical time and the device."""

    def __init__(self, clock: _LogicalClock, device: str):
        super().__init__()
        self.clock, self.device = clock, device
        self.chunks: list[tuple[int, str, str]] = []

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            self.chunks.append((self.clock.tick(), self.device, text))
        return len(text)

_BATCH_LIMIT = 64     # values kept for one peer at most before they go (a long run of sends still streams)
_KEPT_SECONDS = 0.002  # a value kept longer goes anyway (the part works on without waiting: the peer need not)


class _ActorTransport:
    """What a part's executor sends and receives through, inside an actor: values for this
    device go to its own rendezvous, others down the channel to the peer actor, kept per
    peer (with `batch`) until flush(): by the part's thread when it waits, or by the
    actor's flusher once the first has been kept _KEPT_SECONDS."""

    def __init__(self, actor: "DeviceActor", run_id: int, rendezvous: Rendezvous, batch: bool):
        self.actor, self.run_id, self.rendezvous, self.batch = actor, run_id, rendezvous, batch
        self.lock = threading.Lock()     # (the part's thread and the actor's flusher)
        self.kept: list = []             # [(peer device, (key, tag, value, dead))] not sent yet
        self.kept_since = 0.0            # when the first of them was kept (monotonic)
        self.batches = 0                 # messages that went down channels

    def send(self, key, tag, value, dead) -> None:
        peer = key[2]
        if peer == self.actor.device:
            self.rendezvous.send(key, tag, value, dead)
            return
        if not self.batch:
            self._send(peer, [(key, tag, value, dead)])
            return
        with self.lock:
            kept = self.kept
            if not kept:
                self.kept_since = time.monotonic()
            kept.append((peer, (key, tag, value, dead)))
            if len(kept) >= _BATCH_LIMIT:
                self._send_kept()

    def flush(self, kept_before: float | None = None) -> None:
        """Send what is kept, one message per peer (only if the first was kept before
        `kept_before`, when given)."""
        with self.lock:
            if self.kept and (kept_before is None or self.kept_since < kept_before):
                self._send_kept()

    def _send_kept(self) -> None:
        by_peer: dict[str, list] = {}
        for peer, value in self.kept:
            by_peer.setdefault(peer, []).append(value)
        self.kept = []
        for peer, values in by_peer.items():
            self._send(peer, values)

    def _send(self, peer: str, values: list) -> None:
        self.batches += 1
        self.actor.send_to(peer, (self.run_id, self.actor.clock.tick(), values))

    def recv(self, key, tag, callback):
        return self.rendezvous.recv(key, tag, callback)


class _FlushingWakeups:
    """A part's wake-up queue that sends the values kept first: the executor waits on it
    exactly when the part has nothing left to run until a value (or the pool) wakes it."""

    def __init__(self, queue, transport: _ActorTransport):
        self.queue, self.transport = queue, transport

    def put(self, item) -> None:
        self.queue.put(item)

    def get(self):
        self.transport.flush()
        return self.queue.get()


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
        self.clock = _LogicalClock()  # orders the parts' prints across machines
        self.sending: set = set()     # transports of the parts running now (the flusher looks at them)
        self.sending_changed = threading.Condition(self.lock)
        self.flusher: threading.Thread | None = None
        self.listener = Listener((_node_address(), 0), authkey=authkey)
        threading.Thread(target=self._accept, name="channels", daemon=True).start()

    def node(self) -> str:
        """The id of the Ray node this actor runs on (hex)."""
        return ray.get_runtime_context().get_node_id()

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
        """Values from one peer, into the rendezvous of their runs, until it closes (a
        message holds one run's values: those its part sent before it next waited)."""
        try:
            while True:
                run_id, stamp, values = conn.recv()
                self.clock.tick(stamp)  # (before the values are taken: what they cause is later)
                rendezvous = self._rendezvous(run_id)
                for key, tag, value, dead in values:
                    rendezvous.send(key, tag, value, dead)
        except (OSError, EOFError):
            conn.close()

    def load(self, part_id: int, graph_json: str, fetch_names: list, feed_names: list) -> None:
        g = Graph.from_json(graph_json)
        fetches = [g.get_tensor_by_name(n) for n in fetch_names]
        feeds = [g.get_tensor_by_name(n) for n in feed_names]
        part = DevicePart(g, self.device, fetches, feeds)
        _refuse_variables(part)
        self.parts[part_id] = part

    def _rendezvous(self, run_id: int) -> Rendezvous:
        with self.lock:
            r = self.runs.get(run_id)
            if r is None:
                r = self.runs[run_id] = Rendezvous()
                if run_id in self.finished:  # a late value of a run that ended here: dropped
                    r.abort(CancelledError("the run has ended"))
            return r

    def run(self, part_id: int, run_id: int, feed_values: list, seconds_left: float | None, seconds: float | None = None,
            batch: bool = True):
        """This device's part of run `run_id`: ("ok", [(fetch position, value)], values sent,
        messages they went in, printed (logical time, device, text) chunks) or ("error", the error as data,
        printed chunks)."""
        rendezvous = self._rendezvous(run_id)
        part = self.parts[part_id]
        # the time left on this machine's clock; the seconds given, for the message (as in process)
        deadline = None if seconds_left is None else Deadline(time.monotonic() + seconds_left, seconds or seconds_left)
        transport = _ActorTransport(self, run_id, rendezvous, batch=batch and not part.heavy)
        state = part.state(feed_values, transport, deadline)
        state.wakeups = _FlushingWakeups(state.wakeups, transport)
        if transport.batch:
            self._flushed(transport)
        rendezvous.on_abort.append(state.cancel)  # (abort() from the driver stops a compiled loop too)
        printed = _StampedText(self.clock, self.device)  # what Print ops write goes back with the results
        with self.lock:
            self.running += 1
        try:
            with contextlib.redirect_stdout(printed):
                state.run()
            transport.flush()  # (the last values, e.g. the loop's result for another device)
            return "ok", part.results(state), state.stats.messages, transport.batches, printed.chunks
        except BaseException as e:  # noqa: BLE001 (sent to the driver as data)
            rendezvous.abort(CancelledError(f"the run was cancelled on device {self.device}"))
            return "error", _error_to_wire(e), printed.chunks
        finally:
            self._end(run_id)
            with self.lock:
                self.running -= 1
                self.sending.discard(transport)

    def _flushed(self, transport: _ActorTransport) -> None:
        """Have the flusher send what `transport` keeps too long (started with the first)."""
        with self.lock:
            self.sending.add(transport)
            self.sending_changed.notify()
            if self.flusher is None:
                self.flusher = threading.Thread(target=self._flush_loop, name="flusher", daemon=True)
                self.flusher.start()

    def _flush_loop(self) -> None:
        """Every _KEPT_SECONDS, send the values a running part has kept that long (it has
        worked on since, without waiting); a peer that cannot be reached ends that run."""
        while True:
            with self.lock:
                while not self.sending:  # (no part runs: nothing to look at until one does)
                    self.sending_changed.wait()
            time.sleep(_KEPT_SECONDS)
            with self.lock:
                transports = list(self.sending)
            old = time.monotonic() - _KEPT_SECONDS
            for transport in transports:
                try:
                    transport.flush(kept_before=old)
                except CancelledError as e:
                    transport.rendezvous.abort(e)

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


# One actor per device name and placement in this process, shared by every Session with
# engine="ray" (a part is loaded into it once); an actor that died is replaced on the next
# run, and all are forgotten when Ray is connected anew (they went with the old connection).
_actors: dict[tuple, object] = {}    # (device, placement) -> actor
_loaded: dict[tuple, set] = {}       # (device, placement) -> part ids loaded into it
_connection: list = [None]           # (session name, job id) the actors belong to
_AUTHKEY = secrets.token_bytes(16)  # the actors' channels accept only each other
_actors_lock = threading.Lock()
STARTUP_SECONDS = 120.0  # an actor not started by then (its node gone or full) ends the run with an error


class RayEngine:
    """Runs the parts of a partitioned graph in one Ray actor per device, each on the node
    its task is mapped to (`options`: ray_options.RayOptions)."""

    name = "ray"
    _ids = itertools.count(1)

    def __init__(self, options: RayOptions | None = None):
        self.options = options if options is not None else RayOptions()
        _require_ray(self.options)
        self.part_ids: dict[int, int] = {}   # id(partitioning) -> part id
        self.placements: dict[str, tuple | None] = {}  # device -> where its actor runs
        self.last_messages = 0   # values the devices sent each other in the last run
        self.last_batches = 0    # messages those values went in
        self.batch_messages = True  # False: each value its own message (benchmarks compare the two)

    @property
    def actors(self) -> dict:
        """device -> its actor, for the devices this engine has run."""
        return {d: a for d in self.placements if (a := _actors.get((d, self.placements[d]))) is not None}

    def _key(self, device: str) -> tuple:
        if device not in self.placements:
            self.placements[device] = placement_of(device, self.options, ray.nodes())
        return device, self.placements[device]

    def _actor(self, device: str):
        key = self._key(device)
        with _actors_lock:
            connection = (ray.get_runtime_context().get_session_name(), ray.get_runtime_context().get_job_id())
            if _connection[0] != connection:  # Ray was connected anew: the old actors are gone
                _actors.clear()
                _loaded.clear()
                _connection[0] = connection
            a = _actors.get(key)
            if a is None:
                a = _actors[key] = _actor_class(key[1]).remote(device, _AUTHKEY)
                _loaded[key] = set()
            return a

    def _prepare(self, partitioning) -> int:
        pid = self.part_ids.get(id(partitioning))
        if pid is None:
            pid = self.part_ids[id(partitioning)] = next(self._ids)
        actors = {d: self._actor(d) for d in partitioning.devices}
        try:
            addresses = dict(zip(actors, ray.get([a.address.remote() for a in actors.values()],
                                                 timeout=STARTUP_SECONDS)))
        except ray.exceptions.GetTimeoutError:
            where = ", ".join(f"{d} on {self.placements[d][0]} {self.placements[d][1]}" for d in actors
                              if self.placements[d] is not None)
            raise ExecutionError(f"the Ray actors of the devices did not start within {STARTUP_SECONDS:g} s"
                                 f"{' (' + where + ')' if where else ''}: is every node they need alive and "
                                 "reachable?") from None
        waits = [a.set_peers.remote(addresses) for a in actors.values()]
        todo = [d for d in partitioning.devices if pid not in _loaded.get(self._key(d), ())]
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
            _loaded.setdefault(self._key(d), set()).add(pid)
        return pid

    def run(self, parts, feed_values: list, deadline=None, num_fetches: int = 0, partitioning=None) -> list:
        for part in parts:  # (before the graph is written for the actors: a variable's state is not in it)
            _refuse_variables(part)
        pid = self._prepare(partitioning)
        run_id = next(self._ids)
        seconds = None if deadline is None else max(deadline.when - time.monotonic(), 1e-3)
        given = None if deadline is None else deadline.seconds
        actors = self.actors
        refs = {actors[d].run.remote(pid, run_id, feed_values, seconds, given, self.batch_messages): d
                for d in partitioning.devices}
        out, failures, printed, done = [None] * num_fetches, [], [], set()
        try:
            messages, batches = self._wait(refs, run_id, out, failures, printed, done, partitioning)
        except BaseException:  # Ctrl-C while the actors run: end their runs too (no actor left running)
            pending = [r for r in refs if r not in done]
            for ref in pending:
                actors[refs[ref]].abort.remote(run_id, "the run was interrupted")
            with contextlib.suppress(Exception):
                ray.wait(pending, num_returns=len(pending), timeout=10)
            raise
        self.last_messages, self.last_batches = messages, batches
        # what the parts' Print ops wrote, in the order they wrote it: the effect chain orders the
        # prints (each waits for the one before, on whatever device, through a message), so
        # their logical times are that order
        for _, _, text in sorted(chunk for _, chunks in printed for chunk in chunks):
            print(text, end="")
        if failures:
            raise next((e for _, e in failures if not isinstance(e, CancelledError)), failures[0][1])
        return out

    def _wait(self, refs, run_id, out, failures, printed, done: set, partitioning) -> int:
        """Take each actor's reply as it comes (its fetched values into `out`, the refs
        taken into `done`); a failure aborts the others' runs. The values sent, and the
        messages they went in."""
        pending, messages, batches = list(refs), 0, 0
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
                batches += reply[3]
                continue
            error = _error_from_wire(reply[1], partitioning.graph)
            failures.append((device, on_device(error, device)))
            self._abort_others(pending, refs, run_id, device)
        return messages, batches

    def _abort_others(self, pending, refs, run_id: int, failed: str) -> None:
        actors = self.actors
        for ref in pending:
            actor = actors.get(refs[ref])
            if actor is not None:
                actor.abort.remote(run_id, f"the run was cancelled: device {failed} failed")

    def _forget(self, device: str) -> None:
        """`device`'s actor died: the next run starts another, on its task's node looked up
        again (a node that went away is then refused, not waited for)."""
        key = self._key(device)
        with _actors_lock:
            _actors.pop(key, None)
            _loaded.pop(key, None)
        self.placements.pop(device, None)

    def close(self) -> None:
        """Nothing to release: the actors are shared by the process's sessions."""


def _refuse_variables(part: DevicePart) -> None:
    """A part that reads or writes variables (inside If/While functions too) is refused:
    their values live in the driver's process."""
    uses = part.ops_using_runtime()
    if uses:
        raise GraphError(f"{uses[0].describe()} uses variables, whose values live in the driver's process: run "
                         "graphs with variables with engine='local'")


def _actor_class(placement: tuple | None):
    """The actor class, placed: on a node ("node", id), on a node with a custom resource
    ("resource", name: a thousandth of one, so a node given {"task:1": 1} takes many
    devices), on a node with labels ("labels", pairs: Ray's label_selector), or anywhere
    (None)."""
    cls = ray.remote(num_cpus=0, max_concurrency=16)(DeviceActor)
    if placement is None:
        return cls
    if placement[0] == "node":
        return cls.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=placement[1], soft=False))
    if placement[0] == "labels":
        try:
            return cls.options(label_selector=dict(placement[1]))
        except (TypeError, ValueError) as e:  # (a Ray without label scheduling refuses the option)
            raise GraphError(f"engine_options['task_labels'] asks for a node labelled {dict(placement[1])}, but the "
                             f"installed Ray {ray.__version__} cannot place actors by node labels (its actor "
                             f"options refuse label_selector: {e}); map the task with task_resources or task_nodes, "
                             "or install a Ray whose actors take label_selector") from None
    return cls.options(resources={placement[1]: 0.001})


def shutdown_actors() -> None:
    """Kill every device actor of this process (the next ray run starts new ones)."""
    with _actors_lock:
        if ray is not None and ray.is_initialized():
            for a in _actors.values():
                with contextlib.suppress(Exception):  # (one of an earlier connection, or dead already)
                    ray.kill(a)
        _actors.clear()
        _loaded.clear()
