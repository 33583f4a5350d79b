"""Placement: the device every op of a run goes to, before partitioning.

An op goes where the user put it (`with gc.device("cpu:1"):`), else to the default
device (the first of the run's). The loop and cond primitives follow the data they
carry, as TensorFlow's placer colocates them, whatever was asked for them:

  Switch          with its data input (a cond reads a value where it is)
  Exit            with its input (the loop variable's Switch)
  Enter           with its first consumer (the partitioner gives every other device
                  that reads it an Enter of its own: an Enter's output never crosses)
  NextIteration   with its Merge (a loop's back edge never crosses devices)

so an edge crosses devices only between ops of one frame and iteration, or into an
Enter or out of an Exit, where graphcore/partition.py puts a _Send/_Recv pair.
"""
from __future__ import annotations

from .errors import GraphError
from .frames import topological_order


def device_list(devices) -> list[str]:
    """The run's devices as a list of distinct non-empty names, checked."""
    if isinstance(devices, str):
        devices = [devices]
    out = [str(d) for d in devices]
    if not out or any(not d for d in out):
        raise GraphError(f"devices must be a non-empty list of device names, e.g. ['cpu:0', 'cpu:1'], got {devices!r}")
    if len(set(out)) != len(out):
        raise GraphError(f"devices names a device twice: {out}")
    return out


def place(ops, devices, default: str | None = None) -> dict[int, str]:
    """id(op) -> device for every op of `ops` (all of a run's ops: consumers outside it
    are not looked at). An op asked for on a device the run does not have is refused,
    naming the op and the user's line."""
    devices = device_list(devices)
    default = devices[0] if default is None else default
    if default not in devices:
        raise GraphError(f"the default device {default!r} is not among the run's devices {devices}")
    known = set(devices)
    ops = list(ops)
    member = {id(op) for op in ops}
    asked: dict[int, str] = {}
    for op in ops:
        if op.device and op.device not in known:
            raise GraphError(f"{op.describe()} is placed on device {op.device!r}, which this run does not have "
                             f"(its devices: {', '.join(devices)}); pass that device in devices=[...] or change "
                             f"the gc.device(...) around it")
        asked[id(op)] = op.device or default
    where = dict(asked)
    for op in topological_order(ops):
        if op.type in ("Switch", "Exit") and op.inputs and id(op.inputs[0].op) in member:
            where[id(op)] = where[id(op.inputs[0].op)]
        elif op.type in ("Enter", "NextIteration"):
            consumers = [c for c in op.outputs[0].consumers() if id(c) in member]
            if consumers:
                where[id(op)] = asked[id(consumers[0])] if op.type == "Enter" else where.get(
                    id(consumers[0]), asked[id(consumers[0])])
            elif op.inputs and id(op.inputs[0].op) in member:
                where[id(op)] = where[id(op.inputs[0].op)]
    return where


def _loop_own(op) -> bool:
    """With "loops", these stay where the loop is: its machinery (control flow, Identities)
    and its predicate (comparisons and logic, by their op types' family)."""
    d = op.op_def
    return d.control_flow or op.type == "Identity" or d.family in ("comparison", "logical")


def _round_robin(ops, devices):
    return {id(op): devices[i % len(devices)] for i, op in enumerate(ops)}


def _loops(ops, devices):
    """Each loop's body on the next device, its machinery and predicate with the ops around
    the loop; the branches of a cond apart (true on the next device)."""
    out = {}
    for op in ops:
        depth, c, where = 0, op.ctx, None
        while c is not None:
            if c.is_while:
                depth += 1
                if where is None and not _loop_own(op):
                    where = "body"
            elif where is None and getattr(c, "branch", None) is not None:
                where = "true" if c.branch else "false"
            c = c.outer
        out[id(op)] = devices[(depth if where in ("body", "true") else 0) % len(devices)] if where else devices[0]
    return out


def _depth(ops, devices):
    """Nesting depth of loops decides: the root on the first device, depth 1 on the next..."""
    out = {}
    for op in ops:
        depth, c = 0, op.ctx
        while c is not None:
            depth += bool(c.is_while)
            c = c.outer
        out[id(op)] = devices[depth % len(devices)]
    return out


SPREADS = {"round-robin": _round_robin, "loops": _loops, "depth": _depth}


def spread(graph, devices, how: str = "loops", keep_given: bool = True) -> None:
    """Set the device of a graph's ops by a rule, to run (or look at) it across `devices`
    without writing gc.device: "round-robin" (every op on the next device in turn),
    "loops" (loop bodies and true branches on the next device, predicates where the loop
    is), "depth" (loop nesting depth picks the device). Ops with a device keep it unless
    `keep_given=False`. (The placer still moves the primitives next to their data.)"""
    if how not in SPREADS:
        raise GraphError(f"unknown way to spread ops {how!r}; use one of {', '.join(SPREADS)}")
    devices = device_list(devices)
    ops = [op for op in graph.get_operations() if not (keep_given and op.device)]
    chosen = SPREADS[how](ops, devices)
    for op in ops:
        op.device = chosen[id(op)]
