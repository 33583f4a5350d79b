"""Lowering, a kind of function inlining: every If and While op is
replaced by what v1 builds, so the frame executor, the other passes, placement and
partitioning see only the five primitives.

An If becomes a v1 cond on its predicate whose branches are the bodies of its two
functions, inlined. An If on the predicate of an If lowered before in the same context
that reads its outputs (its gradient If) is built in that If's branches and reads their
values there, as v1's gradient does; the Merges of outputs only it read are then dropped.
A While becomes one v1 loop frame whose condition and body are its
functions inlined. Function inputs map to the op's inputs, and the v1 builders wire the
outer tensors in (Switch, Enter) as they do for user code. A While's loop variables that
its body passes through unchanged (captures) enter as loop invariants (constant Enters),
and its iteration counter is left out when nothing reads it, so the lowered loop is the
one v1 would have built from the same program. An If or While inside a function is
lowered as the function is inlined, in the context it lands in: nesting needs no case.
"""
from __future__ import annotations

import contextlib
import gc as _gc
import threading

from ..control_flow import cond as _cond
from ..control_flow import group as _group
from ..control_flow import while_loop as _while_loop
from ..graph import Graph, Operation, Tensor
from ..library import INLINE_HOOKS, called_functions, function_attrs
from ..ops.array_ops import constant, identity
from ..ops.control_flow_ops import merge_op
from ..v2_control_flow import control_flow_v2


def run(graph: Graph, state) -> int:
    """The pass: lower every If/While of the graph (fetches follow the outputs)."""
    if not graph.library:
        return 0
    return lower_functional(graph, state.replace, state.is_fetched)


def lower_functional(graph: Graph, replace=None, is_fetched=None) -> int:
    """Lower every If/While op of `graph` in place; `replace(old, new)` rewires the readers
    of each output (default: `graph.replace_all_uses_with`). Returns how many ops it lowered."""
    if replace is None:
        replace = graph.replace_all_uses_with
    todo = [op for op in graph.get_operations() if function_attrs(op.op_def)]
    mark, replaced = graph.checkpoint(), set()
    with control_flow_v2(False), _one_lowering():
        for op in todo:
            with graph.inserting_before(op), graph.without_name_scope():  # (the op's own scope is given
                # to the v1 builder: _scope_of)
                kept = {id(t) for t in op.outputs if is_fetched is not None and is_fetched(t)}
                new = _lower(graph, op, list(op.inputs), kept, top=True)
            for old, t in zip(op.outputs, new):
                if t is not None and t is not old:
                    replace(old, t)
            waiting = op.control_outputs
            if waiting:
                with graph.inserting_before(op):
                    stand_in = _group(*_made(new, op.inputs), name=op.name.rpartition("/")[2] + "_done")
                for w in waiting:
                    graph.remove_control_input(w, op)
                    if stand_in is not None:
                        graph.add_control_input(w, stand_in)
            counter = op.inputs[0].op if op.type == "While" else None
            graph.erase_op(op)
            if counter is not None and counter.type == "Const" and not counter.outputs[0].readers \
                    and not counter.waiters:
                graph.erase_op(counter)  # the iteration counter's start, when the loop was built without it
            if is_fetched is None:  # (the caller may fetch any output it replaced)
                replaced.update(id(t) for t in new if t is not None)
        _drop_unread_merges(graph, mark, lambda o: any((id(t) in replaced) if is_fetched is None else is_fetched(t)
                                                       for t in o.outputs))
    if todo:
        graph.clear_library()  # (every function was inlined)
    return len(todo)


def _lower(g: Graph, op: Operation, inputs: list[Tensor], kept: set, top: bool = False) -> list[Tensor | None]:
    """`op` built anew in v1 form from `inputs`; `kept`: ids of its outputs read by what
    no op shows (fetches, or outputs of the function it is inlined from)."""
    name = _scope_of(g, op, top)
    with g.device(op.device or g.current_device):  # (the If/While's device goes to every op it becomes)
        if op.type == "If":
            return _lower_if(g, op, inputs, name)
        if op.type == "While":
            return _lower_while(g, op, inputs, name, kept)
    raise NotImplementedError(f"no lowering for {op.describe()}")  # pragma: no cover


def _made(outputs, inputs) -> list[Tensor]:
    """The outputs the lowering computed (not inputs passed through): what waiting for
    the op means (a wait on a passed-through placeholder would make it needed)."""
    given = {id(t) for t in inputs}
    return [t for t in outputs if t is not None and id(t) not in given]


