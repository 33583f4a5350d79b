"""What every pass shares: the fetches (which a pass may replace by an equal tensor),
the ops that must stay, the small analyses passes ask about ops and tensors, and the
worklist: which ops the running pass needs to look at.

The worklist. A pass's first run looks at every op. When it runs again (after another pass
changed the graph) it looks only at the ops a rewrite touched since its own last run began
(`walk`): rewired, created, or that gained or lost a reader or a control edge, since what
constant folding, loop-invariant motion and control-flow simplification decide about an op
depends only on the op, the types of its inputs' producers and its own readers. Arithmetic
looks at patterns two ops deep (`-(-x)`, `(a + b) + c`, `a*b + a*c`), so it also looks at the
readers of a touched op and at the ops waiting for it (Pass.readers_too). Rewrites go through
`replace`, `erase` and `touch`, which log what they touch (and, during a run, add its
neighbourhood to the ops still to visit, as a full sweep would have looked at them after the
change). A pass that leaves an op alone for a reason far from it (the op may be dead, a pivot
is missing, a dead region is not yet simple) names it with `later`: its next run looks again.
A later run does not walk the graph to find those ops (`walk_types`): it takes them from the
worklist in the graph's order (the numbers `Operation._order` the graph keeps growing along its
order), so it costs as many steps as there are ops near a change.
"""
from __future__ import annotations

from heapq import heapify, heappop, heappush
from itertools import compress

import numpy as np

from .. import ops as _ops  # noqa: F401 (registers the op types the sets below are made of)
from ..graph import Graph, Operation, Tensor
from ..registry import op_types

# the v1 primitives (and LoopCond): their dead-token rules are not an ordinary op's (their
# define_op blocks say control_flow=True)
CONTROL_FLOW = op_types(control_flow=True)
# ops no value-level pass touches: inputs, effects, state, loop machinery, list handles
UNTOUCHABLE = CONTROL_FLOW | {"Placeholder", "NoOp", "VarHandleOp"}


