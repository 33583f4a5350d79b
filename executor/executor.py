"""The dataflow machine: one ExecutorState per run, driven by a scheduling loop on the
calling thread. The rules of execution (seed 002) are written once, here:

  op             fires when                         outputs
  -------------  ---------------------------------  ------------------------------------------
  Switch(d, p)   d and p arrived                    (false, true) both carry d; the one not
                                                    chosen by p is dead; dead d -> both dead
  Merge(d1..dn)  first live input (and controls),   (value, value_index); all inputs dead ->
                 or every input dead                dead. A loop Merge counts its Enter input
                                                    in iteration 0, its back edge after that
  Enter(d, f)    d arrived                          d in frame f (created by its first Enter),
                                                    iteration 0; a constant Enter's value is a
                                                    loop invariant seen by every iteration
  Exit(d)        d arrived                          d in the parent frame; a dead Exit is kept
                                                    and only sent on if the frame ends dead
  NextIteration  d arrived                          d in iteration n+1 (started on demand; at most
                                                    parallel_iterations in flight, later ones
                                                    wait); a dead d is dropped: the loop ends
  any other op   all inputs (and controls) arrived  kernel(values); any dead input -> every
                                                    output dead and the kernel does not run

An iteration is done when its outstanding ops and child frames reach zero (and, for
iteration 0, every Enter has arrived); its state is freed then, and a frame is freed
when its last iteration is. Cheap ops run inline on the scheduling thread; large
numpy ops go to the worker pool while scheduling goes on.

For speed, run() handles every kind in one loop and delivers each node's last output
itself (the activation rules of _emit, inlined); _emit delivers the other outputs and
the rare cases. Untraced, a dead Exit is run where its dead input arrives instead of
being queued (all it does is note itself in its frame's dead exits).
A run with a deadline ends when the loop pops the token that executor/deadline.py's
watchdog puts on the ready queue at that time.
"""
from __future__ import annotations

import queue
from collections import deque

import numpy as np

from graphcore.errors import DeadlineExceededError, ExecutionError, InvalidArgumentError

from .deadline import WATCHDOG, Deadline
from .plan import ENTER, EXIT, FEED, MERGE, NEXT_ITERATION, NORMAL, SWITCH, ExecutionPlan, NodeItem
from .state import FrameState, IterationState
from .stats import RunStats

# Inputs with at least this many elements in all make a heavy op worth a worker thread.
POOL_THRESHOLD_ELEMENTS = 16384

_NO_VALUE = object()

# Not a node of the graph: the watchdog puts this token on the ready queue at the run's
# deadline, so the loop meets it in its kind dispatch and checks no clock per node.
DEADLINE = FEED + 1
_DEADLINE_ITEM = NodeItem(-1, None, "<deadline>", DEADLINE)


