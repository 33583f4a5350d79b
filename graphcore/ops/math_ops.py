"""Elementwise arithmetic, comparisons, logic, selection, reductions and matmul: one
block per op, with the weak typing of Python numbers that meet tensors (`weak_binary`)
and the gradient of broadcasting (`unbroadcast`) that their gradient rules share."""
from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from .. import dtypes as dt
from ..attr_schema import AXIS, BOOL, INT, int_in, one_of, opt
from ..errors import GraphError
from ..graph import Tensor, get_default_graph, graph_of
from ..registry import CHEAP, define_op, get_op_def, needs_grad, registered_ops
from ..shapes import TensorShape, broadcast
from ._helpers import in_graph, is_python_number, is_weak, join_kinds, normalize_axis, reduced_shape
from .array_ops import (as_shape_tuple, cast, cast_op, constant, expand_dims_op, fwd_shape, fwd_size, reshape_op,
                        static_shape_of, unbroadcast_to_op, zeros_like_op)


# -- weak typing of Python numbers, and broadcasting's gradient --------------------------

def weak_binary(op_name: str, x, y):
    """Make two operands of a binary op agree on a dtype the way numpy 2 does for Python
    numbers (they are weak: they take the tensor's dtype; a Python float next to an
    integer tensor promotes it to float64; a weak tensor does the same), promote two
    strongly typed numeric tensors (`promote`), and refuse bools and opaque values with
    a message that says how to fix it. Returns (x, y) ready to build."""
    g = graph_of((x, y))
    if g is not None and g is not get_default_graph():
        with g.as_default():  # a tensor used after its graph's `with` block: build in its graph
            return weak_binary(op_name, x, y)
    tx, ty = isinstance(x, Tensor), isinstance(y, Tensor)
    if not tx and not ty:
        if not in_graph():
            return x, y
        x, tx = constant(x), True
    if tx and not ty:
        if x.dtype.is_integer and isinstance(y, float):
            x = cast(x, dt.float64)
        y = _weak_to(y, x.dtype)
    elif ty and not tx:
        if y.dtype.is_integer and isinstance(x, float):
            y = cast(y, dt.float64)
        x = _weak_to(x, y.dtype)
    if x.dtype != y.dtype:
        common = join_kinds(x.dtype, x.weak, y.dtype, y.weak)
        if common is None:
            raise GraphError(
                f"{op_name}: the operands have dtypes {x.dtype} ({x.name}) and {y.dtype} ({y.name}), which do "
                f"not mix; convert one with graphcore.cast so they match")
        x, y = (x if x.dtype == common else cast(x, common)), (y if y.dtype == common else cast(y, common))
    return x, y


def _weak_to(value, like: dt.DType):
    """A Python number next to a tensor of dtype `like` becomes a constant of that dtype;
    numpy values keep their own dtype (they are strongly typed, as in numpy 2)."""
    if is_python_number(value) and (like.is_numeric or isinstance(value, bool)):
        return constant(value, dtype=like)
    return constant(value)


def unbroadcast(grad: Tensor | None, x: Tensor) -> Tensor | None:
    """Sum `grad` (shaped like a broadcast result) back to the shape of the input `x`."""
    if grad is None:
        return None
    xs, gs = x.shape, grad.shape
    if xs.is_fully_defined() and gs.is_fully_defined():
        if xs.dims == gs.dims:
            return grad
        lead = len(gs.dims) - len(xs.dims)
        axes = list(range(lead)) + [lead + i for i, d in enumerate(xs.dims) if d == 1 and gs.dims[lead + i] != 1]
        out = sum_op(grad, axis=tuple(axes), keepdims=True) if axes else grad
        if out.shape.dims != xs.dims:
            out = reshape_op(out, constant(np.asarray(xs.dims, dtype=np.int64)))
        return out
    return unbroadcast_to_op(grad, fwd_shape(x))


# -- elementwise binary ops --------------------------------------------------------------

def _binary_rule(out_dtype=None):
    def rule(x, y, **attrs):
        if x.dtype != y.dtype:
            raise GraphError(f"operands have different dtypes {x.dtype} and {y.dtype}")
        return (out_dtype or x.dtype), broadcast(x.shape, y.shape)
    return rule


def _numeric_binary_rule(x, y, **attrs):
    if x.dtype.is_bool:  # two bool scalars: bool arrays take numpy's rules before (_binary_fn)
        raise GraphError(
            "arithmetic of two bools: Python gives an int (True + True == 2) and numpy a bool (np.True_ + np.True_ "
            "is True), and whether these two are Python's or numpy's bools is not known on every path of a graph: "
            "convert them first, e.g. int(a) + int(b), or np.logical_or(a, b) / np.logical_and(a, b)")
    if not x.dtype.is_numeric:
        raise GraphError(f"arithmetic needs numeric operands, got {x.dtype}")
    return _binary_rule()(x, y)


def _realdiv_rule(x, y, **attrs):
    d, s = _numeric_binary_rule(x, y)
    return (dt.float64 if d.is_integer else d), s


def _realdiv_kernel(x, y):
    out = np.true_divide(x, y)
    return out


add_op = define_op("Add", shape=_numeric_binary_rule, kernel=np.add, cost=CHEAP, elementwise=True, fails=None,
                   family="arithmetic", commutative=True, unit=0, python=operator.add, symbol="+", ufunc=np.add,
                   expr="({0} + {1})", numba="({0} + {1})")
sub_op = define_op("Sub", shape=_numeric_binary_rule, kernel=np.subtract, cost=CHEAP, elementwise=True, fails=None,
                   family="arithmetic", unit=0, python=operator.sub, symbol="-", ufunc=np.subtract,
                   expr="({0} - {1})", numba="({0} - {1})")
mul_op = define_op("Mul", shape=_numeric_binary_rule, kernel=np.multiply, cost=CHEAP, elementwise=True, fails=None,
                   family="arithmetic", commutative=True, unit=1, python=operator.mul, symbol="*", ufunc=np.multiply,
                   expr="({0} * {1})", numba="({0} * {1})")
# (a zero divisor gives inf or nan in numpy, with a warning: not an error)
realdiv_op = define_op("RealDiv", shape=_realdiv_rule, kernel=_realdiv_kernel, cost=CHEAP, elementwise=True, fails=None,
                       family="arithmetic", unit=1, python=operator.truediv, symbol="/", ufunc=np.true_divide,
                       expr="({0} / {1})", numba="({0} / {1})")
# (an integer zero divisor gives 0 in numpy, with a warning: not an error)
floordiv_op = define_op("FloorDiv", shape=_numeric_binary_rule, kernel=np.floor_divide, cost=CHEAP, elementwise=True,
                        fails=None, family="arithmetic", python=operator.floordiv, symbol="//",
                        ufunc=np.floor_divide, expr="({0} // {1})")
mod_op = define_op("Mod", shape=_numeric_binary_rule, kernel=np.mod, cost=CHEAP, elementwise=True, fails=None,
                   family="arithmetic", python=operator.mod, symbol="%", ufunc=np.remainder, expr="({0} % {1})")
