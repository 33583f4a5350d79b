"""Ops that gradient rules build: undoing broadcasting, scattering a slice back into
zeros, list helpers. Each is one block with its own gradient, so gradients of
gradients (second order) need nothing else."""
from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes as dt
from ..registry import CHEAP, define_op
from ..shapes import TensorShape
from ..tensor_list import EMPTY
from .array_ops import (_index_tuple, constant_value, gather_op, slice_op, strided_slice_op,
                        tile_op)


def _dims_of(shape_t):
    """Static dims from a shape tensor (constant or folded), else a shape of known rank."""
    v = constant_value(shape_t)
    if v is not None:
        return TensorShape([int(d) for d in np.ravel(v)])
    if shape_t.shape.is_fully_defined():
        return TensorShape([None] * shape_t.shape.dims[0])
    return TensorShape(None)


def _shape_tuple(v) -> tuple:
    return tuple(int(d) for d in np.ravel(v))


# -- BroadcastTo / UnbroadcastTo (BroadcastGradientArgs + Sum + Reshape in one) --------

def _broadcast_to_rule(x, shape_t):
    return x.dtype, _dims_of(shape_t)


def _broadcast_to_kernel(x, shape_v):
    return np.array(np.broadcast_to(x, _shape_tuple(shape_v)))


broadcast_to_op = define_op("BroadcastTo", shape=_broadcast_to_rule, kernel=_broadcast_to_kernel, cost=CHEAP)


@broadcast_to_op.gradient
def _broadcast_to_grad(op, dy):
    from ..gradients.util import fwd_shape  # noqa: PLC0415

    return [unbroadcast_to_op(dy, fwd_shape(op.inputs[0])), None]


def unbroadcast_kernel(g, shape_v):
    """Sum `g` over the axes numpy broadcasting added or stretched to reach g's shape."""
    shape = _shape_tuple(shape_v)
    g = np.asarray(g)
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = list(builtins.range(lead))
    for i, d in enumerate(shape):
        if d == 1 and g.shape[lead + i] != 1:
            axes.append(lead + i)
    out = np.sum(g, axis=tuple(axes), keepdims=True) if axes else g
    return np.reshape(out, shape)


unbroadcast_to_op = define_op("UnbroadcastTo", shape=_broadcast_to_rule, kernel=unbroadcast_kernel, cost=CHEAP,
                              doc="The gradient of broadcasting: sum over broadcast axes, reshape to `shape`.")


@unbroadcast_to_op.gradient
def _unbroadcast_to_grad(op, dy):
    from ..gradients.util import fwd_shape  # noqa: PLC0415

    return [broadcast_to_op(dy, fwd_shape(op.inputs[0])), None]


# -- BroadcastReduced: the gradient of Sum/Mean/Max/Min/Prod --------------------------

def _broadcast_reduced_rule(dy, shape_t, *, axis, keepdims):
    return dy.dtype, _dims_of(shape_t)


def _broadcast_reduced_kernel(dy, shape_v, *, axis, keepdims):
    shape = _shape_tuple(shape_v)
    dy = np.asarray(dy)
    if not keepdims:
        axes = builtins.range(len(shape)) if axis is None else sorted(
            a % len(shape) for a in ((axis,) if isinstance(axis, (int, np.integer)) else axis))
        for a in axes:
            dy = np.expand_dims(dy, a)
    return np.array(np.broadcast_to(dy, shape))


broadcast_reduced_op = define_op("BroadcastReduced", shape=_broadcast_reduced_rule, kernel=_broadcast_reduced_kernel,
                                 cost=CHEAP, doc="Put back the axes a reduction removed and broadcast to `shape`.")


@broadcast_reduced_op.gradient
def _broadcast_reduced_grad(op, dy):
    from .math_ops import sum_op  # noqa: PLC0415

    axis, keepdims = op.attrs["axis"], op.attrs["keepdims"]
    return [sum_op(dy, axis=axis, keepdims=keepdims), None]


# -- TileGrad / SliceGrad / StridedSliceGrad / GatherGrad -------------------------------

def _tile_grad_rule(dy, shape_t, multiples):
    return dy.dtype, _dims_of(shape_t)


def _tile_grad_kernel(dy, shape_v, multiples):
    shape, mult = _shape_tuple(shape_v), _shape_tuple(multiples)
    inter = []
    for m, d in zip(mult, shape):
        inter += [m, d]
    return np.reshape(dy, inter).sum(axis=tuple(builtins.range(0, 2 * len(shape), 2)))


tile_grad_op = define_op("TileGrad", shape=_tile_grad_rule, kernel=_tile_grad_kernel, cost=CHEAP)


@tile_grad_op.gradient
def _tile_grad_grad(op, dy):
    return [tile_op(dy, op.inputs[2]), None, None]


def _slice_grad_rule(dy, shape_t, begin):
    return dy.dtype, _dims_of(shape_t)


def _slice_grad_kernel(dy, shape_v, begin):
    dy = np.asarray(dy)
    out = np.zeros(_shape_tuple(shape_v), dtype=dy.dtype)
    idx = tuple(builtins.slice(int(b), int(b) + n) for b, n in zip(np.ravel(begin), dy.shape))
    out[idx] = dy
    return out


slice_grad_op = define_op("SliceGrad", shape=_slice_grad_rule, kernel=_slice_grad_kernel, cost=CHEAP,
                          doc="Zeros of the input's shape with `dy` written at `begin` (the gradient of Slice).")


