"""Compiled loops (`jit_compile=True`): a while loop whose ops are all pure, with one
output each and a kernel (fused ones included), and with no cond or loop inside, becomes
one `CompiledLoop` op (graphcore/ops/compiled_ops.py) in the loop's outer context, whose
outputs replace the loop's Exits. Anything else stays as it is, on the frame executor.

Recognised, in the loop's own context: its Enters (loop variables and invariants), one
Merge(Enter, NextIteration) per variable, Switch(Merge, LoopCond), the LoopCond, the
NextIterations, Identities (the pivot among them), Consts and pure ops. An op runs in
the loop test's region (every iteration, the last one too) unless it depends on the
body side of a Switch or waits for the pivot, as the frame executor runs it. Not part of
the default passes: it runs when asked for, last.
"""
from __future__ import annotations

from ..graph import Graph, Operation, Tensor
from ..ops.compiled_ops import compiled_loop_op
from .state import PassState

_LOOP_MACHINERY = frozenset({"Enter", "Merge", "Switch", "LoopCond", "NextIteration", "Exit"})


class _NotCompilable(Exception):
    pass


def run(graph: Graph, state: PassState) -> int:
    ops = graph.get_operations()
    by_ctx: dict[int, list[Operation]] = {}
    for op in ops:
        if op.ctx is not None:
            by_ctx.setdefault(id(op.ctx), []).append(op)
    compiled = 0
    for loop in list(graph._while_contexts.values()):
        if any(c is not loop and loop.contains(c) for c in {id(o.ctx): o.ctx for o in ops if o.ctx}.values()):
            continue  # a cond or loop inside
        try:
            _compile(graph, state, loop, by_ctx.get(id(loop), []), ops)
        except _NotCompilable:
            continue
        compiled += 1
    return compiled


def _pure(op: Operation) -> bool:
    d = op.op_def
    return (d.kernel is not None and not d.stateful and not d.uses_runtime and len(op.outputs) == 1
            and op.outputs[0].dtype.np_dtype is not None and all(t.dtype.np_dtype is not None for t in op.inputs))


def _compile(graph: Graph, state: PassState, loop, members: list[Operation], ops: list[Operation]) -> None:
    merges, switches, nexts = loop.loop_merges, loop.switches, loop.next_iterations
    exits = [op for op in ops if op.type == "Exit" and op.inputs and op.inputs[0].op.ctx is loop]
    if not merges or loop.loop_cond is None or len(exits) != len(loop.exits):
        raise _NotCompilable
    n = len(merges)
    var_enters = [m.inputs[0].op for m in merges]
    invariants = [op for op in members if op.type == "Enter" and op.attrs.get("is_constant")]
    value: dict[int, object] = {}  # id(tensor) -> ("var", k) | ("inv", j) | ("step", op)
    for k, m in enumerate(merges):
        if var_enters[k].type != "Enter" or m.inputs[1].op is not nexts[k] or m.outputs[0].dtype.np_dtype is None:
            raise _NotCompilable
        for t in (m.outputs[0], *switches[k].outputs):
            value[id(t)] = ("var", k)
    for j, e in enumerate(invariants):
        value[id(e.outputs[0])] = ("inv", j)
    body = {id(s.outputs[1]) for s in switches}  # tensors that exist only when the test held
    machinery = {id(o) for o in (*merges, *switches, *nexts, loop.loop_cond, *invariants, *var_enters)}
    cond_ops, body_ops = [], []
    for op in members:
        if id(op) in machinery:
            continue
        if op.type in _LOOP_MACHINERY or (op.type != "Identity" and not _pure(op)):
            raise _NotCompilable
        if any(c.ctx is not loop for c in op.control_inputs) or any(id(t) not in value for t in op.inputs):
            raise _NotCompilable  # waits for something outside the loop, or reads what we cannot number
        on_body = any(id(t) in body for t in op.inputs) or any(id(c.outputs[0]) in body for c in op.control_inputs
                                                                  if c.outputs)
        if on_body:
            body.add(id(op.outputs[0]))
        if op.type == "Identity":
            value[id(op.outputs[0])] = value[id(op.inputs[0])]
            continue
        value[id(op.outputs[0])] = ("step", op)
        (body_ops if on_body else cond_ops).append(op)
    # number the values of one iteration: variables, invariants, then the steps as they run
    first = n + len(invariants)
    step_number = {id(op): first + i for i, op in enumerate(cond_ops + body_ops)}

    def number(t: Tensor) -> int:
        kind, x = value[id(t)]
        return x if kind == "var" else n + x if kind == "inv" else step_number[id(x)]

    def steps(region):
        return tuple((op.type, tuple(map(number, op.inputs)), dict(op.attrs), op.name, op.location(),
                      op.outputs[0].dtype) for op in region)

    pred_in = loop.loop_cond.inputs[0]
    if id(pred_in) not in value or id(pred_in) in body or any(id(nx.inputs[0]) not in value for nx in nexts):
        raise _NotCompilable
    attrs = {"n_vars": n, "cond_steps": steps(cond_ops), "pred": number(pred_in), "body_steps": steps(body_ops),
             "nexts": tuple(number(nx.inputs[0]) for nx in nexts),
             "exits": tuple(number(e.inputs[0]) for e in exits),
             "dtypes": tuple(e.outputs[0].dtype for e in exits),
             "shapes": tuple(e.outputs[0].shape for e in exits)}
    inputs = [e.inputs[0] for e in var_enters] + [e.inputs[0] for e in invariants]
    anchor = min(exits, key=ops.index)
    with graph.inserting_before(anchor, context=loop.outer):
        new = graph.create_op(compiled_loop_op, inputs, attrs, name=f"{loop.name.rpartition('/')[2]}_compiled",
                              source=merges[0].source, capture=False)
    for e, out in zip(exits, new.outputs):
        state.replace(e.outputs[0], out)
        for waiting in list(e.control_outputs):
            graph.remove_control_input(waiting, e)
            graph.add_control_input(waiting, new)
    graph.erase_ops(members + exits)
