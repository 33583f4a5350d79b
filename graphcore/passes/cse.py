"""Common subexpression elimination: of two ops with the same type, inputs, attributes,
control inputs, device and control-flow context, the later one is replaced by the
earlier one. Stateful ops, ops reading variables, control-flow primitives, identities
(pivots carry control meaning), lists and placeholders are never merged.
"""
from __future__ import annotations

from math import copysign

import numpy as np

from ..dtypes import DType
from ..graph import Graph
from ..shapes import TensorShape
from .state import UNTOUCHABLE, PassState, not_of_types

NEVER = UNTOUCHABLE | {"Identity", "Print", "Assert"}


class _Unhashable(Exception):
    pass


def _plain(v):
    return (type(v).__name__, v)


def _float(v):
    """A float's key: its value, and for a zero its sign too (0.0 == -0.0, but 1 / x and
    x + 0.0 tell them apart; merging them changed results). (A NaN equals nothing: never merged.)"""
    if v == 0.0:
        return (type(v).__name__, v, copysign(1.0, v))
    return (type(v).__name__, v)


def _np_scalar(v):
    return ("np", _NP_STR[type(v)], v.tobytes())


_NP_STR: dict = {}  # numpy scalar type -> its dtype's str ('<f8'), for the types whose dtype it fixes
# what `_key_of_attr` does for a value of exactly this type (the others take the general way)
_BY_TYPE = {t: _plain for t in (type(None), bool, int, str)}
_BY_TYPE[float] = _float
for _t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
           np.float16, np.float32, np.complex64, np.complex128):
    _NP_STR[_t] = np.dtype(_t).str
    _BY_TYPE[_t] = _np_scalar
_BY_TYPE[np.float64] = _float  # (a subclass of float: as the general way takes it)
_BY_TYPE[DType] = lambda v: ("dtype", v.name)
_BY_TYPE[TensorShape] = lambda v: ("shape", v.dims)


def _ndarray(v):
    if v.dtype == object:
        raise _Unhashable
    return ("nd", v.dtype.str, v.shape, v.tobytes())


_BY_TYPE[np.ndarray] = _ndarray  # (exactly ndarray: what the general way gives it)


def _key_of_attr(v):
    f = _BY_TYPE.get(type(v))
    if f is not None:
        return f(v)
    if isinstance(v, float):
        return _float(v)
    if v is None or isinstance(v, (bool, int, str)):
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
    """What two ops with the same cheap key (type, inputs, context: see `run`) must also share to
    merge: attributes, control inputs, device, and their outputs' dtypes and static shapes."""
    attrs = op.attrs
    if attrs:
        try:
            n = len(attrs)
            if n == 1:
                for k, v in attrs.items():
                    attrs = ((k, _key_of_attr(v)),)
            elif n == 2:  # (a Const's value and dtype: the pair in sorted order, without sorting)
                (k1, v1), (k2, v2) = attrs.items()
                attrs = ((k1, _key_of_attr(v1)), (k2, _key_of_attr(v2))) if k1 < k2 else \
                    ((k2, _key_of_attr(v2)), (k1, _key_of_attr(v1)))
            else:
                attrs = tuple(sorted([(k, _key_of_attr(v)) for k, v in attrs.items()]))
        except (_Unhashable, TypeError):
            return None
    else:
        attrs = ()
    controls = op.control_inputs
    controls = tuple(sorted(map(id, controls))) if controls else ()
    # (a dtype by its name: hashing and comparing strings is cheaper than DType's own methods)
    outs = op.outputs
    if len(outs) == 1:
        t = outs[0]
        outs = ((t.dtype.name, t.shape.dims),)
    else:
        outs = tuple([(t.dtype.name, t.shape.dims) for t in outs])
    return (attrs, controls, op.device, outs)


def _full_key(entry):
    if entry[4] is _UNKNOWN:
        entry[4] = _key(entry[0])
    return entry[4]


def _eligible(op) -> bool:
    d = op.op_def
    kind = _KIND.get(d)
    if kind is None:
        kind = _KIND[d] = not (op.type in NEVER or d.stateful or d.uses_runtime)
    if not kind or not op.outputs:
        return False
    for t in op.outputs:
        if t.dtype.np_dtype is None:
            return False
    return True


_KIND: dict = {}  # op def -> whether its ops may merge at all (its type, its effects)


_UNKNOWN = object()  # a full key not worked out yet