class PassState:
    """The graph being optimized and the tensors / ops the caller fetches from it."""

    def __init__(self, graph: Graph, fetches):
        self.graph = graph
        self.fetches = list(fetches)
        self.anchors = anchor_ops(graph)
        # the ops the running pass looks at (None: all). Sets and tables of ops hold the ops
        # themselves, not their id()s: an Operation hashes by identity, and id() is a call
        # (with an audit hook check) that costs several times a hash.
        self.visit: set[Operation] | None = None
        self.readers_too = False  # the running pass looks at the readers of a changed op too
        self.log: list[Operation] = []  # every op a rewrite touched, in order (see the module docstring)
        self.retry: list[Operation] = []  # ops the running pass left for its next run to look at again
        self.cache: dict = {}  # what passes keep between their runs (per pass, under its name)
        self.running = ""  # the name of the pass running now
        self.leftovers: list = []  # (pass, ops it left unused for the next erase): see erase_later
        self.leftover_counts: dict[str, int] = {}
        self._dead_memo: dict | None = None  # op -> may be dead (see may_be_dead)
        self._dead_version = self._run_version = graph.version
        self._walking: list | None = None  # [heap, types, excluding, made, current order] of walk_types
        self._sx: tuple | None = None  # (the Switches and Exits, the checkpoint they were listed at)

    # -- the worklist ------------------------------------------------------------
    def walk(self, ops=None):
        """The ops (default: the graph's, in order) the running pass looks at: all of them, or
        in a later run those near a change (checked when reached, so an op a rewrite of this run
        touches further on is looked at, as in a full sweep)."""
        ops = self.graph.get_operations() if ops is None else ops
        visit = self.visit
        if visit is None:
            return ops
        # (all in C: compress asks visit about each op only when it gets there)
        return compress(ops, map(visit.__contains__, ops))

    def walk_types(self, types, excluding: bool = False):
        """`walk(of_types(ops, types))` (with `excluding`, `not_of_types`) over the graph's ops as
        they are now: in a later run, the ops of the worklist of those types, taken in the
        graph's order from a heap on their `_order`, without a walk of the graph; an op a
        rewrite of this run touches is pushed if it comes after the op being looked at (as a
        full sweep checks an op's place in the worklist when it gets there). Ops made during the
        run are not looked at (they were not in the graph's order when the run began), nor are
        ops erased before they are reached (the passes that walk this way skip those anyway)."""
        visit = self.visit
        if visit is None:
            ops = self.graph.get_operations()
            return not_of_types(ops, types) if excluding else of_types(ops, types)
        return self._walk_heap(visit, types, excluding)

    def _walk_heap(self, visit, types, excluding):
        graph = self.graph
        by_name = graph.ops_by_name
        # (an op erased since it was touched is passed over when popped; its stale number may
        # equal a live op's, which the unique serial then orders: ops are never compared)
        heap = [(op.order, op.serial, op) for op in visit if (op.type in types) is not excluding]
        heapify(heap)
        state = self._walking = [heap, types, excluding, graph.checkpoint(), float("-inf")]
        renumbered, now = graph.renumbered, None
        try:
            while heap:
                if graph.renumbered != renumbered:  # every op numbered anew: so are the waiting ones
                    renumbered = graph.renumbered
                    heap[:] = [(op.order, op.serial, op) for _, _, op in heap if by_name.get(op.name) is op]
                    heapify(heap)
                    if now is not None and by_name.get(now.name) is now:
                        state[4] = now.order
                order, _, now = heappop(heap)
                if order <= state[4] or by_name.get(now.name) is not now:
                    continue  # (pushed twice, or erased meanwhile)
                state[4] = order
                yield now
        finally:
            self._walking = None

    def _push(self, ops) -> None:
        """Ops added to the worklist during a walk_types: those still ahead go on its heap."""
        heap, types, excluding, made, current = self._walking
        by_name = self.graph.ops_by_name
        for op in ops:
            if (op.order > current and op.serial < made and (op.type in types) is not excluding
                    and by_name.get(op.name) is op):
                heappush(heap, (op.order, op.serial, op))

    def touch(self, *ops: Operation) -> None:
        """Log ops a rewrite changed (or gave or took a reader, a control edge)."""
        self.log.extend(ops)
        visit = self.visit
        if visit is not None:
            if self.readers_too:
                if self._walking is not None:
                    near = set()
                    for op in ops:
                        spread(op, near)
                    near -= visit
                    visit |= near
                    self._push(near)
                    return
                for op in ops:
                    spread(op, visit)
            else:
                if self._walking is not None:
                    self._push([op for op in ops if op not in visit])
                visit.update(ops)

    def later(self, op: Operation) -> None:
        """The running pass left `op` alone for a reason a change far from it may lift: its next
        run looks at `op` again."""
        self.retry.append(op)

    def erase_later(self, ops) -> None:
        """Leave `ops` (unused now) for the next erase of many ops (pruning's, or the manager's
        before the passes that run last): each erase walks the whole graph and every loop's
        lists, and passes skip unused ops meanwhile. Only for ops in a while loop's body, which
        pruning would otherwise keep with their loop."""
        self.leftovers.append((self.running, list(ops)))

    def take_leftovers(self) -> list[Operation]:
        """The ops passes left to erase (`erase_later`) that are still unused, and forget
        them; `self.leftover_counts` says how many each pass left."""
        out, counts = [], {}
        for name, ops in self.leftovers:
            for op in ops:
                if op in self.graph and not is_used(op):
                    out.append(op)
                    counts[name] = counts.get(name, 0) + 1
        self.leftovers, self.leftover_counts = [], counts
        return out

    def erase(self, ops, checked: bool = False) -> list[Operation]:
        """`graph.erase_ops(ops)`, logging the producers that lost a reader or a waiter.
        `checked`: the caller knows every user of the ops is among them (erase_ops'
        check_users=False)."""
        removed = self.graph.erase_ops(ops, check_users=not checked)
        self.touch(*[t.op for op in removed for t in op.inputs], *[c for op in removed for c in op.control_inputs])
        return removed

    # -- what must stay ----------------------------------------------------------
    def protected(self) -> set[Operation]:
        """The ops that are fetched (their tensors or themselves), fed (placeholders) or
        anchors of a control-flow context (see `anchor_ops`)."""
        out = {f.op if isinstance(f, Tensor) else f for f in self.fetches}
        out.update(self.anchors)
        return out

    def may_be_dead(self, op: Operation) -> bool:
        """True if `op` is in `may_be_dead(graph)`, worked out for `op`'s ancestors only (the
        few a folding candidate has) and remembered for the rest of the pass run; a run that
        begins after the graph changed works it out again."""
        memo = self._dead_memo
        if memo is None or self._dead_version != self._run_version:
            memo = self._dead_memo = {}
            self._dead_version = self._run_version
            self._root_live = _root_always_live(self.graph, self._switches_and_exits())
        if op.ctx is None and self._root_live:
            return False
        hit = memo.get(op)
        if hit is not None:
            return hit
        stack, busy = [op], set()
        while stack:
            cur = stack[-1]
            if cur in memo:
                stack.pop()
                continue
            deps = _deadness_inputs(cur)
            if cur not in busy:
                busy.add(cur)
                todo = [d for d in deps if d not in memo and d not in busy]
                if todo:
                    stack.extend(todo)
                    continue
            # its inputs are known (one still being worked out closes a cycle, which only a
            # malformed graph has: counted live, as the sweep counts an op later in the order)
            memo[cur] = _deadness(cur, deps, memo)
            stack.pop()
        return memo[op]

    def _switches_and_exits(self) -> list[Operation]:
        """The graph's Switches and Exits (what `_root_always_live` asks about): listed once, then
        kept up to date from the list, less the erased ones, and the ops made since (passes
        rarely make a Switch: a capture into a cond), not by a walk of the graph per run."""
        graph, cached = self.graph, self._sx
        if cached is not None:
            ops, made = cached
            for op in created_since(graph, made):
                if op.type in _SWITCH_EXIT:
                    break
            else:
                ops = [op for op in ops if op in graph]
                self._sx = (ops, graph.checkpoint())
                return ops
        ops = of_types(graph.get_operations(), _SWITCH_EXIT)
        self._sx = (ops, graph.checkpoint())
        return ops

    def begin_run(self) -> None:
        """The manager calls this before each pass run."""
        self._run_version = self.graph.version
        self._walking = None

    @property
    def fetches(self) -> list:
        return self._fetches

    @fetches.setter
    def fetches(self, value) -> None:
        self._fetches = list(value)
        # (by identity: a Tensor hashes as an object, and only the same object hashes alike, so
        # its == (which builds an Equal op) is never asked)
        self._fetched = set(self._fetches)

    def is_fetched(self, t: Tensor) -> bool:
        return t in self._fetched

    # -- rewriting ---------------------------------------------------------------
    def replace(self, old: Tensor, new: Tensor) -> bool:
        """Make every reader of `old` read `new`, fetches included (a fetch only when `new`
        lives in the same frame). Returns True if anything was rewired."""
        g = self.graph
        rewired = g.replace_all_uses_with(old, new)
        changed = bool(rewired)
        if self.is_fetched(old) and new.op.frame_name == old.op.frame_name:
            self.fetches = [new if f is old else f for f in self.fetches]
            changed = True
        if changed:
            self.touch(old.op, new.op, *rewired)
        return changed


