"""Graph.validate(): the invariants of the IR, each checked with a message that names
the op and says what to do.

Checked in this order, each group only when the ones before it found nothing (later
checks walk edges and read attrs that must be sound first):
  - every op is registered under its name, names are unique, outputs point back to it;
  - inputs and control inputs are ops and tensors of this graph;
  - the number of inputs fits the op's shape rule, and re-running the rule gives the
    recorded output count and dtypes (and shapes compatible with the recorded ones);
  - Merge inputs share one dtype; Switch and LoopCond predicates are scalar bools;
  - every Enter has a frame_name; no Exit runs in the root frame, and an Exit reads the
    false output of a Switch;
  - the only cycles go through a NextIteration into a Merge;
  - frames, computed from the edges as the executor does (an Enter's consumers are in
    its frame, an Exit's in the parent frame): an op's inputs all come from one frame,
    every NextIteration feeds a Merge of its own frame, and an op built inside a while
    loop is reached from an Enter of that loop.
"""
from __future__ import annotations

import inspect

from .errors import GraphError

MAX_REPORTED = 10


def _where(op) -> str:
    loc = f" at {op.source}" if op.source is not None else ""
    return f"op {op.name!r} ({op.type}){loc}"


def find_problems(graph) -> list[str]:
    """Every invariant the graph breaks, as messages (empty when the graph is valid)."""
    problems: list[str] = []
    ops = graph.get_operations()
    _check_membership(graph, ops, problems)
    if problems:
        return problems  # later checks walk edges that must be sound first
    for op in ops:
        _check_op(op, problems)
    if problems:
        return problems  # the frame checks read attrs and inputs that must fit each op first
    cycle = _find_cycle(ops)
    if cycle:
        path = " -> ".join(o.name for o in cycle)
        problems.append(f"{_where(cycle[0])}: is on a cycle ({path}) that does not go through a "
                        "NextIteration into a Merge; only loop back edges may form cycles, so build loops "
                        "with graphcore.while_loop")
    else:
        _check_frames(ops, problems)
    return problems


def validate_graph(graph) -> None:
    """Raise GraphError listing the broken invariants (first one first) or return None."""
    problems = find_problems(graph)
    if problems:
        more = f"\n... and {len(problems) - MAX_REPORTED} more" if len(problems) > MAX_REPORTED else ""
        err = GraphError("\n".join(problems[:MAX_REPORTED]) + more)
        err.problems = problems
        raise err


# -- structure ---------------------------------------------------------------------

def _check_membership(graph, ops, problems) -> None:
    seen: dict[str, object] = {}
    members = {id(op) for op in ops}
    for op in ops:
        if op.name in seen:
            problems.append(f"{_where(op)}: the name {op.name!r} is used by two ops; give each op its own name "
                            "(Graph.create_op makes names unique)")
        seen[op.name] = op
        if graph._by_name.get(op.name) is not op:
            problems.append(f"{_where(op)}: is not registered under its name in the graph; create ops only "
                            "with Graph.create_op")
        for k, t in enumerate(op.outputs):
            if t.op is not op or t.value_index != k:
                problems.append(f"{_where(op)}: output {k} does not point back to this op; do not reassign "
                                "op.outputs")
        for k, t in enumerate(op.inputs):
            if not hasattr(t, "op") or not hasattr(t, "value_index"):
                problems.append(f"{_where(op)}: input {k} is a {type(t).__name__}, not a Tensor; convert it "
                                "with graphcore.constant")
            elif t.op.graph is not graph or id(t.op) not in members:
                problems.append(f"{_where(op)}: input {k} ({t.name}) belongs to another graph; build both in "
                                "the same graph or feed the value through a placeholder")
        for c in op.control_inputs:
            if getattr(c, "graph", None) is not graph or id(c) not in members:
                problems.append(f"{_where(op)}: control input {getattr(c, 'name', c)!r} is not an op of this "
                                "graph; control dependencies must stay inside one graph")


_SIGNATURES: dict[str, inspect.Signature | None] = {}


