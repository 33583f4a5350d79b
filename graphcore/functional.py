"""map_fn, scan and foldl: loops over a tensor's first dimension, built on while_loop
and tensor lists (so they are ordinary graph loops, differentiable like any other)."""
from __future__ import annotations

import numpy as np

from . import nest
from .control_flow import while_loop
from .errors import StagingError
from .graph import Tensor, get_default_graph, graph_of
from .ops import array_ops, list_ops


def _length(elems_flat):
    n = elems_flat[0].shape[0] if elems_flat[0].shape.dims else None
    return n if n is not None else array_ops.shape(elems_flat[0])[0]


def _prepare(elems, initializer):
    """Tensors of elems, their length, and the initial accumulator (elems[0] when none is
    given, in which case the loop starts at index 1)."""
    flat = [array_ops.constant(e) if not isinstance(e, Tensor) else e for e in nest.flatten(elems)]
    if initializer is None:
        return flat, _length(flat), nest.pack_sequence_as(elems, [f[0] for f in flat]), 1
    return flat, _length(flat), initializer, 0


def _eager(values) -> bool:
    return graph_of(nest.flatten(values)) is None and get_default_graph() is None


def foldl(fn, elems, initializer=None, parallel_iterations: int = 10, name: str | None = None):
    """acc = fn(acc, x) for each x along elems' first dimension; returns the final acc.

    Example: gc.foldl(lambda a, x: a + x, xs, initializer=0.0)"""
    if _eager([elems, initializer]):
        flat = [np.asarray(e) for e in nest.flatten(elems)]
        items = [nest.pack_sequence_as(elems, [f[i] for f in flat]) for i in range(len(flat[0]))]
        acc = initializer
        if acc is None:
            acc, items = items[0], items[1:]
        for x in items:
            acc = fn(acc, x)
        return acc
    flat, n, initializer, start = _prepare(elems, initializer)

    def body(i, acc):
        x = nest.pack_sequence_as(elems, [f[i] for f in flat])
        return i + 1, fn(acc, x)

    _, acc = while_loop(lambda i, acc: i < n, body, [np.int64(start), initializer],
                        parallel_iterations=parallel_iterations, name=name or "foldl")
    return acc


def scan(fn, elems, initializer=None, parallel_iterations: int = 10, name: str | None = None):
    """Like foldl, but returns every intermediate acc stacked along a new first axis."""
    if _eager([elems, initializer]):
        flat = [np.asarray(e) for e in nest.flatten(elems)]
        items = [nest.pack_sequence_as(elems, [f[i] for f in flat]) for i in range(len(flat[0]))]
        acc, outs = initializer, []
        if acc is None:
            acc, items = items[0], items[1:]
            outs.append(acc)
        for x in items:
            acc = fn(acc, x)
            outs.append(acc)
        return nest.map_structure(lambda *xs: np.stack(xs), *outs)
    flat, n, initializer, start = _prepare(elems, initializer)
    init_flat = [array_ops.constant(v) if not isinstance(v, Tensor) else v for v in nest.flatten(initializer)]
    initializer = nest.pack_sequence_as(initializer, init_flat)
    lists = []
    for v in init_flat:
        l0 = list_ops.tensor_list_new(v.dtype, v.shape.dims)
        lists.append(list_ops.tensor_list_push_back(l0, v) if start else l0)

    def body(i, acc, lists):
        x = nest.pack_sequence_as(elems, [f[i] for f in flat])
        new = fn(acc, x)
        new_flat = nest.flatten(new)
        if len(new_flat) != len(init_flat):
            raise StagingError(f"scan: fn returned {len(new_flat)} values but the accumulator has {len(init_flat)}")
        return i + 1, new, [list_ops.tensor_list_push_back(l, v, element_dtype=t.dtype)
                            for l, v, t in zip(lists, new_flat, init_flat)]

    _, _, lists = while_loop(lambda i, acc, lists: i < n, body, [np.int64(start), initializer, lists],
                             parallel_iterations=parallel_iterations, name=name or "scan")
    stacked = [list_ops.tensor_list_stack(l, t.dtype, t.shape.dims) for l, t in zip(lists, init_flat)]
    return nest.pack_sequence_as(initializer, stacked)


def map_fn(fn, elems, dtype=None, parallel_iterations: int = 10, name: str | None = None):
    """fn applied to each slice of elems along its first dimension, results stacked.

    `dtype` gives the output dtype(s) when they differ from elems'."""
    if _eager([elems]):
        flat = [np.asarray(e) for e in nest.flatten(elems)]
        outs = [fn(nest.pack_sequence_as(elems, [f[i] for f in flat])) for i in range(len(flat[0]))]
        return nest.map_structure(lambda *xs: np.stack(xs), *outs)
    flat = [array_ops.constant(e) if not isinstance(e, Tensor) else e for e in nest.flatten(elems)]
    n = _length(flat)
    g = graph_of(flat)
    # trace fn once outside the loop only to learn the output structure and dtypes
    probe_mark = g.checkpoint()
    probe = fn(nest.pack_sequence_as(elems, [f[0] for f in flat]))
    out_structure = probe
    out_specs = [(t.dtype, t.shape) if isinstance(t, Tensor) else (array_ops.constant(t).dtype, ())
                 for t in nest.flatten(probe)]
    g.rollback(probe_mark)
    lists = [list_ops.tensor_list_new(d, s.dims if hasattr(s, "dims") else s) for d, s in out_specs]

    def body(i, lists):
        y = fn(nest.pack_sequence_as(elems, [f[i] for f in flat]))
        return i + 1, [list_ops.tensor_list_push_back(l, v, element_dtype=d)
                       for l, v, (d, _) in zip(lists, nest.flatten(y), out_specs)]

    _, lists = while_loop(lambda i, lists: i < n, body, [np.int64(0), lists],
                          parallel_iterations=parallel_iterations, name=name or "map")
    stacked = [list_ops.tensor_list_stack(l, d, s.dims if hasattr(s, "dims") else s)
               for l, (d, s) in zip(lists, out_specs)]
    return nest.pack_sequence_as(out_structure, stacked)
