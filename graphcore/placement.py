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

Control Flow v2's If and While ops, when they run as ops (direct mode), are placed like
any op and run their functions whole on their device; their inputs and outputs cross
devices like any op's. The ops inside their functions do not get devices of their own:
a device asked for inside a function must still be one of the run's (else the run is
refused, as for any op), and an If/While with no device of its own goes to the one device
its functions' ops ask for, if they ask for one (`with gc.device("cpu:1"):` inside a loop
body runs the loop there); if they ask for several, it goes to the default device and
they all run there (the values are the same: every device computes with the same kernels).

Device names are read by graphcore/device_names.py: an op's device may leave parts out
(`cpu:1` goes to `/job:worker/task:1/cpu:1` if that is the one run device it matches).
"""
from __future__ import annotations

from .device_names import EXAMPLES, parse_device
from .errors import GraphError
from .frames import topological_order
from .library import called_functions, function_attrs
from .source_info import user_location


def device_list(devices) -> list[str]:
    """The run's devices as a list of distinct names, each naming one device (a type and an
    index, e.g. 'cpu:0' or '/job:worker/task:1/cpu:0'), checked; an error names the user's
    line that gave them."""
    if isinstance(devices, str):
        devices = [devices]
    out = [d if isinstance(d, str) else str(d) for d in devices]
    if not out or any(not d for d in out):
        raise _bad_devices(f"devices must be a non-empty list of device names, e.g. ['cpu:0', 'cpu:1'], "
                           f"got {devices!r}")
    seen: dict = {}
    for d in out:
        try:
            spec = parse_device(d)
        except GraphError as e:
            raise _bad_devices(f"devices={out}: {e}") from None
        if not spec.complete:
            raise _bad_devices(f"devices={out}: {d!r} names no single device (it needs a type and an index); "
                               f"write e.g. {EXAMPLES}")
        if spec in seen:
            raise _bad_devices(f"devices names a device twice: {seen[spec]!r} and {d!r} in {out}")
        seen[spec] = d
    return out


def _bad_devices(message: str) -> GraphError:
    where = user_location()
    return GraphError(f"{message} (at {where})" if where is not None else message)


def resolve_device(op, devices: list[str]) -> str:
    """The run device of `devices` that `op.device` names: the same name, else the one
    device its parts match (`cpu:1` -> `/task:0/cpu:1`). A malformed name, or one that
    matches none or several, is refused, naming the op and the user's line."""
    if op.device in devices:
        return op.device
    try:
        spec = parse_device(op.device)
    except GraphError as e:
        raise GraphError(f"{op.describe()}: {e.args[0]}; change the gc.device(...) around it") from None
    hits = [d for d in devices if spec.matches(parse_device(d))]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise GraphError(f"{op.describe()} is placed on device {op.device!r}, which matches several of this run's "
                         f"devices ({', '.join(hits)}); name the task in the gc.device(...) around it, e.g. "
                         f"{hits[0]!r}")
    raise GraphError(f"{op.describe()} is placed on device {op.device!r}, which this run does not have "
                     f"(its devices: {', '.join(devices)}); pass that device in devices=[...] or change "
                     f"the gc.device(...) around it")


def place(ops, devices, default: str | None = None) -> dict[int, str]:
    """id(op) -> device for every op of `ops` (all of a run's ops: consumers outside it
    are not looked at). An op asked for on a device the run does not have is refused,
    naming the op and the user's line."""
    devices = device_list(devices)
    default = devices[0] if default is None else default
    if default not in devices:
        raise GraphError(f"the default device {default!r} is not among the run's devices {devices}")
    ops = list(ops)
    member = {id(op) for op in ops}
    asked: dict[int, str] = {}
    resolved: dict[str, str] = {}  # (one look per distinct name)
    for op in ops:
        if not op.device:
            asked[id(op)] = default
            continue
        d = resolved.get(op.device)
        if d is None:
            d = resolved[op.device] = resolve_device(op, devices)
        asked[id(op)] = d
    inside: dict[str, set[str]] = {}  # function name -> the run devices its ops ask for (at any depth)
    for op in ops:
        if function_attrs(op.op_def):
            wanted = _asked_inside(op, devices, resolved, inside)
            if not op.device and len(wanted) == 1:
                asked[id(op)] = next(iter(wanted))
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


def _asked_inside(op, devices: list[str], resolved: dict, memo: dict) -> set[str]:
    """The run devices that the ops of the functions `op` calls (at any depth) are put on
    with gc.device; a device the run does not have is refused, naming the op."""
    out: set[str] = set()
    for name in called_functions(op):
        hit = memo.get(name)
        if hit is None:
            hit = memo[name] = set()  # (a function does not call itself: validate() refuses that)
            for fop in op.graph.get_function(name).get_operations():
                if fop.device:
                    d = resolved.get(fop.device)
                    if d is None:
                        d = resolved[fop.device] = resolve_device(fop, devices)
                    hit.add(d)
                if function_attrs(fop.op_def):
                    hit |= _asked_inside(fop, devices, resolved, memo)
        out |= hit
    return out


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
