"""The immutable execution plan: built once per (graph version, fetches, feeds).

It prunes the graph to what the fetches need, assigns every node to its static
frame (TensorFlow's ControlFlowInfo: Enter's successors are in the Enter's frame,
Exit's successors in the parent frame), numbers input slots and pending-count
slots per frame, and precomputes each node's out-edges (OutEdge: the consumer, its
slots, and what kind of arrival it is) and kernel (for scalar arithmetic and comparisons,
a Python operator: scalar_kernels.py), so the run loop does no graph walking at all.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import NamedTuple

from graphcore.errors import GraphError
from graphcore.frames import assign_frames
from graphcore.graph import Graph, Operation
from graphcore.library import function_attrs

from .cost import POOL_MIN_NS, SMALL_BLAS_NS, static_estimate_ns, uses_blas
from . import kernel_contract
from .compiled_loop import compiled_loop_kernel
from .functional_kernel import functional_kernel
from .fused_kernel import fused_kernel
from .handlers import first_runs
from .node_kinds import (CONTROL_TO_MERGE, CONTROL_TO_OP, ENTER, EXIT, FEED, KIND_NAMES,  # noqa: F401 (the plan's
                         KIND_OF_TYPE, MERGE, NEXT_ITERATION, NORMAL, RECV, SEND, SWITCH, TO_FETCH, TO_MERGE,  # names too)
                         TO_OP)
from .op_kernels import specialized_kernel
from .scalar_kernels import scalar_kernel

_KIND = KIND_OF_TYPE


class NodeItem:
    """Static facts about one node, read by the run loop."""

    __slots__ = ("id", "op", "name", "kind", "kernel", "num_outputs", "num_inputs", "input_start", "local_id",
                 "pending_init", "out_edges", "control_edges", "frame", "child_frame", "is_constant_enter",
                 "cheap", "merge_fwd", "merge_back", "fetch_slots", "feed_index", "single_output", "num_controls",
                 "uses_blas", "cost_ns", "fast", "runs", "runner")

    def __init__(self, id_: int, op: Operation | None, name: str, kind: int):
        self.id = id_
        self.op = op
        self.name = name
        self.kind = kind
        self.kernel = None
        self.num_outputs = 0
        self.num_inputs = 0
        self.num_controls = 0
        self.input_start = 0
        self.local_id = 0
        self.pending_init = 0
        self.out_edges: tuple = ()       # per output index: OutEdge fields (fetches included)
        self.control_edges: tuple = ()   # OutEdge fields (while building: dst NodeItems)
        self.frame: FrameInfo | None = None
        self.child_frame: FrameInfo | None = None
        self.is_constant_enter = False
        self.cheap = True
        self.uses_blas = False         # a BLAS call: a multithreaded BLAS spreads it by itself
        self.cost_ns = None            # a heavy op's estimate from static shapes (None: from its values)
        self.merge_fwd = 0
        self.merge_back = 0
        self.fetch_slots: tuple = ()     # per output index: tuple of fetch positions
        self.feed_index = -1
        self.single_output = True
        self.fast = first_runs           # its handler in ExecutorState's run loop (handlers.py)
        self.runs = 0                    # runs so far, until it gets its own handler
        self.runner = None               # its runner inside quick handlers (handlers._runner; False: none)

    def __repr__(self) -> str:
        return f"<NodeItem {self.name}>"


class OutEdge(NamedTuple):
    """One consumer of a node's output (or of its control output), as the run loop reads it.
    NodeItem.out_edges hold these as plain tuples of the same fields (the loop unpacks one
    per edge, and CPython unpacks an exact tuple faster than a subclass).

    `kind` is TO_OP or TO_MERGE for data, CONTROL_TO_OP or CONTROL_TO_MERGE for a control
    edge, TO_FETCH for a fetched root-frame output (`input_index` is then the fetch's
    position). `slot` is where a data value goes in the consumer's iteration's input
    slots (a Merge has two: the value and its value_index)."""

    dst: NodeItem | None
    local_id: int
    slot: int
    kind: int
    input_index: int


@dataclass(eq=False)
class FrameInfo:
    """Static facts about one while frame (or the root): its nodes, slot counts, and the
    number of Enter nodes whose arrival a frame instance waits for."""

    name: str
    parent: "FrameInfo | None"
    nodes: list = field(default_factory=list)
    total_slots: int = 0
    input_count: int = 0
    pending_template: list = field(default_factory=list)
    parallel_iterations: int = 1
    spare_iterations: list = field(default_factory=list)  # of ended instances, for the next (state.FrameState)
    promoted_in: tuple = ()  # (frame instance, iteration) a node last got its generated handler in (handlers.promote)
    levels: list | None = None  # per node, its level in an iteration (handlers.frame_levels)
    iterations_run: int = 0  # by its ended instances, until it gets a runner (loop_runner.RUNNER_AFTER)
    runner: object = None  # its loop_runner.LoopRunner (None: not looked for yet; False: not straight-line)


class ExecutionPlan:
    """Everything about a run that does not change between runs."""

    def __init__(self, graph: Graph, fetch_tensors: list, target_ops: list, feed_tensors: list, runtime=None):
        self.graph = graph
        self.fetches = fetch_tensors
        self.targets = target_ops
        self.feeds = feed_tensors
        self.items: list[NodeItem] = []
        self.root = FrameInfo("root", None)
        self.frames: dict[str, FrameInfo] = {"": self.root}
        self.roots: list[NodeItem] = []
        self.fetch_producers: list[NodeItem | None] = []
        self.placeholders_needed: list[Operation] = []
        self.has_transport = False  # it has _Send/_Recv ops: it runs as one device's part of a partitioned run
        self.stoppable = False  # it has kernels that may run long and are told when the run ends (interrupt.py)
        # root frames (state.FrameState) of finished runs, each taken by a later run: a run of a
        # small graph then makes no frame and no tagged node anew
        self.free_roots: list = []
        self._build(runtime)

    # -- building ------------------------------------------------------------
    def _build(self, runtime) -> None:
        fed = {id(t): i for i, t in enumerate(self.feeds)}
        needed = self._prune(fed)
        by_op: dict[int, NodeItem] = {}
        for op in needed:
            item = NodeItem(len(self.items), op, op.name, _KIND.get(op.type, NORMAL))
            by_op[id(op)] = item
            self.items.append(item)
            self._set_kernel(item, op, runtime)
        feed_items = []
        for i, t in enumerate(self.feeds):
            item = NodeItem(len(self.items), None, f"feed:{t.name}", FEED)
            item.feed_index = i
            item.num_outputs = 1
            self.items.append(item)
            feed_items.append(item)

        # edges
        outs: dict[int, list[list]] = {it.id: [[] for _ in range(max(it.num_outputs, 1))] for it in self.items}
        ctrl: dict[int, list] = {it.id: [] for it in self.items}
        for op in needed:
            dst = by_op[id(op)]
            for slot, t in enumerate(op.inputs):
                if id(t) in fed:
                    src, k = feed_items[fed[id(t)]], 0
                else:
                    src, k = by_op[id(t.op)], t.value_index
                outs[src.id][k].append((dst, slot))
                if dst.kind == MERGE and src.kind == NEXT_ITERATION:
                    dst.merge_back += 1
            for c in op.control_inputs:
                if id(c) in by_op:
                    ctrl[by_op[id(c)].id].append(dst)
            dst.num_inputs = len(op.inputs)
            dst.num_controls = sum(1 for c in op.control_inputs if id(c) in by_op)
            dst.merge_fwd = dst.num_inputs - dst.merge_back
            if dst.kind == MERGE:
                dst.pending_init = 2 * dst.num_controls + 1
            else:
                dst.pending_init = dst.num_inputs + dst.num_controls
        for it in self.items:
            it.out_edges = tuple(tuple(e) for e in outs[it.id])
            it.control_edges = tuple(ctrl[it.id])
        self.uses_blas = any(it.uses_blas for it in self.items if it.op is not None)
        # every matmul small enough that one BLAS thread does it as well (executor/blas.py)
        self.small_blas = self.uses_blas and all(_small_blas(it.op) for it in self.items
                                                 if it.op is not None and it.uses_blas)
        self._assign_frames()
        heavy = [it for it in self.items if it.kind == NORMAL and not it.cheap]
        if len(heavy) == 1 and _never_beside_itself(heavy[0]):
            heavy[0].cheap = True  # nothing heavy can ever run beside it: the pool would only cost
        # a heavy op may go to the worker pool; a plan of cheap ops runs without it (no lock)
        self.needs_pool = bool(heavy) and not heavy[0].cheap
        # fetch positions
        fetch_pos: dict[int, list[list]] = {}
        for pos, t in enumerate(self.fetches):
            if id(t) in fed:
                src, k = feed_items[fed[id(t)]], 0
            else:
                src, k = by_op[id(t.op)], t.value_index
            out_frame = src.frame.parent if src.kind == EXIT else src.frame
            if out_frame is not self.root or src.kind == ENTER:
                raise GraphError(
                    f"cannot fetch {t.name}: it is computed inside while frame {src.frame.name!r}, where it has one "
                    "value per iteration; fetch the loop's outputs (its Exit values) instead")
            fetch_pos.setdefault(src.id, [[] for _ in range(max(src.num_outputs, 1))])[k].append(pos)
            self.fetch_producers.append(src)
        for it in self.items:
            fp = fetch_pos.get(it.id)
            it.fetch_slots = tuple(tuple(x) for x in fp) if fp else ()
            fetched = it.fetch_slots or ((),) * len(it.out_edges)
            it.out_edges = tuple(
                tuple(_data_edge(dst, slot) for dst, slot in edges)
                + tuple((None, -1, -1, TO_FETCH, pos) for pos in fetched[k])
                for k, edges in enumerate(it.out_edges))
            it.control_edges = tuple(
                (dst, dst.local_id, -1, CONTROL_TO_MERGE if dst.kind == MERGE else CONTROL_TO_OP, -1)
                for dst in it.control_edges)
        self.target_items = [by_op[id(op)] for op in self.targets]
        for op in needed:
            if op.type == "Placeholder":
                self.placeholders_needed.append(op)

    def _prune(self, fed: dict) -> list[Operation]:
        """Ops the fetches and targets need, in graph order; fed tensors cut the walk."""
        seen: set[int] = set()
        stack = [t.op for t in self.fetches if id(t) not in fed] + list(self.targets)
        while stack:
            op = stack.pop()
            if id(op) in seen:
                continue
            seen.add(id(op))
            for t in op.inputs:
                if id(t) not in fed:
                    stack.append(t.op)
            stack.extend(op.control_inputs)
        return [op for op in self.graph.get_operations() if id(op) in seen]

    def _set_kernel(self, item: NodeItem, op: Operation, runtime) -> None:
        d = op.op_def
        item.num_outputs = len(op.outputs)
        item.single_output = len(op.outputs) == 1
        item.uses_blas = uses_blas(op)
        item.cheap = d.cost == "cheap" and not item.uses_blas  # a Fused op with a MatMul in it is heavy
        if not item.cheap and item.kind == NORMAL:  # heavy by type, but too small ever to be worth a hop
            item.cost_ns = cost = static_estimate_ns(op)  # (else estimated per run: microseconds for a Fused op)
            item.cheap = cost is not None and cost < POOL_MIN_NS
        if item.kind == NORMAL and (op.type in _GENERATED or function_attrs(d)):
            # (If/While: their functions run whole, and a While ends when the run is stopped)
            k = functional_kernel(op, runtime) if function_attrs(d) else _GENERATED[op.type](op)
            self.stoppable = self.stoppable or op.type == "CompiledLoop" or bool(function_attrs(d))
            item.kernel = kernel_contract.checked(k, op) if kernel_contract.enabled() else k
        elif item.kind == NORMAL:
            args = (runtime,) if d.uses_runtime else ()
            k = None if args or not op.attrs else specialized_kernel(op.type, op.attrs)
            if k is None:
                k = scalar_kernel(op) or d.kernel
                if args or op.attrs:
                    k = functools.partial(k, *args, **op.attrs)
            item.kernel = kernel_contract.checked(k, op) if kernel_contract.enabled() else k
        if item.kind in (SEND, RECV):  # the message's key, less the frame and iteration
            item.kernel = (op.attrs["tensor_name"], op.attrs["send_device"], op.attrs["recv_device"])
            self.has_transport = True
        if item.kind == ENTER:
            item.is_constant_enter = bool(op.attrs.get("is_constant", False))

    def _assign_frames(self) -> None:
        """Each node's frame by graphcore's one rule (graphcore.frames, as validate uses);
        then its slots in that frame."""
        frames = assign_frames([it.op for it in self.items if it.op is not None], fed=self.feeds)
        if frames.problems:
            raise GraphError(frames.problems[0])
        for name, parent in frames.parent.items():  # outer frames first
            self.frames[name] = FrameInfo(name, self.frames[parent],
                                          parallel_iterations=frames.parallel_iterations[name])
        for it in self.items:
            f = self.root if it.op is None else self.frames[frames.frame_of[id(it.op)]]
            if it.kind == ENTER:
                it.child_frame = self.frames[it.op.attrs["frame_name"]]
                it.child_frame.input_count += 1
            it.frame = f
            it.local_id = len(f.nodes)
            f.nodes.append(it)
            it.input_start = f.total_slots
            f.total_slots += 2 if it.kind == MERGE else it.num_inputs  # Merge: value and value_index
            f.pending_template.append(it.pending_init)
            if f is not self.root and it.num_inputs == 0 and it.num_controls == 0:
                raise GraphError(f"op {it.name} in while frame {f.name!r} has no inputs")
            if f is self.root and it.pending_init == 0:
                self.roots.append(it)
            if it.kind == NEXT_ITERATION and f is self.root:
                raise GraphError(f"NextIteration {it.name} is outside any while frame")


def _never_beside_itself(item: NodeItem) -> bool:
    """Does `item` never run twice at once? So in the root frame (it runs once), and in a loop
    of the root frame when its output reaches its own input in the next iteration (a
    recurrence, as an RNN's step: each run waits for the one before). (While the plan is
    built: out_edges hold (consumer, slot) pairs, control_edges consumers.)"""
    frame = item.frame
    if frame.parent is None:
        return True
    if frame.parent.parent is not None:  # (an inner loop: outer iterations may run side by side)
        return False
    seen, stack = set(), [item]
    while stack:
        node = stack.pop()
        for dst in [d for edges in node.out_edges for d, _ in edges] + list(node.control_edges):
            if dst is item:
                return True
            if dst.frame is frame and dst.kind != ENTER and id(dst) not in seen:
                seen.add(id(dst))
                stack.append(dst)
    return False


# ops whose kernel is Python source generated from their attributes, once per plan
_GENERATED = {"Fused": fused_kernel, "CompiledLoop": compiled_loop_kernel}


def _data_edge(dst: NodeItem, index: int) -> tuple:
    """An OutEdge's fields as a plain tuple (see OutEdge)."""
    if dst.kind == MERGE:  # every input of a Merge lands in the same two slots
        return (dst, dst.local_id, dst.input_start, TO_MERGE, index)
    return (dst, dst.local_id, dst.input_start + index, TO_OP, index)


def _small_blas(op) -> bool:
    ns = static_estimate_ns(op)
    return ns is not None and ns <= SMALL_BLAS_NS