def _scope_of(g: Graph, op: Operation, top: bool) -> str:
    """The name scope (ending in "/") the lowered ops go in: the op's own ("while/" for
    "while/While"), unique in the graph already for an op of the graph itself; for an op
    inlined from a function, its scope made unique where it lands (two functions may
    both hold a "while")."""
    scope = op.name.rpartition("/")[0] or op.type.lower()
    if top:
        return scope + "/"
    return g.unique_name(scope) + "/"


def _lower_if(g: Graph, op: Operation, inputs: list[Tensor], name: str) -> list[Tensor]:
    pred, args = inputs[0], inputs[1:]
    lib = op.graph  # (the op's own library: `g` may be a new graph the lowering copies into)
    fns = {1: lib.get_function(op.attrs["then_branch"]), 0: lib.get_function(op.attrs["else_branch"])}
    ctxs = _branches_read(g, pred, args)
    if ctxs is None:
        ctxs = {}

        def branch(b: int):
            def build():
                ctxs[b] = g.control_flow_context
                return inline(g, fns[b], args)
            return build

        out = _cond(pred, branch(1), branch(0), name=name)
        out = list(out) if out is not None else []
    else:
        out = _cond_in_branches(g, ctxs, fns, args, name)
    for m in out:  # what a later If on this predicate reads of this one
        if m.op.type == "Merge":
            _ifs.lowered[id(m)] = (m, ctxs, {0: m.op.inputs[0], 1: m.op.inputs[1]})
    return out


def _drop_unread_merges(g: Graph, mark: int, is_kept) -> None:
    """Erase the Merges of lowered Ifs that nothing reads, and the ops made since `mark`
    (by this lowering) that only they need: an output a gradient If asked for and now
    reads in the branches (_branches_read), with the zeros the other branch gave for it.
    `is_kept(op)`: the caller fetches it or an output. A loop's own ops stay (pruning keeps or
    drops a loop whole)."""
    doomed: set[int] = set()
    stack = [m.op for m, _, _ in _ifs.lowered.values()]
    while stack:
        op = stack.pop()
        if id(op) in doomed or op.serial < mark or op.op_def.loop_frame or op.type == "Placeholder" \
                or op.op_def.stateful \
                or any(id(w) not in doomed for w in op.waiters) \
                or any(id(r) not in doomed for t in op.outputs for r in t.readers) \
                or is_kept(op):
            continue
        doomed.add(id(op))
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    if doomed:
        g.erase_ops([op for op in g.get_operations() if id(op) in doomed])


def _branches_read(g: Graph, pred: Tensor, args: list[Tensor]):
    """The branch contexts of an If lowered before on the same predicate, in this context,
    one of whose outputs this If reads (its gradient If, the talk's "an If on the same
    predicate"), or None. Built in them, this If's branches read that If's branch values
    as v1's gradient does, instead of its Merges through Switches of their own."""
    outer = g.control_flow_context
    for a in args:
        hit = _ifs.lowered.get(id(a))
        if hit is not None and hit[0] is a:
            ctxs = hit[1]
            if ctxs[1].outer is outer and ctxs[1].pred is (outer.capture(pred) if outer is not None else pred):
                return ctxs
    return None


def _cond_in_branches(g: Graph, ctxs: dict, fns: dict, args: list[Tensor], name: str) -> list[Tensor]:
    """An If lowered into the branch contexts `ctxs` of an If on the same predicate: an
    argument that is an output of an If lowered into them is read, in each branch, as that
    branch's value of it; the outputs are Merges as `cond` builds them."""
    results = {}
    with g.name_scope(name):
        for b in (1, 0):
            own = []
            for a in args:
                hit = _ifs.lowered.get(id(a))
                own.append(hit[2][b] if hit is not None and hit[0] is a and hit[1] is ctxs else a)
            with g.in_control_flow_context(ctxs[b]):
                results[b] = [ctxs[b].capture(v) for v in inline(g, fns[b], own)]
        with g.in_control_flow_context(ctxs[1].outer):
            return [g.create_op(merge_op, [f, t], name="Merge", capture=False).outputs[0]
                    for t, f in zip(results[1], results[0])]


