"""Common subexpression elimination: of two ops with the same type, inputs, attributes,
control inputs, device and control-flow context, the later one is replaced by the
earlier one. Stateful ops, ops reading variables, control-flow primitives, identities
(pivots carry control meaning), lists and placeholders are never merged.
"""
from __future__ import annotations

from itertools import filterfalse

import numpy as np

from ..dtypes import DType
from ..graph import Graph, Tensor
from ..shapes import TensorShape
from .state import UNTOUCHABLE, PassState

NEVER = UNTOUCHABLE | {"Identity", "Print", "Assert"}


class _Unhashable(Exception):
    pass


def _key_of_attr(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return (type(v).__name__, v)
    if isinstance(v, np.generic):
        return ("np", v.dtype.str, v.tobytes())
    if isinstance(v, np.ndarray):
        if v.dtype == object:
            raise _Unhashable
        return ("nd", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, DType):
        return ("dtype", v.name)
    if isinstance(v, TensorShape):
        return ("shape", v.dims)
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_key_of_attr(x) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple(sorted((k, _key_of_attr(x)) for k, x in v.items())))
    raise _Unhashable


def _key(op):
    attrs = op.attrs
    if attrs:
        try:
            attrs = tuple(sorted([(k, _key_of_attr(v)) for k, v in attrs.items()]))
        except (_Unhashable, TypeError):
            return None
    else:
        attrs = ()
    controls = op.control_inputs
    controls = tuple(sorted(map(id, controls))) if controls else ()
    # a Tensor object is one output of one op for the graph's life: its id names it (and a
    # dtype its name: hashing and comparing strings is cheaper than DType's own methods)
    return (op.type, tuple(map(id, op.inputs)), attrs, controls, op.device, id(op.ctx),
            tuple([(t.dtype.name, t.shape.dims) for t in op.outputs]))


def _full_key(entry):
    if entry[4] is _UNKNOWN:
        entry[4] = _key(entry[0])
    return entry[4]


def _eligible(op) -> bool:
    if op.type in NEVER or op.op_def.stateful or op.op_def.uses_runtime:
        return False
    return bool(op.outputs) and all(t.dtype.np_dtype is not None for t in op.outputs)


_UNKNOWN = object()  # a full key not worked out yet
_readers = Tensor.consumers


def run(graph: Graph, state: PassState) -> int:
    # Two ops merge only if their full keys (`_key`) are equal, and then so are their cheap
    # keys (type, inputs, context): an op's full key is worked out only when an earlier op has
    # its cheap key. An op's keys stay while its inputs and control inputs do (the graph gives
    # an op new tuples when it rewires them), so a later run works out those of changed ops only.
    keys = state.cache.setdefault("cse", {})  # id(op) -> [op, inputs, controls, cheap key, full key]
    never = state.cache.setdefault("cse never", set())  # ops that are never merged (_eligible is False)
    known = keys.get
    buckets: dict = {}  # cheap key -> [the first op's entry, {full key: the first op with it} or None]
    rewrites = 0
    for op in filterfalse(never.__contains__, graph.get_operations()):
        entry = known(id(op))
        if entry is not None and entry[0] is op and entry[1] is op.inputs and entry[2] is op.control_inputs:
            pass  # its keys still hold
        elif not _eligible(op):
            never.add(op)  # (what makes an op eligible never changes)
            continue
        else:
            entry = None
        if not op.control_outputs and not any(map(_readers, op.outputs)):
            continue  # unused: pruning erases it
        if entry is None:
            entry = keys[id(op)] = [op, op.inputs, op.control_inputs,
                                    (op.type, tuple(map(id, op.inputs)), id(op.ctx)), _UNKNOWN]
        bucket = buckets.get(entry[3])
        if bucket is None:
            buckets[entry[3]] = [entry, None]  # the first op with this cheap key: first of its full key too
            continue
        full = _full_key(entry)
        if full is None:
            continue  # attributes that cannot be compared: never merged
        seen = bucket[1]
        if seen is None:
            seen = bucket[1] = {}
            first_key = _full_key(bucket[0])
            if first_key is not None:
                seen[first_key] = bucket[0][0]
        first = seen.setdefault(full, op)
        if first is op:
            continue
        changed = False
        for old, new in zip(op.outputs, first.outputs):
            changed |= state.replace(old, new)
        if op.control_outputs and first.ctx is op.ctx:
            for waiting in op.control_outputs:
                graph.remove_control_input(waiting, op)
                graph.add_control_input(waiting, first)
                state.touch(waiting)
            state.touch(op, first)
            changed = True
        if changed:
            rewrites += 1
    return rewrites
