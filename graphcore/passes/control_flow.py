"""Control-flow simplification.

- A Switch whose predicate is a Const is a pass-through: readers of its taken output
  read its data input (live exactly when that output was). Its untaken output is always
  dead, and so is every op downstream of it up to the Merges that join it: those ops are
  removed, and each such Merge, left with one live input, is replaced by that input (its
  readers and the fetches read it). Done only when everything dead ends at such Merges
  outside any while loop, no dead op is fetched, and no Merge's `value_index` is read;
  otherwise the Switch is left alone.
- An Identity with no control meaning is removed (its readers read its input): never a
  pivot (`switch_t`, `switch_f`, `pivot`, or anything reading a Switch), never one with
  control inputs or that something waits for (the effects chain is such identities), and
  only when its input is an ordinary op of its own context.
"""
from __future__ import annotations

from ..graph import Graph, Operation
from .state import CONTROL_FLOW, PassState, const_value

_PIVOT_NAMES = ("switch_t", "switch_f", "pivot")
_LOOKED_AT = frozenset({"Switch", "Identity"})  # the types `run` rewrites


def _dead_region(switch: Operation, untaken, protected: set[Operation]):
    """(dead ops, {Merge: its live inputs}) downstream of `untaken`, or None to leave it."""
    dead: dict[int, Operation] = {}
    merges: dict[int, Operation] = {}
    dead_tensors = {id(untaken)}
    stack = list(untaken.consumers())
    while stack:
        op = stack.pop()
        if op.type == "Merge":
            if op.ctx is not None and op.ctx.is_while and any(t.op.type == "NextIteration" for t in op.inputs):
                return None
            merges[id(op)] = op
            continue
        if id(op) in dead:
            continue
        if op.type in ("Enter", "Exit", "NextIteration", "LoopCond") or op in protected:
            return None
        dead[id(op)] = op
        for t in op.outputs:
            dead_tensors.add(id(t))
            stack.extend(t.consumers())
        stack.extend(op.control_outputs)
    live_inputs = {}
    for m in merges.values():
        if m.outputs[1].readers or m.waiters or any(id(c) in dead for c in m.control_inputs):
            return None
        live = [t for t in m.inputs if id(t) not in dead_tensors]
        if len(live) != 1 or (m in protected and live[0].op.frame_name != m.frame_name):
            return None
        live_inputs[id(m)] = (m, live[0])
    return list(dead.values()), live_inputs


def _fold_switch(graph: Graph, state: PassState, sw: Operation, erased: set[int]) -> bool:
    pred = const_value(sw.inputs[1])
    if pred is None or sw.inputs[1].op.control_inputs:
        return False
    taken = sw.outputs[int(bool(pred))]
    untaken = sw.outputs[1 - int(bool(pred))]
    protected = state.protected()
    if sw in protected:
        return False
    region = _dead_region(sw, untaken, protected)
    if region is None:
        return False
    dead, merges = region
    data = sw.inputs[0]
    if data.dtype != taken.dtype:
        return False
    for m, live in merges.values():
        if live is untaken or live.dtype != m.outputs[0].dtype:
            return False
    def source(live):
        """What a Merge's live input stands for once the Switch and the Merges are gone (a
        Merge whose live input is another of these Merges takes that one's source)."""
        if live is taken:
            return data
        inner = merges.get(id(live.op))
        return source(inner[1]) if inner is not None and live is inner[0].outputs[0] else live

    state.replace(taken, data)
    for m, live in merges.values():
        state.replace(m.outputs[0], source(live))
    erased.update(id(op) for op in state.erase([m for m, _ in merges.values()] + dead))
    return True


def _removable_identity(op: Operation) -> bool:
    if op.type != "Identity" or op.control_inputs or op.waiters:
        return False
    if op.name.rpartition("/")[2].startswith(_PIVOT_NAMES):
        return False
    src = op.inputs[0].op
    if src.type in CONTROL_FLOW or src.ctx is not op.ctx:
        return False
    for ctx in (op.ctx,):
        if ctx is not None and getattr(ctx, "_pivot", None) is not None and ctx._pivot.op is op:
            return False
    return True


def run(graph: Graph, state: PassState) -> int:
    rewrites = 0
    erased: set[int] = set()
    for op in state.walk_types(_LOOKED_AT):
        if id(op) in erased:
            continue
        if op.type == "Switch" and op.inputs[1].op.type == "Const":
            if op in graph:
                if _fold_switch(graph, state, op, erased):
                    rewrites += 1
                else:
                    state.later(op)  # what its dead region holds may change far from it
        elif op.type == "Identity" and _removable_identity(op):
            if state.replace(op.outputs[0], op.inputs[0]):
                rewrites += 1
    return rewrites
