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
  - frames, by the rule of frames.py that the executor places ops with (an Enter's
    consumers are in its frame, an Exit's in the parent frame): an op's inputs all
    come from one frame, every NextIteration feeds a Merge of its own frame, and an op
    built inside a while loop is reached from an Enter of that loop;
  - the library functions the graph calls (If/While), each body checked as a graph, none
    calling itself.
"""
from __future__ import annotations

import inspect

from .errors import GraphError
from .frames import assign_frames
from .library import library_problems

MAX_REPORTED = 10


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
    _check_frames(ops, problems)
    if not problems and graph.library and graph.outer_graph is None:
        problems += library_problems(graph, find_problems)
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
            problems.append(f"{op.describe()}: the name {op.name!r} is used by two ops; give each op its own name "
                            "(Graph.create_op makes names unique)")
        seen[op.name] = op
        if graph.ops_by_name.get(op.name) is not op:
            problems.append(f"{op.describe()}: is not registered under its name in the graph; create ops only "
                            "with Graph.create_op")
        for k, t in enumerate(op.outputs):
            if t.op is not op or t.value_index != k:
                problems.append(f"{op.describe()}: output {k} does not point back to this op; do not reassign "
                                "op.outputs")
        for k, t in enumerate(op.inputs):
            if not hasattr(t, "op") or not hasattr(t, "value_index"):
                problems.append(f"{op.describe()}: input {k} is a {type(t).__name__}, not a Tensor; convert it "
                                "with graphcore.constant")
            elif t.op.graph is not graph or id(t.op) not in members:
                problems.append(f"{op.describe()}: input {k} ({t.name}) belongs to another graph; build both in "
                                "the same graph or feed the value through a placeholder")
        for c in op.control_inputs:
            if getattr(c, "graph", None) is not graph or id(c) not in members:
                problems.append(f"{op.describe()}: control input {getattr(c, 'name', c)!r} is not an op of this "
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
        problems.append(f"{op.describe()}: has no frame_name (a non-empty str; got {frame_name!r:.40}); every Enter "
                        "names the while frame it enters (attrs['frame_name'])")
        return
    if t == "Merge":
        dtypes = {str(x.dtype) for x in op.inputs}
        if len(dtypes) > 1:
            problems.append(f"{op.describe()}: inputs have different dtypes ({', '.join(sorted(dtypes))}); "
                            "cast the branch or loop values so they share one dtype")
            return
    if t in ("Switch", "LoopCond"):
        k = 1 if t == "Switch" else 0
        if len(op.inputs) > k:
            p = op.inputs[k]
            if not p.dtype.is_bool or p.shape.rank not in (0, None):
                problems.append(f"{op.describe()}: its predicate {p.name} is {p.dtype}{p.shape}, not a scalar bool; "
                                "compare or reduce it to a scalar bool first")
                return
    sig = _signature(op.op_def)
    if sig is not None:
        try:
            sig.bind(*op.inputs, **op.attrs)
        except TypeError as e:
            problems.append(f"{op.describe()}: {len(op.inputs)} input(s) and attrs {sorted(op.attrs)} do not fit "
                            f"the {t} op ({e}); rebuild it with the op's own builder function")
            return
    try:
        specs = op.op_def.infer(list(op.inputs), op.attrs)
    except Exception as e:  # noqa: BLE001 (any rule failure is reported as a problem)
        problems.append(f"{op.describe()}: its shape rule rejects its inputs: {e}")
        return
    if len(specs) != len(op.outputs):
        problems.append(f"{op.describe()}: has {len(op.outputs)} output(s) but its shape rule gives {len(specs)}; "
                        "rebuild it with Graph.create_op")
        return
    for k, ((d, s), out) in enumerate(zip(specs, op.outputs)):
        if d != out.dtype:
            problems.append(f"{op.describe()}: output {k} is recorded as {out.dtype} but its inputs make it {d}; "
                            "cast the inputs or fix the recorded dtype")
        elif not s.is_compatible_with(out.shape):
            problems.append(f"{op.describe()}: output {k} is recorded with shape {out.shape} but its inputs give "
                            f"{s}; fix the recorded shape")


# -- frames (frames.py holds the rule, shared with the executor) ---------------------

def _check_frames(ops, problems) -> None:
    frames = assign_frames(ops)
    problems.extend(frames.problems)
    if frames.cycle:
        return
    for op in ops:
        if op.type == "Exit" and op.inputs and frames.frame_of[id(op)] != "":
            src = op.inputs[0]
            if src.op.type != "Switch" or src.value_index != 0:
                # only the false output of the loop's Switch is live exactly once, when the loop ends
                problems.append(f"{op.describe()}: reads {src.name}, not the false output of a Switch; an Exit "
                                "must read output 0 of the loop's Switch, else it leaves the loop every iteration")
        elif op.type == "NextIteration":
            if not [c for c in op.outputs[0].consumers() if c.type == "Merge"]:
                problems.append(f"{op.describe()}: feeds no Merge; a NextIteration must be the back edge of a "
                                "loop, feeding the Merge of its loop variable")
        elif op.type != "Enter":
            built_in = op.frame_name
            if built_in and frames.frame_of[id(op)] == "" and (op.inputs or op.control_inputs):
                problems.append(f"{op.describe()}: was built in while frame {built_in!r} but no Enter of that loop "
                                "leads to it, so it would run once in the root frame; take its inputs from "
                                "the loop variables or capture them with an Enter")
