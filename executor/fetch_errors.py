"""What a run says when a fetch got no value: the branch that killed it, or where it stalled."""
from __future__ import annotations

from graphcore.errors import ExecutionError
from graphcore.graph import Tensor

from .executor import ExecutorState
from .plan import ExecutionPlan


def missing_fetch_error(plan: ExecutionPlan, state: ExecutorState, k: int) -> ExecutionError:
    """Why fetch number `k` got no value: it was dead (and which Switch killed it), or the run stalled."""
    t = plan.fetches[k]
    if state.dead_results[k]:
        sw = _killing_switch(t, state, plan)
        why = f"; it depends on {sw}" if sw else ""
        return ExecutionError(f"fetch {t.name} is dead on the path taken: it was computed in a branch that was "
                              f"not taken{why}. Fetch the cond's output (its Merge) instead")
    return ExecutionError(f"fetch {t.name} was never produced: the run could make no more progress "
                          f"({_stuck_nodes(state, plan)})")


def _killing_switch(t: Tensor, state: ExecutorState, plan: ExecutionPlan) -> str | None:
    """The nearest Switch upstream of `t` whose output on the path to `t` was the dead one."""
    items = {id(it.op): it for it in plan.items if it.op is not None}
    seen, queue = set(), [t]
    while queue:
        cur = queue.pop(0)
        op = cur.op
        if op.type == "Switch" and id(op) in items:
            pred = state.switch_preds.get(items[id(op)].id)
            if pred is not None and cur.value_index != int(pred):
                branch = "true" if cur.value_index else "false"
                return (f"the {branch} output of Switch {op.name} (created at {op.location()}), which was dead "
                        f"because its predicate was {pred}")
        if id(op) in seen:
            continue
        seen.add(id(op))
        queue.extend(op.inputs)
    return None


def _stuck_nodes(state: ExecutorState, plan: ExecutionPlan) -> str:
    """Root-frame nodes that received some of their inputs but not all."""
    root = state.root
    if root is None or 0 not in root.iterations:
        return "no node is waiting"
    it = root.iterations[0]
    waiting = [f"{item.name} waits for {it.pending[item.local_id]} more input(s)" for item in plan.root.nodes
               if 0 < it.pending[item.local_id] < item.pending_init][:3]
    return "; ".join(waiting) if waiting else "no node received any input"
