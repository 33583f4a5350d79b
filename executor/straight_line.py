"""Straight-line runs: a plan without control flow, run as one list of kernel calls.

A plan whose nodes are all ops of the root frame (no Switch, Merge, Enter, Exit or
NextIteration, no control edge), stateless, cheap enough to need no worker pool, with no
_Send/_Recv, fires each node exactly once, in an order its data edges allow. The frame
executor would work that order out on every run (tagged nodes, pending counts, a ready
queue: most of a one-op call's cost); here it is worked out once per plan, and a run is
the kernel calls alone (a one-op `@function` call: about 0.5 us of executor time instead
of 4). So is a plan whose only control flow is while loops of the root frame that a loop
runner can run whole (executor/loop_runner.py): each loop is one step, from its Enters'
values to its Exits', once its frame is due its runner (RUNNER_AFTER iterations run by the
frame executor, which runs the plan until then). Such a plan whose matmuls are all small
runs with BLAS on one thread on a busy machine, as the frame executor runs it (blas.py).

It keeps the run contract by not making its own errors: a kernel that raises has the
whole run done again by the frame executor, which raises what it always does (its
message, op, frame and type). The ops are stateless, so running them again computes
the same values and meets the same failure. A run with a deadline or a trace takes the
frame executor (Session._execute decides). A compiled loop may run here: without a
deadline, only Ctrl-C ends it, which reaches it here as in the frame executor (a Python
loop gets KeyboardInterrupt, a numba loop the signal's flag: executor/interrupt.py).
"""
from __future__ import annotations

from . import blas, loop_runner
from .plan import ENTER, EXIT, FEED, NORMAL, TO_FETCH, ExecutionPlan
from .stats import RunStats


class StraightLine:
    """The steps of one plan: per op (arity: 1 or 2 for one or two inputs and one output,
    else 0; kernel; its first two input slots; all of them; its output's slot, or -1 and
    the slots of its outputs; the slots let go after it); a loop is a step of arity 0 whose
    kernel is its _LoopStep.

    Slots number every value of the run, the feeds' first; a value is let go after its last
    reader ran, as the frame executor lets an input slot go once its kernel has it. `stats`
    are what the frame executor's RunStats would say of the last run."""

    __slots__ = ("steps", "tail", "fetch_slots", "nodes", "loops", "stats", "small_blas")

    def __init__(self, steps: list, computed: int, fetch_slots: list, nodes: int, loops: list, small_blas: bool):
        self.steps = steps
        self.tail = [None] * computed  # the slots after the feeds'
        self.fetch_slots = fetch_slots
        self.nodes = nodes  # (the root frame's: its loops' count per iteration)
        self.loops = loops
        self.stats = RunStats()
        self.stats.nodes = nodes
        # loops of small matmuls: on a busy machine BLAS on one thread, as the frame executor runs them (blas.py)
        self.small_blas = small_blas

    def run(self, feed_values: list) -> list | None:
        """The fetched values, or None when a kernel raised or a loop has no runner yet (run
        the plan the usual way)."""
        if self.small_blas and blas.machine_busy():
            with blas.one_thread():
                return self._run(feed_values)
        return self._run(feed_values)

    def _run(self, feed_values: list) -> list | None:
        loops = self.loops
        if loops:
            for loop in loops:
                if not loop_runner.runner_of(loop.plan, loop.info):
                    return None
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
        if loops:
            self.stats = stats = RunStats()
            stats.nodes = self.nodes + sum(values[loop.count_slot] * loop.n_nodes for loop in loops)
            stats.frames = len(loops)
            for loop in loops:
                stats.note_iterations(loop.info.name, 1)
        return list(map(values.__getitem__, self.fetch_slots))


class _LoopStep:
    """A while frame of the root run whole by its runner: the values of its Enters (in
    `enters`' order) in, its Exits' values (in `exits`' order) out, then the number of
    iterations it ran (into `count_slot`, for the run's stats)."""

    __slots__ = ("plan", "info", "enters", "exits", "n_nodes", "count_slot", "runner", "order", "exit_order")

    def __init__(self, plan: ExecutionPlan, info, enters: list, exits: list):
        self.plan = plan
        self.info = info
        self.enters = enters
        self.exits = exits
        self.n_nodes = len(info.nodes)
        self.count_slot = -1
        self.runner = None  # the runner `order` and `exit_order` are for
        self.order: list = []
        self.exit_order: list = []

    def __call__(self, *values):
        runner = self.info.runner
        if runner is not self.runner:  # its loop's parameters: the loop variables', then the invariants'
            n_vars = len(runner.var_enters)
            at = {e.id: (runner.var_enters[e.id] if e.id in runner.var_enters
                         else n_vars + runner.invariant_enters[e.id][0]) for e in self.enters}
            self.order = sorted(range(len(self.enters)), key=lambda k: at[self.enters[k].id])
            position = {x.id: k for k, x in enumerate(runner.exits)}
            self.exit_order = [position[x.id] for x in self.exits]
            self.runner = runner
        _done, i, out = runner.loop(None, None, (), 0, 0, *[values[k] for k in self.order])
        return [out[k] for k in self.exit_order] + [i + 1]


class LoopsDue:
    """A plan with while loops of the root frame: its StraightLine, made once every loop is
    due its runner (loop_runner.runner_of: after RUNNER_AFTER iterations on the frame
    executor), so that a function's first call does not pay for looking at its loops; until
    then, and for good if a loop has no runner or the plan is not straight-line, `run` gives
    None (the frame executor runs the plan)."""

    __slots__ = ("plan", "frames", "line", "stats")

    def __init__(self, plan: ExecutionPlan, frames: list):
        self.plan = plan
        self.frames = frames
        self.line = None  # (False: not straight-line)
        self.stats = None

    def run(self, feed_values: list) -> list | None:
        line = self.line
        if line is None:
            if not all(loop_runner.runner_of(self.plan, info) for info in self.frames):
                return None
            line = self.line = _straight_line(self.plan) or False
        if line is False:
            return None
        results = line.run(feed_values)
        self.stats = line.stats
        return results


