"""Per-run state: one FrameState per live frame instance, one IterationState per live
iteration (TensorFlow's vocabulary, from propagator_state.h)."""
from __future__ import annotations


class IterationState:
    """Input slots, pending counts and dead counts of one iteration of one frame."""

    __slots__ = ("iter_id", "inputs", "pending", "dead_count", "outstanding_ops", "outstanding_frame_count")

    def __init__(self, iter_id: int, frame_info):
        self.iter_id = iter_id
        self.inputs = [None] * frame_info.total_slots
        self.pending = list(frame_info.pending_template)
        self.dead_count = [0] * len(frame_info.nodes)
        self.outstanding_ops = 0
        self.outstanding_frame_count = 0


class FrameState:
    """One instance of a while frame (or the root), in one iteration of its parent."""

    __slots__ = ("info", "parent", "parent_iter", "iterations", "iteration_count", "num_outstanding_iterations",
                 "max_parallel_iterations", "num_pending_inputs", "loop_invariants", "next_iter_roots",
                 "dead_exits", "path", "children")

    def __init__(self, info, parent: "FrameState | None", parent_iter: IterationState | None):
        self.info = info
        self.parent = parent
        self.parent_iter = parent_iter
        self.iterations: dict[int, IterationState] = {0: IterationState(0, info)}
        self.iteration_count = 0
        self.num_outstanding_iterations = 1
        self.max_parallel_iterations = max(1, info.parallel_iterations)
        self.num_pending_inputs = info.input_count
        self.loop_invariants: list = []   # (item, value, is_dead)
        self.next_iter_roots: list = []   # deferred NextIteration outputs: (item, value)
        self.dead_exits: list = []
        self.children: dict = {}          # (frame name, parent iter id) -> FrameState
        if parent is None:
            self.path = "root"
        else:
            self.path = f"{parent.tag(parent_iter.iter_id)}/{info.name}"

    def tag(self, iter_id: int) -> str:
        """`root`, `root/while:3`, `root/while:3/while/while:0`."""
        return self.path if self.parent is None else f"{self.path}:{iter_id}"