def _cheap_key(op):
    """Type, context and inputs: each input as its op and output index (a tensor is
    `op.outputs[index]`), which compare by identity. (Not the tensors themselves: a tuple of
    them compared with another would ask Tensor.__eq__, which builds an Equal op; nor their
    id()s, a call each.)"""
    ins = op.inputs
    n = len(ins)
    if n == 2:
        a, b = ins
        return (op.type, op.ctx, a.op, a.value_index, b.op, b.value_index)
    if n == 1:
        a = ins[0]
        return (op.type, op.ctx, a.op, a.value_index)
    if n == 0:
        return (op.type, op.ctx)
    return (op.type, op.ctx, tuple([(t.op, t.value_index) for t in ins]))


def run(graph: Graph, state: PassState) -> int:
    # Two ops merge only if their cheap keys (type, inputs, context) and their full keys (`_key`:
    # the rest) are equal: an op's full key is worked out only when an earlier op has its cheap
    # key, and compared only with those of the ops with its cheap key. An op's keys stay while its
    # inputs and control inputs do (the graph gives an op new tuples when it rewires them), so a
    # later run works out those of changed ops only.
    keys = state.cache.setdefault("cse", {})  # op -> [op, inputs, controls, cheap key, full key]
    never = state.cache.setdefault("cse never", set())  # ops that are never merged (_eligible is False)
    eligible = state.cache.setdefault("cse eligible", set())  # and those that may be
    if state.visit is None:
        return _sweep(graph, state, keys, never, eligible)
    return _near(graph, state, keys, never, eligible)


def _quick_eligible(op) -> bool:
    """`_eligible(op)`, answered from the op type's remembered kind where it has one (asked of
    every op, so the common case is a dict lookup and an output dtype check)."""
    ok = _KIND.get(op.op_def)
    if ok is None:
        return _eligible(op)
    return bool(ok and op.outputs and all(t.dtype.np_dtype is not None for t in op.outputs))


def _usable(op, never: set, eligible: set) -> bool:
    """`op` may merge (its type and effects allow it: remembered) and something reads it or
    waits for it (else pruning erases it)."""
    if op in never:
        return False
    if op not in eligible:
        if not _quick_eligible(op):
            never.add(op)  # (what makes an op eligible never changes)
            return False
        eligible.add(op)
    if op.waiters:  # (the graph's own lists: read, not copied)
        return True
    for t in op.outputs:
        if t.readers:
            return True
    return False


def _entry(op, keys: dict) -> list:
    """`op`'s [op, inputs, controls, cheap key, full key], worked out anew if they changed."""
    entry = keys.get(op)
    if entry is not None and entry[1] is op.inputs and entry[2] is op.control_inputs:
        return entry
    ins = op.inputs  # (_cheap_key's usual arities written out: it is asked of every op)
    n = len(ins)
    if n == 2:
        a, b = ins
        cheap = (op.type, op.ctx, a.op, a.value_index, b.op, b.value_index)
    elif n == 1:
        a = ins[0]
        cheap = (op.type, op.ctx, a.op, a.value_index)
    else:
        cheap = _cheap_key(op)
    entry = keys[op] = [op, ins, op.control_inputs, cheap, _UNKNOWN]
    return entry


def _merge(graph: Graph, state: PassState, op, first) -> bool:
    """Make `op`'s readers read `first` (an earlier op with the same keys), and what waits for
    `op` wait for `first` when both are in one context. True if anything changed."""
    changed = False
    for old, new in zip(op.outputs, first.outputs):
        changed |= state.replace(old, new)
    if op.waiters and first.ctx is op.ctx:
        for waiting in op.control_outputs:
            graph.remove_control_input(waiting, op)
            graph.add_control_input(waiting, first)
            state.touch(waiting)
        state.touch(op, first)
        changed = True
    return changed