def _lower_while(g: Graph, op: Operation, inputs: list[Tensor], name: str, kept: set) -> list[Tensor]:
    cond_fn, body_fn = op.graph.get_function(op.attrs["cond"]), op.graph.get_function(op.attrs["body"])
    n = len(inputs)
    invariant = [body_fn.outputs[k] is body_fn.inputs[k] for k in range(n)]
    if not invariant[0] and id(op.outputs[0]) not in kept and _counter_unread(op, cond_fn, body_fn) \
            and not all(invariant[1:]):
        invariant[0] = True  # nothing reads the iteration count: v1 builds no counter
    varying = [k for k in range(n) if not invariant[k]]

    def full(values) -> list[Tensor]:
        vals = list(inputs)
        for k, v in zip(varying, values):
            vals[k] = v
        return vals

    def cond(*values):
        return inline(g, cond_fn, full(values))[0]

    def body(*values):
        outs = inline(g, body_fn, full(values), wanted=varying)
        return [outs[k] for k in varying]

    names = [body_fn.inputs[k].op.name for k in varying]
    results = _while_loop(cond, body, [inputs[k] for k in varying],
                          shape_invariants=[op.outputs[k].shape for k in varying],
                          parallel_iterations=int(op.attrs.get("parallel_iterations", 10)), name=name,
                          loop_var_names=names, return_same_structure=True)
    out = list(inputs)
    for k, r in zip(varying, results):
        out[k] = r
    return out


def _counter_unread(op: Operation, cond_fn, body_fn) -> bool:
    """Loop variable 0 (the counter) is only incremented: the cond does not read it, the
    body reads it only for its next value, and no one reads the While's output 0."""
    if op.outputs[0].readers or cond_fn.inputs[0].readers:
        return False
    nxt = body_fn.outputs[0]
    readers = body_fn.inputs[0].readers
    return (len(readers) == 1 and readers[0] is nxt.op and not nxt.readers
            and not nxt.op.op_def.stateful and not nxt.op.waiters
            and all(t is body_fn.inputs[0] or t.op.type == "Const" for t in nxt.op.inputs))


_effects = threading.local()  # .memo: function name -> whether a call runs an effect, for one lowering
# .lowered: id(output of a lowered If) -> (that output, the If's branch contexts, {branch: its value there})
_ifs = threading.local()


@contextlib.contextmanager
def _one_lowering():
    """What functions are found to do is kept while one graph is lowered (its library does
    not change meanwhile: the lowering only reads it), and so are the Ifs lowered so far."""
    before, lowered = getattr(_effects, "memo", None), getattr(_ifs, "lowered", None)
    _effects.memo = {} if before is None else before
    _ifs.lowered = {} if lowered is None else lowered
    try:
        yield
    finally:
        _effects.memo, _ifs.lowered = before, lowered


def _has_effects(op: Operation) -> bool:
    """`op` is stateful, or calls a function (at any depth) with a stateful op."""
    if op.op_def.stateful:
        return True
    memo = getattr(_effects, "memo", None)
    for name in called_functions(op):
        hit = memo.get(name) if memo is not None else None
        if hit is None:
            hit = any(_has_effects(f) for f in op.graph.get_function(name).get_operations())
            if memo is not None:
                memo[name] = hit
        if hit:
            return True
    return False


def _live_ops(fn, wanted) -> set[int]:
    """Ids of the ops of `fn` that its `wanted` outputs or its effects need."""
    stack = [fn.outputs[k].op for k in wanted] + [op for op in fn.get_operations() if _has_effects(op)]
    live: set[int] = set()
    while stack:
        op = stack.pop()
        if id(op) in live:
            continue
        live.add(id(op))
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return live


