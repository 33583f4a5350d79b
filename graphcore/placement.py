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
