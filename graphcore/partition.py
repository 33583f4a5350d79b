"""Partitioning: one graph of a run becomes one part per device, joined by _Send/_Recv
pairs keyed by frame and iteration, as TensorFlow's graph_partition.cc splits a graph.

`partition(graph, fetches, devices=[...])` works on a copy of the ops the fetches need:

1. Placement (graphcore/placement.py): every op gets a device.
2. An Enter read on several devices gets a copy on each of them, so that a value enters
   a loop on the device that reads it and an Enter's output never crosses devices.
3. Control loops. A device that runs part of a loop whose predicate (LoopCond) another
   device computes gets a small loop of its own: Enter -> Merge -> Switch on the
   received predicate -> NextIteration -> back into the Merge. It starts the device's
   iterations of that frame one by one as the leader decides them, so
   `parallel_iterations` holds there too. Nested loops stack: an inner control loop
   enters from the outer one's Merge, the outermost from a constant.
4. Every edge between devices becomes _Send on the source's device and _Recv on the
   destination's: one pair per tensor and destination device, a control edge as a pair
   that carries no value. A _Recv inside a loop waits on its device's control loop's
   Merge, which makes it run once in each iteration (and frame instance) the sender
   runs in; the executor keys each message by tensor, both devices, frame and iteration.
   A dead token is sent as dead.

The parts stay in one graph (each op's `device` says whose it is): a device's
executor plans its own ops, which reach other devices' only through _Recv. The same
graph is drawn with one cluster per device (`autograph graph ... --devices 2`).
"""
from __future__ import annotations

import re

import numpy as np
from dataclasses import dataclass, field

from . import dtypes as dt
from .errors import GraphError
from .frames import assign_frames
from .graph import Graph, Operation, Tensor
from .placement import device_list, place
from .shapes import as_shape


@dataclass
class Partitioning:
    """The result: `graph` holds every device's ops (op.device says which); per device,
    the ops its executor runs (`ops_of`), and the run's fetches, targets and feeds as
    tensors/ops of `graph`, in the order given."""

    graph: Graph
    devices: list[str]
    fetches: list[Tensor]
    targets: list[Operation]
    feeds: list[Tensor]
    ops_of: dict[str, list[Operation]] = field(default_factory=dict)
    sends: int = 0          # _Send ops (one per tensor and destination device)
    control_loops: int = 0  # control loops added (one per frame and non-leading device)
    leaders: dict[str, str] = field(default_factory=dict)  # frame -> device of its LoopCond

    def summary(self) -> str:
        per = ", ".join(f"{d}: {len(self.ops_of[d])} ops" for d in self.devices)
        return f"{len(self.devices)} devices ({per}); {self.sends} send/recv pairs, {self.control_loops} control loops"


def partition(graph: Graph, fetches, targets=(), feeds=(), devices=("cpu:0",), default: str | None = None
              ) -> Partitioning:
    """Partition what `fetches` and `targets` need of `graph` across `devices` (see the
    module docstring). `feeds`: tensors the run feeds (their producers then run nowhere).
    The graph itself is not changed."""
    devices = device_list(devices)
    made = next((op for op in graph.get_operations() if op.type in ("_Send", "_Recv")), None)
    if made is not None:
        raise GraphError(f"{made.describe()}: this graph is partitioned already (it has _Send/_Recv ops); run the "
                         "graph it was made from with devices=[...], which partitions it again")
    work = graph.copy()
    fetches = [work.get_tensor_by_name(t if isinstance(t, str) else t.name) for t in fetches]
    targets = [work.get_operation_by_name(o if isinstance(o, str) else o.name) for o in targets]
    feeds = [work.get_tensor_by_name(t if isinstance(t, str) else t.name) for t in feeds]
    _keep_needed(work, fetches, list(targets) + [t.op for t in feeds])  # (a fed input stays, used or not)
    for op, d in _placed(work, devices, default):
        op.device = d
    _split_enters(work)
    builder = _Builder(work, devices)
    builder.add_control_loops()
    builder.cut_crossing_edges()
    ops_of = {d: [] for d in devices}
    for op in work.get_operations():
        ops_of[op.device].append(op)
    return Partitioning(work, devices, fetches, targets, feeds, ops_of, builder.sends, builder.control_loops_added,
                        builder.leaders)


def _keep_needed(g: Graph, fetches, targets) -> None:
    """Erase what neither the fetches nor the targets need."""
    seen: set[int] = set()
    stack = [t.op for t in fetches] + list(targets)
    while stack:
        op = stack.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    g.erase_ops([op for op in g.get_operations() if id(op) not in seen])


