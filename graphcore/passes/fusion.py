"""Op fusion: a tree of elementwise ops (with a MatMul in it, and the constants they read)
whose intermediate values nothing else reads becomes one `Fused` op
(graphcore/ops/fused_ops.py). `tanh(x @ w + b)` is one node instead of three, `3 * n + 1`
one instead of four (two constants), `n % 2 == 0` one instead of four.

Why it pays: the executor's cost is mostly per node (activation, pending counts, queues),
about half a microsecond each, which in a loop over scalars is far more than the kernels.

What may join the tree of a root op C: a producer P of one of the tree's inputs whose op
type is fusible (define_op(..., fusible=True); elementwise ops, MatMul, Const), in the same
control-flow context and on the same device, with one output that only tree members read
and nobody fetches, no control outputs, and not an anchor (a cond's predicate, a
placeholder).

Cost: a tree holds at most one heavy op (MatMul) and the cheap work around it, and the work
after the heavy op reads no value of an independent branch. Two heavy ops in one Fused op
run one after the other, where the executor's pool would have run them at once when they do
not depend on each other (8 chains of matmuls summed became one node: 1.27x numpy instead of
0.56x); and a fused op starts only once all its inputs are there, so `x @ w + h @ u` fused
with one of its matmuls would make that matmul wait for the other. A heavy op's cost dwarfs
a node's bookkeeping: nothing is lost by leaving it in a node of its own. The fused op waits for every control input the
members had (a constant's tie to its frame's pivot included), so it is live and dead
exactly when the tree was. It runs once, after the other passes (they see plain ops).
"""
from __future__ import annotations

from operator import attrgetter

from ..graph import Graph, Operation
from ..ops.fused_ops import fused_op
from ..source_info import SourceLocation
from .state import PassState

_order_of = attrgetter("_order")


def run(graph: Graph, state: PassState) -> int:
    anchors = set(state.anchors)
    fetched = state._fetched
    candidates = []  # the fusible ops: one output, of numpy dtypes in and out
    for op in graph.iter_operations():  # (the loop ends before anything changes)
        if op.op_def.fusible:
            outs = op.outputs
            if len(outs) != 1 or outs[0].dtype.np_dtype is None:
                continue
            for t in op.inputs:
                if t.dtype.np_dtype is None:
                    break
            else:
                candidates.append(op)
    free = set(candidates)  # the fusible ops that may still join a tree: not protected, not taken
    free.difference_update(state.protected())
    taken: set[Operation] = set()
    replaced: list[Operation] = []  # erased together at the end: one erase walks the graph once
    stand_ins = []  # (root, its fused op): the erase puts each fused op in its root's place
    for root in reversed(candidates):
        # (_may_root, written out: a fetched op may be a root, an anchor or an op something
        # waits for may not)
        if root.type == "Const" or root in taken or root in anchors or root.waiters:
            continue
        out = root.outputs[0]
        if not out.readers and out not in fetched:
            continue
        for t in root.inputs:  # (no free producer: a tree of one, found without growing it)
            if t.op in free:
                break
        else:
            continue
        members = _grow(root, fetched, free)
        if len(members) < 2:
            continue
        members.sort(key=_order_of)  # the graph's order
        new = _fuse(graph, state, root, members)
        if new is not None:
            taken.update(members)
            free.difference_update(members)
            replaced.extend(members)
            stand_ins.append((root, new))
    if replaced:
        # (each member's readers are members, and the roots' readers read their fused ops now)
        graph.erase_ops(replaced, stand_ins=stand_ins, check_users=False)
    return len(stand_ins)


def _grow(root: Operation, fetched: set, free: set[Operation]) -> list[Operation]:
    """The root and every producer that may join its tree (see the module docstring; `free`:
    the fusible ops neither protected nor in a tree already). Each member's inputs are looked
    at once, when it joins: a producer can join only once all its consumers have, and the last
    of them to join looks at it then."""
    members = {root: None}  # (a dict: the members in the order they join)
    todo = [root]
    ctx, device = root.ctx, root.device
    heavy = root if root.op_def.heavy else None  # (a tree takes at most one: see the module docstring)
    while todo:
        m = todo.pop()
        for t in m.inputs:
            p = t.op
            if p in members or p not in free:
                continue
            if p.ctx is not ctx or p.device != device or p.waiters or t in fetched:
                continue
            if p.type != "Const" and p.control_inputs:
                continue  # a constant's control input is its tie to the frame: the fused op keeps it
            if all(map(members.__contains__, t.readers)):
                if p.op_def.heavy:
                    if heavy is not None:
                        continue
                    heavy = p
                members[p] = None
                todo.append(p)
    if heavy is not None and heavy is not root:
        return _without_waits(members, heavy)
    return list(members)