def _signature(op_def):
    if op_def.type not in _SIGNATURES:
        try:
            _SIGNATURES[op_def.type] = inspect.signature(op_def.shape_fn)
        except (TypeError, ValueError):
            _SIGNATURES[op_def.type] = None
    return _SIGNATURES[op_def.type]


def _check_op(op, problems) -> None:
    t = op.type
    frame_name = op.attrs.get("frame_name")
    if t == "Enter" and (not isinstance(frame_name, str) or not frame_name):
        problems.append(f"{_where(op)}: has no frame_name (a non-empty str; got {frame_name!r:.40}); every Enter "
                        "names the while frame it enters (attrs['frame_name'])")
        return
    if t == "Merge":
        dtypes = {str(x.dtype) for x in op.inputs}
        if len(dtypes) > 1:
            problems.append(f"{_where(op)}: inputs have different dtypes ({', '.join(sorted(dtypes))}); "
                            "cast the branch or loop values so they share one dtype")
            return
    if t in ("Switch", "LoopCond"):
        k = 1 if t == "Switch" else 0
        if len(op.inputs) > k:
            p = op.inputs[k]
            if not p.dtype.is_bool or p.shape.rank not in (0, None):
                problems.append(f"{_where(op)}: its predicate {p.name} is {p.dtype}{p.shape}, not a scalar bool; "
                                "compare or reduce it to a scalar bool first")
                return
    sig = _signature(op.op_def)
    if sig is not None:
        try:
            sig.bind(*op.inputs, **op.attrs)
        except TypeError as e:
            problems.append(f"{_where(op)}: {len(op.inputs)} input(s) and attrs {sorted(op.attrs)} do not fit "
                            f"the {t} op ({e}); rebuild it with the op's own builder function")
            return
    try:
        specs = op.op_def.infer(list(op.inputs), op.attrs)
    except Exception as e:  # noqa: BLE001 (any rule failure is reported as a problem)
        problems.append(f"{_where(op)}: its shape rule rejects its inputs: {e}")
        return
    if len(specs) != len(op.outputs):
        problems.append(f"{_where(op)}: has {len(op.outputs)} output(s) but its shape rule gives {len(specs)}; "
                        "rebuild it with Graph.create_op")
        return
    for k, ((d, s), out) in enumerate(zip(specs, op.outputs)):
        if d != out.dtype:
            problems.append(f"{_where(op)}: output {k} is recorded as {out.dtype} but its inputs make it {d}; "
                            "cast the inputs or fix the recorded dtype")
        elif not s.is_compatible_with(out.shape):
            problems.append(f"{_where(op)}: output {k} is recorded with shape {out.shape} but its inputs give "
                            f"{s}; fix the recorded shape")


# -- cycles --------------------------------------------------------------------------

def _preds(op):
    """The ops `op` waits for, without the loop back edges NextIteration -> Merge."""
    out = []
    for t in op.inputs:
        if op.type == "Merge" and t.op.type == "NextIteration":
            continue
        out.append(t.op)
    out.extend(op.control_inputs)
    return out


