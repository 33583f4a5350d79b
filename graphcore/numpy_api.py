"""numpy functions and ndarray methods on graph tensors, with numpy's own semantics.

Users write numpy: `np.sum(x)`, `x.mean(axis=0)`, `np.where(x > 0, x, 0.0)`, `x.astype(np.float32)`.
On a graph tensor each of these builds the graph ops that compute what numpy would, with
numpy's result dtype (np.sum of int32 or bool is int64, np.mean of ints is float64, np.where
and np.stack promote their operands as numpy does). A numpy function that is not listed
here refuses with a TypeError that says so, rather than computing something close: a wrong
value is worse than no value.

Installed by graphcore/__init__ as `Tensor.__array_function__` and Tensor methods.
"""
from __future__ import annotations

import numpy as np

from . import dtypes as dt
from .graph import Tensor
from .ops import array_ops, math_ops
from .errors import GraphError
from .ops._helpers import is_python_number, is_weak, join_kinds
from .tensor_operators import register_ufunc

_FUNCTIONS: dict = {}


def implements(*np_functions):
    """Register the graph version of numpy functions (same signature as numpy's)."""
    def deco(fn):
        for f in np_functions:
            _FUNCTIONS[f] = fn
        return fn
    return deco


def _array_function(self, func, types, args, kwargs):
    fn = _FUNCTIONS.get(func)
    if fn is None:
        raise TypeError(
            f"numpy.{func.__name__} cannot run on the graph tensor {self.name}: its value is only known when the "
            f"graph runs, and numpy.{func.__name__} has no graph version. Supported on tensors: "
            f"{', '.join(sorted('np.' + f.__name__ for f in _FUNCTIONS))}, the ufuncs (np.exp, np.maximum, ...) "
            f"and the graphcore ops")
    return fn(*args, **kwargs)


# -- dtypes ---------------------------------------------------------------------------------

def _as_tensor(v) -> Tensor:
    return v if isinstance(v, Tensor) else array_ops.constant(v)


def _common_dtype(values, what: str) -> dt.DType:
    """The dtype numpy gives `values` together (Python numbers are weak, as in numpy 2)."""
    common, weak = None, True
    for v in values:
        d = v.dtype if isinstance(v, Tensor) else dt.as_dtype(np.result_type(v)) if not is_python_number(v) \
            else dt.as_dtype(type(v))
        w = is_weak(v)
        if common is None:
            common, weak = d, w
            continue
        if d.is_bool and common.is_bool:
            weak = weak and w
            continue
        joined = join_kinds(common, weak, d, w)
        if joined is None:
            raise TypeError(f"{what}: values of dtypes {common} and {d} do not mix; convert one with .astype(...)")
        common, weak = joined, weak and w
    return common


def _to(v, d: dt.DType) -> Tensor:
    if isinstance(v, Tensor):
        return v if v.dtype == d else array_ops.cast(v, d)
    return array_ops.constant(np.asarray(v).astype(d.np_dtype), dtype=d)


def _axis(axis):
    if isinstance(axis, list):
        return tuple(axis)
    return axis


def _no_out(fname, out=None, where=None, initial=None, **rest):
    if out is not None or where is not None or initial is not None or any(v is not None for v in rest.values()):
        used = [k for k, v in dict(out=out, where=where, initial=initial, **rest).items() if v is not None]
        raise TypeError(f"np.{fname} on a graph tensor does not take {', '.join(used)}: leave it out")


# -- reductions -----------------------------------------------------------------------------