pow_op = define_op("Pow", shape=_numeric_binary_rule, kernel=np.power, cost=CHEAP, elementwise=True,
                   fails="an integer to a negative integer power raises ValueError", family="arithmetic",
                   python=operator.pow, symbol="**", ufunc=np.power)
maximum_op = define_op("Maximum", shape=_numeric_binary_rule, kernel=np.maximum, cost=CHEAP, elementwise=True,
                       fails=None, family="arithmetic", python=np.maximum, ufunc=np.maximum)
minimum_op = define_op("Minimum", shape=_numeric_binary_rule, kernel=np.minimum, cost=CHEAP, elementwise=True,
                       fails=None, family="arithmetic", python=np.minimum, ufunc=np.minimum)


def _zeros_scalar(like):
    return constant(np.zeros((), dtype=like.dtype.np_dtype))


def _ones_scalar(like):
    return constant(np.ones((), dtype=like.dtype.np_dtype))


@add_op.gradient
def _add_grad(op, dy):
    x, y = op.inputs
    return [unbroadcast(dy, x), unbroadcast(dy, y)]


@sub_op.gradient
def _sub_grad(op, dy):
    x, y = op.inputs
    return [unbroadcast(dy, x), unbroadcast(neg_op(dy), y)]


@mul_op.gradient
def _mul_grad(op, dy):
    x, y = op.inputs
    return [unbroadcast(mul_op(dy, y), x) if needs_grad(op, 0) else None, unbroadcast(mul_op(dy, x), y) if needs_grad(op, 1) else None]


@realdiv_op.gradient
def _realdiv_grad(op, dy):
    x, y = op.inputs
    if not x.dtype.is_floating:
        return [None, None]
    return [unbroadcast(realdiv_op(dy, y), x) if needs_grad(op, 0) else None,
            unbroadcast(neg_op(mul_op(dy, realdiv_op(op.outputs[0], y))), y) if needs_grad(op, 1) else None]


@pow_op.gradient
def _pow_grad(op, dy):
    """d(x**y) = y * x**(y-1) dx + x**y * log(x) dy (log taken as 0 where x <= 0)."""
    x, y = op.inputs
    if not x.dtype.is_floating:
        return [None, None]
    one = _ones_scalar(x)
    dx = mul_op(dy, mul_op(y, pow_op(x, sub_op(y, one))))
    if not needs_grad(op, 1):
        return [unbroadcast(dx, x), None]
    zero = _zeros_scalar(x)
    positive = greater_op(x, zero)
    safe_x = select_op(positive, x, add_op(mul_op(x, zero), one))
    log_x = select_op(positive, log_op(safe_x), mul_op(x, zero))
    dyy = mul_op(dy, mul_op(op.outputs[0], log_x))
    return [unbroadcast(dx, x), unbroadcast(dyy, y)]


def _minmax_grad(op, dy, pick_x):
    x, y = op.inputs
    if not x.dtype.is_floating:
        return [None, None]
    take_x = pick_x(x, y)
    zeros = zeros_like_op(dy)
    return [unbroadcast(select_op(take_x, dy, zeros), x), unbroadcast(select_op(take_x, zeros, dy), y)]


@maximum_op.gradient
def _maximum_grad(op, dy):
    return _minmax_grad(op, dy, greater_equal_op)


@minimum_op.gradient
def _minimum_grad(op, dy):
    return _minmax_grad(op, dy, less_equal_op)

_bool_rule = _binary_rule(dt.bool_)
less_op = define_op("Less", shape=_bool_rule, kernel=np.less, cost=CHEAP, elementwise=True, fails=None,
                    family="comparison", python=operator.lt, symbol="<", ufunc=np.less,
                    expr="({0} < {1})", numba="({0} < {1})")
less_equal_op = define_op("LessEqual", shape=_bool_rule, kernel=np.less_equal, cost=CHEAP, elementwise=True, fails=None,
                          family="comparison", python=operator.le, symbol="<=", ufunc=np.less_equal,
                          expr="({0} <= {1})", numba="({0} <= {1})")
greater_op = define_op("Greater", shape=_bool_rule, kernel=np.greater, cost=CHEAP, elementwise=True, fails=None,
                       family="comparison", python=operator.gt, symbol=">", ufunc=np.greater,
                       expr="({0} > {1})", numba="({0} > {1})")
greater_equal_op = define_op("GreaterEqual", shape=_bool_rule, kernel=np.greater_equal, cost=CHEAP,
                             elementwise=True, fails=None, family="comparison", python=operator.ge, symbol=">=",
                             ufunc=np.greater_equal,
                             expr="({0} >= {1})", numba="({0} >= {1})")
equal_op = define_op("Equal", shape=_bool_rule, kernel=np.equal, cost=CHEAP, elementwise=True, fails=None,
                     family="comparison", commutative=True, python=operator.eq, symbol="==", ufunc=np.equal,
                     expr="({0} == {1})", numba="({0} == {1})")
not_equal_op = define_op("NotEqual", shape=_bool_rule, kernel=np.not_equal, cost=CHEAP, elementwise=True, fails=None,
                         family="comparison", commutative=True, python=operator.ne, symbol="!=", ufunc=np.not_equal,
                         expr="({0} != {1})", numba="({0} != {1})")
for _op in (less_op, less_equal_op, greater_op, greater_equal_op, equal_op, not_equal_op, floordiv_op):
    _op.not_differentiable("its output is piecewise constant in its inputs")


@mod_op.gradient
def _mod_grad(op, dy):
    """x % y == x - floor(x / y) * y: d/dx 1, d/dy -floor(x / y) (between its jumps)."""
    x, y = op.inputs
    if not x.dtype.is_floating:
        return [None, None]
    return [unbroadcast(dy, x) if needs_grad(op, 0) else None,
            unbroadcast(neg_op(mul_op(dy, floor_op(realdiv_op(x, y)))), y) if needs_grad(op, 1) else None]


def _logical_rule(x, y=None, **attrs):
    for t in (x, y):
        if t is not None and not t.dtype.is_bool:
            raise GraphError(f"logical ops need bool operands, got {t.dtype}")
    return dt.bool_, (x.shape if y is None else broadcast(x.shape, y.shape))


def _python_logical(np_fn):
    """`and` / `or` of two Python values is a Python bool in a graph (`_binary_fn`), else numpy's."""
    def fn(a, b):
        out = np_fn(a, b)
        return out if isinstance(a, np.generic) or isinstance(b, np.generic) else bool(out)
    return fn


logical_and_op = define_op("LogicalAnd", shape=_logical_rule, kernel=np.logical_and, cost=CHEAP, elementwise=True,
                           fails=None, family="logical", commutative=True, python=_python_logical(np.logical_and),
                           ufunc=np.logical_and, expr="({0} & {1})", numba="({0} and {1})")
logical_or_op = define_op("LogicalOr", shape=_logical_rule, kernel=np.logical_or, cost=CHEAP, elementwise=True,
                          fails=None, family="logical", commutative=True, python=_python_logical(np.logical_or),
                          ufunc=np.logical_or, expr="({0} | {1})", numba="({0} or {1})")
logical_not_op = define_op("LogicalNot", shape=_logical_rule, kernel=np.logical_not, cost=CHEAP, elementwise=True,
                           fails=None, family="logical", involution=True, ufunc=np.logical_not, expr="(~{0})",
                           numba="(not {0})")
