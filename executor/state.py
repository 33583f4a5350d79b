"""Per-run state: one FrameState per live frame instance, one IterationState per live
iteration, one TaggedNode per node of an iteration (TensorFlow's vocabulary, from
propagator_state.h)."""
from __future__ import annotations


class TaggedNode:
    """A node of the plan in one iteration of one frame instance, and whether it runs
    dead (TensorFlow's TaggedNode: the tag is `frame.tag(iteration.iter_id)`).

    Each IterationState makes one per node of its frame and keeps them, since a node
    runs at most once per iteration: activating a node sets `is_dead` and puts this
    object on the ready queue, and a reused IterationState reuses its tagged nodes."""

    __slots__ = ("item", "frame", "iteration", "is_dead")

    def __init__(self, item, frame: "FrameState", iteration: "IterationState", is_dead: bool = False):
        self.item = item
        self.frame = frame
        self.iteration = iteration
        self.is_dead = is_dead

    def __repr__(self) -> str:
        dead = " dead" if self.is_dead else ""
        return f"<TaggedNode {self.item.name} {self.frame.tag(self.iteration.iter_id)}{dead}>"


# IterationStates kept per frame (FrameInfo.spare_iterations) for its next instance.
MAX_SPARE_ITERATIONS = 32


class IterationState:
    """Input slots, pending counts and dead counts of one iteration of one frame, and
    the tagged nodes of that iteration."""

    __slots__ = ("iter_id", "inputs", "pending", "dead_count", "outstanding_ops", "outstanding_frame_count",
                 "tagged")

    def __init__(self, iter_id: int, frame: "FrameState"):
        self.restart(iter_id, frame.info)
        self.tagged = [TaggedNode(item, frame, self) for item in frame.info.nodes]

    def restart(self, iter_id: int, info) -> None:
        """Start as iteration `iter_id`: empty slots, the pending counts of no arrival."""
        self.iter_id = iter_id
        self.inputs = [None] * info.total_slots
        self.pending = list(info.pending_template)
        self.dead_count = [0] * len(info.nodes)
        self.outstanding_ops = 0
        self.outstanding_frame_count = 0

    def restart_from(self, iter_id: int, start: "IterationStart") -> None:
        """Start as iteration `iter_id` with the loop invariants arrived already (`start`)."""
        self.iter_id = iter_id
        self.inputs = start.inputs.copy()
        self.pending = start.pending.copy()
        self.dead_count = start.dead_count.copy()
        self.outstanding_ops = 0
        self.outstanding_frame_count = 0


class IterationStart:
    """How every new iteration of a frame instance starts once all its Enters arrived: the
    input slots and pending counts after its loop invariants' arrivals, computed once
    instead of delivering each invariant again per iteration. Only when delivering them
    fires nothing (each invariant's consumers wait for other inputs too) and none is dead
    or has control edges: else (None) the invariants are delivered per iteration."""

    __slots__ = ("inputs", "pending", "dead_count")

    def __init__(self, inputs: list, pending: list, dead_count: list):
        self.inputs = inputs
        self.pending = pending
        self.dead_count = dead_count

    @staticmethod
    def of(frame: "FrameState", to_op: int) -> "IterationStart | None":
        """The start of `frame`'s iterations, or None (`to_op`: plan.TO_OP, the only edge kind
        taken)."""
        info = frame.info
        inputs = [None] * info.total_slots
        pending = list(info.pending_template)
        for item, value, dead in frame.loop_invariants:
            if dead or item.control_edges:
                return None
            for dst, lid, slot, kind, index in item.out_edges[0]:
                if kind != to_op or pending[lid] <= 1:
                    return None
                inputs[slot] = value
                pending[lid] -= 1
        return IterationStart(inputs, pending, [0] * len(info.nodes))


class FrameState:
    """One instance of a while frame (or the root), in one iteration of its parent."""

    __slots__ = ("info", "parent", "parent_iter", "iterations", "iteration_count", "num_outstanding_iterations",
                 "max_parallel_iterations", "num_pending_inputs", "loop_invariants", "next_iteration_roots",
                 "dead_exits", "path", "children", "free_iterations", "max_iterations_seen", "start", "entered")

    def __init__(self, info, parent: "FrameState | None", parent_iter: IterationState | None):
        self.info = info
        self.parent = parent
        self.parent_iter = parent_iter
        if parent is None:
            self.path = "root"
        else:
            self.path = f"{parent.tag(parent_iter.iter_id)}/{info.name}"
        self.iteration_count = 0
        self.num_outstanding_iterations = 1
        self.max_parallel_iterations = max(1, info.parallel_iterations)
        self.num_pending_inputs = info.input_count
        self.loop_invariants: list = []       # (item, value, is_dead) of constant Enters
        self.next_iteration_roots: list = []  # deferred NextIteration outputs: (item, value)
        self.dead_exits: list = []
        self.children: dict = {}              # (frame name, parent iter id) -> FrameState
        self.free_iterations: list = []       # finished IterationStates, for reuse
        self.max_iterations_seen = 1          # most iterations in flight so far (for RunStats)
        self.start: IterationStart | None | bool = False  # (False: not looked at yet)
        self.entered: list | None = None  # (Enter item, value, dead) kept for its loop runner (executor._run_enter)
        self.iterations: dict[int, IterationState] = {0: self._spare_iteration(0)}

    def _spare_iteration(self, iter_id: int) -> IterationState:
        """A new IterationState for `iter_id`: one an ended instance of the same frame left
        (FrameInfo.spare_iterations, its tagged nodes moved to this instance), else a new one.
        An inner loop starts an instance per iteration of its outer loop: making its tagged
        nodes anew each time cost a fifth of a run of collatz."""
        try:
            ist = self.info.spare_iterations.pop()
        except IndexError:
            return IterationState(iter_id, self)
        for node in ist.tagged:
            node.frame = self
        ist.restart(iter_id, self.info)
        return ist

    def give_back_iterations(self) -> None:
        """(The frame instance ended) keep its finished IterationStates, emptied, for the next
        instance of its frame (a few: as many as iterations ran at once)."""
        spare = self.info.spare_iterations
        for ist in self.free_iterations[:MAX_SPARE_ITERATIONS - len(spare)]:
            ist.inputs = None  # (no value of this run kept)
            spare.append(ist)
        self.free_iterations = []

    def restart_root(self) -> None:
        """(The root frame of a finished run: no iteration or child frame left, its iteration
        0 freed) start again as a new run's root frame, keeping that iteration's tagged nodes."""
        ist = self.free_iterations.pop()
        ist.restart(0, self.info)
        self.iterations = {0: ist}
        self.iteration_count = 0
        self.num_outstanding_iterations = 1
        self.max_iterations_seen = 1
        self.start = False

    def tag(self, iter_id: int) -> str:
        """`root`, `root/while:3`, `root/while:3/while/while:0`."""
        return self.path if self.parent is None else f"{self.path}:{iter_id}"

    def new_iteration(self, iter_id: int) -> IterationState:
        """An IterationState for `iter_id`: a finished one of this frame instance made new
        again (its tagged nodes kept), or a new one."""
        if not self.free_iterations:
            return self._spare_iteration(iter_id)
        ist = self.free_iterations.pop()
        ist.restart(iter_id, self.info)
        return ist

    def new_iteration_from(self, iter_id: int, start: IterationStart) -> IterationState:
        """The same, started from `start` (its loop invariants arrived)."""
        if self.free_iterations:
            ist = self.free_iterations.pop()
        else:
            ist = self._spare_iteration(iter_id)
        ist.restart_from(iter_id, start)
        return ist
