"""Common subexpression elimination: of two ops with the same type, inputs, attributes,
control inputs, device and control-flow context, the later one is replaced by the
earlier one. Stateful ops, ops reading variables, control-flow primitives, identities
(pivots carry control meaning), lists and placeholders are never merged.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import DType
from ..graph import Graph
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
            attrs = tuple(sorted((k, _key_of_attr(v)) for k, v in attrs.items()))
        except (_Unhashable, TypeError):
            return None
    else:
        attrs = ()
    controls = tuple(sorted(map(id, op.control_inputs))) if op.control_inputs else ()
    # a Tensor object is one output of one op for the graph's life: its id names it
    return (op.type, tuple(map(id, op.inputs)), attrs, controls, op.device, id(op.ctx),
            tuple((t.dtype, t.shape.dims) for t in op.outputs))


def run(graph: Graph, state: PassState) -> int:
    seen: dict = {}
    rewrites = 0
    for op in graph.get_operations():
        if op.type in NEVER or op.op_def.stateful or op.op_def.uses_runtime:
            continue
        if not op.outputs or any(t.dtype.np_dtype is None for t in op.outputs):
            continue
        if not any(t.consumers() for t in op.outputs) and not op.control_outputs:
            continue  # unused: pruning erases it
        key = _key(op)
        if key is None:
            continue
        first = seen.setdefault(key, op)
        if first is op:
            continue
        changed = False
        for old, new in zip(op.outputs, first.outputs):
            changed |= state.replace(old, new)
        if op.control_outputs and first.ctx is op.ctx:
            for waiting in op.control_outputs:
                graph.remove_control_input(waiting, op)
                graph.add_control_input(waiting, first)
            changed = True
        if changed:
            rewrites += 1
    return rewrites