for _op in (logical_and_op, logical_or_op, logical_not_op):
    _op.not_differentiable("boolean")


# -- bitwise ops: `& | ^ ~ << >>` on integers (and on bools, where numpy makes them logical) --

def _bitwise_rule(x, y=None, **attrs):
    for t in (x, y):
        if t is not None and not (t.dtype.is_integer or t.dtype.is_bool):
            raise GraphError(f"bitwise ops need integer or bool operands, got {t.dtype}; "
                             "for floats, compare first or use graphcore.cast")
    if y is not None and x.dtype != y.dtype:
        raise GraphError(f"operands have different dtypes {x.dtype} and {y.dtype}")
    return x.dtype, (x.shape if y is None else broadcast(x.shape, y.shape))


def _shift_rule(x, y, **attrs):
    if x.dtype.is_bool:  # numpy shifts bools as integers (True << 1 is 2)
        raise GraphError("shifts need integer operands, got bool; convert with int() or graphcore.cast first")
    return _bitwise_rule(x, y)


def _python_invert(a):
    if isinstance(a, bool):  # ~True is -2 in Python, logical not in the graph (`invert`): not the same value
        raise TypeError("~ of a Python bool")
    return ~a


bitwise_and_op = define_op("BitwiseAnd", shape=_bitwise_rule, kernel=np.bitwise_and, cost=CHEAP,
                           elementwise=True, fails=None, family="bitwise", commutative=True, python=operator.and_,
                           symbol="&", ufunc=np.bitwise_and)
bitwise_or_op = define_op("BitwiseOr", shape=_bitwise_rule, kernel=np.bitwise_or, cost=CHEAP,
                          elementwise=True, fails=None, family="bitwise", commutative=True, python=operator.or_,
                          symbol="|", ufunc=np.bitwise_or)
bitwise_xor_op = define_op("BitwiseXor", shape=_bitwise_rule, kernel=np.bitwise_xor, cost=CHEAP,
                           elementwise=True, fails=None, family="bitwise", commutative=True, python=operator.xor,
                           symbol="^", ufunc=np.bitwise_xor)
invert_op = define_op("Invert", shape=_bitwise_rule, kernel=np.invert, cost=CHEAP, elementwise=True, fails=None,
                      family="bitwise", involution=True, exact=("int",), python=_python_invert, symbol="~",
                      ufunc=np.invert)
left_shift_op = define_op("LeftShift", shape=_shift_rule, kernel=np.left_shift, cost=CHEAP,
                          elementwise=True, fails=None, family="bitwise", python=operator.lshift, symbol="<<",
                          ufunc=np.left_shift)
right_shift_op = define_op("RightShift", shape=_shift_rule, kernel=np.right_shift, cost=CHEAP,
                           elementwise=True, fails=None, family="bitwise", python=operator.rshift, symbol=">>",
                           ufunc=np.right_shift)
for _op in (bitwise_and_op, bitwise_or_op, bitwise_xor_op, invert_op, left_shift_op, right_shift_op):
    _op.not_differentiable("integer")


# -- Select (where) -------------------------------------------------------------------

def _select_rule(c, x, y):
    if not c.dtype.is_bool:
        raise GraphError(f"where: the condition must be bool, got {c.dtype}")
    if x.dtype != y.dtype:
        raise GraphError(f"where: the two choices have different dtypes {x.dtype} and {y.dtype}")
    return x.dtype, broadcast(c.shape, broadcast(x.shape, y.shape))


select_op = define_op("Select", shape=_select_rule, kernel=np.where, cost=CHEAP, elementwise=True, fails=None,
                      numba="({1} if {0} else {2})")


@select_op.gradient
def _select_grad(op, dy):
    c, x, y = op.inputs
    zeros = zeros_like_op(dy)
    return [None, unbroadcast(select_op(c, dy, zeros), x), unbroadcast(select_op(c, zeros, dy), y)]


def where(condition, x, y, name=None):
    """Elementwise choice: x where condition else y (numpy broadcasting)."""
    if not in_graph(condition, x, y):
        return np.where(condition, x, y)
    x, y = weak_binary("where", x, y)
    return select_op(condition, x, y, name=name)


# -- elementwise unary ops --------------------------------------------------------------

def _numeric_unary_rule(x, **attrs):
    if not x.dtype.is_numeric:
        raise GraphError(f"needs a numeric operand, got {x.dtype}")
    return x.dtype, x.shape


def _float_unary_rule(x, **attrs):
    if not x.dtype.is_numeric:
        raise GraphError(f"needs a numeric operand, got {x.dtype}")
    return (x.dtype if x.dtype.is_floating else dt.float64), x.shape


def _sigmoid(x):
    x = np.asarray(x)
    return np.where(x >= 0, 1.0 / (1.0 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1.0 + np.exp(-np.abs(x)))).astype(
        x.dtype if x.dtype.kind == "f" else np.float64)


def _relu(x):
    return np.maximum(x, np.zeros((), dtype=np.asarray(x).dtype))


neg_op = define_op("Neg", shape=_numeric_unary_rule, kernel=np.negative, cost=CHEAP, elementwise=True, fails=None,
                   family="arithmetic", involution=True, exact=("int", "float"), python=operator.neg,
                   symbol="unary -", ufunc=np.negative, expr="(-{0})", numba="(-{0})")
abs_op = define_op("Abs", shape=_numeric_unary_rule, kernel=np.abs, cost=CHEAP, elementwise=True, fails=None,
                   family="arithmetic", exact=("int", "float"), python=abs, symbol="abs()", ufunc=np.absolute,
                   expr="abs({0})", numba="abs({0})")
sign_op = define_op("Sign", shape=_numeric_unary_rule, kernel=np.sign, cost=CHEAP, elementwise=True, fails=None,
                    family="arithmetic", exact=("int", "float"), python=np.sign, ufunc=np.sign)
sign_op.not_differentiable("piecewise constant")
square_op = define_op("Square", shape=_numeric_unary_rule, kernel=np.square, cost=CHEAP, elementwise=True, fails=None,
                      family="arithmetic", python=np.square, ufunc=np.square, numba="({0} * {0})")
# (numba's exp, log, tanh, log1p and expm1 are libm's, which differ from numpy's in the last
# bit for some values: numba loops take them on arrays only, by calling the kernel's own ufunc
# loop, executor/numba_numpy_loops.py)
exp_op = define_op("Exp", shape=_float_unary_rule, kernel=np.exp, cost=CHEAP, elementwise=True, fails=None,
                   family="math", python=np.exp, ufunc=np.exp, expr="np.exp({0})")
log_op = define_op("Log", shape=_float_unary_rule, kernel=np.log, cost=CHEAP, elementwise=True, fails=None,
                   family="math", python=np.log, ufunc=np.log, expr="np.log({0})")
sqrt_op = define_op("Sqrt", shape=_float_unary_rule, kernel=np.sqrt, cost=CHEAP, elementwise=True, fails=None,
                    family="math", python=np.sqrt, ufunc=np.sqrt, expr="np.sqrt({0})", numba="np.sqrt({0})")
