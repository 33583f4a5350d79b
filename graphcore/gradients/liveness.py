"""Which cond branches a tensor of a loop body depends on: its *liveness*, found from
the dataflow (see `liveness`). The loop gradients use it to accumulate a tensor of a
cond branch as a value live in every iteration, and the reverse walk to see that an op
runs in every iteration."""
from __future__ import annotations

from ..control_flow import WhileContext
from ..graph import Tensor


def exit_owners(graph) -> dict:
    """id(Exit op) -> the WhileContext it leaves, for every loop of `graph`."""
    return {id(x): c for c in graph.while_contexts.values() for x in c.exits}


def inner_loop(w: WhileContext, op, exit_owner: dict):
    """The outermost while loop strictly inside `w` that `op` belongs to (an Exit belongs
    to the loop it leaves), or None when `op` is in w's body proper."""
    c = exit_owner.get(id(op), op.ctx) if op.type == "Exit" else op.ctx
    found = None
    while c is not None and c is not w:
        if c.is_while:
            found = c
        c = c.outer
    return found


def liveness(w: WhileContext, t: Tensor) -> tuple:
    """The conditions under which `t` is live in an iteration of `w`, outermost first:
    (predicate, branch, context of the Switch) per cond Switch it depends on.

    Found from the dataflow, not from the contexts ops were built in: a backward loop
    builds the gradients of a cond's branches directly in its own body (Merge -> Switch,
    Switch -> Merge), so when that loop is differentiated again (second order), its
    tensors that depend on a branch are conditional although no CondContext says so.
    Rules: a cond Switch output adds (pred, branch) to its input's conditions; a cond
    Merge is live where its inputs' conditions agree (their common prefix); a loop nested
    in w is live where its Enters' inputs are; any other op needs all its inputs (and
    control inputs), so it takes the longest of their conditions (conds nest, so these
    are prefixes of one another); w's own loop variables and invariants are always live."""
    memo: dict[tuple, tuple] = {}
    exit_owner = exit_owners(w.graph)
    loop_pred = w.loop_cond.outputs[0] if w.loop_cond is not None else None

    def is_loop_machinery(op) -> bool:
        """w's Enters, NextIterations, LoopCond, and the Merges and Switches of its loop
        variables (also those add_loop_var has not finished yet)."""
        if op.ctx is not w:
            return False
        if op.type in ("Enter", "NextIteration", "LoopCond"):
            return True
        if op.type == "Switch":
            return op.inputs[1] is loop_pred
        if op.type == "Merge":
            return any(i.op.type in ("Enter", "NextIteration") and i.op.ctx is w for i in op.inputs)
        return False

    def deps(op):
        """Tensors whose conditions decide op's (None for ops with a fixed answer)."""
        if not w.contains(op.ctx) or is_loop_machinery(op):
            return None  # outside w (w's Exits too), or w's own loop machinery
        inner = inner_loop(w, op, exit_owner)
        if inner is not None:
            return [e.inputs[0] for e in inner.enters]
        controls = [c.outputs[0] for c in op.control_inputs if c.outputs]
        return list(op.inputs) + controls

    def key(op, t):
        return (id(op), t.value_index if op.type == "Switch" else 0)

    def result(op, t):
        ins = deps(op)
        if ins is None:
            return ()
        if op.type == "Switch" and inner_loop(w, op, exit_owner) is None:
            base = max((memo[key(i.op, i)] for i in ins), key=len)
            return base + ((op.inputs[1], t.value_index, op.ctx),)
        if op.type == "Merge" and inner_loop(w, op, exit_owner) is None:
            chains = [memo[key(i.op, i)] for i in op.inputs]
            common = chains[0]
            for c in chains[1:]:
                n = 0
                while n < min(len(common), len(c)) and common[n][0] is c[n][0] and common[n][1] == c[n][1]:
                    n += 1
                common = common[:n]
            return common
        return max((memo[key(i.op, i)] for i in ins), key=len, default=())

    stack = [(t, False)]
    while stack:
        cur, expanded = stack.pop()
        k = key(cur.op, cur)
        if k in memo:
            continue
        ins = deps(cur.op)
        if not expanded and ins:
            stack.append((cur, True))
            stack.extend((i, False) for i in ins if key(i.op, i) not in memo)
            continue
        memo[k] = result(cur.op, cur)
    return memo[key(t.op, t)]