_PLACEHOLDER = frozenset({"Placeholder"})


def of_types(ops: list, types) -> list:
    """The ops of `ops` whose type is in `types`, in order. (A comprehension: the interpreter's
    cached reads of an op's slots cost less than attrgetter's lookups through map.)"""
    return [op for op in ops if op.type in types]


def not_of_types(ops: list, types) -> list:
    """The ops of `ops` whose type is not in `types`, in order."""
    return [op for op in ops if op.type not in types]


class Positions:
    """`positions(op)`: a number that orders ops as the graph did when this was made (an op
    made since, or of another graph, comes after every op): the op's `order`, which the graph
    keeps growing along its order, so nothing is searched or numbered here."""

    __slots__ = ("graph", "made")

    def __init__(self, graph: Graph):
        self.graph, self.made = graph, graph.checkpoint()

    def __call__(self, op: Operation) -> float:
        if op.serial < self.made and op.graph is self.graph:
            return op.order
        return _LAST


_LAST = float("inf")


def created_since(graph: Graph, checkpoint: int) -> list[Operation]:
    """The ops of `graph` made since `checkpoint` (newest first). The graph's name table holds
    its ops in the order they were made, so they are its last entries; reading them from the
    end costs as many steps as there are new ops, not a walk of the graph."""
    new = []
    for op in reversed(graph.ops_by_name.values()):
        if op.serial < checkpoint:
            break
        new.append(op)
    return new


def spread(op: Operation, visit: set[Operation]) -> None:
    """Add `op`, its readers and the ops waiting for it to `visit`."""
    visit.add(op)
    for t in op.outputs:
        visit.update(t.readers)  # (the graph's own lists: read, not copied)
    visit.update(op.waiters)


def anchor_ops(graph: Graph) -> list[Operation]:
    """Ops that stay whatever reads them: placeholders (they are fed) and the predicates
    of conds (a cond's context names its predicate; gradients built on the graph later
    read it there)."""
    ops = graph.get_operations()
    out = dict.fromkeys(of_types(ops, _PLACEHOLDER))
    seen: set = set()
    last = None
    for op in ops:  # each op's context (neighbours mostly share one: asked once for a run of them)
        c = op.ctx
        if c is last:
            continue
        last = c
        while c is not None and c not in seen:
            seen.add(c)
            pred = getattr(c, "pred", None)
            if isinstance(pred, Tensor) and pred.op in graph:
                out[pred.op] = None
            c = c.outer
    return list(out)