tanh_op = define_op("Tanh", shape=_float_unary_rule, kernel=np.tanh, cost=CHEAP, elementwise=True, fails=None,
                    family="math", python=np.tanh, ufunc=np.tanh, expr="np.tanh({0})")
sigmoid_op = define_op("Sigmoid", shape=_float_unary_rule, kernel=_sigmoid, cost=CHEAP, elementwise=True, fails=None,
                       family="math", python=lambda a: 1.0 / (1.0 + np.exp(-a)))
relu_op = define_op("Relu", shape=_numeric_unary_rule, kernel=_relu, cost=CHEAP, elementwise=True, fails=None,
                    family="math", exact=("float",), python=lambda a: np.maximum(a, 0))


@neg_op.gradient
def _neg_grad(op, dy):
    return [neg_op(dy)]


@abs_op.gradient
def _abs_grad(op, dy):
    return [mul_op(dy, sign_op(op.inputs[0]))]


@square_op.gradient
def _square_grad(op, dy):
    x = op.inputs[0]
    return [mul_op(dy, mul_op(x, add_op(_ones_scalar(x), _ones_scalar(x))))]


@exp_op.gradient
def _exp_grad(op, dy):
    return [mul_op(dy, op.outputs[0])]


@log_op.gradient
def _log_grad(op, dy):
    x = op.inputs[0]
    return [realdiv_op(dy, x)] if x.dtype.is_floating else [None]


@sqrt_op.gradient
def _sqrt_grad(op, dy):
    y = op.outputs[0]
    if not op.inputs[0].dtype.is_floating:
        return [None]
    return [realdiv_op(dy, add_op(y, y))]


@tanh_op.gradient
def _tanh_grad(op, dy):
    y = op.outputs[0]
    if not op.inputs[0].dtype.is_floating:
        return [None]
    return [mul_op(dy, sub_op(_ones_scalar(y), mul_op(y, y)))]


@sigmoid_op.gradient
def _sigmoid_grad(op, dy):
    y = op.outputs[0]
    if not op.inputs[0].dtype.is_floating:
        return [None]
    return [mul_op(dy, mul_op(y, sub_op(_ones_scalar(y), y)))]


@relu_op.gradient
def _relu_grad(op, dy):
    x = op.inputs[0]
    return [select_op(greater_op(x, _zeros_scalar(x)), dy, zeros_like_op(dy))]


sin_op = define_op("Sin", shape=_float_unary_rule, kernel=np.sin, cost=CHEAP, elementwise=True, fails=None,
                   family="math", python=np.sin, ufunc=np.sin, expr="np.sin({0})", numba="np.sin({0})")
cos_op = define_op("Cos", shape=_float_unary_rule, kernel=np.cos, cost=CHEAP, elementwise=True, fails=None,
                   family="math", python=np.cos, ufunc=np.cos, expr="np.cos({0})", numba="np.cos({0})")
log1p_op = define_op("Log1p", shape=_float_unary_rule, kernel=np.log1p, cost=CHEAP, elementwise=True, fails=None,
                     family="math", python=np.log1p, ufunc=np.log1p, expr="np.log1p({0})")
expm1_op = define_op("Expm1", shape=_float_unary_rule, kernel=np.expm1, cost=CHEAP, elementwise=True, fails=None,
                     family="math", python=np.expm1, ufunc=np.expm1, expr="np.expm1({0})")
floor_op = define_op("Floor", shape=_numeric_unary_rule, kernel=np.floor, cost=CHEAP, elementwise=True, fails=None,
                     family="math", exact=("int", "float"), python=np.floor, ufunc=np.floor)
ceil_op = define_op("Ceil", shape=_numeric_unary_rule, kernel=np.ceil, cost=CHEAP, elementwise=True, fails=None,
                    family="math", exact=("int", "float"), python=np.ceil, ufunc=np.ceil)
floor_op.not_differentiable("piecewise constant")
ceil_op.not_differentiable("piecewise constant")


def _round_kernel(x, *, decimals=0):
    return np.round(x, decimals)


round_op = define_op("Round", shape=_numeric_unary_rule, kernel=_round_kernel, cost=CHEAP,
                     attrs={"decimals": opt(int_in(-400, 400))}, elementwise=True, fails=None, family="math")
round_op.not_differentiable("piecewise constant")


@sin_op.gradient
def _sin_grad(op, dy):
    return [mul_op(dy, cos_op(op.inputs[0]))] if op.inputs[0].dtype.is_floating else [None]


@cos_op.gradient
def _cos_grad(op, dy):
    return [neg_op(mul_op(dy, sin_op(op.inputs[0])))] if op.inputs[0].dtype.is_floating else [None]


@log1p_op.gradient
def _log1p_grad(op, dy):
    x = op.inputs[0]
    return [realdiv_op(dy, add_op(x, _ones_scalar(x)))] if x.dtype.is_floating else [None]


@expm1_op.gradient
def _expm1_grad(op, dy):
    y = op.outputs[0]
    return [mul_op(dy, add_op(y, _ones_scalar(y)))] if op.inputs[0].dtype.is_floating else [None]


def _addn_rule(*xs, **attrs):
    if not xs:
        raise GraphError("AddN needs at least one input")
    shape = xs[0].shape
    for x in xs[1:]:
        if x.dtype != xs[0].dtype:
            raise GraphError(f"AddN inputs have different dtypes {xs[0].dtype} and {x.dtype}")
        shape = broadcast(shape, x.shape)
    return xs[0].dtype, shape