@implements(np.sum)
def sum_(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _no_out("sum", out, where, initial)
    a = _as_tensor(a)
    target = dt.as_dtype(dtype) if dtype is not None else _accumulator_dtype(a.dtype)
    return math_ops.reduce_sum(_to(a, target), axis=_axis(axis), keepdims=keepdims)


@implements(np.prod)
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _no_out("prod", out, where, initial)
    a = _as_tensor(a)
    target = dt.as_dtype(dtype) if dtype is not None else _accumulator_dtype(a.dtype)
    return math_ops.reduce_prod(_to(a, target), axis=_axis(axis), keepdims=keepdims)


def _accumulator_dtype(d: dt.DType) -> dt.DType:
    """numpy sums bools and ints narrower than the platform int in int64."""
    return dt.int64 if d.is_bool or d.is_integer else d


@implements(np.mean)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    _no_out("mean", out, where, dtype=dtype)
    a = _as_tensor(a)
    if a.dtype.is_bool:
        a = array_ops.cast(a, dt.float64)
    return math_ops.reduce_mean(a, axis=_axis(axis), keepdims=keepdims)


@implements(np.max, np.amax)
def max_(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _no_out("max", out, where, initial)
    return math_ops.reduce_max(_as_tensor(a), axis=_axis(axis), keepdims=keepdims)


@implements(np.min, np.amin)
def min_(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _no_out("min", out, where, initial)
    return math_ops.reduce_min(_as_tensor(a), axis=_axis(axis), keepdims=keepdims)


def _arg_reduction(fn, name):
    def arg(a, axis=None, out=None, keepdims=False):
        _no_out(name, out)
        if keepdims:
            raise TypeError(f"np.{name} on a graph tensor does not take keepdims=True")
        a = _as_tensor(a)
        if axis is None:  # numpy looks at the flattened array
            a = a if a.shape.rank == 1 else array_ops.reshape(a, [-1])
            axis = 0
        return fn(a, axis=axis)
    return arg


implements(np.argmax)(_arg_reduction(math_ops.argmax, "argmax"))
implements(np.argmin)(_arg_reduction(math_ops.argmin, "argmin"))


def _truth_count(a, axis, keepdims, want):
    """How many elements along `axis` are (want=True) nonzero / (want=False) zero."""
    a = _as_tensor(a)
    hits = math_ops.not_equal(a, False if a.dtype.is_bool else 0) if want else \
        math_ops.equal(a, False if a.dtype.is_bool else 0)
    return math_ops.reduce_sum(array_ops.cast(hits, dt.int64), axis=_axis(axis), keepdims=keepdims)


@implements(np.any)
def any_(a, axis=None, out=None, keepdims=False, where=None):
    _no_out("any", out, where)
    return math_ops.greater(_truth_count(a, axis, keepdims, True), 0)  # False for an empty array, as numpy


@implements(np.all)
def all_(a, axis=None, out=None, keepdims=False, where=None):
    _no_out("all", out, where)
    return math_ops.equal(_truth_count(a, axis, keepdims, False), 0)  # True for an empty array, as numpy


@implements(np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None, correction=None):
    _no_out("var", out, where, dtype=dtype, mean=mean, correction=correction)
    a = _as_tensor(a)
    if not a.dtype.is_floating:
        a = array_ops.cast(a, dt.float64)
    d = a - math_ops.reduce_mean(a, axis=_axis(axis), keepdims=True)  # numpy's own steps, in its order
    squares = math_ops.reduce_sum(d * d, axis=_axis(axis), keepdims=keepdims)
    n = array_ops.cast(array_ops.size(d), a.dtype) / array_ops.cast(array_ops.size(squares), a.dtype)
    return squares / (n - ddof) if ddof else squares / n


@implements(np.std)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None, correction=None):
    _no_out("std", out, where, dtype=dtype, mean=mean, correction=correction)
    return math_ops.sqrt(var(a, axis=axis, ddof=ddof, keepdims=keepdims))


# -- choosing and combining -----------------------------------------------------------------

@implements(np.where)
def where(condition, x=None, y=None):
    if x is None or y is None:
        raise TypeError("np.where(condition) (the indices form) has no graph version: its length is only known "
                        "when the graph runs; use np.where(condition, x, y)")
    condition = _as_tensor(condition)
    if not condition.dtype.is_bool:
        condition = math_ops.not_equal(condition, 0)
    d = _common_dtype([x, y], "np.where")
    return math_ops.select_op(condition, _to(x, d), _to(y, d))


def _joined(values, what):
    """np.stack / np.concatenate's operands as tensors of their common dtype. They make an
    array of each operand first (np.asarray), so a Python number counts at its own dtype
    (0.5 is float64, 2 int64), not weakly: np.stack([np.float32(1), 0.5]) is float64."""
    values = [array_of(v, what) for v in values]
    if not values:
        raise ValueError(f"{what} needs at least one array")
    d = dt.as_dtype(np.result_type(*[_array_dtype(v) for v in values]))
    return [_to(v, d) for v in values]


def _array_dtype(v) -> np.dtype:
    """The dtype np.asarray gives `v`: a weak tensor stands for a Python number, which
    numpy makes a bool, int64 or float64 array."""
    if isinstance(v, Tensor):
        if v.weak:
            return np.dtype(np.bool_ if v.dtype.is_bool else np.int64 if v.dtype.is_integer else np.float64)
        return v.dtype.np_dtype
    return np.asarray(v).dtype


def holds_tensor(v) -> bool:
    """A list or tuple with a graph tensor in it, at any depth."""
    return isinstance(v, (list, tuple)) and any(isinstance(x, Tensor) or holds_tensor(x) for x in v)


def array_of(v, what: str = "np.array", dtype=None):
    """np.array(v) for a value that may be a list or tuple holding graph tensors: the
    items stacked (nested lists row by row), with the dtype numpy's array constructor
    gives them (Python numbers at their own dtype, numpy's promotion across items)."""
    if isinstance(v, Tensor):
        out = v
    elif not holds_tensor(v):
        return np.asarray(v, dtype=dtype) if dtype is not None or isinstance(v, (list, tuple)) else v
    else:
        items = [array_of(x, what) for x in v]
        d = dt.as_dtype(np.result_type(*[_array_dtype(x) for x in items]))
        tensors = [_to(x, d) for x in items]
        shapes = {tuple(t.shape.dims) if t.shape.dims is not None else None for t in tensors}
        if len(shapes) != 1 or None in shapes:
            raise ValueError(f"{what} of a list holding graph tensors needs items of one known shape, as numpy needs "
                             f"for an array that is not ragged; here {sorted(map(str, shapes))}")
        out = array_ops.stack(tensors, axis=0)
    if dtype is not None and out.dtype != dt.as_dtype(dtype):
        out = array_ops.cast(out, dt.as_dtype(dtype))
    return out


@implements(np.stack)
def stack(arrays, axis=0, out=None, dtype=None, casting=None):
    _no_out("stack", out, dtype=dtype, casting=casting)
    return array_ops.stack(_joined(arrays, "np.stack"), axis=axis)


@implements(np.concatenate)
def concatenate(arrays, axis=0, out=None, dtype=None, casting=None):
    _no_out("concatenate", out, dtype=dtype, casting=casting)
    if axis is None:
        return array_ops.concat([array_ops.reshape(v, [-1]) for v in _joined(arrays, "np.concatenate")], 0)
    return array_ops.concat(_joined(arrays, "np.concatenate"), axis)


@implements(np.hstack)
def hstack(tup, dtype=None, casting=None):
    _no_out("hstack", dtype=dtype, casting=casting)
    arrays = [_at_least(array_of(a, "np.hstack"), 1) for a in tup]
    return concatenate(arrays, axis=0 if arrays and arrays[0].shape.rank == 1 else 1)


@implements(np.vstack)
def vstack(tup, dtype=None, casting=None):
    _no_out("vstack", dtype=dtype, casting=casting)
    return concatenate([_at_least(array_of(a, "np.vstack"), 2) for a in tup], axis=0)


def _at_least(a, rank: int):
    """np.atleast_1d / atleast_2d: a scalar is [a], a vector a row [v]."""
    a = _as_tensor(a)
    if a.shape.rank is None:
        raise TypeError("np.hstack / np.vstack of a graph tensor of unknown rank")
    while a.shape.rank < rank:
        a = array_ops.expand_dims(a, 0)
    return a


@implements(np.clip)
def clip(a, a_min=None, a_max=None, out=None, **kwargs):
    _no_out("clip", out, **{k: v for k, v in kwargs.items() if k not in ("min", "max")})
    a_min = kwargs.get("min", a_min)
    a_max = kwargs.get("max", a_max)
    r = a
    if a_min is not None:
        r = np.maximum(r, a_min)
    if a_max is not None:
        r = np.minimum(r, a_max)
    return r


@implements(np.dot)
def dot(a, b, out=None):
    _no_out("dot", out)
    a, b = _as_tensor(a), _as_tensor(b)
    ra, rb = a.shape.rank, b.shape.rank
    if ra == 0 or rb == 0:
        return a * b
    if ra is None or rb is None or ra > 2 or rb > 2:
        raise TypeError("np.dot on graph tensors needs 1-D or 2-D operands of known rank; "
                        "use np.matmul (batched) or np.tensordot outside the graph")
    return np.matmul(a, b)


# -- making arrays like others --------------------------------------------------------------

def _like(fill):
    def like(a, dtype=None, order=None, subok=True, shape=None, device=None):
        if shape is not None:
            raise TypeError("np.zeros_like/ones_like on a graph tensor does not take shape=")
        a = _as_tensor(a)
        z = array_ops.zeros_like(a) if fill == 0 else array_ops.ones_like(a)
        return z if dtype is None else _to(z, dt.as_dtype(dtype))
    return like


implements(np.zeros_like)(_like(0))
implements(np.ones_like)(_like(1))
implements(np.empty_like)(_like(0))  # (numpy's values are whatever memory held: zeros are as good)


@implements(np.count_nonzero)
def count_nonzero(a, axis=None, *, keepdims=False):
    """A Python int for the whole array (numpy's), an int64 array along an axis."""
    a = _as_tensor(a)
    nonzero = a if a.dtype.is_bool else math_ops.not_equal(a, _to(0, a.dtype))
    out = math_ops.reduce_sum(array_ops.cast(nonzero, dt.int64), axis=_axis(axis), keepdims=keepdims)
    if axis is None and not keepdims:
        out = array_ops.identity(out)
        out.weak = True
    return out


@implements(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 (numpy's name)
    """The 2-norm of a vector or the Frobenius norm of a matrix (ord and axis None), as
    numpy computes it: sqrt(x . x) of x flattened, in float64 for integer x."""
    if ord is not None or axis is not None or keepdims:
        raise TypeError("np.linalg.norm on a graph tensor takes neither ord, axis nor keepdims: "
                        "write np.sqrt(np.sum(x * x, axis=...)) for those")
    x = _as_tensor(x)
    if not x.dtype.is_floating:
        x = array_ops.cast(x, dt.float64)
    flat = array_ops.reshape(x, [-1])
    return math_ops.sqrt(dot(flat, flat))


# -- shapes ---------------------------------------------------------------------------------

@implements(np.reshape)
def reshape(a, shape=None, order="C", **kwargs):
    shape = kwargs.get("newshape", shape)
    if order != "C":
        raise TypeError("np.reshape on a graph tensor supports order='C' only")
    return array_ops.reshape(_as_tensor(a), list(shape) if isinstance(shape, (tuple, list)) else [shape])


@implements(np.transpose)
def transpose(a, axes=None):
    return array_ops.transpose(_as_tensor(a), perm=list(axes) if axes is not None else None)


@implements(np.expand_dims)
def expand_dims(a, axis):
    return array_ops.expand_dims(_as_tensor(a), axis)


@implements(np.squeeze)
def squeeze(a, axis=None):
    return array_ops.squeeze(_as_tensor(a), axis=axis)


@implements(np.ravel)
def ravel(a, order="C"):
    if order != "C":
        raise TypeError("np.ravel on a graph tensor supports order='C' only")
    return array_ops.reshape(_as_tensor(a), [-1])


@implements(np.copy)
def copy(a, order="K", subok=False):
    return array_ops.identity(_as_tensor(a))


@implements(np.round, np.around)
def round_(a, decimals=0, out=None):
    if out is not None:
        raise TypeError("np.round(..., out=) on a graph tensor: arrays in the graph are values; assign the result")
    if not isinstance(decimals, (int, np.integer)):
        raise TypeError("np.round's decimals must be a Python int on a graph tensor")
    return math_ops.round(_as_tensor(a), decimals=int(decimals))


# -- ndarray methods --------------------------------------------------------------------------

def _astype(self, dtype, copy=True, **kwargs):
    if kwargs:
        raise TypeError(f"Tensor.astype does not take {', '.join(kwargs)}")
    return _to(self, dt.as_dtype(dtype))


def _reshape_method(self, *shape, order="C"):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return reshape(self, shape, order=order)


def _size(self):
    """numpy's `a.size`: a Python int when tracing knows the shape, else a graph value."""
    dims = self.shape.dims
    if dims is not None and all(d is not None for d in dims):
        return int(np.prod(dims, dtype=np.int64))
    return _python_int(array_ops.size(self))


def _python_int(t: Tensor) -> Tensor:
    """A scalar standing for a Python int (weak, as len() gives): numpy's shapes and sizes
    are Python ints."""
    t.weak = True
    return t


def _known_rank(x: Tensor, what: str) -> int:
    if x.shape.rank is None:
        raise GraphError(f"{what} of the graph tensor {x.name} is unknown while the graph is built: its number of "
                         "dimensions changes in a loop (give it one rank on every path, e.g. with np.reshape)")
    return x.shape.rank


@implements(np.shape)
def numpy_shape(a) -> tuple:
    """numpy's `a.shape`: a tuple of Python ints; a dimension tracing does not know (an
    array grown in a loop) is a graph value holding it. TensorShape's None in its place
    would be taken for the value (`a.shape[0]` returned None)."""
    if not isinstance(a, Tensor):
        return np.shape(a)
    _known_rank(a, "the shape")
    dims = a.shape.dims
    if None not in dims:
        return dims
    dynamic = array_ops.shape(a)
    return tuple(d if d is not None else _python_int(dynamic[i]) for i, d in enumerate(dims))


@implements(np.ndim)
def numpy_ndim(a) -> int:
    return _known_rank(a, "the number of dimensions") if isinstance(a, Tensor) else np.ndim(a)


@implements(np.size)
def numpy_size(a, axis=None):
    if not isinstance(a, Tensor):
        return np.size(a, axis)
    return _size(a) if axis is None else numpy_shape(a)[axis]


def _item(self, *args):
    """numpy's `a.item()`: the one element, a Python number (weakly typed)."""
    if args:
        raise TypeError("a.item(index) on a graph tensor: index it first (a[i]), then .item()")
    dims = self.shape.dims
    if dims is not None and None not in dims and int(np.prod(dims, dtype=np.int64)) != 1:
        raise ValueError("can only convert an array of size 1 to a Python scalar")
    out = array_ops.reshape(self, []) if dims != [] and dims != () else array_ops.identity(self)
    return _python_number(out)


def _python_number(t):
    """A scalar tensor as the Python number numpy's item() gives: an int or a float is weakly
    typed, and has Python's precision (int64, float64); a bool stays a bool."""
    if t.dtype.is_bool:
        return t
    t = _to(t, dt.int64 if t.dtype.is_integer else dt.float64)  # (t is a new tensor: marking it is safe)
    t.weak = True
    return t


def _tolist(self):
    """numpy's `a.tolist()` of a scalar (a Python number) or of a 1-d array of known length
    (a list of Python numbers)."""
    dims = self.shape.dims
    if dims is not None and len(dims) == 0:
        return _item(self)
    if dims is None or len(dims) != 1 or dims[0] is None:
        raise TypeError(f"tolist() of a graph tensor of shape {self.shape}: a list's length and nesting must be "
                        f"known while the graph is built; index the tensor, or loop over it")
    return [_python_number(array_ops.getitem(self, i)) for i in range(dims[0])]


def _no_index(self):
    raise TypeError(f"the graph tensor {self.name} is used as a Python integer (a size, a count, an index into a "
                    f"Python sequence), but its value is only known when the graph runs. Pass it as a Python int, "
                    f"or use graph ops that take tensors (graphcore.zeros, graphcore.range, indexing a tensor)")


def _no_setitem(self, key, value):
    raise TypeError(f"items of the graph tensor {self.name} cannot be assigned: arrays in the graph are values. "
                    f"Build the new array instead, e.g. with np.where(mask, new, old), or collect rows in a list "
                    f"and np.stack them")


_METHODS = {
    "sum": sum_, "prod": prod, "mean": mean, "max": max_, "min": min_, "any": any_, "all": all_, "var": var,
    "std": std,
    "argmax": _FUNCTIONS[np.argmax], "argmin": _FUNCTIONS[np.argmin],
    "clip": clip, "dot": dot, "round": round_, "item": _item, "tolist": _tolist, "ravel": ravel,
    "flatten": lambda self: ravel(self), "squeeze": squeeze,
    "astype": _astype, "reshape": _reshape_method, "copy": lambda self: array_ops.identity(self),
    "transpose": lambda self, *axes: transpose(self, axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list))
                                               else (axes or None)),
}


# -- ufuncs composed of graph ops (the rest are graphcore's own, in tensor_operators) ---------

def _strong(t: Tensor) -> Tensor:
    """numpy's ufuncs give numpy values (np.False_, not Python's False) even of Python numbers."""
    if t.weak:
        t = array_ops.identity(t)
        t.weak = False
    return t


def _isnan(x):
    return _strong(math_ops.not_equal(x, x))  # nan is the only value not equal to itself; never for integers


def _isfinite(x):
    return _strong(math_ops.less(math_ops.abs(x), float("inf")))  # false for nan and both infinities


def _isinf(x):
    return _strong(math_ops.equal(math_ops.abs(x), float("inf")))


def _reciprocal(x):
    if not x.dtype.is_floating:  # numpy's integer reciprocal truncates (1 // x, with 0 for |x| > 1)
        raise TypeError("np.reciprocal of an integer graph tensor: write 1 / x for floats, or 1 // x if the "
                        "truncation is what you want")
    return math_ops.divide(_to(1, x.dtype), x)


def _fabs(x):
    return math_ops.abs(x if x.dtype.is_floating else array_ops.cast(x, dt.float64))


_UFUNCS = {np.isnan: _isnan, np.isfinite: _isfinite, np.isinf: _isinf, np.reciprocal: _reciprocal, np.fabs: _fabs}


def install() -> None:
    for ufunc, fn in _UFUNCS.items():
        register_ufunc(ufunc, lambda *xs, fn=fn: fn(*[_as_tensor(x) for x in xs]))
    Tensor.__array_function__ = _array_function
    for name, fn in _METHODS.items():
        setattr(Tensor, name, fn)
    Tensor.size = property(_size)
    Tensor.__index__ = _no_index
    Tensor.__setitem__ = _no_setitem