def _placed(g: Graph, devices, default):
    where = place(g.get_operations(), devices, default)
    return [(op, where[id(op)]) for op in g.get_operations()]


def _split_enters(g: Graph) -> None:
    """An Enter read on other devices than its own: a copy of it on each such device (its
    input then crosses, once per frame instance, instead of its output in every iteration)."""
    for e in [op for op in g.get_operations() if op.type == "Enter"]:
        by_device: dict[str, list[Operation]] = {}
        for c in dict.fromkeys(e.outputs[0].consumers()):
            if c.device != e.device:
                by_device.setdefault(c.device, []).append(c)
        for d, consumers in by_device.items():
            with g.inserting_after(e), g.device(d):
                copy = g.create_op("Enter", [e.inputs[0]], dict(e.attrs), name=f"{_base(e.name)}_{_tag(d)}",
                                   control_inputs=e.control_inputs, capture=False,
                                   output_specs=[(e.outputs[0].dtype, e.outputs[0].shape)])
            g.replace_all_uses_with(e.outputs[0], copy.outputs[0], only=consumers)


class _Builder:
    """Adds the control loops and the _Send/_Recv pairs to the placed graph."""

    def __init__(self, g: Graph, devices: list[str]):
        self.g = g
        self.devices = devices
        self.frames = assign_frames(g.get_operations())
        if self.frames.problems:
            raise GraphError(f"cannot partition this graph: {self.frames.problems[0]}")
        self.loop_cond: dict[str, Operation] = {}
        for op in g.get_operations():
            if op.type == "LoopCond":
                self.loop_cond[self.frames.frame_of[id(op)]] = op
        self.leaders = {f: op.device for f, op in self.loop_cond.items()}
        self.loops: dict[tuple[str, str], Operation] = {}  # (frame, device) -> the control loop's Merge
        self.roots: dict[str, Operation] = {}              # device -> the constant the outermost loops enter
        self.recvs: dict[tuple[int, str], Operation] = {}   # (id of tensor or op, device) -> _Recv
        self.sends = 0
        self.control_loops_added = 0
        self.first = g.get_operations()[0] if len(g) else None

    # -- control loops ------------------------------------------------------------------
    def add_control_loops(self) -> None:
        """A control loop for each frame on each device that runs some of its ops, if the
        frame spans devices."""
        on: dict[str, set[str]] = {}
        for op in self.g.get_operations():
            f = self.frames.frame_of[id(op)]
            if f:
                on.setdefault(f, set()).add(op.device)
        for f, devs in on.items():
            if len(devs) > 1:
                for d in sorted(devs, key=self.devices.index):
                    if d != self.leaders.get(f):  # (the leader gets one only if it receives in the loop)
                        self.control_loop(f, d)

    def control_loop(self, frame: str, device: str) -> Operation:
        """The Merge of `device`'s control loop of `frame` (made, with its outer ones, if new)."""
        hit = self.loops.get((frame, device))
        if hit is not None:
            return hit
        cond = self.loop_cond.get(frame)
        if cond is None:
            raise GraphError(f"while frame {frame!r} spans devices but has no LoopCond, so the other devices cannot "
                             "learn when it ends; build loops with graphcore.while_loop")
        parent = self.frames.parent.get(frame, "")
        start = self.control_loop(parent, device).outputs[0] if parent else self._root_constant(device)
        g, tag = self.g, f"_cloop/{_tag(device)}/{frame}"
        with g.inserting_before(self.first, context=cond.ctx), g.device(device):
            enter = g.create_op("Enter", [start], {"frame_name": frame, "is_constant": False,
                                                   "parallel_iterations": self.frames.parallel_iterations[frame]},
                                name=f"{tag}/Enter", capture=False)
            merge = g.create_op("Merge", [enter.outputs[0], enter.outputs[0]], name=f"{tag}/Merge", capture=False)
            switch = g.create_op("Switch", [merge.outputs[0], cond.outputs[0]], name=f"{tag}/Switch", capture=False)
            nxt = g.create_op("NextIteration", [switch.outputs[1]], name=f"{tag}/NextIteration", capture=False)
        g.update_input(merge, 1, nxt.outputs[0])
        for op in (enter, merge, switch, nxt):
            self.frames.frame_of[id(op)] = frame
            self.frames.output_frame_of[id(op)] = frame
        self.frames.frame_of[id(enter)] = parent
        self.loops[(frame, device)] = merge
        self.control_loops_added += 1
        return merge

    def _root_constant(self, device: str) -> Tensor:
        c = self.roots.get(device)
        if c is None:
            with self.g.inserting_before(self.first, context=None), self.g.device(device):
                c = self.g.create_op("Const", [], {"value": np.bool_(True), "dtype": dt.bool_},
                                     name=f"_cloop/{_tag(device)}/start", capture=False)
            self.frames.frame_of[id(c)] = self.frames.output_frame_of[id(c)] = ""
            self.roots[device] = c
        return c.outputs[0]

    # -- crossing edges -----------------------------------------------------------------
    def cut_crossing_edges(self) -> None:
        for op in list(self.g.get_operations()):
            for i, t in enumerate(op.inputs):
                if t.op.device != op.device:
                    self.g.update_input(op, i, self._recv(t, op).outputs[0])
            for c in op.control_inputs:
                if c.device != op.device:
                    self.g.remove_control_input(op, c)
                    frame = self._pivot_frame(c)
                    local = self.control_pivot(frame, op.device) if frame is not None else None
                    self.g.add_control_input(op, local if local is not None else self._recv(c, op))

    def _pivot_frame(self, op: Operation) -> str | None:
        """The frame whose loop pivot `op` is (an Identity of the true output of a Switch on
        the loop's LoopCond: live exactly in the iterations the predicate holds), else None."""
        if op.type != "Identity" or op.inputs[0].value_index != 1 or op.inputs[0].op.type != "Switch":
            return None
        if not op.name.rpartition("/")[2].startswith("pivot"):
            # another loop variable's value in the body (an effect chain's token): a control edge
            # from it orders after what made that value (the previous iteration's effects), which
            # the control loop's pivot would not
            return None
        frame = self.frames.frame_of[id(op)]
        cond = self.loop_cond.get(frame)
        return frame if cond is not None and op.inputs[0].op.inputs[1] is cond.outputs[0] else None

    def control_pivot(self, frame: str, device: str) -> Operation | None:
        """On a device that is not the frame's leader, its control loop's pivot: an op live
        exactly when the loop's pivot is (a control edge from the pivot then needs no message)."""
        if device == self.leaders.get(frame):
            return None
        merge = self.control_loop(frame, device)
        switch = merge.outputs[0].consumers()[0] if merge.outputs[0].consumers() else None
        if switch is None or switch.type != "Switch":
            return None
        pivots = [c for c in switch.outputs[1].consumers() if c.type == "Identity"]
        if pivots:
            return pivots[0]
        g = self.g
        with g.inserting_after(switch), g.device(device):
            pivot = g.create_op("Identity", [switch.outputs[1]], name=f"{merge.name.rpartition('/')[0]}/pivot",
                                capture=False)
        self.frames.frame_of[id(pivot)] = self.frames.output_frame_of[id(pivot)] = frame
        return pivot

    def _recv(self, src, consumer: Operation) -> Operation:
        """The _Recv on `consumer`'s device of `src` (a tensor, or an op for a control edge),
        with its _Send on src's device, made once per source and destination device."""
        g, dst = self.g, consumer.device
        key = (id(src), dst)
        hit = self.recvs.get(key)
        if hit is not None:
            return hit
        op = src.op if isinstance(src, Tensor) else src
        name = src.name if isinstance(src, Tensor) else f"^{src.name}"
        frame = self.frames.output_frame_of[id(op)]
        attrs = {"tensor_name": name, "send_device": op.device, "recv_device": dst}
        with g.inserting_after(op), g.device(op.device):
            g.create_op("_Send", [src] if isinstance(src, Tensor) else [], attrs,
                        name=f"{_base(op.name)}/_send_{_tag(dst)}",
                        control_inputs=[] if isinstance(src, Tensor) else [src], capture=False)
        controls = [self.control_loop(frame, dst)] if frame else []
        dtype, shape = (src.dtype, src.shape) if isinstance(src, Tensor) else (dt.bool_, ())
        with g.inserting_before(consumer, context=op.ctx), g.device(dst):
            recv = g.create_op("_Recv", [], {**attrs, "dtype": dtype, "shape": as_shape(shape)},
                               name=f"{_base(op.name)}/_recv_{_tag(dst)}", control_inputs=controls, capture=False)
        self.frames.frame_of[id(recv)] = self.frames.output_frame_of[id(recv)] = frame
        self.recvs[key] = recv
        self.sends += 1
        return recv


def _tag(device: str) -> str:
    """A device name as a piece of an op name ("cpu:1" -> "cpu_1")."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", device)


def _base(name: str) -> str:
    return name.rpartition("/")[2]


