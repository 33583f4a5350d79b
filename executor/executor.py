"""The dataflow machine: one ExecutorState per run. The rules of execution (below)
are each written once, in the method named beside them:

  op             fires when                             outputs
  -------------  -------------------------------------  ------------------------------------------
  Switch(d, p)   d and p arrived                        (false, true) both carry d; the one not
                 (_activate_nodes, TO_OP)               chosen by p is dead; dead d -> both dead
                                                        (_run_switch)
  Merge(d1..dn)  first live input (and controls),       (value, value_index); all inputs dead ->
                 or every input dead                    dead (_run_merge)
                 (_activate_nodes, TO_MERGE; a loop
                 Merge counts its Enter input in
                 iteration 0, its back edge after
                 that: _merge_threshold)
  Enter(d, f)    d arrived                              d in frame f (created by its first Enter),
                                                        iteration 0; a constant Enter's value is a
                                                        loop invariant seen by every iteration
                                                        (_run_enter, _increment_iteration)
  Exit(d)        d arrived                              d in the parent frame; a dead Exit is kept
                                                        and only sent on if the frame ends dead
                                                        (_run_exit, _note_dead_exit, _delete_frame)
  NextIteration  d arrived                              d in iteration n+1 (started on demand; at most
                                                        parallel_iterations in flight, later ones
                                                        wait); a dead d is dropped: the loop ends
                                                        (_run_next_iteration, _increment_iteration)
  any other op   all inputs (and controls) arrived      kernel(values); any dead input -> every
                 (_activate_nodes, TO_OP)               output dead and the kernel does not run
                                                        (_run_op)
  _Send(d)       d (or its control input) arrived       none: d, or a dead token, goes to the
                                                        transport keyed by this frame and
                                                        iteration (_run_send)
  _Recv          its control input (a control loop's    the value sent under its key, now or when
                 Merge, in a loop) arrived              it comes; dead if it was sent dead
                                                        (_run_recv, _take_arrivals)

Every node's outputs reach their consumers through one routine, _activate_nodes
(TensorFlow's ActivateNodes): it counts the arrival in the consumer's pending and dead
counts (its edge kinds are the "fires when" column) and queues the consumer's TaggedNode
once it can run. An iteration is done when its outstanding ops and child frames reach
zero (and, for iteration 0, every Enter has arrived: _iteration_done); its state is then
kept for the frame instance's next iteration, and a frame is freed when its last
iteration is (_cleanup, _delete_frame).

The scheduling loop (_process_ready) pops a tagged node and calls its node's handler
(NodeItem.fast): the handler of its kind (ExecutorState._handlers), or, for a node of a
loop that ran often, one generated for it that also runs the consumers it makes ready
(handlers.py; a traced run always uses the generic ones). Once every Enter of a frame
instance arrived, its later iterations start with the loop invariants in place
(state.IterationStart). Cheap ops run inline on the thread that made them ready. With a
pool, heavy ops wait until no cheap op is ready; then one worth several hops goes to the
pool when another is ready beside it or it is work ahead of its loop's oldest iteration
(a matmul only if BLAS is on one thread), and the worker runs what its outputs make ready,
under the run's lock (_run_heavy_op, _run_heavy_ops, _pool_task, cost.py, blas.py).

A dead Exit is run where its dead input arrives instead of being queued (all it does is
note itself: _note_dead_exit); TracedExecutorState queues it, to record its step. A run
with a deadline ends when the loop pops the token that executor/deadline.py's watchdog
puts on the ready queue at that time (_run_deadline).
"""
from __future__ import annotations

import functools
import queue
import threading
from collections import deque

import numpy as np

from graphcore.errors import (CancelledError, DeadlineExceededError, ExecutionError, InvalidArgumentError,
                              execution_error_type)

from . import blas, handlers, loop_runner
from .cost import POOL_MIN_NS, UNLOCK_MIN_NS, estimate_ns
from . import interrupt
from .deadline import WATCHDOG, Deadline
from .interrupt import KernelStopped, RunStop
from .plan import CONTROL_TO_OP, EXIT, FEED, TO_FETCH, TO_MERGE, TO_OP, ExecutionPlan, FrameInfo, NodeItem
from .state import FrameState, IterationStart, IterationState, TaggedNode
from .stats import RunStats

_NO_VALUE = object()

# Not a node of the graph: the watchdog puts a tagged node of this kind on the ready
# queue at the run's deadline, so the loop meets it in its kind dispatch and checks no
# clock per node.
DEADLINE = FEED + 1
_DEADLINE_ITEM = NodeItem(-1, None, "<deadline>", DEADLINE)

class _Aborted(BaseException):  # (not an Exception: kernel errors must not catch it)
    """A pool task meets a run that has ended (failed or interrupted) meanwhile."""


class _DeadlineReached(Exception):
    """Raised by the deadline token's handler; run() turns it into DeadlineExceededError."""


# What a handler returns when its node is not done yet: a heavy op waiting for the ready
# queue to empty (_run_heavy_ops), which runs it here or hands it to the pool.
_ASYNC = True


