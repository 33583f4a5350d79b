"""How a Ray device actor sends values to its peers (executor/distributed/ray_engine.py),
on an actor object in this process with its channels replaced by a list: the values a
part sends before it waits go as one message per peer, a value kept while the part works
on goes anyway soon after, and the logical clock orders what happens after a message
after what happened before it was sent."""
from __future__ import annotations

import queue
import threading

import pytest

pytest.importorskip("ray", reason="the Ray engine is optional: pip install -e '.[distributed]'")

from executor.distributed.ray_engine import (_BATCH_LIMIT, DeviceActor, _ActorTransport,  # noqa: E402
                                             _FlushingWakeups, _LogicalClock, _StampedText)
from executor.distributed.rendezvous import Rendezvous  # noqa: E402

ENDS = 30.0  # seconds: "it went" (a value kept for ever would not)


class RecordingActor(DeviceActor):
    """A device actor whose messages to peers are recorded instead of sent."""

    def __init__(self, device: str):
        super().__init__(device, b"test")
        self.sent: list = []
        self.arrived = threading.Event()

    def send_to(self, device: str, message: tuple) -> None:
        self.sent.append((device, message))
        self.arrived.set()


def edge(name: str, to: str) -> tuple:
    return (name, "cpu:0", to)


def transport(actor, batch=True) -> _ActorTransport:
    return _ActorTransport(actor, 7, Rendezvous(), batch=batch)


def test_the_values_sent_before_the_part_waits_go_as_one_message_per_peer():
    actor = RecordingActor("cpu:0")
    t = transport(actor)
    wakeups = _FlushingWakeups(queue.SimpleQueue(), t)
    t.send(edge("x:0", "cpu:1"), "root/while:3", 1.5, False)
    t.send(edge("p:0", "cpu:1"), "root/while:3", True, False)
    t.send(edge("y:0", "cpu:2"), "root/while:3", None, True)
    assert actor.sent == []  # kept while the part has work
    wakeups.put(None)
    wakeups.get()  # the part waits: what it kept goes first
    assert [(d, m[0], m[2]) for d, m in actor.sent] == [
        ("cpu:1", 7, [(edge("x:0", "cpu:1"), "root/while:3", 1.5, False),
                      (edge("p:0", "cpu:1"), "root/while:3", True, False)]),
        ("cpu:2", 7, [(edge("y:0", "cpu:2"), "root/while:3", None, True)])]
    assert t.batches == 2


def test_a_value_for_the_actors_own_device_goes_to_its_rendezvous_at_once():
    actor = RecordingActor("cpu:1")
    t = transport(actor)
    t.send(edge("x:0", "cpu:1"), "root", 2.0, False)
    assert actor.sent == [] and t.rendezvous.recv(edge("x:0", "cpu:1"), "root", None) == (2.0, False)


def test_without_batching_and_past_the_limit_values_go_at_once():
    actor = RecordingActor("cpu:0")
    t = transport(actor, batch=False)
    t.send(edge("x:0", "cpu:1"), "root", 1.0, False)
    t.send(edge("x:0", "cpu:1"), "root/while:1", 2.0, False)
    assert [len(m[2]) for _, m in actor.sent] == [1, 1]
    actor = RecordingActor("cpu:0")
    t = transport(actor)
    for k in range(_BATCH_LIMIT + 1):
        t.send(edge("x:0", "cpu:1"), f"root/while:{k}", float(k), False)
    assert [len(m[2]) for _, m in actor.sent] == [_BATCH_LIMIT]
    t.flush()
    assert [m[2][0][2] for _, m in actor.sent] == [0.0, float(_BATCH_LIMIT)]


def test_a_value_kept_while_the_part_works_on_goes_without_it_waiting():
    actor = RecordingActor("cpu:0")
    t = transport(actor)
    actor._flushed(t)  # (what run() does for a part that keeps values)
    t.send(edge("x:0", "cpu:1"), "root", 3.0, False)
    assert actor.arrived.wait(ENDS), "the kept value never went"
    assert actor.sent[0][1][2] == [(edge("x:0", "cpu:1"), "root", 3.0, False)]
    with actor.lock:
        actor.sending.discard(t)


def test_what_follows_a_message_is_stamped_after_what_preceded_its_send():
    """Device A far ahead on its clock, device B behind: B's print after A's message is
    still later than A's print before it (the machines' own clocks play no part)."""
    a, b = _LogicalClock(), _LogicalClock()
    a.time = 1_000
    out_a, out_b = _StampedText(a, "a"), _StampedText(b, "b")
    out_b.write("b first\n")
    stamp = b.tick()  # b sends to a
    a.tick(stamp)
    out_a.write("a second\n")
    stamp = a.tick()  # a sends to b
    b.tick(stamp)
    out_b.write("b third\n")
    chunks = sorted(out_a.chunks + out_b.chunks)
    assert [text for _, _, text in chunks] == ["b first\n", "a second\n", "b third\n"]