def inline(g: Graph, fn, args: list[Tensor], wanted=None, op_map: dict | None = None) -> list[Tensor | None]:
    """The ops of function `fn` built in `g` where `g` is building now (its control-flow
    context wires outer tensors in), its inputs replaced by `args`; returns its outputs
    (only the `wanted` ones, by index, and what effects need, when given: a loop variable
    lowered away leaves no dead ops). If/While ops inside are lowered in place."""
    m: dict[int, Tensor] = {id(p): a for p, a in zip(fn.inputs, args)}
    returned = {id(t) for t in fn.outputs}
    ops: dict[int, Operation] = {id(p.op): a.op for p, a in zip(fn.inputs, args)}
    inputs_ops = {id(p.op) for p in fn.inputs}
    live = _live_ops(fn, wanted) if wanted is not None else None
    lowered: dict[int, list] = {}  # id(If/While of fn) -> its outputs' copies (None: an input passed through)
    for fop in fn.get_operations():
        if id(fop) in inputs_ops or (live is not None and id(fop) not in live):
            continue
        ins = [m[id(t)] for t in fop.inputs]
        controls = [c for c in (ops[id(c)] for c in fop.control_inputs) if c is not None]
        if function_attrs(fop.op_def):
            with g.control_dependencies([c for c in controls if c is not None]):
                new = _lower(g, fop, ins, returned)
            start = ins[0].op
            if fop.type == "While" and start.type == "Const" and not start.outputs[0].readers \
                    and not start.waiters and fop.inputs[0].op.type == "Const":
                g.erase_op(start)  # the counter's start, inlined for a loop lowered without it
            stand_in = None
            if fop.waiters:
                stand_in = _group(*_made(new, ins), name=fop.name + "_done")
            ops[id(fop)] = stand_in
            given = {id(t) for t in ins}
            lowered[id(fop)] = [None if t is None or id(t) in given else t for t in new]
        elif fop.type == "Const" and not controls:
            new = [constant(fop.attrs["value"], dtype=fop.attrs["dtype"])]  # hoisted out of loops, as v1 does
            ops[id(fop)] = new[0].op
        else:
            with g.device(fop.device or g.current_device):
                made = g.create_op(fop.op_def, ins, dict(fop.attrs), name=fop.name, control_inputs=controls,
                                   output_specs=[(t.dtype, t.shape) for t in fop.outputs], source=fop.source)
            new = made.outputs
            ops[id(fop)] = made
            for hook in INLINE_HOOKS:
                hook(fop, made)
        for t, v in zip(fop.outputs, new):
            m[id(t)] = v
    if not isinstance(fn, _TopLevel):
        _outputs_wait_for_loose_effects(g, fn, m, ops, lowered, wanted)
    if op_map is not None:
        op_map.update(ops)
    return [m.get(id(t)) for t in fn.outputs]


def _outputs_wait_for_loose_effects(g: Graph, fn, m: dict, ops: dict, lowered: dict, wanted) -> None:
    """A function's effects run each time it is called (direct execution runs them so): an
    effect that no output of `fn` needs (a print in a while loop's test, or in a cond there:
    the cond function returns only the predicate) becomes a control input of the outputs'
    copies, which the lowered loop or cond reads; else nothing would run it."""
    outs = [fn.outputs[k] for k in (range(len(fn.outputs)) if wanted is None else wanted)]
    needed: set[int] = set()
    read = {id(t) for t in outs}
    stack = [t.op for t in outs]
    while stack:
        op = stack.pop()
        if id(op) not in needed:
            needed.add(id(op))
            read.update(id(t) for t in op.inputs)
            stack.extend(t.op for t in op.inputs)
            stack.extend(op.control_inputs)
    loose = []
    for op in fn.get_operations():
        if not _has_effects(op):
            continue
        if id(op) in lowered:  # an If/While: its outputs that nothing reads (a cond's token) are waited for
            loose.extend(c.op for t, c in zip(op.outputs, lowered[id(op)]) if c is not None and id(t) not in read)
        elif id(op) not in needed and ops.get(id(op)) is not None:
            loose.append(ops[id(op)])
    if not loose:
        return
    with g.control_dependencies(loose):
        for t in outs:
            if m.get(id(t)) is not None:
                m[id(t)] = identity(m[id(t)])


class _TopLevel:
    """A graph seen as a function of no inputs whose outputs are `outputs` (for `inline`)."""

    def __init__(self, graph: Graph, outputs: list[Tensor]):
        self.graph, self.inputs, self.outputs = graph, [], outputs

    def get_operations(self) -> list[Operation]:
        return self.graph.get_operations()


def lowered_copy(graph: Graph, fetches: list, targets: list, feeds: list):
    """A new graph: `graph` with its If/While ops lowered, the original left as it is (the
    lowering reads the library's functions and writes only the new graph, so nothing is
    copied first); with the fetches, targets and feeds in it. None when `graph` holds v1
    loops or variables (then the caller lowers a Graph.copy in place: back edges, contexts)."""
    ops = graph.get_operations()
    if graph.variables or any(op.op_def.control_flow or op.ctx is not None for op in ops):
        return None
    new = Graph()
    op_map: dict = {}
    # the ops it makes all live on: a collection in the middle would cost half the lowering
    # (the optimizer, which runs the pass, pauses it as well)
    was_enabled = _gc.isenabled()
    _gc.disable()
    try:
        with new.as_default(), control_flow_v2(False), _one_lowering():
            outs = inline(new, _TopLevel(graph, list(fetches) + list(feeds)), [], op_map=op_map)
            new_targets = [op_map[id(o)] for o in targets]
            kept = {id(t.op) for t in outs if t is not None} | {id(o) for o in new_targets if o is not None}
            _drop_unread_merges(new, 0, lambda o: id(o) in kept)
    finally:
        if was_enabled:
            _gc.enable()
    new.collections = dict(graph.collections)
    n = len(fetches)
    return new, outs[:n], new_targets, outs[n:]