class ExecutorState:
    """The mutable state of one run of a plan (TracedExecutorState records its steps)."""

    # A dead Exit runs where its dead input arrives instead of being queued (see the docstring).
    inline_dead_exits = True
    # The handler of each kind of node, indexed by NodeItem.kind (set below the class).
    _handlers: tuple = ()

    # What a run without a pool or transport keeps as it is (set per run only when it has
    # them: a run of a small graph is made in a few microseconds).
    transport = None
    deadline = None
    pool = None
    trace: list | None = None
    lock: threading.Lock | None = None
    wakeups: queue.SimpleQueue | None = None
    pool_slots: threading.Semaphore | None = None
    blas_spreads = False
    inflight = 0          # tasks on the pool not finished
    caller = None         # the thread that runs the run (start())
    caller_waits = False  # the calling thread waits on `wakeups` for the pool
    error: BaseException | None = None  # what ended the run on a worker
    aborted = False
    alarm = None
    root: FrameState | None = None
    stopper: RunStop | None = None  # a plan with compiled loops: what tells them the run ended (interrupt.py)
    cancelled = False

    def __init__(self, plan: ExecutionPlan, feed_values: list, pool=None, deadline: Deadline | None = None,
                 transport=None):
        self.plan = plan
        self.feed_values = feed_values
        self.trace = None  # (instance attributes, read per node or iteration: found faster than the class's)
        self.pool = pool
        self.stats = RunStats()
        n = len(plan.fetches)
        self.results = [_NO_VALUE] * n
        self.dead_results = [False] * n
        self.switch_preds: dict[int, bool] = {}
        self.ready: deque[TaggedNode] = deque()
        self.ready_append = self.ready.append  # (for the generated handlers)
        self.heavy_waiting: list = []  # (tagged node, its inputs) of heavy ops, to run once no cheap one is ready
        # One device's part of a partitioned run: _Send/_Recv go through `transport`
        # (executor/distributed/rendezvous.py); a value that arrives later is queued on
        # `arrivals` by the sending thread, and taken by the thread that runs this part.
        self.arrivals: deque = deque()
        if deadline is not None:
            self.deadline = deadline
        # small matmuls on a busy machine: BLAS on one thread for the run (executor/blas.py)
        self.blas_one_thread = plan.small_blas and blas.machine_busy()
        if pool is None and transport is None:
            return
        self.transport = transport
        # With a pool, the calling thread and the pool's tasks all run this run's nodes, one
        # at a time under `lock` (each lets it go while a long kernel runs); so do values
        # from other devices.
        self.lock = threading.Lock()
        self.wakeups = queue.SimpleQueue()
        if pool is not None:
            # Kernels on the pool at once: one fewer than the pool's threads, as the calling
            # thread computes too. A task gives its slot back when its kernel ends.
            self.pool_slots = threading.Semaphore(max(pool.num_threads - 1, 1))
            # A multithreaded BLAS spreads each matmul over the cores: matmuls then run one at
            # a time, inline (executor/blas.py says why).
            self.blas_spreads = plan.uses_blas and not self.blas_one_thread and blas.threads() > 1

    # -- the run ------------------------------------------------------------------
    def run(self) -> list:
        """Run the plan to the end; returns the fetched values (_NO_VALUE where none came)."""
        if self.blas_one_thread:  # small matmuls, busy machine: BLAS on one thread (blas.py)
            with blas.one_thread():
                return self._run()
        return self._run()

    def _run(self) -> list:
        self.start()
        try:
            if self.stopper is not None:
                with interrupt.running(self.stopper):
                    self._process()
            else:
                self._process()
        except (_DeadlineReached, KernelStopped) as e:
            self._abort()
            raise self._stopped_error(e) from None
        except BaseException:
            self._abort()
            raise
        finally:
            self.stop()
        root = self.root
        if not root.iterations and not root.children and self.trace is None:  # done: the next run's
            root.free_iterations[-1].inputs = None  # (no value of this run kept)
            self.plan.free_roots.append(root)
        return self.results

    def _process(self) -> None:
        if self.lock is None:
            self._process_ready()
        else:
            self._run_with_workers()

    def start(self) -> None:
        """Put the root frame's ready nodes on the queue (and arm the deadline)."""
        if self.plan.has_transport and self.transport is None:
            raise ExecutionError("this graph has _Send/_Recv ops (it was partitioned): run it with "
                                 "Session(graph, devices=[...]), which runs each device's part")
        self.caller = threading.get_ident()
        plan = self.plan
        try:  # the root frame of an earlier run of the plan, finished (its tagged nodes kept)
            root = plan.free_roots.pop()
        except IndexError:
            root = FrameState(plan.root, None, None)
        else:
            root.restart_root()
        self.root = root
        root.num_pending_inputs = 0
        it0 = root.iterations[0]
        if self.trace is not None:
            self._trace("frame_created", frame=root.path, iteration=0)
        for item in plan.roots:
            node = it0.tagged[item.local_id]
            node.is_dead = False  # (a reused root frame's node may have run dead)
            self.ready.append(node)
        it0.outstanding_ops = len(plan.roots)
        if plan.stoppable:
            self.stopper = RunStop()
        self.alarm = self._arm_deadline(root, it0) if self.deadline is not None else None

    def pump(self) -> bool:
        """(Parts of a partitioned run taking turns on one thread: executor/distributed/local.py)
        Run what is ready and take the values that arrived meanwhile; True once the run is
        over, False if it waits for values from other parts."""
        with interrupt.running(self.stopper):
            self._process_ready()
            while self.arrivals:
                self._take_arrivals()
                self._process_ready()
        return not self.inflight and not self.ready and not self.heavy_waiting

    def failed(self, e: BaseException) -> BaseException:
        """The run ends with `e`: stop what is still out; the error to raise."""
        self._abort()
        return self._stopped_error(e) if isinstance(e, (_DeadlineReached, KernelStopped)) else e

    def cancel(self) -> None:
        """(From any thread) the run is cancelled (another device failed, or Ctrl-C): it
        ends with CancelledError (or what ended it first) at its next node, like a
        deadline, and a compiled loop running for it stops."""
        self.cancelled = True
        if self.stopper is not None:
            self.stopper.stop(interrupt.CANCELLED)
        self.ready.append(TaggedNode(_DEADLINE_ITEM, self.root, None))
        if self.wakeups is not None:  # in case the thread running it waits for the pool
            self.wakeups.put(None)

    def _stopped_error(self, e: BaseException) -> BaseException:
        """The error of a run that its deadline or a cancellation ended (e: how it was told)."""
        reason = self.stopper.reason if self.stopper is not None and self.stopper.reason else \
            (e.args[0] if e.args else interrupt.DEADLINE)
        where = e.args[1] if isinstance(e, KernelStopped) and len(e.args) > 1 and e.args[1] else None
        if isinstance(e, _DeadlineReached) or reason == interrupt.DEADLINE:
            return self._deadline_error(where)
        return CancelledError("the run was cancelled" + (f" while {where} ran" if where else "") +
                              ": another device failed or the run was interrupted")

    def stop(self) -> None:
        if self.alarm is not None:
            WATCHDOG.cancel(self.alarm)
            self.alarm = None

    def _run_with_workers(self) -> None:
        """The calling thread's part when the pool helps: run ready nodes; when none is left
        but tasks are out, wait until one ends the run (or fails, or leaves work)."""
        lock = self.lock
        lock.acquire()
        try:
            while True:
                self._process_ready()
                if self.error is not None:
                    raise self.error
                if self.arrivals:
                    self._take_arrivals()
                    continue
                if not self.inflight and not self.ready and not self.heavy_waiting:
                    return
                self.caller_waits = True
                lock.release()
                try:
                    self.wakeups.get()
                finally:
                    _relock(lock)
                    self.caller_waits = False
        except _Aborted:  # a task failed while this thread ran a kernel: its error ends the run
            raise self.error from None
        except BaseException:
            self._abort()  # under the lock: the pool's tasks stop at their next step
            raise
        finally:
            lock.release()

    def _abort(self) -> None:
        """The run failed or was interrupted: tasks still out drop their results."""
        self.aborted = True
        self.ready.clear()
        if self.stopper is not None:  # a compiled loop on a pool thread ends too
            self.stopper.stop(interrupt.CANCELLED)

    def _process_ready(self) -> None:
        """Run ready nodes until the queue is empty: pop a tagged node and run its handler,
        which counts the node done (unless it is a heavy op left to wait): its own, generated
        once it has run a few times (handlers.py), or the generic one of its kind; then the
        heavy ops that waited, and again, until nothing is left to run here."""
        ready = self.ready
        popleft = ready.popleft
        nodes = 0
        try:
            while True:  # (not `while ready:`, whose back edge CPython 3.11 never specializes)
                if not ready:
                    if not self.heavy_waiting or self._run_heavy_ops():
                        break
                    continue
                node = popleft()
                nodes += node.item.fast(self, node)  # (the nodes it ran: it and those it ran inline)
        finally:
            self.stats.nodes += nodes

    def _process_ready_generic(self) -> None:
        """_process_ready with the generic handler of each kind (TracedExecutorState's, so
        that every step is recorded)."""
        ready = self.ready
        handlers = self._handlers
        nodes = 0
        try:
            while True:  # (not `while ready:`, whose back edge CPython 3.11 never specializes)
                if not ready:
                    if not self.heavy_waiting or self._run_heavy_ops():
                        break
                    continue
                node = ready.popleft()
                nodes += 1
                if not handlers[node.item.kind](self, node):  # (_ASYNC: not done yet)
                    it = node.iteration  # _node_done, inline
                    n = it.outstanding_ops - 1
                    it.outstanding_ops = n
                    if n == 0 and it.outstanding_frame_count == 0:
                        self._cleanup(node.frame, it.iter_id)
        finally:
            self.stats.nodes += nodes

    def _arm_deadline(self, root: FrameState, it0: IterationState):
        wake = TaggedNode(_DEADLINE_ITEM, root, it0)
        ready, wakeups = self.ready, self.wakeups

        stopper = self.stopper

        def at_deadline():  # on the watchdog thread
            ready.append(wake)
            if stopper is not None:  # a compiled loop that never ends is told
                stopper.stop(interrupt.DEADLINE)
            if wakeups is not None:  # in case the calling thread waits for the pool
                wakeups.put(None)
        return WATCHDOG.arm(self.deadline.when, at_deadline)

    # -- the handlers: one per kind of node ------------------------------------------
    def _run_op(self, node: TaggedNode):
        """Any op but the control-flow primitives: a dead input makes every output dead
        and the kernel does not run; else kernel(values), inline or (a heavy op) maybe on
        the pool."""
        item = node.item
        if node.is_dead:
            self._propagate_op_outputs(node, None)
            return None
        if not item.cheap and self.pool is not None and not (item.uses_blas and self.blas_spreads):
            return self._run_heavy_op(node)
        it = node.iteration
        inputs = it.inputs
        s = item.input_start
        n = item.num_inputs
        kernel = item.kernel  # (`item.kernel(...)` would look the slot up as a method)
        try:
            # Positional arguments: CPython makes the call faster than with *args.
            if n == 2:
                a = inputs[s]
                b = inputs[s + 1]
                inputs[s] = inputs[s + 1] = None
                out = kernel(a, b)
            elif n == 1:
                a = inputs[s]
                inputs[s] = None
                out = kernel(a)
            else:
                out = kernel(*_take_inputs(item, it))
        except Exception as e:  # noqa: BLE001 (becomes an ExecutionError)
            self._kernel_error(node, e)
        if item.single_output and not item.control_edges:  # the common case, without a call
            self._activate_nodes(item, item.out_edges[0], node.frame, it, out, False)
        else:
            self._propagate_op_outputs(node, out)
        return None

    def _run_heavy_op(self, node: TaggedNode):
        """A live op that may be worth another thread (in a run with a pool): it waits until
        no cheap op is ready (_run_heavy_ops), so that the heavy ops ready then can be
        spread. (A matmul does not come here if BLAS spreads it over the cores already.) One
        never worth a hop (cost.py) runs at once on the calling thread, as it would without a
        pool (and is counted done here)."""
        item = node.item
        args = _take_inputs(item, node.iteration)
        cost = item.cost_ns
        if cost is None:  # (shapes not all known statically)
            cost = estimate_ns(item.op, args)
        if cost < POOL_MIN_NS and threading.get_ident() == self.caller:
            self._run_here(node, args, cost)
            self._node_done(node.frame, node.iteration)
            return _ASYNC
        self.heavy_waiting.append((node, args, cost))
        return _ASYNC

    def _run_heavy_ops(self) -> bool:
        """The heavy ops waiting, once no cheap op is ready (as TensorFlow's ScheduleReady).
        Each one worth several hops (executor/cost.py) goes to the pool while it has a slot,
        except one kept for this thread: the first, unless it belongs to a later iteration
        than its loop's oldest one in flight (work ahead of the oldest iteration is off the
        loop's critical path: the work to overlap). The rest run here. A pool thread
        computes only in a slot of the pool (so that the calling thread and the slots are
        all the threads computing): what it gets none for, it leaves to the calling thread,
        and returns True."""
        waiting, self.heavy_waiting = self.heavy_waiting, []
        here = []
        for i, (node, args, cost) in enumerate(waiting):
            if (i or _ahead(node)) and cost >= POOL_MIN_NS and self.pool_slots.acquire(blocking=False):
                self._submit(node, args)
            else:
                here.append((node, args, cost))
        on_pool = threading.get_ident() != self.caller
        for node, args, cost in here:
            if not on_pool or cost < UNLOCK_MIN_NS:
                self._run_here(node, args, cost)
                self._node_done(node.frame, node.iteration)
            elif self.pool_slots.acquire(blocking=False):
                try:
                    self._run_here(node, args, cost)
                finally:
                    self.pool_slots.release()
                self._node_done(node.frame, node.iteration)
            else:
                self.heavy_waiting.append((node, args, cost))
        if on_pool and self.heavy_waiting:
            self._wake_caller()
            return True
        return False

    def _run_here(self, node: TaggedNode, args: tuple, cost: float) -> None:
        """Run a heavy op's kernel on this thread (with the run's lock let go meanwhile if it
        is long and a task on the pool may want it) and send its outputs on."""
        item = node.item
        try:
            if cost >= UNLOCK_MIN_NS and self.inflight:
                out = self._run_unlocked(item.kernel, args)
            else:
                out = item.kernel(*args)
        except Exception as e:  # noqa: BLE001 (becomes an ExecutionError)
            self._kernel_error(node, e)
        self._propagate_op_outputs(node, out)

    def _propagate_op_outputs(self, node: TaggedNode, out) -> None:
        """Send an op's outputs (`out` from its kernel; None if it ran dead) and its control output."""
        item, frame, it, dead = node.item, node.frame, node.iteration, node.is_dead
        if dead:
            for edges in item.out_edges[:item.num_outputs]:
                self._activate_nodes(item, edges, frame, it, None, True)
        elif item.single_output:
            self._activate_nodes(item, item.out_edges[0], frame, it, out, False)
        else:
            for k in range(item.num_outputs):
                self._activate_nodes(item, item.out_edges[k], frame, it, out[k], False)
        if item.control_edges:
            self._activate_nodes(item, item.control_edges, frame, it, None, dead)

    def _run_switch(self, node: TaggedNode) -> None:
        """Switch(d, p): both outputs carry d; the one p did not choose is dead."""
        item, frame, it = node.item, node.frame, node.iteration
        out_false, out_true = item.out_edges
        if node.is_dead:
            self._activate_nodes(item, out_false, frame, it, None, True)
            self._activate_nodes(item, out_true, frame, it, None, True)
        else:
            inputs = it.inputs
            s = item.input_start
            value, pred = inputs[s], bool(inputs[s + 1])
            inputs[s] = inputs[s + 1] = None
            if frame.parent is None:
                self.switch_preds[item.id] = pred  # for the message if a fetch ends up dead
            self._activate_nodes(item, out_false, frame, it, value, pred)
            self._activate_nodes(item, out_true, frame, it, value, not pred)
        if item.control_edges:
            self._activate_nodes(item, item.control_edges, frame, it, None, node.is_dead)

    def _run_merge(self, node: TaggedNode) -> None:
        """Merge: (the live input, its index), or dead if every input was dead."""
        item, frame, it = node.item, node.frame, node.iteration
        out_value, out_index = item.out_edges
        if node.is_dead:
            self._activate_nodes(item, out_value, frame, it, None, True)
            if out_index:
                self._activate_nodes(item, out_index, frame, it, None, True)
        else:
            inputs = it.inputs
            s = item.input_start
            value = inputs[s]
            inputs[s] = None
            self._activate_nodes(item, out_value, frame, it, value, False)
            if out_index:
                self._activate_nodes(item, out_index, frame, it, np.int32(inputs[s + 1]), False)
        if item.control_edges:
            self._activate_nodes(item, item.control_edges, frame, it, None, node.is_dead)

    def _run_enter(self, node: TaggedNode) -> None:
        """Enter(d, f): d in iteration 0 of child frame f (every iteration, if constant). A
        frame with a loop runner keeps its Enters until the last one, then runs whole
        (_run_loop)."""
        item, frame, it = node.item, node.frame, node.iteration
        s = item.input_start
        value = it.inputs[s]
        it.inputs[s] = None
        dead = node.is_dead
        child = frame.children.get((item.child_frame.name, it.iter_id))
        if child is None:
            child = self._new_frame(item.child_frame, frame, it)
        if child.entered is not None:
            child.entered.append((item, value, dead))
            child.num_pending_inputs -= 1
            if child.num_pending_inputs == 0:
                self._run_loop(child)
            return
        self._enter(item, child, value, dead)
        child.num_pending_inputs -= 1
        if child.num_pending_inputs == 0:  # iteration 0 may have been waiting for this Enter alone
            first = min(child.iterations) if child.iterations else None
            if first is not None and child.iterations[first].outstanding_ops == 0:
                self._cleanup(child, first)

    def _enter(self, item: NodeItem, child: FrameState, value, dead: bool) -> None:
        """An Enter's value (or dead token) into frame instance `child`."""
        if item.is_constant_enter:
            child.loop_invariants.append((item, value, dead))
            targets = list(child.iterations.values())
        else:
            targets = (child.iterations[0],)
        for ist in targets:
            self._activate_nodes(item, item.out_edges[0], child, ist, value, dead)
            if item.control_edges:
                self._activate_nodes(item, item.control_edges, child, ist, None, dead)

    def _run_loop(self, child: FrameState) -> None:
        """Every Enter of `child` arrived: its loop runner runs it (executor/loop_runner.py),
        or, an Enter being dead, they are delivered now as they would have been."""
        entered, child.entered = child.entered, None
        if child.info.runner.run(self, child, entered):
            return
        for item, value, dead in entered:
            self._enter(item, child, value, dead)
        first = min(child.iterations) if child.iterations else None
        if first is not None and child.iterations[first].outstanding_ops == 0:
            self._cleanup(child, first)

    def _run_exit(self, node: TaggedNode) -> None:
        """Exit(d): d in the parent frame; a dead d is kept (_note_dead_exit)."""
        item, frame, it = node.item, node.frame, node.iteration
        s = item.input_start
        value = it.inputs[s]
        it.inputs[s] = None
        if node.is_dead:
            _note_dead_exit(item, frame, it)
            return
        parent, parent_iter = frame.parent, frame.parent_iter
        self._activate_nodes(item, item.out_edges[0], parent, parent_iter, value, False)
        if item.control_edges:
            self._activate_nodes(item, item.control_edges, parent, parent_iter, None, False)

    def _run_next_iteration(self, node: TaggedNode) -> None:
        """NextIteration(d): d in iteration n+1, started now unless parallel_iterations are
        in flight (then deferred until one ends); a dead d ends the loop: nothing is sent."""
        item, frame, it = node.item, node.frame, node.iteration
        s = item.input_start
        value = it.inputs[s]
        it.inputs[s] = None
        if node.is_dead:
            return
        n = it.iter_id + 1
        if n <= frame.iteration_count:
            next_it = frame.iterations[n]
        elif frame.num_outstanding_iterations < frame.max_parallel_iterations:
            next_it = self._increment_iteration(frame)
        else:
            frame.next_iteration_roots.append((item, value))
            if self.trace is not None:
                self._trace("deferred", node=item.name, frame=frame.tag(n))
            return
        self._activate_nodes(item, item.out_edges[0], frame, next_it, value, False)

    def _run_feed(self, node: TaggedNode) -> None:
        """A fed tensor: its value, in the root frame."""
        item = node.item
        self._activate_nodes(item, item.out_edges[0], node.frame, node.iteration,
                             self.feed_values[item.feed_index], False)

    def _run_deadline(self, node: TaggedNode) -> None:
        """The watchdog's token, or cancel()'s: end the run (run() raises
        DeadlineExceededError, or CancelledError)."""
        if self.cancelled:
            raise KernelStopped(interrupt.CANCELLED)
        raise _DeadlineReached

    def _run_send(self, node: TaggedNode) -> None:
        """_Send: hand the value (none for a control edge; dead if the node is dead) to the
        transport, keyed by the edge and this frame and iteration."""
        item, it = node.item, node.iteration
        value = None
        if item.num_inputs:
            s = item.input_start
            value = it.inputs[s]
            it.inputs[s] = None
        self.transport.send(item.kernel, node.frame.tag(it.iter_id), value, node.is_dead)
        self.stats.messages += 1
        if item.control_edges:
            self._activate_nodes(item, item.control_edges, node.frame, it, None, node.is_dead)

    def _run_recv(self, node: TaggedNode):
        """_Recv: the value sent under its key in this frame and iteration, now if it is
        there, else when it arrives (the node stays out until then; no thread blocks)."""
        item, it = node.item, node.iteration
        got = self.transport.recv(item.kernel, node.frame.tag(it.iter_id), functools.partial(self._arrived, node))
        if got is None:
            self.inflight += 1
            return _ASYNC
        self._deliver(node, *got)
        return None

    def _arrived(self, node: TaggedNode, value, dead: bool, error: BaseException | None) -> None:
        """(On the sending thread) a value for a waiting _Recv: queue it for this part's thread."""
        self.arrivals.append((node, value, dead, error))
        self.wakeups.put(None)

    def _take_arrivals(self) -> None:
        """(Under the lock) deliver the values that arrived for waiting _Recvs; a cancelled
        receive ends the run with the transport's error."""
        while self.arrivals:
            node, value, dead, error = self.arrivals.popleft()
            self.inflight -= 1
            if error is not None:
                raise error
            self._deliver(node, value, dead)
            self._node_done(node.frame, node.iteration)

    def _deliver(self, node: TaggedNode, value, dead: bool) -> None:
        node.is_dead = node.is_dead or dead
        self._propagate_op_outputs(node, None if node.is_dead else value)

    def _deadline_error(self, where: str | None = None) -> DeadlineExceededError:
        """The error of a run past its deadline, naming the innermost live frame and its
        iteration (and `where`, the compiled loop that was running, if one was)."""
        frame, depth, stack = self.root, 0, [(self.root, 0)]
        while stack:
            f, d = stack.pop()
            if d > depth:
                frame, depth = f, d
            stack.extend((c, d + 1) for c in f.children.values())
        n = frame.iteration_count
        place = "in the root frame" if frame.parent is None else \
            f"in frame {frame.info.name} at iteration {n} ({frame.tag(n)})"
        if where:
            place += f", in {where}"
        return DeadlineExceededError(
            f"the run exceeded its deadline of {self.deadline.seconds:g} s after {self.stats.nodes} nodes, {place}; "
            "does the loop's condition ever become false?", frame=frame.tag(n), iteration=n,
            timeout=self.deadline.seconds)

    # -- kernels on the pool, and errors ---------------------------------------------
    def _submit(self, node: TaggedNode, args: tuple) -> None:
        self.inflight += 1
        self.stats.async_ops += 1
        self.pool.submit(lambda: self._pool_task(node, args))

    def _pool_task(self, node: TaggedNode, args: tuple) -> None:
        """On a worker: run the kernel, then (under the lock) send its outputs on and run
        the nodes they made ready, as the calling thread does. Errors end the run there."""
        try:
            with interrupt.running(self.stopper):  # a kernel that runs a graph or loop itself can be stopped
                out, ok = node.item.kernel(*args), True
        except BaseException as e:  # noqa: BLE001 (reported to the calling thread)
            out, ok = e, False
        self.pool_slots.release()
        with self.lock, interrupt.running(self.stopper):
            nodes = self.stats.nodes
            try:
                if not self.aborted:
                    if not ok:
                        self._kernel_error(node, out)
                    self._propagate_op_outputs(node, out)
                    self._node_done(node.frame, node.iteration)
                    self._process_ready()
            except _Aborted:
                pass
            except BaseException as e:  # noqa: BLE001 (raised by the calling thread)
                if self.error is None:
                    self.error = e
                self._abort()
            finally:
                self.stats.pool_nodes += 1 + self.stats.nodes - nodes
                self.inflight -= 1
            if self.aborted or not self.inflight:
                self._wake_caller()

    def _wake_caller(self) -> None:
        """If the calling thread waits for the pool (_run_with_workers), wake it (under the lock)."""
        if self.caller_waits:
            self.caller_waits = False
            self.wakeups.put(None)

    def _run_unlocked(self, kernel, args: tuple):
        """kernel(*args) with the run's lock let go meanwhile (a run with a pool), so other
        threads schedule; the calling thread is woken if it waits and nodes are ready."""
        lock = self.lock
        if lock is None:
            return kernel(*args)
        if self.ready:
            self._wake_caller()
        lock.release()
        try:
            return kernel(*args)
        finally:
            _relock(lock)
            if self.aborted:  # while it ran, the run failed elsewhere or was interrupted
                raise _Aborted

    def _kernel_error(self, node: TaggedNode, e: BaseException):
        item, frame, it = node.item, node.frame, node.iteration
        op = getattr(e, "step_op", None) or item.op  # (an If/While's kernel: its function's op that failed)
        name, op_type, loc = getattr(e, "fused_step", None) or (op.name, op.type, op.location())
        cls = InvalidArgumentError if isinstance(e, InvalidArgumentError) else ExecutionError
        where = "root frame" if frame.parent is None else f"frame {frame.tag(it.iter_id)} (iteration {it.iter_id})"
        msg = (f"while executing {name} ({op_type}) in {where}, created at {loc}: "
               f"{type(e).__name__}: {e}")
        cls = execution_error_type(cls, e)  # also an IndexError, ValueError... as Python's would be
        err = cls(msg, op=op, frame=frame.tag(it.iter_id), iteration=it.iter_id, original=e)
        raise err from e

    # -- propagation: activate_nodes ---------------------------------------------------
    def _activate_nodes(self, item: NodeItem, edges: tuple, frame: FrameState, it: IterationState, value,
                        is_dead: bool) -> None:
        """Deliver one output of `item` (`value`, or a dead token) along `edges` (OutEdges) into
        iteration `it` of `frame`: count the arrival at each consumer and put the consumer
        on the ready queue once it can run. The firing rules of the docstring's table:

          TO_OP             pending -1, dead count +1 if dead; fires at pending 0, dead if
                            any input was dead
          TO_MERGE          a live input: the first one is taken and clears the low bit of
                            pending (2 per control input + 1); fires at pending 0, live.
                            A dead input: dead count +1; fires dead when every input
                            counted for this iteration is dead and no control is pending
          CONTROL_TO_OP     as TO_OP, without a value
          CONTROL_TO_MERGE  pending -2; fires live at 0, or dead at 1 if enough inputs died
          TO_FETCH          the run's result
        """
        pending = it.pending
        for dst, lid, slot, kind, index in edges:
            if kind == TO_OP:
                p = pending[lid] - 1
                pending[lid] = p
                if is_dead:
                    it.dead_count[lid] += 1
                    if p == 0 and dst.kind == EXIT and self.inline_dead_exits:
                        self.stats.nodes += 1  # it runs here, instead of being queued
                        _note_dead_exit(dst, frame, it)
                        continue
                else:
                    it.inputs[slot] = value
                if p:
                    continue
                dead = it.dead_count[lid] > 0
            elif kind == TO_MERGE:
                if is_dead:
                    dc = it.dead_count[lid] + 1
                    it.dead_count[lid] = dc
                    if pending[lid] != 1 or dc != _merge_threshold(dst, it):
                        continue
                    dead = True
                else:
                    p = pending[lid]
                    if not p & 1:
                        continue  # a live input was taken already
                    it.inputs[slot] = value
                    it.inputs[slot + 1] = index
                    p -= 1
                    pending[lid] = p
                    if p:
                        continue  # control inputs still to come
                    dead = False
            elif kind == TO_FETCH:
                if is_dead:
                    self.dead_results[index] = True
                else:
                    self.results[index] = value
                continue
            elif kind == CONTROL_TO_OP:
                p = pending[lid] - 1
                pending[lid] = p
                if is_dead:
                    it.dead_count[lid] += 1
                if p:
                    continue
                dead = it.dead_count[lid] > 0
            else:  # CONTROL_TO_MERGE
                p = pending[lid] - 2
                pending[lid] = p
                if p == 0:
                    dead = False
                elif p == 1 and it.dead_count[lid] == _merge_threshold(dst, it):
                    dead = True
                else:
                    continue
            node = it.tagged[lid]
            node.is_dead = dead
            self.ready.append(node)
            it.outstanding_ops += 1

    # -- frames and iterations ---------------------------------------------------------
    def _new_frame(self, info: FrameInfo, parent: FrameState, parent_iter: IterationState) -> FrameState:
        child = FrameState(info, parent, parent_iter)
        if info.runner is not False and self.lock is None and self.trace is None:  # (loop_runner.py: when)
            if loop_runner.runner_of(self.plan, info):
                child.entered = []
        parent.children[(info.name, parent_iter.iter_id)] = child
        parent_iter.outstanding_frame_count += 1
        self.stats.frames += 1
        self.stats.note_iterations(info.name, 1)
        if self.trace is not None:
            self._trace("frame_created", frame=child.path, iteration=0)
        return child

    def _increment_iteration(self, frame: FrameState) -> IterationState:
        """Start the frame's next iteration: it sees the loop invariants and takes the
        deferred NextIteration values (the seed: a new iteration forgets kept dead Exits)."""
        n = frame.iteration_count = frame.iteration_count + 1
        start = frame.start
        if start and frame.free_iterations:  # the invariants' arrivals, computed once (state.IterationStart)
            ist = frame.free_iterations.pop()  # (FrameState.new_iteration_from, inline)
            ist.iter_id = n
            ist.inputs = start.inputs.copy()
            ist.pending = start.pending.copy()
            ist.dead_count = start.dead_count.copy()
            ist.outstanding_ops = ist.outstanding_frame_count = 0
        elif start:
            ist = frame.new_iteration_from(n, start)
        else:
            ist = frame.new_iteration(n)
        frame.iterations[n] = ist
        in_flight = frame.num_outstanding_iterations = frame.num_outstanding_iterations + 1
        if frame.dead_exits:
            frame.dead_exits.clear()
        if in_flight > frame.max_iterations_seen:
            frame.max_iterations_seen = in_flight
            self.stats.note_iterations(frame.info.name, in_flight)
        if self.trace is not None:
            self._trace("iteration_created", frame=frame.tag(n), iteration=n, in_flight=in_flight)
        if not start:
            for item, value, dead in frame.loop_invariants:
                self._activate_nodes(item, item.out_edges[0], frame, ist, value, dead)
                if item.control_edges:
                    self._activate_nodes(item, item.control_edges, frame, ist, None, dead)
            if start is False and frame.num_pending_inputs == 0 and self.trace is None:
                # every Enter arrived: the invariants will be the same in every later iteration
                frame.start = IterationStart.of(frame, TO_OP)
        if frame.next_iteration_roots:
            roots, frame.next_iteration_roots = frame.next_iteration_roots, []
            for item, value in roots:
                self._activate_nodes(item, item.out_edges[0], frame, ist, value, False)
        return ist

    def _node_done(self, frame: FrameState, it: IterationState) -> None:
        it.outstanding_ops -= 1
        if it.outstanding_ops == 0 and it.outstanding_frame_count == 0:
            self._cleanup(frame, it.iter_id)

    def _cleanup(self, frame: FrameState, iter_id: int) -> None:
        """Free finished iterations in order (starting deferred ones); free the frame when
        its last iteration is gone."""
        iterations = frame.iterations
        while True:
            ist = iterations.get(iter_id)
            if ist is None or ist.outstanding_ops or ist.outstanding_frame_count:
                break
            # _iteration_done: iteration 0 waits for every Enter, a later one for the one before
            if (frame.num_pending_inputs if iter_id == 0 else (iter_id - 1) in iterations):
                break
            del iterations[iter_id]
            frame.free_iterations.append(ist)
            frame.num_outstanding_iterations -= 1
            if self.trace is not None:
                self._trace("iteration_freed", frame=frame.tag(iter_id), iteration=iter_id)
            if frame.next_iteration_roots:
                self._increment_iteration(frame)
            iter_id += 1
        if frame.num_pending_inputs == 0 and frame.num_outstanding_iterations == 0 and not iterations:
            self._delete_frame(frame)

    def _delete_frame(self, frame: FrameState) -> None:
        """A finished frame sends its kept dead Exits to its parent and is freed."""
        parent, pit = frame.parent, frame.parent_iter
        if self.trace is not None:
            self._trace("frame_freed", frame=frame.path)
        if parent is None:
            return
        for item in frame.dead_exits:
            self._activate_nodes(item, item.out_edges[0], parent, pit, None, True)
            self._activate_nodes(item, item.control_edges, parent, pit, None, True)
        frame.dead_exits = []
        frame.info.iterations_run += frame.iteration_count + 1
        frame.give_back_iterations()
        del parent.children[(frame.info.name, pit.iter_id)]
        pit.outstanding_frame_count -= 1
        if pit.outstanding_ops == 0 and pit.outstanding_frame_count == 0:
            self._cleanup(parent, pit.iter_id)

    def _trace(self, event: str, **info) -> None:
        if self.trace is not None:
            info["event"] = event
            self.trace.append(info)


