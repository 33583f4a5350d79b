"""Compiled loops (`jit_compile=True`): a while loop whose ops are all pure, with a
kernel (fused ones and compiled inner loops included), conds inside allowed, becomes one
`CompiledLoop` op (graphcore/ops/compiled_ops.py) in the loop's outer context, whose
outputs replace the loop's Exits. Anything else stays as it is, on the frame executor.

Recognised, in the loop's own context: its Enters (loop variables and invariants), one
Merge(Enter, NextIteration) per variable, Switch(Merge, LoopCond), the LoopCond, the
NextIterations, Identities (the pivot among them), Consts and pure ops (compiled inner
loops among them: of nested loops the inner one is compiled first); conds inside it
too: an op of a branch becomes a step guarded by the predicates around it (it runs only
where the frame executor would have run it live), a cond's Merge a choice between its two
inputs by the predicate. An op runs in
the loop test's region (every iteration, the last one too) unless it depends on the
body side of a Switch or waits for the pivot, as the frame executor runs it. Values are
numbers, arrays or tensor lists (immutable values: a gradient's forward loop pushes onto
them, its backward loop pops them, so both compile). Not part of the default passes: it
runs when asked for, last.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..graph import Graph, Operation, Tensor
from ..ops.compiled_ops import compiled_loop_op
from .state import PassState


class _NotCompilable(Exception):
    pass


def run(graph: Graph, state: PassState) -> int:
    """Innermost loops first: a loop whose inner loops all compiled holds CompiledLoop ops
    only, and is taken in the next sweep."""
    compiled = 0
    while True:
        ops = graph.get_operations()
        contexts = {id(o.ctx): o.ctx for o in ops if o.ctx is not None}
        now = 0
        for loop in list(graph.while_contexts.values()):
            inner = [c for c in contexts.values() if c is not loop and loop.contains(c)]
            if any(c.is_while for c in inner):
                continue  # a loop inside: taken once that one is compiled
            ctxs = {id(loop)} | {id(c) for c in inner}
            try:
                _compile(graph, state, loop, [op for op in ops if id(op.ctx) in ctxs], ops)
            except _NotCompilable:
                continue
            now += 1
        compiled += now
        if not now:
            return compiled


def _branch_of(t: Tensor, ctx) -> bool:
    """True if `t`, an input of a Merge in `ctx`, comes from its cond's true branch."""
    if t.op.type == "Switch" and t.op.ctx is ctx:
        return t.value_index == 1
    c = t.op.ctx
    while c is not None and c.outer is not ctx:
        c = c.outer
    if c is None or not hasattr(c, "branch"):
        raise _NotCompilable
    return bool(c.branch)


def _pred_of(t: Tensor, ctx) -> Tensor:
    if t.op.type == "Switch" and t.op.ctx is ctx:
        return t.op.inputs[1]
    c = t.op.ctx
    while c.outer is not ctx:
        c = c.outer
    return c.pred


def _carried(dtype) -> bool:
    """A value a compiled loop can carry: a numpy dtype's, or a tensor list (an immutable
    value: the accumulators gradients push in a forward loop and pop in the backward one)."""
    return dtype.np_dtype is not None or dtype is dt.variant


def _pure(op: Operation) -> bool:
    d = op.op_def
    return (d.kernel is not None and d.pure and bool(op.outputs)
            and all(_carried(t.dtype) for t in (*op.outputs, *op.inputs)))


def _compile(graph: Graph, state: PassState, loop, members: list[Operation], ops: list[Operation]) -> None:
    """Replace `loop` (its ops: `members`) by one CompiledLoop op, or raise _NotCompilable."""
    exits = [op for op in ops if op.type == "Exit" and op.inputs and op.inputs[0].op.ctx is loop]
    if not loop.loop_merges or loop.loop_cond is None or len(exits) != len(loop.exits):
        raise _NotCompilable
    var_enters = [m.inputs[0].op for m in loop.loop_merges]
    invariants = [op for op in members if op.type == "Enter" and op.attrs.get("is_constant")]
    entered = _distinct([e.inputs[0] for e in invariants])  # (LICM enters one constant in several places)
    value, body, cond_ops, body_ops = _regions(loop, members, var_enters, invariants, entered)
    attrs = _loop_attrs(loop, len(var_enters), len(entered), value, body, cond_ops, body_ops, exits)
    inputs = [e.inputs[0] for e in var_enters] + entered
    anchor = min(exits, key=ops.index)
    with graph.inserting_before(anchor, context=loop.outer):
        new = graph.create_op(compiled_loop_op, inputs, attrs, name=f"{loop.name.rpartition('/')[2]}_compiled",
                              source=loop.loop_merges[0].source, capture=False)
    replaced = {}
    for e, out in zip(exits, new.outputs):
        state.replace(e.outputs[0], out)
        replaced[id(e.outputs[0])] = out
    for o in ops:  # a cond on the loop's result: its context names the new predicate
        c = o.ctx
        while c is not None:
            if id(getattr(c, "pred", None)) in replaced:
                c.pred = replaced[id(c.pred)]
            c = c.outer
    for e in exits:  # what waited for an Exit waits for the compiled loop
        for waiting in list(e.control_outputs):
            graph.remove_control_input(waiting, e)
            graph.add_control_input(waiting, new)
    graph.erase_ops(members + exits)


def _distinct(tensors: list) -> list:
    """The tensors, each once, in order of first appearance."""
    out: list = []
    for t in tensors:
        if not any(t is u for u in out):
            out.append(t)
    return out