def _ready(t, depth: int = 4) -> bool:
    """A value there at once when its context runs: a constant or an input (no inputs of its
    own), what the control-flow primitives bring into a loop's iteration or a branch (a loop
    variable, an invariant), or a cheap op's result of such values (`ys[i]`, `-b`); not a
    heavy op's result or anything computed from one (within `depth` producers)."""
    p = t.op
    if not p.inputs or p.op_def.control_flow:
        return True
    if depth == 0 or p.op_def.heavy:
        return False
    return all(_ready(x, depth - 1) for x in p.inputs)


def _without_waits(members: dict, heavy: Operation) -> list[Operation]:
    """The members, less the heavy op and what it reads in the tree when the work after it
    would read a value that is not ready (another branch's result): a fused op starts once
    all its inputs are there, so the heavy op would wait for that branch instead of running
    beside it. Left out, the heavy op may root a tree of its own."""
    upstream = {heavy}
    todo = [heavy]
    while todo:
        for t in todo.pop().inputs:
            if t.op in members and t.op not in upstream:
                upstream.add(t.op)
                todo.append(t.op)
    for m in members:
        if m in upstream:
            continue
        for t in m.inputs:
            if t.op not in members and not _ready(t):
                return [m for m in members if m not in upstream]
    return list(members)


def _fuse(graph: Graph, state: PassState, root: Operation, members: list[Operation]) -> Operation | None:
    """The fused op standing for `members` (root last), made and read instead of the root's
    output but not yet placed (run's erase puts it in the root's place); None if the tree
    reads nothing (all constants: constant folding's business)."""
    index = dict(zip(members, range(len(members))))
    # (tensors as keys: a Tensor hashes as an object, so its == (an Equal op) is never asked)
    inputs, position = [], {}
    controls = {}  # (an op by identity: a dict keeps the first of each, in order)
    for m in members:
        for t in m.inputs:
            if t.op not in index and t not in position:
                position[t] = len(inputs)
                inputs.append(t)
        if m.control_inputs:
            for c in m.control_inputs:
                if c not in index:
                    controls[c] = None
    if not inputs:
        return None
    n = len(inputs)
    where = state.cache.setdefault("fusion", {})  # (file, line) -> m.location(): many ops share a line
    steps = []
    for m in members:
        src = m.source
        if type(src) is SourceLocation:  # its text is made of these two (str(SourceLocation))
            key = (src.filename, src.lineno)
            loc = where.get(key)
            if loc is None:
                loc = where[key] = m.location()
        else:
            loc = m.location()
        ins = m.inputs
        if len(ins) == 2:  # (the usual arities written out)
            a, b = ins
            ka, kb = index.get(a.op), index.get(b.op)
            args = (position[a] if ka is None else n + ka, position[b] if kb is None else n + kb)
        elif len(ins) == 1:
            a = ins[0]
            ka = index.get(a.op)
            args = (position[a] if ka is None else n + ka,)
        else:
            args = []
            for t in ins:
                k = index.get(t.op)
                args.append(position[t] if k is None else n + k)
            args = tuple(args)
        # (the member's own attrs: it is erased with the tree, so the step is their only user)
        steps.append((m.type, args, m.attrs, m.name, loc, m.outputs[0].dtype))
    steps = tuple(steps)
    out = root.outputs[0]
    readers = list(dict.fromkeys(out.readers))
    # its inputs are the members' own: nothing to capture, no pivot to add; it takes over the
    # root's output (what its shape rule gives), which its readers and the fetches then read
    op = graph.create_stand_in(root, fused_op, inputs, {"steps": steps, "dtype": out.dtype, "shape": out.shape},
                               f"{root.name.rpartition('/')[2]}_fused", list(controls))
    if readers or state.is_fetched(out):
        state.touch(root, op, *readers)  # (what state.replace logs)
    return op
