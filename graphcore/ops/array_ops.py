"""Constants, placeholders and shape-manipulating ops: one block per op, each with the
op its gradient builds where that op exists only for it (TileGrad under Tile...).

The helpers gradient rules use to build from forward tensors live here too
(`fwd_shape`, `fwd_size`, `zeros_shaped_like`): the ops they build are these, and a
gradient rule anywhere in `ops/` imports them from here, never from `gradients/`.
"""
from __future__ import annotations

import builtins
import contextlib

import numpy as np

from .. import dtypes as dt
from ..attr_schema import (AXIS, DTYPE, INDEX_SPEC, INT, LIST_VALUE, NONNEG_INT, NUMERIC, SHAPE, either, optional,
                           tuple_of)
from ..errors import GraphError, GraphIndexError
from ..graph import Tensor, get_default_graph
from ..registry import CHEAP, define_op, same_as_input, scalar_of
from ..shapes import TensorShape, as_shape
from ..side_tables import SideTable
from ._helpers import in_graph, is_python_number, normalize_axis


def constant_value(t):
    """The value of `t` if it is known while building (a Const, or the Shape of a fully
    known shape), else None. Shape rules use it to fold static shapes."""
    if not isinstance(t, Tensor):
        return np.asarray(t)
    op = t.op
    if op.type == "Const":
        return op.attrs["value"]
    if op.type == "Shape" and op.inputs[0].shape.is_fully_defined():
        return np.asarray(op.inputs[0].shape.dims, dtype=np.int64)
    if op.type == "Enter" or op.type == "Identity":
        return constant_value(op.inputs[0])
    return None


# -- Const / Placeholder / Identity / NoOp ------------------------------------

def _const_rule(*, value, dtype):
    return dtype, TensorShape(np.shape(value))


def _const_kernel(*, value, dtype):
    return value


const_op = define_op("Const", shape=_const_rule, kernel=_const_kernel, cost=CHEAP, fails=None, fusible=True,
                     picture={"shape": "box", "style": "rounded,filled", "fillcolor": "#eeeeee", "fontsize": "10"},
                     attrs={"value": either(NUMERIC, LIST_VALUE), "dtype": DTYPE}).not_differentiable("a constant")


def _placeholder_rule(*, dtype, shape):
    return dtype, shape


def _placeholder_kernel(*, dtype, shape):
    raise GraphError("a placeholder was run without being fed; pass its value in feed_dict")


placeholder_op = define_op("Placeholder", shape=_placeholder_rule, kernel=_placeholder_kernel, cost=CHEAP,
                           attrs={"dtype": DTYPE, "shape": SHAPE}, fails=None,  # (not fed: refused before a run)
                           picture={"shape": "ellipse", "style": "filled", "fillcolor": "#ffffb3"})
placeholder_op.not_differentiable("an input")


def _identity(x):
    return x


identity_op = define_op("Identity", shape=same_as_input, kernel=_identity, cost=CHEAP, fails=None, forwards=True)


@identity_op.gradient
def _identity_grad(op, dy):
    return [dy]


stop_gradient_op = define_op("StopGradient", shape=same_as_input, kernel=_identity, cost=CHEAP, fails=None,
                             forwards=True)
stop_gradient_op.not_differentiable("stop_gradient blocks gradients on purpose")


def _noop_kernel():
    return ()


no_op = define_op("NoOp", shape=lambda **a: [], kernel=_noop_kernel, num_outputs=0, cost=CHEAP, fails=None)
no_op.not_differentiable("no outputs")


def constant(value, dtype=None, name: str | None = None, shape=None):
    """A constant tensor (in the graph being built) or a numpy array (eager).

    Python floats are float64 and ints int64 unless `dtype` says otherwise."""
    convert = getattr(value, "_as_graph_tensor", None)
    if convert is not None and not isinstance(value, Tensor):  # a Variable
        g = get_default_graph()
        value = convert(g) if g is not None else np.asarray(value)
    if isinstance(value, Tensor):
        return value if dtype is None or value.dtype == dt.as_dtype(dtype) else cast(value, dtype)
    d = dt.as_dtype(dtype) if dtype is not None else dt.dtype_of_value(value)
    if d is dt.variant:
        arr = value
    else:
        # a copy of a numpy array: the caller may change it in place after the graph took it
        arr = np.array(value, dtype=d.np_dtype, copy=True) if isinstance(value, np.ndarray) else \
            np.asarray(value, dtype=d.np_dtype)
        if shape is not None:
            arr = np.broadcast_to(arr, tuple(shape)).copy()
        if arr.ndim == 0:
            arr = arr[()]  # numpy scalar: what kernels produce for 0-d results
    g = get_default_graph()
    if g is None:
        return arr
    ctx = g.control_flow_context
    if ctx is not None and ctx.hoists_constants and not g.active_control_dependencies:
        # A constant in a loop body is a loop invariant: build it outside, Enter it once, and
        # give the same small constant to every use in the loop (one Const and Enter per value:
        # a loop body makes the same 0, 1 and 0.5 many times over)
        key = (d, arr.shape, arr.tobytes()) if name is None and arr.size <= 16 else None
        cache = _HOISTED.setdefault(ctx, {}) if key is not None else None
        hit = cache.get(key) if cache is not None else None
        if hit is not None and not hit.weak and hit.op in g:
            return hit
        with g.in_control_flow_context(ctx.outer):
            outer = constant(arr, dtype=d, name=name)
        inner = ctx.capture(outer)
        if cache is not None:
            cache[key] = inner
        return inner
    return const_op(value=arr, dtype=d, name=name or "Const")