ExecutorState._handlers = (ExecutorState._run_op, ExecutorState._run_switch, ExecutorState._run_merge,
                           ExecutorState._run_enter, ExecutorState._run_exit, ExecutorState._run_next_iteration,
                           ExecutorState._run_feed, ExecutorState._run_deadline, ExecutorState._run_send,
                           ExecutorState._run_recv)


handlers.GENERIC = ExecutorState._handlers


class TracedExecutorState(ExecutorState):
    """A run that appends one dict per step to `trace`: each node run ("run"), each live value
    it sends ("output": its port and the value itself), each change of a consumer's pending or
    dead count ("pending"), and frame and iteration events.
    It queues dead Exits like any node, so that their steps are recorded too."""

    inline_dead_exits = False

    def __init__(self, plan: ExecutionPlan, feed_values: list, trace: list, pool=None,
                 deadline: Deadline | None = None):
        super().__init__(plan, feed_values, pool=pool, deadline=deadline)
        self.trace = trace
        self.step = 0

    _process_ready = ExecutorState._process_ready_generic

    def _activate_nodes(self, item, edges, frame, it, value, is_dead) -> None:
        if not is_dead and edges is not item.control_edges and value is not None:
            port = next(k for k, e in enumerate(item.out_edges) if e is edges)
            self._trace("output", node=item.name, port=port, value=value)
        before = (list(it.pending), list(it.dead_count))
        super()._activate_nodes(item, edges, frame, it, value, is_dead)
        nodes = frame.info.nodes
        for lid, (p0, d0, p1, d1) in enumerate(zip(before[0], before[1], it.pending, it.dead_count)):
            if p0 != p1 or d0 != d1:
                self._trace("pending", node=nodes[lid].name, source=item.name, frame=frame.tag(it.iter_id),
                            iteration=it.iter_id, pending=(p0, p1), dead_count=(d0, d1))

    def _trace_run(self, node: TaggedNode) -> None:
        if node.item.kind != DEADLINE:
            self.step += 1
            it = node.iteration
            self._trace("run", step=self.step, node=node.item.name,
                        type=node.item.op.type if node.item.op else "Feed",
                        frame=node.frame.tag(it.iter_id), iteration=it.iter_id, dead=node.is_dead)


