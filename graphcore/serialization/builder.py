"""Reading a graph file, second half: checked records -> a Graph, through the Graph's
public building methods only.

Ops are created in file order (to_json writes creation order), each in its recorded
control-flow context and without capturing (the file already has every Enter and
Switch). An input made by a later op (a loop's back edge NextIteration -> Merge) is
wired once that op exists.
"""
from __future__ import annotations

from ..attr_schema import AttrError
from ..control_flow import CondContext, ControlFlowContext, WhileContext
from ..errors import GraphError, GraphFileError
from ..function_graph import FuncGraph
from ..graph import Graph, Operation
from .document import GraphFile, OpRecord, TensorRef


def build_graph(file: GraphFile) -> Graph:
    """The ops and contexts of `file` in a new Graph (not yet validated), and the functions
    of its library (each a FuncGraph built the same way)."""
    g = Graph()
    bodies = []
    for fn in file.functions:  # all of them first: an op's check looks its functions up
        fg = FuncGraph(fn.name, g)
        g.add_function(fg)
        ops = _build_ops(fg, fn)
        fg.inputs = [ops[r.op].outputs[r.index] for r in fn.inputs]
        fg.outputs = [ops[r.op].outputs[r.index] for r in fn.outputs]
        bodies.append((ops, fn))
    ops = _build_ops(g, file)
    for body_ops, rec in bodies + [(ops, file)]:
        for op, op_rec in zip(body_ops, rec.ops):
            if op.op_def.file_check is not None:
                check_when_loaded(op, op_rec.where)
    return g


def _build_ops(g: Graph, file) -> list[Operation]:
    """The contexts and ops of `file` (a GraphFile or a FunctionRecord) built in `g`."""
    contexts = _build_contexts(g, file)
    ops: list[Operation] = []
    back_edges: list[tuple[Operation, int, TensorRef]] = []
    for rec in file.ops:
        op, later = _create_op(g, rec, ops, contexts)
        ops.append(op)
        back_edges += [(op, k, ref) for k, ref in later]
    for op, k, ref in back_edges:
        g.update_input(op, k, ops[ref.op].outputs[ref.index])
    for c, rec in zip(contexts, file.contexts):
        if isinstance(c, CondContext) and rec.pred is not None:
            c.pred = ops[rec.pred.op].outputs[rec.pred.index]
        elif isinstance(c, WhileContext) and isinstance(rec.maximum_iterations, TensorRef):
            ref = rec.maximum_iterations
            c.maximum_iterations = ops[ref.op].outputs[ref.index]
    return ops


def _build_contexts(g: Graph, file: GraphFile) -> list[ControlFlowContext]:
    contexts: list[ControlFlowContext] = []
    for rec in file.contexts:  # an outer context comes first in the file
        outer = contexts[rec.outer] if rec.outer is not None else None
        if rec.kind == "while":
            c = WhileContext(g, outer, rec.name, rec.parallel_iterations)
            c.has_counter = rec.has_counter
            c.maximum_iterations = rec.maximum_iterations  # a TensorRef is resolved once its op exists
            g.add_while_context(c)
        else:
            c = CondContext(g, outer, rec.name, None, rec.branch)
        contexts.append(c)
    return contexts


def _create_op(g: Graph, rec: OpRecord, ops: list[Operation], contexts: list) -> tuple[Operation, list]:
    """The op of `rec`, and the (input index, ref) of inputs that later ops make. Those
    get a stand-in (an earlier input of the same op) until `build_graph` wires them."""
    made = [ops[ref.op].outputs[ref.index] if ref.op < len(ops) else None for ref in rec.inputs]
    later = [(k, ref) for k, (ref, t) in enumerate(zip(rec.inputs, made)) if t is None]
    if later:
        stand_in = next((t for t in made if t is not None), None)
        if stand_in is None:
            raise GraphFileError(f"{rec.where}.inputs: every input is made by a later op; list each op after at "
                                 "least one of its inputs (to_json writes them in creation order)")
        made = [stand_in if t is None else t for t in made]
    ctx = contexts[rec.context] if rec.context is not None else None
    with g.in_control_flow_context(ctx), g.device(rec.device):
        try:
            op = g.create_op(rec.op_def, made, rec.attrs, name=rec.name, control_inputs=[ops[j] for j in
                             rec.control_inputs], output_specs=rec.outputs, source=rec.source, capture=False)
        except GraphError as e:
            raise GraphFileError(f"{rec.where}: {e}") from None
    if op.name != rec.name:
        raise GraphFileError(f"{rec.where}.name: {rec.name!r} clashes with another op's name (the graph would call "
                             f"it {op.name!r})")
    return op, later


def check_when_loaded(op: Operation, where: str) -> None:
    """What the op type checks of an op read from a file, its inputs known (Fused and
    CompiledLoop: that their steps build what they say)."""
    try:
        op.op_def.file_check(op)
    except AttrError as e:
        raise GraphFileError(f"{where}.attrs.{e}") from None


def restore_while_contexts(g: Graph) -> None:
    """Fill each loaded WhileContext's lists (enters, merges, switches...) from the ops
    built in it, as while_loop does; gradients read them. Needs a validated graph."""
    for fn in g.library.values():
        if fn is not g:
            _restore_while_contexts(fn)
    _restore_while_contexts(g)


def _restore_while_contexts(g: Graph) -> None:
    by_ctx: dict[int, list[Operation]] = {}
    loops: dict[int, WhileContext] = {}
    for op in g.get_operations():
        by_ctx.setdefault(id(op.ctx), []).append(op)
        c = op.ctx
        while c is not None:
            if isinstance(c, WhileContext):
                loops[id(c)] = c
            c = c.outer
    for c in loops.values():
        ops = by_ctx.get(id(c), [])
        c.enters = [op for op in ops if op.type == "Enter"]
        c.loop_merges = [op for op in ops
                         if op.type == "Merge" and any(t.op.type == "NextIteration" for t in op.inputs)]
        c.next_iterations = [op for op in ops if op.type == "NextIteration"]
        c.loop_cond = next((op for op in ops if op.type == "LoopCond"), None)
        c.switches = [op for op in ops if op.type == "Switch" and c.loop_cond is not None
                      and op.inputs[1] is c.loop_cond.outputs[0]]
        c.first_switch_true = c.switches[0].outputs[1] if c.switches else None
        c.exits = [cons for s in c.switches for cons in s.outputs[0].consumers() if cons.type == "Exit"]