# loop context -> {(dtype, shape, bytes): the constant as seen inside it}; `hit.op in g` tells
# whether a rolled-back trace removed it since
_HOISTED = SideTable("hoisted constants")


def placeholder(dtype, shape=None, name: str | None = None) -> Tensor:
    """A graph input that must be fed at run time; `shape` may have None dimensions."""
    g = get_default_graph()
    if g is None:
        raise GraphError("placeholder() needs a graph: build inside `with graph.as_default():`")
    return placeholder_op(dtype=dt.as_dtype(dtype), shape=as_shape(shape), name=name or "Placeholder")


def identity(x, name=None):
    out = identity_op(x, name=name)
    if isinstance(x, Tensor) and isinstance(out, Tensor):
        out.weak = x.weak
    return out


def stop_gradient(x, name=None):
    return stop_gradient_op(x, name=name)


# -- Cast / Shape / Size / Rank ------------------------------------------------

def _cast_rule(x, *, dtype):
    return dtype, x.shape


def _cast_kernel(x, *, dtype):
    return np.asarray(x).astype(dtype.np_dtype, copy=False)


# (nan and out-of-range values convert to numpy's values, with a warning: not an error)
cast_op = define_op("Cast", shape=_cast_rule, kernel=_cast_kernel, cost=CHEAP, attrs={"dtype": DTYPE},
                    elementwise=True, fails=None)


@cast_op.gradient
def _cast_grad(op, dy):
    x = op.inputs[0]
    if not (x.dtype.is_floating and op.outputs[0].dtype.is_floating):
        return [None]
    return [cast_op(dy, dtype=x.dtype)]


def _int_of_float_rule(x):
    if not x.dtype.is_floating:
        raise GraphError(f"IntOfFloat converts a float, got {x.dtype}")
    return dt.int64, x.shape


def _int_of_float_kernel(x):
    """Python's int() of a float: truncation toward zero, and an error where Python's
    int() raises one (NaN, infinities) or gives an integer an int64 cannot hold (numpy's
    cast would give a wrong number silently)."""
    a = np.asarray(x)
    bad = ~((a >= -2.0 ** 63) & (a < 2.0 ** 63))   # NaN compares false: bad too
    if bad.any():
        v = a[bad].reshape(-1)[0]
        if np.isnan(v):
            raise ValueError("cannot convert float NaN to integer")
        if np.isinf(v):
            raise OverflowError("cannot convert float infinity to integer")
        raise OverflowError(f"int() of {float(v)!r} does not fit in an int64: Python would give a larger integer, "
                            "which a graph value cannot hold; keep it below 2**63 in magnitude, or keep it a float")
    return a.astype(np.int64)


int_of_float_op = define_op("IntOfFloat", own_kind=True, shape=_int_of_float_rule, kernel=_int_of_float_kernel,
                            cost=CHEAP)
int_of_float_op.not_differentiable("integer output")


def int_of_float(x, name=None):
    """Python's `int(x)` of a float tensor: Cast to int64, but NaN, infinities and values
    beyond int64 fail the run as Python's int() would, instead of giving a wrong number."""
    return int_of_float_op(x, name=name)


def cast(x, dtype, name=None):
    """Convert `x` to `dtype` (float -> int truncates toward zero, as numpy)."""
    dtype = dt.as_dtype(dtype)
    if isinstance(x, Tensor) and x.dtype == dtype:
        return x
    if not isinstance(x, Tensor) and not in_graph():
        return np.asarray(x).astype(dtype.np_dtype)
    return cast_op(x, dtype=dtype, name=name)


def _shape_kernel(x):
    return np.asarray(np.shape(x), dtype=np.int64)


def _shape_rule(x):
    return dt.int64, TensorShape([x.shape.rank])


shape_op = define_op("Shape", shape=_shape_rule, kernel=_shape_kernel, cost=CHEAP, fails=None,
                     shape_only=True).not_differentiable("integer")
size_op = define_op("Size", shape=scalar_of(dt.int64), kernel=lambda x: np.int64(np.size(x)), cost=CHEAP, fails=None,
                    shape_only=True)
size_op.not_differentiable("integer")
rank_op = define_op("Rank", shape=scalar_of(dt.int64), kernel=lambda x: np.int64(np.ndim(x)), cost=CHEAP, fails=None,
                    shape_only=True)
rank_op.not_differentiable("integer")


def shape(x, name=None):
    return shape_op(x, name=name)


def size(x, name=None):
    return size_op(x, name=name)


def rank(x, name=None):
    return rank_op(x, name=name)


def _flat_dims(dims) -> list:
    return list(dims) if isinstance(dims, (list, tuple)) else [dims]


def _dims_tensor(dims) -> Tensor:
    """A shape given as a tensor, a list of ints, or a list mixing ints and scalar tensors
    (`[gc.shape(x)[0], 3]`) as one int64 vector tensor."""
    if isinstance(dims, Tensor):
        return cast(dims, dt.int64)
    if any(isinstance(d, Tensor) for d in _flat_dims(dims)):
        return pack_op(*[cast(d, dt.int64) if isinstance(d, Tensor) else constant(int(d), dtype=dt.int64)
                         for d in dims], axis=0)
    return constant(np.asarray(dims, dtype=np.int64))