@slice_grad_op.gradient
def _slice_grad_grad(op, dy):
    from ..gradients.util import fwd_shape  # noqa: PLC0415

    return [slice_op(dy, op.inputs[2], fwd_shape(op.inputs[0])), None, None]


def _strided_slice_grad_rule(dy, shape_t, *dyn, spec):
    return dy.dtype, _dims_of(shape_t)


def _strided_slice_grad_kernel(dy, shape_v, *dyn, spec):
    dy = np.asarray(dy)
    out = np.zeros(_shape_tuple(shape_v), dtype=dy.dtype)
    out[_index_tuple(spec, dyn)] = dy
    return out


strided_slice_grad_op = define_op("StridedSliceGrad", shape=_strided_slice_grad_rule,
                                  kernel=_strided_slice_grad_kernel, cost=CHEAP)


@strided_slice_grad_op.gradient
def _strided_slice_grad_grad(op, dy):
    dyn = op.inputs[2:]
    return [strided_slice_op(dy, *dyn, spec=op.attrs["spec"]), None] + [None] * len(dyn)


def _gather_grad_rule(dy, indices, shape_t, *, axis):
    return dy.dtype, _dims_of(shape_t)


def _gather_grad_kernel(dy, indices, shape_v, *, axis):
    dy = np.asarray(dy)
    shape = _shape_tuple(shape_v)
    out = np.zeros(shape, dtype=dy.dtype)
    a = axis % len(shape)
    idx = np.asarray(indices)
    # move the gathered axis first on both sides so np.add.at scatters along it
    out_m = np.moveaxis(out, a, 0)
    dy_m = np.moveaxis(dy.reshape(shape[:a] + idx.shape + shape[a + 1:]), builtins.range(a, a + idx.ndim),
                       builtins.range(0, idx.ndim))
    np.add.at(out_m, idx, dy_m)
    return out


gather_grad_op = define_op("GatherGrad", shape=_gather_grad_rule, kernel=_gather_grad_kernel,
                           doc="Scatter-add `dy` into zeros of the params' shape (the gradient of Gather).")


@gather_grad_op.gradient
def _gather_grad_grad(op, dy):
    return [gather_op(dy, op.inputs[1], axis=op.attrs["axis"]), None, None]


# -- SplitByShapes: the gradient of Concat ------------------------------------------------

def _split_rule(x, *shapes, axis):
    out = []
    for s in shapes:
        dims = _dims_of(s)
        out.append((x.dtype, dims))
    return out


def _split_kernel(x, *shapes, axis):
    sizes = [int(np.ravel(s)[axis]) for s in shapes]
    cuts = np.cumsum(sizes)[:-1]
    return tuple(np.split(np.asarray(x), cuts, axis=axis))


split_by_shapes_op = define_op("SplitByShapes", shape=_split_rule, kernel=_split_kernel, num_outputs=None,
                               cost=CHEAP, doc="Cut `x` along `axis` into pieces the sizes of the given shapes.")


@split_by_shapes_op.gradient
def _split_by_shapes_grad(op, *dys):
    from ..gradients.util import zeros_like_fwd  # noqa: PLC0415
    from .array_ops import concat_op  # noqa: PLC0415

    parts = [d if d is not None else zeros_like_fwd(o) for d, o in zip(dys, op.outputs)]
    return [concat_op(*parts, axis=op.attrs["axis"])] + [None] * (len(op.inputs) - 1)


# -- tensor-list helpers ----------------------------------------------------------------

def _list_rule(*inputs, **attrs):
    return dt.variant, TensorShape(())


def _list_zeros_like_kernel(l):
    out = EMPTY
    for item in l.items():
        out = out.push(np.zeros_like(item))
    return out


list_zeros_like_op = define_op("TensorListZerosLike", shape=_list_rule, kernel=_list_zeros_like_kernel, cost=CHEAP)
list_zeros_like_op.not_differentiable("constant output (zeros)")


def _list_add_kernel(*lists):
    n = max(len(l) for l in lists)
    out = EMPTY
    for i in builtins.range(n):
        acc = None
        for l in lists:
            if len(l) == n:
                acc = l.get(i) if acc is None else acc + l.get(i)
        out = out.push(acc)
    return out


list_add_n_op = define_op("TensorListAddN", shape=_list_rule, kernel=_list_add_kernel, cost=CHEAP,
                          doc="Elementwise sum of tensor lists: gradients of a list with several consumers.")


@list_add_n_op.gradient
def _list_add_n_grad(op, dy):
    return [dy] * len(op.inputs)


def _get_item_grad_kernel(l, i, dy):
    n = len(l)
    i = int(i) % n if n else 0
    out = EMPTY
    for k, item in enumerate(l.items()):
        out = out.push(np.asarray(dy) if k == i else np.zeros_like(item))
    return out


get_item_grad_op = define_op("TensorListGetItemGrad", shape=_list_rule, kernel=_get_item_grad_kernel, cost=CHEAP,
                             doc="A list like `l` of zeros with `dy` at index `i` (the gradient of GetItem).")


@get_item_grad_op.gradient
def _get_item_grad_grad(op, dl):
    from .list_ops import get_item_op  # noqa: PLC0415

    dy = op.inputs[2]
    return [None, None, get_item_op(dl, op.inputs[1], element_dtype=dy.dtype, element_shape=dy.shape.dims)]