def _regions(loop, members: list[Operation], var_enters: list, invariants: list, entered: list) -> tuple:
    """(value, body, cond_ops, body_ops): what each tensor of the loop is (id -> ("var", k),
    ("inv", j) or ("step", the tensor)), the ids of the tensors that exist only when the
    test held, and the steps of the loop test's region and of the body's, in order."""
    merges = loop.loop_merges
    switches, nexts = _by_merge(loop)
    value: dict[int, object] = {}
    for k, m in enumerate(merges):
        if var_enters[k].type != "Enter" or not _carried(m.outputs[0].dtype):
            raise _NotCompilable
        for t in (m.outputs[0], *switches[k].outputs):
            value[id(t)] = ("var", k)
    for e in invariants:  # an invariant is numbered by the tensor it enters: one input each
        value[id(e.outputs[0])] = ("inv", next(j for j, t in enumerate(entered) if t is e.inputs[0]))
    body = {id(s.outputs[1]) for s in switches}  # tensors that exist only when the test held
    machinery = {id(o) for o in (*merges, *switches, *nexts, loop.loop_cond, *invariants, *var_enters)}
    cond_ops, body_ops = [], []
    for op in members:
        if id(op) in machinery:
            continue
        if op.op_def.control_flow and op.type not in ("Switch", "Merge") or \
                (op.type not in ("Identity", "Switch", "Merge") and not _pure(op)):
            raise _NotCompilable
        if any(not loop.contains(c.ctx) for c in op.control_inputs) or any(id(t) not in value for t in op.inputs):
            raise _NotCompilable  # waits for something outside the loop, or reads what we cannot number
        on_body = any(id(t) in body for t in op.inputs) or any(id(c.outputs[0]) in body for c in op.control_inputs
                                                                  if c.outputs)
        if op.type == "Switch":  # a cond's: both outputs are its data (the guards say which exists)
            for t in op.outputs:
                value[id(t)] = value[id(op.inputs[0])]
                if on_body:
                    body.add(id(t))
            continue
        if op.type == "Merge" and (len(op.inputs) != 2 or op.outputs[1].consumers()):
            raise _NotCompilable
        if on_body:
            body.update(id(t) for t in op.outputs)
        if op.type == "Identity":
            value[id(op.outputs[0])] = value[id(op.inputs[0])]
            continue
        for t in op.outputs:
            value[id(t)] = ("step", t)
        (body_ops if on_body else cond_ops).append(op)
    return value, body, cond_ops, body_ops


def _by_merge(loop) -> tuple[list, list]:
    """(switches, next iterations) of the loop, the k-th those of its k-th loop variable
    (a gradient's loop lists its NextIterations in another order than its Merges)."""
    switches, nexts = [], []
    for m in loop.loop_merges:
        sw = [s for s in loop.switches if s.inputs[0] is m.outputs[0]]
        nx = m.inputs[1].op
        if len(sw) != 1 or not any(nx is x for x in loop.next_iterations):
            raise _NotCompilable
        switches.append(sw[0])
        nexts.append(nx)
    return switches, nexts


def _loop_attrs(loop, n: int, n_invariants: int, value: dict, body: set, cond_ops: list, body_ops: list,
                exits: list) -> dict:
    """The CompiledLoop's attributes: the values of one iteration numbered (variables,
    invariants, then the steps' outputs as they run) and each step written with them."""
    step_number, next_number = {}, n + n_invariants
    for op in cond_ops + body_ops:
        step_number[id(op)] = next_number
        next_number += 1 if op.type == "Merge" else len(op.outputs)  # a cond's Merge: its value only

    def number(t: Tensor) -> int:
        kind, x = value[id(t)]
        return x if kind == "var" else n + x if kind == "inv" else step_number[id(x.op)] + x.value_index

    def guard(ctx) -> tuple:
        """(value number of a predicate, the branch) for each cond around `ctx` in the loop."""
        out = []
        while ctx is not loop:
            out.append((number(ctx.pred), bool(ctx.branch)))
            ctx = ctx.outer
        return tuple(reversed(out))

    def step(op):
        inputs = tuple(map(number, op.inputs))
        if op.type == "Merge":  # a cond's Merge: (the true branch's value, the false one's, the predicate)
            true_first = _branch_of(op.inputs[0], op.ctx)
            pred = _pred_of(op.inputs[0], op.ctx)
            inputs = (inputs if true_first else inputs[::-1]) + (number(pred),)
        dtype = op.outputs[0].dtype if op.type == "Merge" or len(op.outputs) == 1 else \
            tuple(t.dtype for t in op.outputs)
        return (op.type, inputs, dict(op.attrs), op.name, op.location(), dtype, guard(op.ctx))

    pred_in = loop.loop_cond.inputs[0]
    nexts = _by_merge(loop)[1]
    if id(pred_in) not in value or id(pred_in) in body or any(id(nx.inputs[0]) not in value for nx in nexts):
        raise _NotCompilable
    return {"n_vars": n, "cond_steps": tuple(map(step, cond_ops)), "pred": number(pred_in),
            "body_steps": tuple(map(step, body_ops)), "nexts": tuple(number(nx.inputs[0]) for nx in nexts),
            "exits": tuple(number(e.inputs[0]) for e in exits),
            "dtypes": tuple(e.outputs[0].dtype for e in exits),
            "shapes": tuple(e.outputs[0].shape for e in exits)}


def mark_numba(graph: Graph, state: PassState) -> int:
    """(jit_compile="numba") Each compiled loop asks the executor for a numba-compiled
    kernel (executor/numba_loop.py), which it gets where every step has an exact machine
    form; the others keep the generated Python."""
    marked = 0
    for op in graph.get_operations():
        if op.type == "CompiledLoop" and op.attrs.get("backend") != "numba":
            op.attrs["backend"] = "numba"
            marked += 1
    return marked