class ExecutorState:
    """The mutable state of one run of a plan."""

    def __init__(self, plan: ExecutionPlan, feed_values: list, pool=None, trace: list | None = None,
                 deadline: Deadline | None = None):
        self.plan = plan
        self.deadline = deadline
        self.feed_values = feed_values
        self.pool = pool
        self.trace = trace
        self.stats = RunStats()
        self.results = [_NO_VALUE] * len(plan.fetches)
        self.dead_results = [False] * len(plan.fetches)
        self.switch_preds: dict[int, bool] = {}
        self.ready: deque = deque()
        self.step = 0
        self.root: FrameState | None = None
        if trace is not None:
            # Tracing only: record pending-count changes. Instance attributes shadow the
            # methods, so an untraced run pays nothing for this.
            self._emit = self._emit_traced
            self._emit_control = self._emit_control_traced

    # -- the scheduling loop ------------------------------------------------
    def run(self) -> list:
        plan = self.plan
        root = self.root = FrameState(plan.root, None, None)
        root.num_pending_inputs = 0
        it0 = root.iterations[0]
        ready = self.ready
        tracing = self.trace is not None
        if tracing:
            self._trace("frame_created", frame=root.path, iteration=0)
        for item in plan.roots:
            ready.append((item, root, it0, False))
        it0.outstanding_ops = len(plan.roots)
        pool = self.pool
        completions = queue.SimpleQueue() if pool is not None else None
        inflight = 0
        alarm = wake_token = None
        if self.deadline is not None:
            wake_token = (_DEADLINE_ITEM, root, it0, False)

            def wake():  # on the watchdog thread
                ready.append(wake_token)
                if completions is not None:
                    completions.put((wake_token, True, None))
            alarm = WATCHDOG.arm(self.deadline.when, wake)
        nodes = 0
        emit = self._emit
        append = ready.append
        popleft = ready.popleft
        try:
            while True:
                while ready:
                    tagged = popleft()
                    item, frame, it, dead = tagged
                    nodes += 1
                    if tracing:
                        self._trace_run(tagged)
                    kind = item.kind
                    inputs = it.inputs
                    s = item.input_start
                    # Each kind leaves its last output for the inline delivery below:
                    # `edges` get (`value`, `vdead`) in (`to_frame`, `to_it`); earlier outputs
                    # go through _emit. `ctrl` are the control edges to signal afterwards.
                    to_frame = frame
                    to_it = it
                    ctrl = item.control_edges
                    if kind == NORMAL:
                        k = item.num_outputs - 1
                        if dead:
                            for j in range(k):
                                emit(item, j, frame, it, None, True)
                            value = None
                            vdead = True
                        else:
                            n = item.num_inputs
                            if n == 1:
                                args = (inputs[s],)
                                inputs[s] = None
                            elif n == 2:
                                args = (inputs[s], inputs[s + 1])
                                inputs[s] = inputs[s + 1] = None
                            else:
                                args = inputs[s:s + n]
                                inputs[s:s + n] = [None] * n
                            if pool is not None and not item.cheap and \
                                    sum(getattr(a, "size", 1) for a in args) >= POOL_THRESHOLD_ELEMENTS:
                                pool.submit(item.kernel, args, tagged, completions)
                                inflight += 1
                                self.stats.async_ops += 1
                                continue
                            try:
                                value = item.kernel(*args)
                            except Exception as e:  # noqa: BLE001 (becomes an ExecutionError)
                                self._kernel_error(tagged, e)
                            if k > 0:
                                for j in range(k):
                                    emit(item, j, frame, it, value[j], False)
                                value = value[k]
                            vdead = False
                    elif kind == SWITCH:
                        k = 1
                        if dead:
                            emit(item, 0, frame, it, None, True)
                            value = None
                            vdead = True
                        else:
                            value, pred = inputs[s], bool(inputs[s + 1])
                            inputs[s] = inputs[s + 1] = None
                            if frame.parent is None:
                                self.switch_preds[item.id] = pred
                            emit(item, 0, frame, it, value, pred)
                            vdead = not pred
                    elif kind == MERGE:
                        k = 0
                        vdead = dead
                        if dead:
                            value = None
                        else:
                            value = inputs[s]
                            inputs[s] = None
                        if item.out_edges[1] or item.fetch_slots:
                            emit(item, 0, frame, it, value, dead)
                            k = 1
                            if not dead:
                                value = np.int32(inputs[s + 1])
                    elif kind == NEXT_ITERATION:
                        k = 0
                        ctrl = ()
                        value = inputs[s]
                        inputs[s] = None
                        vdead = False
                        n = it.iter_id + 1
                        if dead:
                            k = -1  # a dead NextIteration ends the loop: nothing to deliver
                        elif n <= frame.iteration_count:
                            to_it = frame.iterations[n]
                        elif frame.num_outstanding_iterations < frame.max_parallel_iterations:
                            self._increment_iteration(frame)
                            to_it = frame.iterations[n]
                        else:
                            frame.next_iter_roots.append((item, value))
                            if tracing:
                                self._trace("deferred", node=item.name, frame=frame.tag(n))
                            k = -1
                    elif kind == EXIT:
                        k = 0
                        value = inputs[s]
                        inputs[s] = None
                        vdead = False
                        if dead:
                            if it.iter_id == frame.iteration_count:
                                frame.dead_exits.append(item)
                            k = -1  # sent on only if the frame ends dead (_delete_frame)
                            ctrl = ()
                        else:
                            to_frame, to_it = frame.parent, frame.parent_iter
                    elif kind == ENTER:
                        k = -1
                        ctrl = ()
                        value = inputs[s]
                        inputs[s] = None
                        self._enter(item, frame, it, value, dead)
                    elif kind == FEED:
                        k = 0
                        value = self.feed_values[item.feed_index]
                        vdead = False
                    else:  # DEADLINE
                        self._deadline_exceeded(nodes)
                    if k >= 0:
                        if item.fetch_slots and to_frame.parent is None:
                            self._record(item, k, value, vdead)
                        edges = item.out_edges[k]
                        if edges:
                            # activate_nodes, inline: the same rules as _emit
                            if tracing:
                                before = (list(to_it.pending), list(to_it.dead_count))
                            pending = to_it.pending
                            dead_count = to_it.dead_count
                            slots = to_it.inputs
                            activated = 0
                            for dst, lid, pos, is_merge, slot in edges:
                                if is_merge:
                                    if vdead:
                                        dc = dead_count[lid] + 1
                                        dead_count[lid] = dc
                                        if pending[lid] == 1 and dc == _merge_threshold(dst, to_it):
                                            append((dst, to_frame, to_it, True))
                                            activated += 1
                                    else:
                                        p = pending[lid]
                                        if p & 1:
                                            slots[pos] = value
                                            slots[pos + 1] = slot
                                            p -= 1
                                            pending[lid] = p
                                            if p == 0:
                                                append((dst, to_frame, to_it, False))
                                                activated += 1
                                else:
                                    p = pending[lid] - 1
                                    pending[lid] = p
                                    if vdead:
                                        dead_count[lid] += 1
                                        if p == 0 and dst.kind == EXIT and not tracing:
                                            nodes += 1  # a dead Exit runs right here (see _emit)
                                            if to_it.iter_id == to_frame.iteration_count:
                                                to_frame.dead_exits.append(dst)
                                            continue
                                    else:
                                        slots[pos] = value
                                    if p == 0:
                                        append((dst, to_frame, to_it, dead_count[lid] > 0))
                                        activated += 1
                            if activated:
                                to_it.outstanding_ops += activated
                            if tracing:
                                self._trace_pending(item, to_frame, to_it, before)
                    if ctrl:
                        self._emit_control(item, to_frame, to_it, dead)
                    c = it.outstanding_ops - 1
                    it.outstanding_ops = c
                    if c == 0 and it.outstanding_frame_count == 0:
                        self._cleanup(frame, it.iter_id)
                    if inflight and not completions.empty():
                        tagged, ok, out = completions.get_nowait()
                        if tagged is not wake_token:  # (that one waits in `ready` too)
                            inflight -= 1
                            self._finish_normal(tagged, out if ok else self._kernel_error(tagged, out))
                if not inflight:
                    break
                tagged, ok, out = completions.get()
                if tagged is not wake_token:
                    inflight -= 1
                    self._finish_normal(tagged, out if ok else self._kernel_error(tagged, out))
        except BaseException:
            self.ready.clear()
            raise
        finally:
            if alarm is not None:
                WATCHDOG.cancel(alarm)
            self.stats.nodes += nodes
        return self.results

    def _deadline_exceeded(self, nodes: int):
        """Raise DeadlineExceededError naming the innermost live frame and its iteration."""
        frame, depth, stack = self.root, 0, [(self.root, 0)]
        while stack:
            f, d = stack.pop()
            if d > depth:
                frame, depth = f, d
            stack.extend((c, d + 1) for c in f.children.values())
        n = frame.iteration_count
        where = "in the root frame" if frame.parent is None else \
            f"in frame {frame.info.name} at iteration {n} ({frame.tag(n)})"
        raise DeadlineExceededError(
            f"the run exceeded its deadline of {self.deadline.seconds:g} s after {nodes} nodes, {where}; "
            "does the loop's condition ever become false?", frame=frame.tag(n), iteration=n,
            timeout=self.deadline.seconds)

    # -- one node ------------------------------------------------------------
    def _kernel_error(self, tagged, e: BaseException):
        item, frame, it, _ = tagged
        op = item.op
        loc = op.location()
        cls = InvalidArgumentError if isinstance(e, InvalidArgumentError) else ExecutionError
        where = "root frame" if frame.parent is None else f"frame {frame.tag(it.iter_id)} (iteration {it.iter_id})"
        msg = (f"while executing {op.name} ({op.type}) in {where}, created at {loc}: "
               f"{type(e).__name__}: {e}")
        err = cls(msg, op=op, frame=frame.tag(it.iter_id), iteration=it.iter_id, original=e)
        raise err from e

    def _finish_normal(self, tagged, out) -> None:
        item, frame, it, dead = tagged
        if dead:
            for k in range(item.num_outputs):
                self._emit(item, k, frame, it, None, True)
        elif item.single_output:
            self._emit(item, 0, frame, it, out, False)
        else:
            for k in range(item.num_outputs):
                self._emit(item, k, frame, it, out[k], False)
        if item.control_edges:
            self._emit_control(item, frame, it, dead)
        self._node_done(frame, it)

    # -- propagation ----------------------------------------------------------
    def _emit(self, item, k: int, frame: FrameState, it: IterationState, value, dead: bool) -> None:
        """Deliver output `k` of `item` to its consumers in (frame, it): activate_nodes.
        Each edge is (dst, dst local id, dst input slot position, dst is a Merge, input index)."""
        if item.fetch_slots and frame.parent is None:
            self._record(item, k, value, dead)
        edges = item.out_edges[k]
        if not edges:
            return
        pending = it.pending
        dead_count = it.dead_count
        inputs = it.inputs
        ready = self.ready
        for dst, lid, pos, is_merge, slot in edges:
            if is_merge:
                if dead:
                    dc = dead_count[lid] + 1
                    dead_count[lid] = dc
                    if pending[lid] == 1 and dc == _merge_threshold(dst, it):
                        ready.append((dst, frame, it, True))
                        it.outstanding_ops += 1
                else:
                    p = pending[lid]
                    if p & 1:
                        inputs[pos] = value
                        inputs[pos + 1] = slot
                        p -= 1
                        pending[lid] = p
                        if p == 0:
                            ready.append((dst, frame, it, False))
                            it.outstanding_ops += 1
            else:
                p = pending[lid] - 1
                pending[lid] = p
                if dead:
                    dead_count[lid] += 1
                    if p == 0 and dst.kind == EXIT and self.trace is None:
                        # A dead Exit only notes itself in its frame's dead exits (sent on if
                        # the frame ends dead), so it runs right here instead of being queued.
                        # Traced runs queue it, to record its step.
                        self.stats.nodes += 1
                        if it.iter_id == frame.iteration_count:
                            frame.dead_exits.append(dst)
                        continue
                else:
                    inputs[pos] = value
                if p == 0:
                    ready.append((dst, frame, it, dead_count[lid] > 0))
                    it.outstanding_ops += 1

    def _record(self, item, k: int, value, dead: bool) -> None:
        for pos in item.fetch_slots[k]:
            if dead:
                self.dead_results[pos] = True
            else:
                self.results[pos] = value

    def _emit_control(self, item, frame: FrameState, it: IterationState, dead: bool) -> None:
        pending = it.pending
        dead_count = it.dead_count
        for dst in item.control_edges:
            lid = dst.local_id
            if dst.kind == MERGE:
                p = pending[lid] - 2
                pending[lid] = p
                if p == 0:
                    self.ready.append((dst, frame, it, False))
                    it.outstanding_ops += 1
                elif p == 1 and dead_count[lid] == _merge_threshold(dst, it):
                    self.ready.append((dst, frame, it, True))
                    it.outstanding_ops += 1
            else:
                p = pending[lid] - 1
                pending[lid] = p
                if dead:
                    dead_count[lid] += 1
                if p == 0:
                    self.ready.append((dst, frame, it, dead_count[lid] > 0))
                    it.outstanding_ops += 1

    # -- frames and iterations ---------------------------------------------------
    def _enter(self, item, frame: FrameState, it: IterationState, value, dead: bool) -> None:
        info = item.child_frame
        key = (info.name, it.iter_id)
        child = frame.children.get(key)
        if child is None:
            child = FrameState(info, frame, it)
            frame.children[key] = child
            it.outstanding_frame_count += 1
            self.stats.frames += 1
            self.stats.note_iterations(info.name, 1)
            if self.trace is not None:
                self._trace("frame_created", frame=child.path, iteration=0)
        if item.is_constant_enter:
            child.loop_invariants.append((item, value, dead))
            for ist in list(child.iterations.values()):
                self._emit(item, 0, child, ist, value, dead)
                self._emit_control(item, child, ist, dead)
        else:
            ist = child.iterations[0]
            self._emit(item, 0, child, ist, value, dead)
            self._emit_control(item, child, ist, dead)
        child.num_pending_inputs -= 1
        if child.num_pending_inputs == 0:
            first = min(child.iterations) if child.iterations else None
            if first is not None and child.iterations[first].outstanding_ops == 0:
                self._cleanup(child, first)

    def _increment_iteration(self, frame: FrameState) -> None:
        frame.iteration_count += 1
        n = frame.iteration_count
        ist = IterationState(n, frame.info)
        frame.iterations[n] = ist
        frame.num_outstanding_iterations += 1
        frame.dead_exits.clear()
        self.stats.note_iterations(frame.info.name, frame.num_outstanding_iterations)
        if self.trace is not None:
            self._trace("iteration_created", frame=frame.tag(n), iteration=n,
                        in_flight=frame.num_outstanding_iterations)
        for item, value, dead in frame.loop_invariants:
            self._emit(item, 0, frame, ist, value, dead)
            self._emit_control(item, frame, ist, dead)
        if frame.next_iter_roots:
            roots, frame.next_iter_roots = frame.next_iter_roots, []
            for item, value in roots:
                self._emit(item, 0, frame, ist, value, False)

    def _node_done(self, frame: FrameState, it: IterationState) -> None:
        it.outstanding_ops -= 1
        if it.outstanding_ops == 0 and it.outstanding_frame_count == 0:
            self._cleanup(frame, it.iter_id)

    def _iteration_done(self, frame: FrameState, ist: IterationState) -> bool:
        if ist.outstanding_ops or ist.outstanding_frame_count:
            return False
        if ist.iter_id == 0:
            return frame.num_pending_inputs == 0
        return (ist.iter_id - 1) not in frame.iterations

    def _cleanup(self, frame: FrameState, iter_id: int) -> None:
        """Free finished iterations in order (starting deferred ones); free the frame when
        its last iteration is gone."""
        iterations = frame.iterations
        while True:
            ist = iterations.get(iter_id)
            if ist is None or not self._iteration_done(frame, ist):
                break
            del iterations[iter_id]
            frame.num_outstanding_iterations -= 1
            if self.trace is not None:
                self._trace("iteration_freed", frame=frame.tag(iter_id), iteration=iter_id)
            if frame.next_iter_roots:
                self._increment_iteration(frame)
            iter_id += 1
        if frame.num_pending_inputs == 0 and frame.num_outstanding_iterations == 0 and not iterations:
            self._delete_frame(frame)

    def _delete_frame(self, frame: FrameState) -> None:
        parent, pit = frame.parent, frame.parent_iter
        if self.trace is not None:
            self._trace("frame_freed", frame=frame.path)
        if parent is None:
            return
        for item in frame.dead_exits:
            self._emit(item, 0, parent, pit, None, True)
            self._emit_control(item, parent, pit, True)
        frame.dead_exits = []
        del parent.children[(frame.info.name, pit.iter_id)]
        pit.outstanding_frame_count -= 1
        if pit.outstanding_ops == 0 and pit.outstanding_frame_count == 0:
            self._cleanup(parent, pit.iter_id)

    # -- tracing ----------------------------------------------------------------
    def _trace_run(self, tagged) -> None:
        item, frame, it, dead = tagged
        if item.kind == DEADLINE:
            return
        self.step += 1
        self._trace("run", step=self.step, node=item.name, type=item.op.type if item.op else "Feed",
                    frame=frame.tag(it.iter_id), iteration=it.iter_id, dead=dead)

    def _trace(self, event: str, **info) -> None:
        if self.trace is not None:
            info["event"] = event
            self.trace.append(info)

    def _emit_traced(self, item, k, frame, it, value, dead) -> None:
        before = (list(it.pending), list(it.dead_count))
        ExecutorState._emit(self, item, k, frame, it, value, dead)
        self._trace_pending(item, frame, it, before)

    def _emit_control_traced(self, item, frame, it, dead) -> None:
        before = (list(it.pending), list(it.dead_count))
        ExecutorState._emit_control(self, item, frame, it, dead)
        self._trace_pending(item, frame, it, before)

    def _trace_pending(self, item, frame, it, before) -> None:
        """One "pending" event per consumer whose pending or dead count `item` changed."""
        nodes = frame.info.nodes
        for lid, (p0, d0, p1, d1) in enumerate(zip(before[0], before[1], it.pending, it.dead_count)):
            if p0 != p1 or d0 != d1:
                self._trace("pending", node=nodes[lid].name, source=item.name, frame=frame.tag(it.iter_id),
                            iteration=it.iter_id, pending=(p0, p1), dead_count=(d0, d1))


def _merge_threshold(dst, it: IterationState) -> int:
    """How many dead inputs make this Merge fire dead in this iteration."""
    if dst.merge_back == 0:
        return dst.num_inputs
    return dst.merge_fwd if it.iter_id == 0 else dst.merge_back
