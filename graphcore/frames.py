"""The static frame of every op, found from the edges alone (TensorFlow's ControlFlowInfo).

The rule, written once (validate.py checks graphs with it; an executor's plan places its
nodes with it):
  - an op with no inputs, or only fed inputs, runs in the root frame "";
  - any other op runs in the frame its inputs come from, which must be one frame (data
    and control inputs alike, without a loop's back edge NextIteration -> Merge);
  - an Enter runs there and its outputs are in its `frame_name`, whose parent is the
    frame the Enter runs in (the same for every Enter of that frame);
  - an Exit's outputs are in the parent of the frame it runs in (an Exit in the root
    frame has no loop to leave);
  - a NextIteration runs inside a while frame, and feeds a Merge of that same frame.

The frame of an op's outputs is the frame it runs in, except for Enter and Exit.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable


def frame_description(f: str) -> str:
    return f"frame {f!r}" if f else "the root frame"


def _is_back_edge(op, t) -> bool:
    return op.type == "Merge" and t.op.type == "NextIteration"


def waits_for(op, fed: frozenset = frozenset()) -> list:
    """The ops `op` waits for: producers of its inputs (not fed ones, not the loop back
    edge NextIteration -> Merge) and its control inputs."""
    out = [t.op for t in op.inputs if id(t) not in fed and not _is_back_edge(op, t)]
    out.extend(op.control_inputs)
    return out


def _walk(ops, fed: frozenset):
    """Depth-first over `ops` and what they wait for (within `ops`): yields ("done", op)
    in topological order and ("cycle", path) for a cycle met on the way."""
    member = {id(op) for op in ops}
    state: dict[int, int] = {}  # 1 on the path, 2 done
    for start in ops:
        if id(start) in state:
            continue
        state[id(start)] = 1
        stack = [(start, iter(waits_for(start, fed)))]
        while stack:
            op, it = stack[-1]
            nxt = next((p for p in it if id(p) in member), None)
            if nxt is None:
                stack.pop()
                state[id(op)] = 2
                yield "done", op
            elif state.get(id(nxt)) == 1:
                path = [o for o, _ in stack]
                yield "cycle", path[path.index(nxt):]
            elif id(nxt) not in state:
                state[id(nxt)] = 1
                stack.append((nxt, iter(waits_for(nxt, fed))))


def find_cycle(ops, fed: Iterable = ()) -> list | None:
    """A cycle that does not pass through a loop back edge, in the direction data flows
    and closed (first op again at the end), or None."""
    for kind, found in _walk(list(ops), frozenset(id(t) for t in fed)):
        if kind == "cycle":
            cyc = list(reversed(found))
            return cyc + [cyc[0]]
    return None


def topological_order(ops, fed: Iterable = ()) -> list:
    """`ops` ordered so every op comes after what it waits for (back edges ignored; on a
    cycle, the op that closes it is simply ordered first)."""
    return [op for kind, op in _walk(list(ops), frozenset(id(t) for t in fed)) if kind == "done"]


@dataclass(frozen=True)
class Frames:
    """Where each op runs. Frame names are the Enters' frame_name; "" is the root."""

    frame_of: dict = field(default_factory=dict)          # id(op) -> the frame the op runs in
    output_frame_of: dict = field(default_factory=dict)   # id(op) -> the frame of its outputs
    parent: dict = field(default_factory=dict)            # frame -> its parent frame (outer frames first)
    parallel_iterations: dict = field(default_factory=dict)  # frame -> of its first Enter
    problems: tuple = ()                                  # broken rules, as messages naming the op
    cycle: list | None = None                             # a cycle off the back edges (then nothing else)


def assign_frames(ops, fed: Iterable = ()) -> Frames:
    """The frame of every op of `ops` (a graph's, or the part of it a run needs), by the
    rule in the module docstring. `fed`: tensors whose values are fed, which come from the
    root frame whatever op makes them.

    Example (an executor's plan):
        frames = assign_frames(needed_ops, fed=feed_tensors)
        if frames.problems:
            raise GraphError(frames.problems[0])
    """
    ops = list(ops)
    fed_ids = frozenset(id(t) for t in fed)
    order, cycle = [], None
    for kind, found in _walk(ops, fed_ids):  # (one walk: find_cycle's answer and topological_order's)
        if kind == "cycle":
            cycle = list(reversed(found))
            cycle.append(cycle[0])
            break
        order.append(found)
    if cycle:
        path = " -> ".join(o.name for o in cycle)
        return Frames(problems=(f"{cycle[0].describe()}: is on a cycle ({path}) that does not go through a "
                                "NextIteration into a Merge, so it can never run; only loop back edges may form "
                                "cycles, so build loops with graphcore.while_loop",), cycle=cycle)
    member = {id(op) for op in ops}
    frame_of: dict[int, str] = {}
    output_frame_of: dict[int, str] = {}
    parent: dict[str, str] = {}
    parallel: dict[str, int] = {}
    problems: list[str] = []
    for op in order:
        sources = [(t.op, output_frame_of[id(t.op)]) for t in op.inputs
                   if id(t) not in fed_ids and id(t.op) in member and not _is_back_edge(op, t)]
        sources += [(c, output_frame_of[id(c)]) for c in op.control_inputs if id(c) in member]
        in_frames = {f for _, f in sources} | ({""} if any(id(t) in fed_ids for t in op.inputs) else set())
        if len(in_frames) > 1:
            names = ", ".join([f"{s.name} ({frame_description(f)})" for s, f in sources]
                              + [f"fed {t.name} (the root frame)" for t in op.inputs if id(t) in fed_ids])
            problems.append(f"{op.describe()}: reads from more than one frame: {names}; a tensor from outside a "
                            "loop must come in through an Enter (graphcore.while_loop does this for you)")
        here = next(iter(in_frames)) if in_frames else ""
        frame_of[id(op)] = out = here
        if op.type == "Enter":
            out = op.attrs.get("frame_name") or ""
            if out in parent and parent[out] != here:
                problems.append(f"{op.describe()}: enters frame {out!r} from {frame_description(here)}, but other "
                                f"Enters of that frame come from {frame_description(parent[out])}; all Enters of one "
                                "loop must come from the same frame")
            parent.setdefault(out, here)
            parallel.setdefault(out, int(op.attrs.get("parallel_iterations", 10)))
        elif op.type == "Exit":
            if here == "":
                problems.append(f"{op.describe()}: is in the root frame, so there is no loop to exit; an Exit must "
                                "read a Switch of a while loop")
            out = parent.get(here, "")
        elif op.type == "NextIteration" and here == "":
            problems.append(f"{op.describe()}: is not inside any while frame (no Enter leads to it); "
                            "build loops with graphcore.while_loop")
        output_frame_of[id(op)] = out
    for op in ops:
        if op.type != "Merge":
            continue
        for t in op.inputs:
            if _is_back_edge(op, t) and id(t.op) in member and frame_of[id(t.op)] != frame_of[id(op)]:
                problems.append(f"{t.op.describe()}: feeds {op.name} in {frame_description(frame_of[id(op)])} but "
                                f"runs in {frame_description(frame_of[id(t.op)])}; a back edge must stay inside "
                                "its loop")
    return Frames(frame_of, output_frame_of, parent, parallel, tuple(problems))