# -- Fill / ZerosLike / OnesLike -----------------------------------------------

def partial_dims(t) -> list | None:
    """The entries of a shape vector known while building (None where only the run knows):
    a Const, or a Pack of scalars some of which are constants."""
    v = constant_value(t)
    if v is not None:
        return [int(d) for d in np.ravel(v)]
    if t.op.type == "Pack":
        out = []
        for x in t.op.inputs:
            c = constant_value(x)
            out.append(None if c is None or np.ndim(c) else int(c))
        return out
    if t.shape.is_fully_defined() and t.shape.rank == 1:
        return [None] * t.shape.dims[0]
    return None


def _fill_rule(dims, value):
    return value.dtype, TensorShape(partial_dims(dims))


def _fill_kernel(dims, value):
    return np.full(tuple(int(d) for d in np.ravel(dims)), value)


fill_op = define_op("Fill", shape=_fill_rule, kernel=_fill_kernel)


@fill_op.gradient
def _fill_grad(op, dy):
    # the value was broadcast to the whole shape: its gradient sums dy back to its shape
    return [None, unbroadcast_to_op(dy, fwd_shape(op.inputs[1]))]


# -- BroadcastTo / UnbroadcastTo (BroadcastGradientArgs + Sum + Reshape in one) --------

def static_shape_of(shape_t):
    """Static dims from a shape tensor (constant or folded), else a shape of known rank."""
    v = constant_value(shape_t)
    if v is not None:
        return TensorShape([int(d) for d in np.ravel(v)])
    if shape_t.shape.is_fully_defined():
        return TensorShape([None] * shape_t.shape.dims[0])
    return TensorShape(None)


def as_shape_tuple(v) -> tuple:
    return tuple(int(d) for d in np.ravel(v))


def _broadcast_to_rule(x, shape_t):
    return x.dtype, static_shape_of(shape_t)


def _broadcast_to_kernel(x, shape_v):
    return np.array(np.broadcast_to(x, as_shape_tuple(shape_v)))


broadcast_to_op = define_op("BroadcastTo", shape=_broadcast_to_rule, kernel=_broadcast_to_kernel, cost=CHEAP)


@broadcast_to_op.gradient
def _broadcast_to_grad(op, dy):
    return [unbroadcast_to_op(dy, fwd_shape(op.inputs[0])), None]


def unbroadcast_kernel(g, shape_v):
    """Sum `g` over the axes numpy broadcasting added or stretched to reach g's shape."""
    shape = as_shape_tuple(shape_v)
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
    return [broadcast_to_op(dy, fwd_shape(op.inputs[0])), None]


zeros_like_op = define_op("ZerosLike", shape=same_as_input, kernel=np.zeros_like, cost=CHEAP, fails=None,
                          shape_only=True)
zeros_like_op.not_differentiable("constant output")
ones_like_op = define_op("OnesLike", shape=same_as_input, kernel=np.ones_like, cost=CHEAP, fails=None,
                         shape_only=True)
ones_like_op.not_differentiable("constant output")


def fill(dims, value, name=None):
    """A tensor of shape `dims` filled with `value`."""
    if not in_graph(*_flat_dims(dims), value):
        return np.full(tuple(np.ravel(dims).astype(int)), value)
    dims = _dims_tensor(dims)
    return fill_op(dims, value, name=name)


def zeros(shape, dtype=dt.float64, name=None):
    d = dt.as_dtype(dtype)
    if not in_graph(*_flat_dims(shape)):
        return np.zeros(tuple(shape) if not np.isscalar(shape) else (shape,), dtype=d.np_dtype)
    return fill(shape, constant(0, dtype=d), name=name)


def ones(shape, dtype=dt.float64, name=None):
    d = dt.as_dtype(dtype)
    if not in_graph(*_flat_dims(shape)):
        return np.ones(tuple(shape) if not np.isscalar(shape) else (shape,), dtype=d.np_dtype)
    return fill(shape, constant(1, dtype=d), name=name)


def zeros_like(x, name=None):
    return zeros_like_op(x, name=name)


def ones_like(x, name=None):
    return ones_like_op(x, name=name)


# -- building from forward tensors, for gradient rules -------------------------------
#
# A gradient rule runs in the backward context (the top level, or the body of a
# backward loop). When it needs only the *shape* of a forward tensor, it asks
# `fwd_shape(t)`: a constant when the shape is static, else a Shape op built next to
# `t` in the forward pass, so a backward loop accumulates a few integers per
# iteration instead of the whole tensor.

@contextlib.contextmanager
def next_to(t: Tensor):
    """Ops created in the block are built next to the forward tensor `t`: in its
    control-flow context, with no control dependencies."""
    g = t.graph
    with g.in_control_flow_context(t.op.ctx), g.control_dependencies(None):
        yield g


def fwd_shape(t: Tensor) -> Tensor:
    """The shape of `t` as an int64 vector usable from the current context."""
    if t.shape.is_fully_defined():
        return constant(np.asarray(t.shape.dims, dtype=np.int64))
    g = t.graph
    cache = g.__dict__.setdefault("_grad_shape_cache", {})
    hit = cache.get(id(t))
    if hit is None or hit[0] is not t:
        with next_to(t):
            s = g.create_op(shape_op, [t], name="grad_shape").outputs[0]
        hit = cache[id(t)] = (t, s)
    return hit[1]


