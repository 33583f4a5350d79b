"""Straight-line runs: a plan without control flow, run as one list of kernel calls.

A plan whose nodes are all ops of the root frame (no Switch, Merge, Enter, Exit or
NextIteration, no control edge), stateless, cheap enough to need no worker pool, with no
_Send/_Recv, fires each node exactly once, in an order its data
edges allow. The frame executor would work that order out on every run (tagged nodes,
pending counts, a ready queue: most of a one-op call's cost); here it is worked out
once per plan, and a run is the kernel calls alone (a one-op `@function` call: about
0.5 us of executor time instead of 4).

It keeps the run contract by not making its own errors: a kernel that raises has the
whole run done again by the frame executor, which raises what it always does (its
message, op, frame and type). The ops are stateless, so running them again computes
the same values and meets the same failure. A run with a deadline or a trace takes the
frame executor (Session._execute decides). A compiled loop may run here: without a
deadline, only Ctrl-C ends it, which reaches it here as in the frame executor (a Python
loop gets KeyboardInterrupt, a numba loop the signal's flag: executor/interrupt.py).
"""
from __future__ import annotations

from .plan import FEED, NORMAL, TO_FETCH, ExecutionPlan


class StraightLine:
    """The steps of one plan: per op (arity: 1 or 2 for one or two inputs and one output,
    else 0; kernel; its first two input slots; all of them; its output's slot, or -1 and
    the slots of its outputs; the slots let go after it).

    Slots number every value of the run, the feeds' first; a value is let go after its last
    reader ran, as the frame executor lets an input slot go once its kernel has it."""

    __slots__ = ("steps", "tail", "fetch_slots", "nodes")

    def __init__(self, steps: list, computed: int, fetch_slots: list, nodes: int):
        self.steps = steps
        self.tail = [None] * computed  # the slots after the feeds'
        self.fetch_slots = fetch_slots
        self.nodes = nodes

    def run(self, feed_values: list) -> list | None:
        """The fetched values, or None when a kernel raised (run the plan the usual way)."""
        values = feed_values + self.tail
        try:
            for arity, kernel, a, b, ins, out, outs, free in self.steps:
                if arity == 1:
                    values[out] = kernel(values[a])
                elif arity == 2:
                    values[out] = kernel(values[a], values[b])
                else:
                    result = kernel(*[values[i] for i in ins])
                    if out >= 0:
                        values[out] = result
                    else:
                        for slot, v in zip(outs, result):
                            values[slot] = v
                if free:
                    for slot in free:
                        values[slot] = None
        except Exception:  # noqa: BLE001 (the frame executor raises it, worded as always)
            return None
        return list(map(values.__getitem__, self.fetch_slots))


def straight_line(plan: ExecutionPlan) -> StraightLine | None:
    """The plan as a StraightLine, or None if it is not one (see the module docstring)."""
    if plan.needs_pool or plan.has_transport or plan.placeholders_needed:
        return None
    if plan.graph.library:  # (If/While ops call functions, which may hold effects a second run would repeat)
        return None
    items = plan.items
    slot_of: dict = {}  # (item id, output index) -> slot; the feeds' first, in order
    for item in sorted((item for item in items if item.kind == FEED), key=lambda item: item.feed_index):
        slot_of[(item.id, 0)] = len(slot_of)
    for item in items:
        if item.kind == FEED:
            continue
        op = item.op
        if (item.kind != NORMAL or item.control_edges or item.num_controls or op.op_def.stateful
                or op.op_def.uses_runtime or item.frame is not plan.root):
            return None
        for k in range(item.num_outputs):
            slot_of[(item.id, k)] = len(slot_of)
    # the ops in an order of their data edges (Kahn's, from the nodes with no inputs)
    inputs: dict = {item.id: [None] * item.num_inputs for item in items if item.kind != FEED}
    fetch_slots = [None] * len(plan.fetches)
    for item in items:
        for k, edges in enumerate(item.out_edges):
            for dst, _lid, slot, kind, index in edges:
                if kind == TO_FETCH:
                    fetch_slots[index] = slot_of[(item.id, k)]
                else:
                    inputs[dst.id][index] = slot_of[(item.id, k)]
    if any(s is None for s in fetch_slots) or any(s is None for ins in inputs.values() for s in ins):
        return None
    producer = {slot: item_id for (item_id, _k), slot in slot_of.items()}
    waiting = {i: len({producer[s] for s in ins}) for i, ins in inputs.items()}
    readers: dict = {}
    for i, ins in inputs.items():
        for p in {producer[s] for s in ins}:
            readers.setdefault(p, []).append(i)
    by_id = {item.id: item for item in items}
    ready = [item.id for item in items if item.kind == FEED or waiting[item.id] == 0]
    order = []
    while ready:
        i = ready.pop(0)
        if by_id[i].kind != FEED:
            order.append(by_id[i])
        for r in readers.get(i, ()):
            waiting[r] -= 1
            if waiting[r] == 0:
                ready.append(r)
    if len(order) != len(inputs):
        return None
    last_read: dict = {}
    for pos, item in enumerate(order):
        for s in inputs[item.id]:
            last_read[s] = pos
    kept = set(fetch_slots)
    steps = []
    for pos, item in enumerate(order):
        ins = tuple(inputs[item.id])
        outs = tuple(slot_of[(item.id, k)] for k in range(item.num_outputs))
        free = tuple(sorted({s for s in ins if last_read[s] == pos and s not in kept}))
        arity = len(ins) if len(ins) in (1, 2) and len(outs) == 1 else 0
        steps.append((arity, item.kernel, ins[0] if ins else -1, ins[1] if len(ins) > 1 else -1, ins,
                      outs[0] if len(outs) == 1 else -1, outs, free))
    return StraightLine(steps, len(slot_of) - len(plan.feeds), fetch_slots, len(items))