def _addn_kernel(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out


add_n_op = define_op("AddN", shape=_addn_rule, kernel=_addn_kernel, cost=CHEAP, elementwise=True, fails=None,
                     doc="Sum of any number of tensors; gradients of a tensor with many consumers meet here.")


@add_n_op.gradient
def _add_n_grad(op, dy):
    return [unbroadcast(dy, x) for x in op.inputs]


def _matmul_rule(a, b, transpose_a=False, transpose_b=False):
    if a.dtype != b.dtype:
        raise GraphError(f"MatMul operands have different dtypes {a.dtype} and {b.dtype}")
    if a.shape.rank is not None and a.shape.rank < 1 or b.shape.rank is not None and b.shape.rank < 1:
        raise GraphError(f"MatMul needs operands of rank >= 1, got {a.shape} and {b.shape}")
    if a.shape.dims is None or b.shape.dims is None:
        return a.dtype, TensorShape(None)
    ad, bd = list(a.shape.dims), list(b.shape.dims)
    if len(ad) >= 2 and transpose_a:
        ad[-1], ad[-2] = ad[-2], ad[-1]
    if len(bd) >= 2 and transpose_b:
        bd[-1], bd[-2] = bd[-2], bd[-1]
    k1 = ad[-1]
    k2 = bd[-2] if len(bd) >= 2 else bd[0]
    if k1 is not None and k2 is not None and k1 != k2:
        raise GraphError(f"MatMul: inner dimensions differ, {a.shape} @ {b.shape}")
    lead_a, lead_b = ad[:-2], bd[:-2]
    batch = broadcast(TensorShape(lead_a), TensorShape(lead_b)).dims if (lead_a or lead_b) else ()
    rows = [ad[-2]] if len(ad) >= 2 else []
    cols = [bd[-1]] if len(bd) >= 2 else []
    return a.dtype, TensorShape(list(batch) + rows + cols)


def _matmul_kernel(a, b, transpose_a=False, transpose_b=False):
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


matmul_op = define_op("MatMul", shape=_matmul_rule, kernel=_matmul_kernel,
                      attrs={"transpose_a": opt(BOOL), "transpose_b": opt(BOOL)}, fusible=True, ufunc=np.matmul,
                      fails="operands whose inner dimensions differ when it runs raise ValueError")


@dataclass(frozen=True)
class Factors:
    """A MatMul operand's gradient as a product of two tensors its rule has anyway:
    `op(left) @ op(right)` (op: an optional transpose of the last two axes), or, when
    one of them is a vector, the outer product `left[..., :, None] @ right[..., None, :]`.
    The gradient rule builds it at once (`product`); the gradient of a loop invariant
    instead sums one per iteration as a single matmul after the backward loop
    (gradients/contraction.py)."""

    left: Tensor
    right: Tensor
    transpose_left: bool = False
    transpose_right: bool = False

    @property
    def is_outer(self) -> bool:
        return self.left.shape.rank == 1 or self.right.shape.rank == 1

    def product(self) -> Tensor:
        if self.is_outer:
            return matmul_op(expand_dims_op(self.left, axis=-1), expand_dims_op(self.right, axis=-2))
        return matmul_op(self.left, self.right, transpose_a=self.transpose_left, transpose_b=self.transpose_right)


def matmul_grad_factors(op, i: int, dy: Tensor) -> Factors | None:
    """The gradient of operand `i` of the MatMul `op` as Factors, where it has that form:
    a matrix operand (batched or not) whose partner is a matrix, or a vector (an outer
    product). None for the vector of a matrix-vector product and for two vectors.

    y = op(A) @ op(B): dA = dy @ op(B)^T (transposed when A is), dB = op(A)^T @ dy; a
    1-D operand is a row (A) or a column (B)."""
    a, b = op.inputs
    ta, tb = op.attrs.get("transpose_a", False), op.attrs.get("transpose_b", False)
    ra, rb = a.shape.rank, b.shape.rank
    if i == 0 and ra >= 2:
        if rb == 1:  # y[m] = op(A)[m,k] b[k]: dA = dy b^T (b dy^T for A^T)
            return Factors(dy, b) if not ta else Factors(b, dy)
        if not ta:
            return Factors(dy, b, transpose_right=not tb)
        return Factors(b, dy, transpose_left=tb, transpose_right=True)
    if i == 1 and rb >= 2:
        if ra == 1:  # y[n] = a[k] op(B)[k,n]: dB = a dy^T (dy a^T for B^T)
            return Factors(a, dy) if not tb else Factors(dy, a)
        if not tb:
            return Factors(a, dy, transpose_left=not ta)
        return Factors(dy, a, transpose_left=True, transpose_right=ta)
    return None


@matmul_op.gradient
def _matmul_grad(op, dy):
    """The transposed products of `matmul_grad_factors`; the vector of a matrix-vector
    product gets a matrix-vector product back, two vectors each other times dy. Only the
    operand gradients the walk needs are built (each reads the other operand)."""
    a, b = op.inputs
    ta, tb = op.attrs.get("transpose_a", False), op.attrs.get("transpose_b", False)
    ra, rb = a.shape.rank, b.shape.rank
    if ra is None or rb is None:
        raise GraphError(f"the gradient of MatMul {op.name} needs operands of known rank")
    if ra == 1 and rb == 1:
        return [mul_op(dy, b) if needs_grad(op, 0) else None, mul_op(dy, a) if needs_grad(op, 1) else None]
    grads = []
    for i, x in enumerate((a, b)):
        if not needs_grad(op, i):
            grads.append(None)
            continue
        f = matmul_grad_factors(op, i, dy)
        if f is not None:
            grads.append(unbroadcast(f.product(), x))
        elif i == 1:  # y[m] = op(A)[m,k] b[k]: db = op(A)^T dy
            gb = matmul_op(a, expand_dims_op(dy, axis=-1), transpose_a=not ta)
            grads.append(reshape_op(unbroadcast(gb, expand_dims_op(b, axis=-1)) if ra > 2 else gb, fwd_shape(b)))
        else:  # y[n] = a[k] op(B)[k,n]: da = dy op(B)^T
            ga = matmul_op(expand_dims_op(dy, axis=-2), b, transpose_b=not tb)
            grads.append(reshape_op(unbroadcast(ga, expand_dims_op(a, axis=0)) if rb > 2 else ga, fwd_shape(a)))
    return grads


def _reduction(type_name, np_fn, differentiable=True, accumulates=False, fails=None):
    """A reduction that keeps its input's dtype. `accumulates` (Sum, Prod): numpy would
    widen int32 and bool to int64; the kernel accumulates in the input's dtype instead, as
    the op declares (int32 wraps around, as in TensorFlow), and bool is refused. `fails`:
    define_op's fact (its axes are checked against the input's rank when it is built)."""
    def rule(x, axis=None, keepdims=False):
        if accumulates and x.dtype.is_bool:
            raise GraphError(f"{type_name} of the bool tensor {x.name}: cast it to an integer first, "
                             f"e.g. graphcore.cast(x, graphcore.int64)")
        axes = normalize_axis(axis, x.shape.rank, type_name)
        return x.dtype, reduced_shape(x.shape, axes, keepdims)

    if accumulates:
        def kernel(x, axis=None, keepdims=False):
            return np_fn(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
    else:
        def kernel(x, axis=None, keepdims=False):
            return np_fn(x, axis=axis, keepdims=keepdims)

    op = define_op(type_name, shape=rule, kernel=kernel, attrs={"axis": opt(AXIS), "keepdims": opt(BOOL)}, fails=fails)
    if not differentiable:
        op.not_differentiable()
    return op


sum_op = _reduction("Sum", np.sum, accumulates=True)
prod_op = _reduction("Prod", np.prod, accumulates=True)
max_op = _reduction("Max", np.max, fails="the maximum of no elements raises ValueError")
min_op = _reduction("Min", np.min, fails="the minimum of no elements raises ValueError")


def _broadcast_back(dy, op):
    """dy of a reduction, with the reduced axes put back and broadcast to the input's shape."""
    return broadcast_reduced_op(dy, fwd_shape(op.inputs[0]), axis=op.attrs.get("axis"),
                                keepdims=op.attrs.get("keepdims", False))


def _broadcast_reduced_rule(dy, shape_t, *, axis, keepdims):
    return dy.dtype, static_shape_of(shape_t)


def _broadcast_reduced_kernel(dy, shape_v, *, axis, keepdims):
    shape = as_shape_tuple(shape_v)
    dy = np.asarray(dy)
    if not keepdims:
        axes = range(len(shape)) if axis is None else sorted(
            a % len(shape) for a in ((axis,) if isinstance(axis, (int, np.integer)) else axis))
        for a in axes:
            dy = np.expand_dims(dy, a)
    return np.array(np.broadcast_to(dy, shape))


broadcast_reduced_op = define_op("BroadcastReduced", shape=_broadcast_reduced_rule, kernel=_broadcast_reduced_kernel,
                                 cost=CHEAP, doc="Put back the axes a reduction removed and broadcast to `shape`.",
                                 attrs={"axis": AXIS, "keepdims": BOOL})


@broadcast_reduced_op.gradient
def _broadcast_reduced_grad(op, dy):
    axis, keepdims = op.attrs["axis"], op.attrs["keepdims"]
    return [sum_op(dy, axis=axis, keepdims=keepdims), None]


@sum_op.gradient
def _sum_grad(op, dy):
    if not op.inputs[0].dtype.is_floating:
        return [None]
    return [_broadcast_back(dy, op)]


@prod_op.gradient
def _prod_grad(op, dy):
    """dy * prod / x (the inputs must be nonzero)."""
    x = op.inputs[0]
    if not x.dtype.is_floating:
        return [None]
    return [realdiv_op(mul_op(_broadcast_back(dy, op), _broadcast_back(op.outputs[0], op)), x)]


def _extremum_grad(op, dy):
    """The gradient goes to the elements equal to the extremum, shared among ties."""
    x = op.inputs[0]
    if not x.dtype.is_floating:
        return [None]
    hit = cast_op(equal_op(x, _broadcast_back(op.outputs[0], op)), dtype=x.dtype)
    count = _broadcast_back(sum_op(hit, axis=op.attrs.get("axis"), keepdims=op.attrs.get("keepdims", False)), op)
    return [realdiv_op(mul_op(hit, _broadcast_back(dy, op)), count)]


max_op.gradient(_extremum_grad)
min_op.gradient(_extremum_grad)


def _mean_rule(x, axis=None, keepdims=False):
    axes = normalize_axis(axis, x.shape.rank, "Mean")
    return (x.dtype if x.dtype.is_floating else dt.float64), reduced_shape(x.shape, axes, keepdims)


def _mean_kernel(x, axis=None, keepdims=False):
    return np.mean(x, axis=axis, keepdims=keepdims)


mean_op = define_op("Mean", shape=_mean_rule, kernel=_mean_kernel, attrs={"axis": opt(AXIS), "keepdims": opt(BOOL)},
                    fails=None)  # (the mean of no elements is nan, with a warning)


@mean_op.gradient
def _mean_grad(op, dy):
    x = op.inputs[0]
    if not x.dtype.is_floating:
        return [None]
    n = realdiv_op(fwd_size(x, dy.dtype), fwd_size(op.outputs[0], dy.dtype))
    return [realdiv_op(_broadcast_back(dy, op), n)]


def _arg_rule(x, axis=0):
    axes = normalize_axis(axis, x.shape.rank, "ArgMax")
    return dt.int64, reduced_shape(x.shape, axes, False)


def _argmax_kernel(x, axis=0):
    return np.argmax(x, axis=axis).astype(np.int64)


def _argmin_kernel(x, axis=0):
    return np.argmin(x, axis=axis).astype(np.int64)


argmax_op = define_op("ArgMax", own_kind=True, shape=_arg_rule, kernel=_argmax_kernel,
                      attrs={"axis": opt(INT)}).not_differentiable("integer output")
argmin_op = define_op("ArgMin", own_kind=True, shape=_arg_rule, kernel=_argmin_kernel,
                      attrs={"axis": opt(INT)}).not_differentiable("integer output")


# -- Python numbers: arithmetic of two of them, as Python computes it ------------------

# the operators (+ - * / // % ** and <<) whose Python value on two Python numbers may differ
# from numpy's: an int without bound, an error where numpy warns (their op types' facts)
_PYTHON_OPERATORS = {t: d.python for t, d in registered_ops().items()
                     if d.family == "arithmetic" and d.symbol is not None and d.arity == 2 or t == "LeftShift"}
_SYMBOL = {t: registered_ops()[t].symbol for t in _PYTHON_OPERATORS}


def _python_arith_rule(x, y, *, op):
    d, s = _numeric_binary_rule(x, y)
    return (dt.float64 if op == "RealDiv" else d), s


def _python_arith_kernel(x, y, *, op):
    """`x op y` of two Python numbers held as numpy scalars, computed by Python: a zero
    divisor raises ZeroDivisionError and a float power that overflows OverflowError, as in
    Python; an int result an int64 cannot hold (Python's ints have no bound) and a power
    whose type Python decides by value (2 ** -1 is a float) are refused instead of wrapped."""
    a, b = x.item(), y.item()
    out = _PYTHON_OPERATORS[op](a, b)
    if isinstance(a, float) or isinstance(b, float) or op == "RealDiv":
        if isinstance(out, complex):
            raise ValueError(f"{a!r} {_SYMBOL[op]} {b!r} is a complex number in Python, which a graph value cannot "
                             "hold; use np.power for numpy's NaN")
        return np.float64(out)
    if isinstance(out, float):
        raise ValueError(f"{a!r} {_SYMBOL[op]} {b!r} is the float {out!r} in Python, but these Python ints were "
                         "traced as integers; write the base as a float (e.g. 2.0 ** k)")
    if not -2 ** 63 <= out < 2 ** 63:
        raise OverflowError(f"{a!r} {_SYMBOL[op]} {b!r} is {out} in Python, beyond int64: a Python int in a graph "
                            "is an int64, which cannot hold it. Make the value a float, or an np.int64 if "
                            "wrapping around is what you want")
    return np.int64(out)


python_arith_op = define_op("PythonArith", shape=_python_arith_rule, kernel=_python_arith_kernel, cost=CHEAP,
                            doc="Arithmetic of two Python numbers (weakly typed scalars) with Python's "
                            "semantics: errors where Python raises, no silent wrap-around",
                            attrs={"op": one_of(*_PYTHON_OPERATORS)})


@python_arith_op.gradient
def _python_arith_grad(op, dy):
    """Python floats differentiate as the numpy op would (float(x) / 2.0); ints do not."""
    rule = get_op_def(op.attrs["op"]).grad_fn
    if rule is None or not op.outputs[0].dtype.is_floating or not op.inputs[0].dtype.is_floating:
        return [None, None]
    return rule(op, dy)


# where Python floats differ from numpy's float64: a zero divisor, a power that overflows or is complex
_PYTHON_FLOAT_OPERATORS = frozenset({"RealDiv", "FloorDiv", "Mod", "Pow"})


# -- public functions with TensorFlow's names ---------------------------------

# comparisons and logic of two Python values give a Python bool (weakly typed, so that it
# prints as True, not np.True_); of a numpy value, a numpy bool
_PYTHON_BOOL_OPS = frozenset(t for t, d in registered_ops().items()
                             if d.family == "comparison" or d.family == "logical" and d.arity == 2)


def _python_valued(x) -> bool:
    """A Python number or bool, or a tensor standing for one: an op of two of them gives a
    Python value (True + 1 is the int 2, 1 < 2 the bool True)."""
    return is_weak(x) or isinstance(x, bool)


def _numpy_bool_arithmetic(op_type: str, x: Tensor, y: Tensor, name=None):
    """Arithmetic on bool arrays as numpy does it: + and max are `or`, * and min are
    `and`, / divides as floats; `-` is numpy's TypeError, and //, %, ** (whose numpy
    result is an int8, which a graph does not hold) are refused. (max and min of two bool
    scalars too: Python's and numpy's bools give the same.)"""
    if op_type in ("Add", "Maximum"):
        return logical_or_op(x, y, name=name)
    if op_type in ("Mul", "Minimum"):
        return logical_and_op(x, y, name=name)
    if op_type == "RealDiv":
        return realdiv_op(cast(x, dt.float64), cast(y, dt.float64), name=name)
    if op_type == "Sub":
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` "
                        "operator, or the logical_xor function instead.")
    raise TypeError(f"{op_type} of two numpy bools gives an int8 in numpy, which a graph does not hold: convert "
                    "one first, e.g. (x > 0).astype(np.int64)")


# An observer of the operators on graph values, set by a layer above (autograph follows
# the Python type of values whose type depends on the path a run takes). It is called with
# the op type and the operands as the program wrote them (`r + 1` and `r + 1.0` differ there,
# not after the 1 became a constant of r's dtype), before the op is built: it may refuse
# (raise), or return a function that is given the result and returns it (or a tensor that
# stands for it).
_operand_observer = None


def set_operand_observer(fn) -> None:
    """Install `fn(op_type, x, y_or_None) -> None | (result -> result)` (None removes it)."""
    global _operand_observer
    _operand_observer = fn


def _observed(op_type: str, x, y):
    observer = _operand_observer
    if observer is None or not (isinstance(x, Tensor) or isinstance(y, Tensor)):
        return None
    return observer(op_type, x, y)


def _out_of_range(x, y):
    """(the Python int, the integer tensor) where a Python int operand is beyond the range
    of the other operand's integer dtype; None otherwise (the common case: two type checks)."""
    for v, t in ((x, y), (y, x)):
        if type(v) is int and isinstance(t, Tensor) and t.dtype.is_integer:
            info = np.iinfo(t.dtype.np_dtype)
            if not info.min <= v <= info.max:
                return v, t
    return None


_COMPARE = {t: d.python for t, d in registered_ops().items() if d.family == "comparison"}


def _with_big_int(op_type: str, x, y, big: int, t: Tensor):
    """A comparison with a Python int beyond the tensor's dtype has numpy's answer for every
    value (n < 2**64 is True); arithmetic raises: numpy's OverflowError for a numpy value, and
    for a Python number (weak), which Python would compute exactly, one that says why."""
    if op_type in _COMPARE:
        sample = np.zeros((), t.dtype.np_dtype)[()]
        answer = _COMPARE[op_type](sample, big) if x is t else _COMPARE[op_type](big, sample)
        out = equal(t, t) if answer else not_equal(t, t)
        out.weak = t.weak
        return out
    if t.weak:
        raise OverflowError(
            f"{_SYMBOL.get(op_type, op_type)} of a Python int and {big}: Python computes it exactly, but a Python int "
            f"in a graph is an {t.dtype}, which cannot hold {big}. Make the value a float (float(x)) first, or "
            f"compute this outside the converted function")
    np.asarray(big, dtype=t.dtype.np_dtype)  # numpy's own OverflowError
    raise OverflowError(f"Python integer {big} out of bounds for {t.dtype.np_dtype}")


def _binary_fn(op, name_, arithmetic=False):
    python = op.type in _PYTHON_OPERATORS
    arithmetic = arithmetic or op.type in _PYTHON_BOOL_OPS

    def fn(x, y, name=None):
        big = _out_of_range(x, y)
        if big is not None:
            return _with_big_int(op.type, x, y, *big)
        after = _observed(op.type, x, y)
        weak = arithmetic and _python_valued(x) and _python_valued(y)
        x, y = weak_binary(op.type, x, y)
        if (arithmetic and isinstance(x, Tensor) and x.dtype.is_bool and op.type not in _PYTHON_BOOL_OPS
                and (x.shape.rank or y.shape.rank or op.type in ("Maximum", "Minimum"))):
            return _numpy_bool_arithmetic(op.type, x, y, name)  # (two bool scalars: refused by the op's rule)
        if weak and python and isinstance(x, Tensor) and x.shape.dims == () and y.shape.dims == () and \
                (x.dtype.is_integer or op.type in _PYTHON_FLOAT_OPERATORS):
            # two Python numbers: Python's arithmetic (the node keeps the op's name: a + b is "Add")
            out = python_arith_op(x, y, op=op.type, name=name or op.type)
        else:
            out = op(x, y, name=name)
        if weak and isinstance(out, Tensor):
            out.weak = True
        return out if after is None else after(out)
    fn.__name__ = name_
    fn.__doc__ = f"Elementwise {op.type} with numpy broadcasting (builds an op, or runs now on concrete values)."
    return op.exported(fn)


add = _binary_fn(add_op, "add", arithmetic=True)
subtract = _binary_fn(sub_op, "subtract", arithmetic=True)
multiply = _binary_fn(mul_op, "multiply", arithmetic=True)
divide = _binary_fn(realdiv_op, "divide", arithmetic=True)
truediv = divide
floordiv = _binary_fn(floordiv_op, "floordiv", arithmetic=True)
floormod = mod = _binary_fn(mod_op, "mod", arithmetic=True)
pow = _binary_fn(pow_op, "pow", arithmetic=True)  # noqa: A001 (TensorFlow's name)
maximum = _binary_fn(maximum_op, "maximum", arithmetic=True)
minimum = _binary_fn(minimum_op, "minimum", arithmetic=True)
less = _binary_fn(less_op, "less")
less_equal = _binary_fn(less_equal_op, "less_equal")
greater = _binary_fn(greater_op, "greater")
greater_equal = _binary_fn(greater_equal_op, "greater_equal")
equal = _binary_fn(equal_op, "equal")
not_equal = _binary_fn(not_equal_op, "not_equal")
logical_and = _binary_fn(logical_and_op, "logical_and")
logical_or = _binary_fn(logical_or_op, "logical_or")


@logical_not_op.exported
def logical_not(x, name=None):
    return logical_not_op(x, name=name)


def _bitwise_fn(op, logical, name_):
    """`x & y` and friends: numpy's bitwise op on integers (and bools mixed with them),
    the logical op when both are bools (numpy gives the same values; the logical op is
    what the optimizer and the compiled loops know)."""
    shift_weak = op is left_shift_op  # two Python ints: Python's `<<` (no wrap-around beyond int64)

    def fn(x, y, name=None):
        after = _observed(op.type, x, y)
        weak = is_weak(x) and is_weak(y)
        x, y = weak_binary(op.type, x, y)
        if not isinstance(x, Tensor):
            return op.kernel(x, y)
        if logical is not None and x.dtype.is_bool:
            out = logical(x, y, name=name)
        elif weak and shift_weak and x.shape.dims == () and y.shape.dims == ():
            out = python_arith_op(x, y, op=op.type, name=name or op.type)
            out.weak = weak
        else:
            out = op(x, y, name=name)
            out.weak = weak
        return out if after is None else after(out)
    fn.__name__ = name_
    fn.__doc__ = f"Elementwise {op.type} of integers (numpy's semantics; bools as numpy treats them)."
    return op.exported(fn)


@invert_op.exported
def invert(x, name=None):
    """`~x`: logical not of a bool, bitwise not of an integer (numpy's semantics)."""
    after = _observed("Invert", x, None)
    if isinstance(x, Tensor) and x.dtype.is_bool:
        out = logical_not_op(x, name=name)
    else:
        out = invert_op(x, name=name)
        if isinstance(x, Tensor) and isinstance(out, Tensor):
            out.weak = x.weak
    return out if after is None else after(out)


bitwise_and = _bitwise_fn(bitwise_and_op, logical_and_op, "bitwise_and")
bitwise_or = _bitwise_fn(bitwise_or_op, logical_or_op, "bitwise_or")
bitwise_xor = _bitwise_fn(bitwise_xor_op, None, "bitwise_xor")
left_shift = _bitwise_fn(left_shift_op, None, "left_shift")
right_shift = _bitwise_fn(right_shift_op, None, "right_shift")


def _unary_fn(op, name_, keeps_weak=False):
    def fn(x, name=None):
        after = _observed(op.type, x, None)
        out = op(x, name=name)
        if keeps_weak and isinstance(x, Tensor) and isinstance(out, Tensor):
            out.weak = x.weak  # -k and abs(k) of a Python number are Python numbers
        return out if after is None else after(out)
    fn.__name__ = name_
    fn.__doc__ = f"Elementwise {op.type}."
    return op.exported(fn)


negative = _unary_fn(neg_op, "negative", keeps_weak=True)
abs = _unary_fn(abs_op, "abs", keeps_weak=True)  # noqa: A001
sign = _unary_fn(sign_op, "sign")
square = _unary_fn(square_op, "square", keeps_weak=True)
exp = _unary_fn(exp_op, "exp")
log = _unary_fn(log_op, "log")
sqrt = _unary_fn(sqrt_op, "sqrt")
tanh = _unary_fn(tanh_op, "tanh")
sigmoid = _unary_fn(sigmoid_op, "sigmoid")
relu = _unary_fn(relu_op, "relu")
sin = _unary_fn(sin_op, "sin")
cos = _unary_fn(cos_op, "cos")
log1p = _unary_fn(log1p_op, "log1p")
expm1 = _unary_fn(expm1_op, "expm1")
floor = _unary_fn(floor_op, "floor", keeps_weak=True)
ceil = _unary_fn(ceil_op, "ceil", keeps_weak=True)


@round_op.exported
def round(x, decimals=0, name=None):  # noqa: A001 (numpy's name)
    """numpy's `np.round(x, decimals)`: ties to even, the dtype kept."""
    return round_op(x, decimals=int(decimals), name=name)


@add_n_op.exported
def add_n(inputs, name=None):
    """Sum of a list of tensors of one dtype."""
    inputs = list(inputs)
    if len(inputs) == 1:
        return inputs[0]
    return add_n_op(*inputs, name=name)


def _dtype_of(v):
    return v.dtype if isinstance(v, Tensor) else np.asarray(v).dtype


@matmul_op.exported
def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    """Matrix product (batched over leading dimensions, as np.matmul); operands of two
    dtypes promote as numpy's do (int32 @ float64 is float64)."""
    if (isinstance(a, Tensor) or isinstance(b, Tensor)) and _dtype_of(a) != _dtype_of(b):
        a, b = weak_binary("MatMul", a, b)
    return matmul_op(a, b, transpose_a=bool(transpose_a), transpose_b=bool(transpose_b), name=name)


def _reduce_fn(op, name_):
    def fn(x, axis=None, keepdims=False, name=None):
        if isinstance(axis, list):
            axis = tuple(axis)
        return op(x, axis=axis, keepdims=bool(keepdims), name=name)
    fn.__name__ = name_
    fn.__doc__ = f"{op.type} over `axis` (all axes when None); `keepdims` keeps reduced axes as size 1."
    return fn


reduce_sum = _reduce_fn(sum_op, "reduce_sum")
reduce_prod = _reduce_fn(prod_op, "reduce_prod")
reduce_max = _reduce_fn(max_op, "reduce_max")
reduce_min = _reduce_fn(min_op, "reduce_min")
reduce_mean = _reduce_fn(mean_op, "reduce_mean")


def argmax(x, axis=0, name=None):
    return argmax_op(x, axis=int(axis), name=name)


def argmin(x, axis=0, name=None):
    return argmin_op(x, axis=int(axis), name=name)


# -- hyperbolic and inverse trigonometric functions: one block per op ------------------

sinh_op = define_op("Sinh", shape=_float_unary_rule, kernel=np.sinh, cost=CHEAP, elementwise=True, fails=None,
                    family="math", python=np.sinh, ufunc=np.sinh, expr="np.sinh({0})")  # (numba's is libm's)
sinh = _unary_fn(sinh_op, "sinh")


@sinh_op.gradient
def _sinh_grad(op, dy):
    return [mul_op(dy, cosh_op(op.inputs[0]))] if op.inputs[0].dtype.is_floating else [None]


cosh_op = define_op("Cosh", shape=_float_unary_rule, kernel=np.cosh, cost=CHEAP, elementwise=True, fails=None,
                    family="math", python=np.cosh, ufunc=np.cosh, expr="np.cosh({0})")  # (numba's is libm's)
cosh = _unary_fn(cosh_op, "cosh")


@cosh_op.gradient
def _cosh_grad(op, dy):
    return [mul_op(dy, sinh_op(op.inputs[0]))] if op.inputs[0].dtype.is_floating else [None]


arctan_op = define_op("Arctan", shape=_float_unary_rule, kernel=np.arctan, cost=CHEAP, elementwise=True, fails=None,
                      family="math", python=np.arctan, ufunc=np.arctan, expr="np.arctan({0})")  # (numba's is libm's)
arctan = _unary_fn(arctan_op, "arctan")


@arctan_op.gradient
def _arctan_grad(op, dy):
    """d atan(x) = dx / (1 + x**2)."""
    x = op.inputs[0]
    return [realdiv_op(dy, add_op(_ones_scalar(x), square_op(x)))] if x.dtype.is_floating else [None]


def _float_binary_rule(x, y, **attrs):
    d, s = _numeric_binary_rule(x, y)
    return (d if d.is_floating else dt.float64), s


hypot_op = define_op("Hypot", shape=_float_binary_rule, kernel=np.hypot, cost=CHEAP, elementwise=True, fails=None,
                     family="math", commutative=True, python=np.hypot, ufunc=np.hypot, expr="np.hypot({0}, {1})",
                     numba="np.hypot({0}, {1})")  # (numba and numpy both call libm's hypot)
hypot = _binary_fn(hypot_op, "hypot")


@hypot_op.gradient
def _hypot_grad(op, dy):
    """d hypot(x, y) = (x dx + y dy) / hypot(x, y)."""
    x, y = op.inputs
    if not x.dtype.is_floating:
        return [None, None]
    scaled = realdiv_op(dy, op.outputs[0])
    return [unbroadcast(mul_op(scaled, x), x) if needs_grad(op, 0) else None,
            unbroadcast(mul_op(scaled, y), y) if needs_grad(op, 1) else None]