def _traced(handler):
    def run_traced(state: TracedExecutorState, node: TaggedNode):
        state._trace_run(node)
        return handler(state, node)
    return run_traced


TracedExecutorState._handlers = tuple(_traced(h) for h in ExecutorState._handlers)


def _merge_threshold(dst: NodeItem, it: IterationState) -> int:
    """How many dead inputs make this Merge fire dead in this iteration: in a loop, its
    Enter inputs count in iteration 0 and its NextIteration inputs after that."""
    if dst.merge_back == 0:
        return dst.num_inputs
    return dst.merge_fwd if it.iter_id == 0 else dst.merge_back


def _ahead(node: TaggedNode) -> bool:
    """The node belongs to a later iteration than its frame's oldest one in flight."""
    frame = node.frame
    return node.iteration.iter_id > frame.iteration_count - frame.num_outstanding_iterations + 1


def _relock(lock: threading.Lock) -> None:
    """Take `lock` again even if Ctrl-C comes meanwhile (then raise KeyboardInterrupt after):
    the code around relies on holding it when it unwinds."""
    interrupted = None
    while True:
        try:
            lock.acquire()
            break
        except KeyboardInterrupt as e:
            interrupted = e
    if interrupted is not None:
        raise interrupted


def _take_inputs(item: NodeItem, it: IterationState) -> tuple:
    """The op's input values in this iteration, as a tuple; their slots are emptied."""
    inputs = it.inputs
    s = item.input_start
    n = item.num_inputs
    args = tuple(inputs[s:s + n])
    inputs[s:s + n] = _NONES[:n] if n <= len(_NONES) else [None] * n
    return args


_NONES = (None,) * 16


def _note_dead_exit(item: NodeItem, frame: FrameState, it: IterationState) -> None:
    """A dead Exit is sent on only if its frame ends with it (_delete_frame): an Exit of
    the last iteration started so far is kept; a later iteration forgets the kept ones."""
    if it.iter_id == frame.iteration_count:
        frame.dead_exits.append(item)


def _iteration_done(frame: FrameState, ist: IterationState) -> bool:
    """No op of the iteration is left to run, no child frame is alive, and (iteration 0)
    every Enter has arrived or (later ones) the iteration before is done."""
    if ist.outstanding_ops or ist.outstanding_frame_count:
        return False
    if ist.iter_id == 0:
        return frame.num_pending_inputs == 0
    return (ist.iter_id - 1) not in frame.iterations


handlers.HELPERS["note_dead_exit"] = _note_dead_exit