def fwd_size(t: Tensor, dtype) -> Tensor:
    """The number of elements of `t`, as a scalar of `dtype`."""
    d = dt.as_dtype(dtype)
    n = t.shape.num_elements()
    if n is not None:
        return constant(np.asarray(n, dtype=d.np_dtype))
    with next_to(t) as g:
        s = g.create_op(size_op, [t], name="grad_size").outputs[0]
    return cast(s, d)


def zeros_shaped_like(t: Tensor) -> Tensor:
    """Zeros shaped like the forward tensor `t` (not a tensor list), built in the current
    context from its shape only."""
    if t.shape.is_fully_defined():
        return constant(np.zeros(t.shape.dims, dtype=t.dtype.np_dtype))
    return fill_op(fwd_shape(t), constant(np.zeros((), dtype=t.dtype.np_dtype)))


# -- Reshape / Transpose / ExpandDims / Squeeze ------------------------------------

def _reshape_rule(x, shape_t):
    dims = partial_dims(shape_t)
    if dims is None or None in dims:
        return x.dtype, TensorShape(None if dims is None else [None if d is None or d < 0 else d for d in dims])
    if dims.count(-1) > 1:
        raise GraphError(f"Reshape: at most one -1 in the new shape {dims}")
    total = x.shape.num_elements()
    if -1 in dims:
        known = int(np.prod([d for d in dims if d != -1])) if len(dims) > 1 else 1
        dims = [(total // known if total is not None and known else None) if d == -1 else d for d in dims]
    elif total is not None and int(np.prod(dims)) != total:
        raise GraphError(f"Reshape: cannot reshape {x.shape} ({total} elements) to {dims}")
    return x.dtype, TensorShape(dims)


def _reshape_kernel(x, shape_v):
    return np.reshape(x, tuple(int(d) for d in np.ravel(shape_v)))


reshape_op = define_op("Reshape", shape=_reshape_rule, kernel=_reshape_kernel, cost=CHEAP, view=True,
                       fails="a shape whose size differs from the input's raises ValueError")


@reshape_op.gradient
def _reshape_grad(op, dy):
    return [reshape_op(dy, fwd_shape(op.inputs[0])), None]


def reshape(x, shape, name=None):
    if not in_graph(x, *_flat_dims(shape)):
        return np.reshape(x, tuple(np.ravel(shape).astype(int)))
    shape = _dims_tensor(shape)
    return reshape_op(x, shape, name=name)


def _transpose_rule(x, *, perm):
    if x.shape.dims is None:
        return x.dtype, TensorShape(None)
    p = perm if perm is not None else tuple(builtins.range(x.shape.rank))[::-1]
    if sorted(p) != list(builtins.range(x.shape.rank)):
        raise GraphError(f"Transpose: perm {list(p)} is not a permutation of the {x.shape.rank} axes of {x.shape}")
    return x.dtype, TensorShape([x.shape.dims[i] for i in p])


def _transpose_kernel(x, *, perm):
    return np.transpose(x, perm)


transpose_op = define_op("Transpose", shape=_transpose_rule, kernel=_transpose_kernel, cost=CHEAP,
                         attrs={"perm": optional(tuple_of(INT, 64))}, view=True,
                         fails="a permutation that does not fit the input's rank raises ValueError")


@transpose_op.gradient
def _transpose_grad(op, dy):
    perm = op.attrs["perm"]
    if perm is None:
        return [transpose_op(dy, perm=None)]
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return [transpose_op(dy, perm=tuple(inv))]


def transpose(x, perm=None, name=None):
    return transpose_op(x, perm=None if perm is None else tuple(int(p) for p in perm), name=name)


def _expand_dims_rule(x, *, axis):
    if x.shape.dims is None:
        return x.dtype, TensorShape(None)
    r = x.shape.rank + 1
    if not -r <= axis < r:
        raise GraphError(f"ExpandDims: axis {axis} out of range for result rank {r}")
    dims = list(x.shape.dims)
    dims.insert(axis % r, 1)
    return x.dtype, TensorShape(dims)


expand_dims_op = define_op("ExpandDims", shape=_expand_dims_rule,
                           kernel=lambda x, *, axis: np.expand_dims(x, axis), cost=CHEAP, attrs={"axis": INT},
                           view=True, fails="an axis beyond the input's rank raises AxisError")


@expand_dims_op.gradient
def _expand_dims_grad(op, dy):
    return [reshape_op(dy, fwd_shape(op.inputs[0]))]


def expand_dims(x, axis, name=None):
    return expand_dims_op(x, axis=int(axis), name=name)


def _squeeze_rule(x, *, axis):
    if x.shape.dims is None:
        return x.dtype, TensorShape(None)
    axes = normalize_axis(axis, x.shape.rank, "Squeeze")
    if axes is None:
        if any(d is None for d in x.shape.dims):
            return x.dtype, TensorShape(None)
        return x.dtype, TensorShape([d for d in x.shape.dims if d != 1])
    for a in axes:
        if x.shape.dims[a] not in (1, None):
            raise GraphError(f"Squeeze: axis {a} of {x.shape} is not of size 1")
    return x.dtype, TensorShape([d for i, d in enumerate(x.shape.dims) if i not in axes])


squeeze_op = define_op("Squeeze", shape=_squeeze_rule, kernel=lambda x, *, axis: np.squeeze(x, axis), cost=CHEAP,
                        attrs={"axis": AXIS}, view=True,
                        fails="squeezing an axis whose size is not 1 raises ValueError")


@squeeze_op.gradient
def _squeeze_grad(op, dy):
    return [reshape_op(dy, fwd_shape(op.inputs[0]))]


def squeeze(x, axis=None, name=None):
    if isinstance(axis, list):
        axis = tuple(axis)
    return squeeze_op(x, axis=axis, name=name)


# -- Concat / Pack / Unpack / Tile -------------------------------------------------

def _concat_rule(*xs, axis):
    if not xs:
        raise GraphError("Concat needs at least one tensor")
    d0 = xs[0].dtype
    ranks = {x.shape.rank for x in xs if x.shape.rank is not None}
    if len(ranks) > 1:
        raise GraphError(f"Concat: inputs have different ranks {sorted(ranks)}")
    if not ranks:
        return d0, TensorShape(None)
    r = ranks.pop()
    a = normalize_axis(axis, r, "Concat")[0]
    dims = [None] * r
    total = 0
    for x in xs:
        if x.dtype != d0:
            raise GraphError(f"Concat: inputs have different dtypes {d0} and {x.dtype}")
        if x.shape.dims is None:
            total = None
            continue
        for i, d in enumerate(x.shape.dims):
            if i == a:
                continue
            if dims[i] is None:
                dims[i] = d
            elif d is not None and d != dims[i]:
                raise GraphError(f"Concat: dimension {i} differs between inputs ({dims[i]} vs {d})")
        if total is not None:
            total = None if x.shape.dims[a] is None else total + x.shape.dims[a]
    dims[a] = total
    return d0, TensorShape(dims)


concat_op = define_op("ConcatV2", shape=_concat_rule, kernel=lambda *xs, axis: np.concatenate(xs, axis=axis),
                      attrs={"axis": INT})


@concat_op.gradient
def _concat_grad(op, dy):
    if len(op.inputs) == 1:
        return [dy]
    rank = op.outputs[0].shape.rank
    axis = op.attrs["axis"] if rank is None else op.attrs["axis"] % rank
    parts = split_by_shapes_op(dy, *[fwd_shape(x) for x in op.inputs], axis=axis)
    return list(parts)


def concat(values, axis, name=None):
    """Join tensors along an existing axis."""
    values = list(values)
    if not in_graph(*values):
        return np.concatenate(values, axis=axis)
    return concat_op(*values, axis=int(axis), name=name)


def _split_rule(x, *shapes, axis):
    out = []
    for s in shapes:
        dims = static_shape_of(s)
        out.append((x.dtype, dims))
    return out


def _split_kernel(x, *shapes, axis):
    sizes = [int(np.ravel(s)[axis]) for s in shapes]
    cuts = np.cumsum(sizes)[:-1]
    return tuple(np.split(np.asarray(x), cuts, axis=axis))


split_by_shapes_op = define_op("SplitByShapes", shape=_split_rule, kernel=_split_kernel, num_outputs=None,
                               cost=CHEAP, doc="Cut `x` along `axis` into pieces the sizes of the given shapes.",
                               attrs={"axis": INT})


@split_by_shapes_op.gradient
def _split_by_shapes_grad(op, *dys):
    parts = [d if d is not None else zeros_shaped_like(o) for d, o in zip(dys, op.outputs)]
    return [concat_op(*parts, axis=op.attrs["axis"])] + [None] * (len(op.inputs) - 1)


def _pack_rule(*xs, axis):
    if not xs:
        raise GraphError("Pack (stack) needs at least one tensor")
    shape = xs[0].shape
    for x in xs[1:]:
        if x.dtype != xs[0].dtype:
            raise GraphError(f"stack: inputs have different dtypes {xs[0].dtype} and {x.dtype}")
        if not shape.is_compatible_with(x.shape):
            raise GraphError(f"stack: inputs have incompatible shapes {shape} and {x.shape}")
        shape = shape.merge_with(x.shape)
    if shape.dims is None:
        return xs[0].dtype, TensorShape(None)
    r = shape.rank + 1
    dims = list(shape.dims)
    dims.insert(axis % r, len(xs))
    return xs[0].dtype, TensorShape(dims)


pack_op = define_op("Pack", shape=_pack_rule, kernel=lambda *xs, axis: np.stack(xs, axis=axis), cost=CHEAP,
                    attrs={"axis": INT})


@pack_op.gradient
def _pack_grad(op, dy):
    out = unpack_op(dy, num=len(op.inputs), axis=op.attrs["axis"])
    return list(out) if isinstance(out, tuple) else [out]


def stack(values, axis=0, name=None):
    """Stack same-shaped tensors along a new axis."""
    values = list(values)
    if not in_graph(*values):
        return np.stack(values, axis=axis)
    like = next((v for v in values if isinstance(v, Tensor)), None)
    if like is not None:
        values = [constant(v, dtype=like.dtype) if is_python_number(v) else v for v in values]
    return pack_op(*values, axis=int(axis), name=name)


def _unpack_rule(x, *, num, axis):
    if x.shape.dims is None:
        return [(x.dtype, TensorShape(None))] * num
    dims = list(x.shape.dims)
    del dims[axis % len(dims)]
    return [(x.dtype, TensorShape(dims))] * num


def _unpack_kernel(x, *, num, axis):
    return tuple(np.moveaxis(np.asarray(x), axis, 0))


unpack_op = define_op("Unpack", shape=_unpack_rule, kernel=_unpack_kernel, num_outputs=None, cost=CHEAP,
                      attrs={"num": NONNEG_INT, "axis": INT})


@unpack_op.gradient
def _unpack_grad(op, *dys):
    parts = [d if d is not None else zeros_shaped_like(o) for d, o in zip(dys, op.outputs)]
    return [pack_op(*parts, axis=op.attrs["axis"])]


def unstack(x, num=None, axis=0, name=None):
    if not in_graph(x):
        return list(np.moveaxis(np.asarray(x), axis, 0))
    if num is None:
        num = x.shape[axis] if x.shape.dims is not None else None
        if num is None:
            raise GraphError(f"unstack: the size of axis {axis} of {x.name} is unknown; pass num=")
    out = unpack_op(x, num=int(num), axis=int(axis), name=name)
    return list(out) if isinstance(out, tuple) else [out]


def _tile_rule(x, multiples):
    v = constant_value(multiples)
    if v is None or x.shape.dims is None:
        return x.dtype, TensorShape(None if x.shape.dims is None else [None] * x.shape.rank)
    return x.dtype, TensorShape([None if d is None else d * int(m) for d, m in zip(x.shape.dims, v)])


tile_op = define_op("Tile", shape=_tile_rule, kernel=lambda x, m: np.tile(x, tuple(np.ravel(m).astype(int))))


@tile_op.gradient
def _tile_grad(op, dy):
    return [tile_grad_op(dy, fwd_shape(op.inputs[0]), op.inputs[1]), None]


def tile(x, multiples, name=None):
    if not in_graph(x, *_flat_dims(multiples)):
        return np.tile(x, multiples)
    multiples = _dims_tensor(multiples)
    return tile_op(x, multiples, name=name)


def _tile_grad_rule(dy, shape_t, multiples):
    return dy.dtype, static_shape_of(shape_t)


def _tile_grad_kernel(dy, shape_v, multiples):
    shape, mult = as_shape_tuple(shape_v), as_shape_tuple(multiples)
    inter = []
    for m, d in zip(mult, shape):
        inter += [m, d]
    return np.reshape(dy, inter).sum(axis=tuple(builtins.range(0, 2 * len(shape), 2)))


tile_grad_op = define_op("TileGrad", shape=_tile_grad_rule, kernel=_tile_grad_kernel, cost=CHEAP)


@tile_grad_op.gradient
def _tile_grad_grad(op, dy):
    return [tile_op(dy, op.inputs[2]), None, None]


# -- Slice / StridedSlice (indexing) / Gather -----------------------------------------

def _slice_rule(x, begin, size_t):
    b, s = constant_value(begin), constant_value(size_t)
    if x.shape.dims is None:
        return x.dtype, TensorShape(None)
    if b is None or s is None:
        return x.dtype, TensorShape([None] * x.shape.rank)
    dims = []
    for d, bb, ss in zip(x.shape.dims, b, s):
        dims.append((None if d is None else d - int(bb)) if int(ss) == -1 else int(ss))
    return x.dtype, TensorShape(dims)


def _slice_kernel(x, begin, size_v):
    idx = tuple(builtins.slice(int(b), None if int(s) == -1 else int(b) + int(s)) for b, s in zip(begin, size_v))
    return np.asarray(x)[idx]


slice_op = define_op("Slice", shape=_slice_rule, kernel=_slice_kernel, cost=CHEAP)


@slice_op.gradient
def _slice_grad(op, dy):
    return [slice_grad_op(dy, fwd_shape(op.inputs[0]), op.inputs[1]), None, None]


def slice(x, begin, size, name=None):  # noqa: A001 (TensorFlow's name)
    """x[begin[i] : begin[i] + size[i]] on every axis; size -1 means to the end."""
    if not in_graph(x, begin, size):
        return _slice_kernel(np.asarray(x), begin, size)
    begin = begin if isinstance(begin, Tensor) else constant(np.asarray(begin, dtype=np.int64))
    size = size if isinstance(size, Tensor) else constant(np.asarray(size, dtype=np.int64))
    return slice_op(x, begin, size, name=name)


def _slice_grad_rule(dy, shape_t, begin):
    return dy.dtype, static_shape_of(shape_t)


def _slice_grad_kernel(dy, shape_v, begin):
    dy = np.asarray(dy)
    out = np.zeros(as_shape_tuple(shape_v), dtype=dy.dtype)
    idx = tuple(builtins.slice(int(b), int(b) + n) for b, n in zip(np.ravel(begin), dy.shape))
    out[idx] = dy
    return out


slice_grad_op = define_op("SliceGrad", shape=_slice_grad_rule, kernel=_slice_grad_kernel, cost=CHEAP,
                          doc="Zeros of the input's shape with `dy` written at `begin` (the gradient of Slice).")


@slice_grad_op.gradient
def _slice_grad_grad(op, dy):
    return [slice_op(dy, op.inputs[2], fwd_shape(op.inputs[0])), None, None]


def _index_tuple(spec, dyn):
    """Rebuild the Python index tuple from the StridedSlice spec and dynamic values."""

    def val(v):
        if v is None:
            return None
        kind, k = v
        return int(k) if kind == "c" else int(dyn[k])

    out = []
    for entry in spec:
        kind = entry[0]
        if kind == "index":
            out.append(val(entry[1]))
        elif kind == "slice":
            out.append(builtins.slice(val(entry[1]), val(entry[2]), val(entry[3])))
        elif kind == "new":
            out.append(None)
        else:
            out.append(Ellipsis)
    return tuple(out)


def _strided_slice_rule(x, *dyn, spec):
    if x.shape.dims is None:
        return x.dtype, TensorShape(None)
    dims_in = list(x.shape.dims)
    n_consuming = sum(1 for e in spec if e[0] in ("index", "slice"))
    if n_consuming > len(dims_in):
        raise GraphIndexError(f"too many indices ({n_consuming}) for a tensor of rank {len(dims_in)} ({x.shape})")
    out, pos = [], 0
    for e in spec:
        kind = e[0]
        if kind == "ellipsis":
            n = len(dims_in) - n_consuming
            out.extend(dims_in[pos:pos + n])
            pos += n
        elif kind == "new":
            out.append(1)
        elif kind == "index":
            d = dims_in[pos]
            if e[1][0] == "c" and d is not None and not -d <= e[1][1] < d:
                raise GraphIndexError(f"index {e[1][1]} is out of bounds for axis {pos} of size {d}")
            pos += 1
        else:
            d = dims_in[pos]
            consts = [v is None or v[0] == "c" for v in e[1:]]
            if d is not None and all(consts):
                sl = builtins.slice(*[None if v is None else v[1] for v in e[1:]])
                out.append(len(builtins.range(*sl.indices(d))))
            else:
                out.append(None)
            pos += 1
    out.extend(dims_in[pos:])
    return x.dtype, TensorShape(out)


def _strided_slice_kernel(x, *dyn, spec):
    return np.asarray(x)[_index_tuple(spec, dyn)]


strided_slice_op = define_op("StridedSlice", shape=_strided_slice_rule, kernel=_strided_slice_kernel, cost=CHEAP,
                             attrs={"spec": INDEX_SPEC}, view=True, fails="an index out of range raises IndexError")


@strided_slice_op.gradient
def _strided_slice_grad(op, dy):
    dyn = op.inputs[1:]
    return [strided_slice_grad_op(dy, fwd_shape(op.inputs[0]), *dyn, spec=op.attrs["spec"])] + [None] * len(dyn)


def getitem(x, key, name=None):
    """`x[key]` for ints, slices, None, Ellipsis and scalar integer tensors (as indices or
    slice bounds). For an index tensor of rank >= 1 use graphcore.gather."""
    spec, dyn = encode_key(key)
    return strided_slice_op(x, *dyn, spec=spec, name=name)


def encode_key(key) -> tuple[tuple, list]:
    """(spec, dynamic values) of an index key, as StridedSlice and SetItem take them."""
    if not isinstance(key, tuple):
        key = (key,)
    spec, dyn = [], []

    def enc(v, what):
        if v is None:
            return None
        if isinstance(v, Tensor):
            if not v.dtype.is_integer or v.shape.rank not in (0, None):
                raise GraphError(
                    f"a tensor {what} must be an integer scalar, got {v.dtype}{v.shape}; "
                    "to pick many elements use graphcore.gather(x, indices)")
            dyn.append(v)
            return ("t", len(dyn) - 1)
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise GraphError(f"a {what} must be an int or an integer scalar tensor, got {v!r}")
        return ("c", int(v))

    for k in key:
        if k is Ellipsis:
            spec.append(("ellipsis",))
        elif k is None:
            spec.append(("new",))
        elif isinstance(k, builtins.slice):
            spec.append(("slice", enc(k.start, "slice start"), enc(k.stop, "slice stop"), enc(k.step, "slice step")))
        else:
            spec.append(("index", enc(k, "index")))
    return tuple(spec), dyn


# -- x[key] = v as a value: a copy of x with the items at key replaced --------------------------

def _set_item_rule(x, v, *dyn, spec):
    target = _strided_slice_rule(x, *dyn, spec=spec)[1]
    if target.is_fully_defined() and v.shape.is_fully_defined():
        t, vs = target.dims, v.shape.dims
        fits = len(vs) <= len(t) or all(d == 1 for d in vs[:len(vs) - len(t)])
        fits = fits and all(a == b or a == 1 for a, b in zip(reversed(vs), reversed(t)))
        if not fits:
            raise GraphError(f"could not broadcast input array from shape {tuple(vs)} into shape {tuple(t)}")
    return x.dtype, x.shape


def _set_item_kernel(x, v, *dyn, spec):
    """numpy's `x[key] = v` on a copy of x: v broadcast to the items and cast to x's dtype
    as numpy's item assignment casts (2.7 into an int array is 2)."""
    out = np.array(x, copy=True)
    out[_index_tuple(spec, dyn)] = v
    return out


set_item_op = define_op("SetItem", shape=_set_item_rule, kernel=_set_item_kernel, cost=CHEAP,
                        doc="A copy of x with x[key] = v (numpy's item assignment, as a value)",
                        attrs={"spec": INDEX_SPEC})


@set_item_op.gradient
def _set_item_grad(op, dy):
    x, v, *dyn = op.inputs
    spec = op.attrs["spec"]
    zero = constant(np.zeros((), dtype=dy.dtype.np_dtype))
    dx = set_item_op(dy, zero, *dyn, spec=spec)  # the items replaced get nothing
    dv = None
    if v.dtype.is_floating and x.dtype.is_floating:
        dv = unbroadcast_to_op(strided_slice_op(dy, *dyn, spec=spec), fwd_shape(v))
        dv = dv if v.dtype == dy.dtype else cast_op(dv, dtype=v.dtype)
    return [dx if x.dtype.is_floating else None, dv] + [None] * len(dyn)


def set_item(x, key, value, name=None):
    """A copy of `x` with `x[key] = value` (ints, slices, None, Ellipsis and scalar integer
    tensors in the key, as getitem)."""
    spec, dyn = encode_key(key)
    return set_item_op(x, value, *dyn, spec=spec, name=name)


def _strided_slice_grad_rule(dy, shape_t, *dyn, spec):
    return dy.dtype, static_shape_of(shape_t)


def _strided_slice_grad_kernel(dy, shape_v, *dyn, spec):
    dy = np.asarray(dy)
    out = np.zeros(as_shape_tuple(shape_v), dtype=dy.dtype)
    out[_index_tuple(spec, dyn)] = dy
    return out


strided_slice_grad_op = define_op("StridedSliceGrad", shape=_strided_slice_grad_rule,
                                  kernel=_strided_slice_grad_kernel, cost=CHEAP, attrs={"spec": INDEX_SPEC})


@strided_slice_grad_op.gradient
def _strided_slice_grad_grad(op, dy):
    dyn = op.inputs[2:]
    return [strided_slice_op(dy, *dyn, spec=op.attrs["spec"]), None] + [None] * len(dyn)


def _gather_rule(params, indices, *, axis):
    if not indices.dtype.is_integer:
        raise GraphError(f"Gather: indices must be integers, got {indices.dtype}")
    if params.shape.dims is None or indices.shape.dims is None:
        return params.dtype, TensorShape(None)
    a = normalize_axis(axis, params.shape.rank, "Gather")[0]
    d = params.shape.dims
    return params.dtype, TensorShape(list(d[:a]) + list(indices.shape.dims) + list(d[a + 1:]))


def _gather_kernel(params, indices, *, axis):
    return np.take(params, indices, axis=axis)


gather_op = define_op("GatherV2", shape=_gather_rule, kernel=_gather_kernel, attrs={"axis": INT})


@gather_op.gradient
def _gather_grad(op, dy):
    params, indices = op.inputs
    return [gather_grad_op(dy, indices, fwd_shape(params), axis=op.attrs["axis"]), None]


def gather(params, indices, axis=0, name=None):
    """Pick slices of `params` along `axis` at `indices` (np.take)."""
    if not in_graph(params, indices):
        return np.take(params, indices, axis=axis)
    return gather_op(params, indices, axis=int(axis), name=name)


def _gather_grad_rule(dy, indices, shape_t, *, axis):
    return dy.dtype, static_shape_of(shape_t)


def _gather_grad_kernel(dy, indices, shape_v, *, axis):
    dy = np.asarray(dy)
    shape = as_shape_tuple(shape_v)
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
                           doc="Scatter-add `dy` into zeros of the params' shape (the gradient of Gather).",
                           attrs={"axis": INT})


@gather_grad_op.gradient
def _gather_grad_grad(op, dy):
    return [gather_op(dy, op.inputs[1], axis=op.attrs["axis"]), None, None]


# -- Range ----------------------------------------------------------------

def _range_rule(start, limit, delta):
    vals = [constant_value(t) for t in (start, limit, delta)]
    dtype = start.dtype
    for t in (limit, delta):
        if t.dtype != dtype:
            raise GraphError(f"Range: start, limit and delta must share a dtype, got {start.dtype}, "
                             f"{limit.dtype}, {delta.dtype}")
    if all(v is not None for v in vals):
        return dtype, TensorShape([len(np.arange(*[v.item() for v in vals]))])
    return dtype, TensorShape([None])


def _range_kernel(start, limit, delta):
    if delta == 0:
        raise ValueError("range() step (delta) must not be zero")
    return np.arange(start, limit, delta, dtype=np.result_type(start, limit, delta))


range_op = define_op("Range", own_kind=True, shape=_range_rule, kernel=_range_kernel,
                     cost=CHEAP).not_differentiable("integer")


def range(start, limit=None, delta=1, dtype=None, name=None):  # noqa: A001 (TensorFlow's name)
    """Like numpy.arange / Python's range: [start, limit) by delta."""
    if limit is None:
        start, limit = 0, start
    if not in_graph(start, limit, delta):
        return np.arange(start, limit, delta, dtype=None if dtype is None else dt.as_dtype(dtype).np_dtype)
    like = next((t for t in (start, limit, delta) if isinstance(t, Tensor)), None)
    d = dt.as_dtype(dtype) if dtype is not None else (like.dtype if like is not None else None)
    vals = [cast(v, d) if isinstance(v, Tensor) and d is not None else constant(v, dtype=d) for v in (start, limit, delta)]
    return range_op(*vals, name=name)
