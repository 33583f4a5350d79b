"""A cond whose two branches compute the same thing becomes that thing.

`y = f(x) if p else f(x)` traces to Merge(f(Switch(x, p):1), f(Switch'(x, p):0)): two copies
of f, one per branch (each branch has its own Switch of x), that CSE cannot merge (they live in different contexts). When the
two inputs of a Merge are built alike (same op types, attributes and outputs, over
opposite outputs of Switches of the same data and predicate, with constants hanging on the two pivots of one cond),
f is built once in the Merge's own context from the Switches' data inputs, and the
Merge's readers read it; pruning removes the branches if nothing else reads them.

Left alone: anything with an effect (prints, asserts, variables), control inputs other
than the branch pivots, a Merge of a while loop, or a Merge whose `value_index` is read.
Only conds at the top level of the graph: there every value is live, and so was the
Merge. Inside a loop or another cond the Merge is dead when the cond's predicate is, or in
the iteration that ends the loop, while f(x) of a loop invariant x would not be; keeping
that would take control edges from the predicate that other passes then trip over.
"""
from __future__ import annotations

from ..graph import Graph, Operation, Tensor
from .cse import _key_of_attr, _Unhashable
from .state import UNTOUCHABLE, PassState, created_since




def _is_pivot(op: Operation) -> bool:
    return op.type == "Identity" and not op.control_inputs and op.inputs[0].op.type == "Switch"


def _attrs_key(op: Operation):
    try:
        return tuple(sorted((k, _key_of_attr(v)) for k, v in op.attrs.items()))
    except (_Unhashable, TypeError):
        return None


class _Matcher:
    """Compares the computations of two tensors, a Switch's two outputs counting as one."""

    def __init__(self):
        self.pairs: dict[tuple[int, int], bool] = {}

    def same(self, a: Tensor, b: Tensor) -> bool:
        oa, ob = a.op, b.op
        if oa.type == "Switch" or ob.type == "Switch":  # each branch Switches x in on its own
            return (oa.type == ob.type and a.value_index != b.value_index
                    and all(x is y for x, y in zip(oa.inputs, ob.inputs)))
        if a.value_index != b.value_index or a.dtype != b.dtype:
            return False
        key = (id(oa), id(ob))
        if key not in self.pairs:
            self.pairs[key] = False  # (a cycle would be a loop: not ours)
            self.pairs[key] = self._same_op(oa, ob)
        return self.pairs[key]

    def _same_op(self, oa: Operation, ob: Operation) -> bool:
        if oa is ob or oa.type != ob.type or oa.type in UNTOUCHABLE or oa.op_def.stateful:
            return False
        if oa.type == "Identity" or len(oa.inputs) != len(ob.inputs) or oa.device != ob.device:
            return False
        if not all(map(_is_pivot, oa.control_inputs)) or not all(map(_is_pivot, ob.control_inputs)):
            return False
        key_a = _attrs_key(oa)
        if key_a is None or key_a != _attrs_key(ob):
            return False
        if any(x.shape.dims != y.shape.dims for x, y in zip(oa.outputs, ob.outputs)):
            return False
        if not oa.inputs and oa.type != "Const":
            return False
        return all(self.same(x, y) for x, y in zip(oa.inputs, ob.inputs))


def _rebuild(graph: Graph, t: Tensor, made: dict) -> Tensor:
    """`t`'s computation built again outside the cond, Switches read through."""
    op = t.op
    if op.type == "Switch":
        return op.inputs[0]
    if id(op) not in made:
        inputs = [_rebuild(graph, x, made) for x in op.inputs]
        made[id(op)] = graph.create_op(op.op_def, inputs, dict(op.attrs), name=op.name.rpartition("/")[2],
                                       source=op.source, capture=False)
    return made[id(op)].outputs[t.value_index]


def _top_level_merges(graph: Graph, state: PassState) -> list[Operation]:
    """The Merges at the top level of the graph, in order. Passes make no Merges (they only
    erase them), so the first run's list serves the later runs, less the Merges erased since;
    an op made since is looked at (from the newest back) in case one is a Merge."""
    cached = state.cache.get("identical_branches")
    if cached is not None:
        merges, made = cached
        if not any(op.type == "Merge" for op in created_since(graph, made)):
            merges = [m for m in merges if m in graph]
            state.cache["identical_branches"] = (merges, graph.checkpoint())
            return merges
    ops = graph.get_operations()
    merges = [m for m in ops if m.type == "Merge" and m.ctx is None]
    state.cache["identical_branches"] = (merges, graph.checkpoint())
    return merges


def run(graph: Graph, state: PassState) -> int:
    rewrites = 0
    for m in _top_level_merges(graph, state):
        if len(m.inputs) != 2 or m.control_inputs or m.waiters:
            continue
        if m.outputs[1].readers or not (m.outputs[0].readers or state.is_fetched(m.outputs[0])):
            continue
        a, b = m.inputs
        if a.op.type in ("NextIteration", "Enter") or b.op.type in ("NextIteration", "Enter"):
            continue
        if not _Matcher().same(a, b):
            continue
        with graph.inserting_before(m):
            new = _rebuild(graph, a, {})
        if new.dtype == m.outputs[0].dtype and state.replace(m.outputs[0], new):
            rewrites += 1
    return rewrites