def _find_cycle(ops) -> list | None:
    """A cycle that does not pass through a loop back edge, as a list of ops, or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = {id(op): WHITE for op in ops}
    for start in ops:
        if color[id(start)] != WHITE:
            continue
        stack = [(start, iter(_preds(start)))]
        path = [start]
        color[id(start)] = GREY
        while stack:
            op, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                path.pop()
                color[id(op)] = BLACK
                continue
            c = color.get(id(nxt), BLACK)
            if c == GREY:
                cyc = path[path.index(nxt):]
                cyc.reverse()  # print in the direction data flows
                return cyc + [cyc[0]]
            if c == WHITE:
                color[id(nxt)] = GREY
                stack.append((nxt, iter(_preds(nxt))))
                path.append(nxt)
    return None


def topological_order(ops) -> list:
    """`ops` ordered so every op comes after what it waits for (back edges ignored).
    Assumes `_find_cycle(ops)` is None."""
    order, done = [], set()
    for start in ops:
        if id(start) in done:
            continue
        stack = [(start, iter(_preds(start)))]
        done.add(id(start))
        while stack:
            op, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                order.append(op)
            elif id(nxt) not in done:
                done.add(id(nxt))
                stack.append((nxt, iter(_preds(nxt))))
    return order


# -- frames --------------------------------------------------------------------------

def static_frames(ops) -> tuple[dict, dict, list]:
    """The frame of every op's outputs, from the edges (TensorFlow's ControlFlowInfo).

    Returns (frame of each op by id, parent frame of each frame name, problems). The
    root frame is ""; an Enter's outputs are in its frame_name, an Exit's in the
    parent of its input's frame."""
    frame: dict[int, str] = {}
    parent: dict[str, str] = {}
    problems: list[str] = []
    for op in topological_order(ops):
        srcs = [(t.op, True) for t in op.inputs if not (op.type == "Merge" and t.op.type == "NextIteration")]
        srcs += [(c, False) for c in op.control_inputs]
        in_frames = {frame[id(s)] for s, _ in srcs if id(s) in frame}
        if len(in_frames) > 1:
            names = ", ".join(f"{s.name} ({_frame_desc(frame[id(s)])})" for s, _ in srcs if id(s) in frame)
            problems.append(f"{_where(op)}: reads from more than one frame: {names}; a tensor from outside a "
                            "loop must come in through an Enter (graphcore.while_loop does this for you)")
        here = next(iter(in_frames)) if in_frames else ""
        if op.type == "Enter":
            f = op.attrs.get("frame_name") or ""
            if f in parent and parent[f] != here:
                problems.append(f"{_where(op)}: enters frame {f!r} from {_frame_desc(here)}, but other Enters of "
                                f"that frame come from {_frame_desc(parent[f])}; all Enters of one loop must come "
                                "from the same frame")
            parent.setdefault(f, here)
            frame[id(op)] = f
        elif op.type == "Exit":
            src = op.inputs[0] if op.inputs else None
            if here == "":
                problems.append(f"{_where(op)}: is in the root frame, so there is no loop to exit; an Exit must "
                                "read a Switch of a while loop")
                frame[id(op)] = ""
            else:
                if src is not None and (src.op.type != "Switch" or src.value_index != 0):
                    # only the false output of the loop's Switch is live exactly once, when the loop ends
                    problems.append(f"{_where(op)}: reads {src.name}, not the false output of a Switch; an Exit "
                                    "must read output 0 of the loop's Switch, else it leaves the loop every iteration")
                frame[id(op)] = parent.get(here, "")
        else:
            frame[id(op)] = here
    return frame, parent, problems


def _frame_desc(f: str) -> str:
    return f"frame {f!r}" if f else "the root frame"


def _check_frames(ops, problems) -> None:
    frame, _, found = static_frames(ops)
    problems.extend(found)
    for op in ops:
        if op.type == "NextIteration":
            f = frame.get(id(op), "")
            merges = [c for c in op.outputs[0].consumers() if c.type == "Merge"]
            if not merges:
                problems.append(f"{_where(op)}: feeds no Merge; a NextIteration must be the back edge of a "
                                "loop, feeding the Merge of its loop variable")
            for m in merges:
                if frame.get(id(m), "") != f:
                    problems.append(f"{_where(op)}: feeds {m.name} in {_frame_desc(frame.get(id(m), ''))} but "
                                    f"runs in {_frame_desc(f)}; a back edge must stay inside its loop")
            if f == "":
                problems.append(f"{_where(op)}: is not inside any while frame (no Enter leads to it); "
                                "build loops with graphcore.while_loop")
        elif op.type not in ("Enter", "Exit"):
            built_in = op.frame_name
            if built_in and frame.get(id(op), "") == "" and (op.inputs or op.control_inputs):
                problems.append(f"{_where(op)}: was built in while frame {built_in!r} but no Enter of that loop "
                                "leads to it, so it would run once in the root frame; take its inputs from "
                                "the loop variables or capture them with an Enter")