def _sweep(graph: Graph, state: PassState, keys: dict, never: set, eligible: set) -> int:
    """Every op in the graph's order, each merged into the first op before it with its keys.
    (An op's entry, with its full key, is made only when one is compared: most ops are the
    only ones with their cheap key.)"""
    firsts: dict = {}  # cheap key -> the first op with it
    fulls: dict = {}  # cheap key (of a second op) -> {full key: the first op with it}
    rewrites = 0
    for op in not_of_types(graph.get_operations(), NEVER):
        if op in never:
            continue
        if not _quick_eligible(op):
            never.add(op)  # (what makes an op eligible never changes)
            continue
        if not op.waiters:  # (the graph's own lists: read, not copied)
            for t in op.outputs:
                if t.readers:
                    break
            else:
                continue  # unused: pruning erases it
        ins = op.inputs  # (_cheap_key's usual arities written out: it is asked of every op)
        n = len(ins)
        if n == 2:
            a, b = ins
            cheap = (op.type, op.ctx, a.op, a.value_index, b.op, b.value_index)
        elif n == 1:
            a = ins[0]
            cheap = (op.type, op.ctx, a.op, a.value_index)
        else:
            cheap = _cheap_key(op)
        head = firsts.get(cheap)
        if head is None:
            firsts[cheap] = op  # the first op with this cheap key: first of its full key too
            continue
        entry = keys.get(op)
        if entry is None or entry[1] is not ins or entry[2] is not op.control_inputs:
            entry = keys[op] = [op, ins, op.control_inputs, cheap, _UNKNOWN]
        full = entry[4]
        if full is _UNKNOWN:
            full = entry[4] = _key(op)
        if full is None:
            continue  # attributes that cannot be compared: never merged
        seen = fulls.get(cheap)
        if seen is None:
            seen = fulls[cheap] = {}
            first_key = _full_key(_entry(head, keys))
            if first_key is not None:
                seen[first_key] = head
        first = seen.setdefault(full, op)
        if first is op:
            continue
        if _merge(graph, state, op, first):
            rewrites += 1
    # for the ops without inputs (constants: one cheap key per context), the first op of each
    # full key, for _near (the sweep merged the others into it)
    inputless = state.cache["cse inputless"] = {}
    for cheap, head in firsts.items():
        if len(cheap) == 2:  # (type, context): no inputs
            table = inputless[cheap] = dict(fulls.get(cheap, ()))
            full = _full_key(_entry(head, keys))
            if full is not None:
                table.setdefault(full, head)
    return rewrites


def _near(graph: Graph, state: PassState, keys: dict, never: set, eligible: set) -> int:
    """A later run: what a sweep of every op would merge, looking only at the ops touched since
    the last run ended, in the graph's order. A merge needs an op whose keys or use changed
    since then (the last run merged every other pair), so the ops looked at are those touched
    and, for each, the ops with its keys after it (they may now merge into it): for an op with
    inputs, the readers of its first input that read what it reads; for one without (constants:
    one cheap key per context), the first op of its full key, from a table the sweep made and
    each later run keeps. An op is merged into the first op before it with its keys (which
    changed no more after the walk passed it), as the sweep would."""
    inputless = state.cache.setdefault("cse inputless", {})
    visit = state.visit
    rewrites = 0
    for op in state.walk_types(NEVER, excluding=True):
        if not _usable(op, never, eligible):
            continue
        entry = _entry(op, keys)
        cheap = entry[3]
        ins = op.inputs
        if not ins:  # (type, context): the table of the first op of each full key
            full = entry[4]
            if full is _UNKNOWN:
                full = entry[4] = _key(op)
            if full is None:
                continue
            table = inputless.setdefault(cheap, {})
            first = table.get(full)
            if first is not None and first is not op and first in graph and _usable(first, never, eligible) \
                    and _entry(first, keys)[4] == full:
                if first.order < op.order:
                    if _merge(graph, state, op, first):
                        rewrites += 1
                    continue
                if first not in visit:  # it comes after: it merges into this op when reached
                    visit.add(first)
                    state._push((first,))
            table[full] = op
            continue
        mates = []  # the ops with its cheap key: readers of its first input that read what it reads
        first_input, n = ins[0], len(ins)
        for m in dict.fromkeys(first_input.readers):
            if m is not op and m.type == op.type and m.ctx is op.ctx:
                mi = m.inputs
                if len(mi) == n:
                    for a, b in zip(mi, ins):
                        if a is not b:
                            break
                    else:
                        mates.append(m)
        if not mates:
            continue
        order = op.order
        ahead = [m for m in mates if m.order > order and m not in visit]
        if ahead:  # they may merge into this op now
            visit.update(ahead)
            state._push(ahead)
        full = entry[4]
        if full is _UNKNOWN:
            full = entry[4] = _key(op)
        if full is None:
            continue  # attributes that cannot be compared: never merged
        first = None
        for m in mates:
            if m.order < order and (first is None or m.order < first.order) and m in graph \
                    and _usable(m, never, eligible):
                m_entry = _entry(m, keys)
                if m_entry[3] != cheap:
                    continue
                m_full = m_entry[4]
                if m_full is _UNKNOWN:
                    m_full = m_entry[4] = _key(m)
                if m_full is not None and m_full == full:
                    first = m
        if first is not None and _merge(graph, state, op, first):
            rewrites += 1
    return rewrites