def straight_line(plan: ExecutionPlan) -> StraightLine | LoopsDue | None:
    """The plan as a StraightLine (a LoopsDue if it has while loops), or None if it is not
    one (see the module docstring)."""
    if plan.needs_pool or plan.has_transport or plan.placeholders_needed:
        return None
    if plan.graph.library:  # (If/While ops call functions, which may hold effects a second run would repeat)
        return None
    frames = [info for info in plan.frames.values() if info.parent is not None]
    if frames:
        return LoopsDue(plan, frames) if all(info.parent is plan.root for info in frames) else None
    return _straight_line(plan)


def _straight_line(plan: ExecutionPlan) -> StraightLine | None:
    items = plan.items
    loops: dict = {}  # frame name -> its _LoopStep
    for name, info in plan.frames.items():
        if info.parent is None:
            continue
        if info.parent is not plan.root or loop_runner.why_not(plan, info) is not None:
            return None
        loops[name] = _LoopStep(plan, info, [it for it in items if it.kind == ENTER and it.child_frame is info],
                                [it for it in info.nodes if it.kind == EXIT])
    slot_of: dict = {}  # (item id, output index) -> slot; the feeds' first, in order
    for item in sorted((item for item in items if item.kind == FEED), key=lambda item: item.feed_index):
        slot_of[(item.id, 0)] = len(slot_of)
    inputs: dict = {}  # unit (an op's item id, a loop's frame name) -> its input slots
    unit_of: dict = {}  # item id -> the unit whose value it is (an Exit's: its loop's)
    for item in items:
        if item.kind == FEED:
            continue
        if item.frame is not plan.root:  # a node of a loop: its Exits' values are the loop's
            if item.kind == EXIT:
                if item.control_edges:
                    return None
                slot_of[(item.id, 0)] = len(slot_of)
                unit_of[item.id] = item.frame.name
            continue
        if item.num_controls or item.control_edges:
            return None
        if item.kind == ENTER:
            continue
        op = item.op
        if item.kind != NORMAL or op.op_def.stateful or op.op_def.uses_runtime:
            return None
        inputs[item.id] = [None] * item.num_inputs
        unit_of[item.id] = item.id
        for k in range(item.num_outputs):
            slot_of[(item.id, k)] = len(slot_of)
    for name, loop in loops.items():
        inputs[name] = [None] * len(loop.enters)
        loop.count_slot = slot_of[("iterations", name)] = len(slot_of)
    enter_at = {e.id: (name, k) for name, loop in loops.items() for k, e in enumerate(loop.enters)}
    fetch_slots = [None] * len(plan.fetches)
    for item in items:
        if (item.id, 0) not in slot_of and not (item.kind == NORMAL and item.frame is plan.root):
            continue  # (an Enter, a node inside a loop: no value of the root's)
        for k, edges in enumerate(item.out_edges):
            for dst, _lid, slot, kind, index in edges:
                if kind == TO_FETCH:
                    fetch_slots[index] = slot_of[(item.id, k)]
                elif dst.kind == ENTER:
                    unit, pos = enter_at[dst.id]
                    inputs[unit][pos] = slot_of[(item.id, k)]
                else:
                    inputs[dst.id][index] = slot_of[(item.id, k)]
    if any(s is None for s in fetch_slots) or any(s is None for ins in inputs.values() for s in ins):
        return None
    producer = {slot: unit_of.get(item_id) for (item_id, _k), slot in slot_of.items()}  # (a feed's, a count's: None)
    waiting = {u: len({producer[s] for s in ins} - {None}) for u, ins in inputs.items()}
    readers: dict = {}
    for u, ins in inputs.items():
        for p in {producer[s] for s in ins} - {None}:
            readers.setdefault(p, []).append(u)
    ready = [u for u in inputs if waiting[u] == 0]
    order = []
    while ready:
        u = ready.pop(0)
        order.append(u)
        for r in readers.get(u, ()):
            waiting[r] -= 1
            if waiting[r] == 0:
                ready.append(r)
    if len(order) != len(inputs):
        return None
    last_read: dict = {}
    for pos, u in enumerate(order):
        for s in inputs[u]:
            last_read[s] = pos
    kept = set(fetch_slots)
    by_id = {item.id: item for item in items}
    steps = []
    for pos, u in enumerate(order):
        ins = tuple(inputs[u])
        free = tuple(sorted({s for s in ins if last_read[s] == pos and s not in kept}))
        if u in loops:
            loop = loops[u]
            steps.append((0, loop, -1, -1, ins, -1, tuple(slot_of[(x.id, 0)] for x in loop.exits) + (loop.count_slot,),
                          free))
            continue
        item = by_id[u]
        outs = tuple(slot_of[(item.id, k)] for k in range(item.num_outputs))
        arity = len(ins) if len(ins) in (1, 2) and len(outs) == 1 else 0
        steps.append((arity, item.kernel, ins[0] if ins else -1, ins[1] if len(ins) > 1 else -1, ins,
                      outs[0] if len(outs) == 1 else -1, outs, free))
    root_nodes = sum(1 for item in items if item.frame is plan.root)
    return StraightLine(steps, len(slot_of) - len(plan.feeds), fetch_slots, root_nodes, list(loops.values()),
                        plan.small_blas and bool(loops))