def is_used(op: Operation) -> bool:
    """Something reads one of `op`'s outputs or waits for it (read from the graph's own
    lists, without copying them)."""
    if op.waiters:
        return True
    for t in op.outputs:
        if t.readers:
            return True
    return False



def const_value(t: Tensor):
    """The value of `t` if its op is a Const, else None."""
    if t.op.type == "Const":
        v = t.op.attrs["value"]
        return v if t.dtype.np_dtype is not None else None
    return None


_SWITCH_EXIT = frozenset({"Switch", "Exit"})


def _root_always_live(graph: Graph, switches_and_exits: list | None = None) -> bool:
    """True if no op outside control flow may be dead (`may_be_dead`'s rules): a dead token
    reaches the root only from a Switch there (a cond's at the top level) or from the Exit of a
    loop without Enters; with neither, the walk of a root op's ancestors finds nothing dead (an
    Exit's deadness is that of its loop's inputs, which are outside the loop). The graph's
    Switches and Exits may be given (in any order)."""
    if switches_and_exits is None:
        switches_and_exits = of_types(graph.get_operations(), _SWITCH_EXIT)
    for op in switches_and_exits:
        if op.type == "Switch":
            if op.ctx is None:
                return False
        elif not getattr(op.inputs[0].op.ctx, "enters", None):
            return False
    return True


def _deadness_inputs(op: Operation) -> list[Operation]:
    """The ops whose deadness decides `op`'s (the rules of `may_be_dead`)."""
    t = op.type
    if t == "Switch":
        return []
    if t == "Merge":
        return [x.op for x in op.inputs if x.op.type != "NextIteration"]
    if t == "Exit":
        enters = getattr(op.inputs[0].op.ctx, "enters", None)
        return [e.inputs[0].op for e in enters] if enters else []
    return [x.op for x in op.inputs] + list(op.control_inputs)


def _deadness(op: Operation, deps: list[Operation], memo: dict) -> bool:
    t = op.type
    if t == "Switch":
        return True
    if t == "Merge":
        return bool(deps) and all(memo.get(d, False) for d in deps)
    if t == "Exit":
        return not deps or any(memo.get(d, False) for d in deps)
    return any(memo.get(d, False) for d in deps)


def may_be_dead(graph: Graph) -> set[int]:
    """ids of ops whose outputs may be dead tokens at run time (after a Switch, not joined
    by a Merge with a live input). Conservative: a pass that would replace such an op's
    output by an always-live constant must not."""
    dead: set[int] = set()
    for op in graph.get_operations():
        if op.type == "Switch":
            dead.add(id(op))
            continue
        if op.type == "Merge":
            ins = [t for t in op.inputs if t.op.type != "NextIteration"]
            if ins and all(id(t.op) in dead for t in ins):
                dead.add(id(op))
            continue
        if op.type == "Exit":
            loop = op.inputs[0].op.ctx
            enters = getattr(loop, "enters", None)
            if not enters or any(id(e.inputs[0].op) in dead for e in enters):
                dead.add(id(op))
            continue
        if any(id(t.op) in dead for t in op.inputs) or any(id(c) in dead for c in op.control_inputs):
            dead.add(id(op))
    return dead


_NUMERIC_SCALARS = frozenset({bool, int, float, np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                              np.uint16, np.uint32, np.uint64, np.float16, np.float32, np.float64})


def broadcast_keeps(x: Tensor, other: Tensor, out: Tensor) -> bool:
    """True if `op(x, other)` certainly has x's shape and dtype (other broadcasts into x)."""
    if out.dtype != x.dtype:
        return False
    xs, os_, rs = x.shape, other.shape, out.shape
    if xs.dims is None or os_.dims is None:
        return False
    if xs.is_fully_defined() and rs.is_fully_defined():
        return list(xs.dims) == list(rs.dims)
    # a value of size one with no more dims than x never changes x's shape
    return len(os_.dims) <= len(xs.dims) and all(d == 1 for d in os_.dims)


def all_equal(value, scalar) -> bool:
    """Every element of `value` (a Const's) equals `scalar` (and there is one at least)."""
    if type(value) in _NUMERIC_SCALARS:  # one element: numpy's reductions cost far more than ==
        return bool(value == scalar)
    arr = np.asarray(value)
    return arr.dtype != object and arr.size > 0 and bool(np.all(arr == scalar))
