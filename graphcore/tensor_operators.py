"""Python operators on Tensor (`+ - * / // % ** @`, comparisons, indexing), each a
call to the public op function so graph and eager code share one definition."""
from __future__ import annotations

import numpy as np

from .graph import Tensor
from .ops import array_ops, math_ops

# numpy ufuncs that have a graph op: `np.tanh(t)` on a graph tensor builds gc.tanh(t), so
# numeric code written against numpy also stages (as with JAX's numpy dispatch).
_UFUNCS = {
    np.add: math_ops.add, np.subtract: math_ops.subtract, np.multiply: math_ops.multiply,
    np.true_divide: math_ops.divide, np.floor_divide: math_ops.floordiv, np.remainder: math_ops.mod,
    np.power: math_ops.pow, np.maximum: math_ops.maximum, np.minimum: math_ops.minimum,
    np.less: math_ops.less, np.less_equal: math_ops.less_equal, np.greater: math_ops.greater,
    np.greater_equal: math_ops.greater_equal, np.equal: math_ops.equal, np.not_equal: math_ops.not_equal,
    np.logical_and: math_ops.logical_and, np.logical_or: math_ops.logical_or, np.logical_not: math_ops.logical_not,
    np.negative: math_ops.negative, np.absolute: math_ops.abs, np.sign: math_ops.sign, np.square: math_ops.square,
    np.exp: math_ops.exp, np.log: math_ops.log, np.sqrt: math_ops.sqrt, np.tanh: math_ops.tanh,
    np.matmul: math_ops.matmul, np.sin: math_ops.sin, np.cos: math_ops.cos, np.log1p: math_ops.log1p,
    np.expm1: math_ops.expm1, np.floor: math_ops.floor, np.ceil: math_ops.ceil,
    np.bitwise_and: math_ops.bitwise_and, np.bitwise_or: math_ops.bitwise_or, np.bitwise_xor: math_ops.bitwise_xor,
    np.invert: math_ops.invert, np.left_shift: math_ops.left_shift, np.right_shift: math_ops.right_shift,
}


def register_ufunc(ufunc, fn) -> None:
    """Give a numpy ufunc a graph version built from graph ops (numpy_api composes some)."""
    _UFUNCS.setdefault(ufunc, fn)


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    fn = _UFUNCS.get(ufunc)
    if fn is None or method != "__call__" or kwargs:
        raise TypeError(
            f"numpy's {ufunc.__name__}{'' if method == '__call__' else '.' + method} cannot run on the graph tensor "
            f"{self.name}: its value is only known when the graph runs. Use the graphcore op instead "
            f"(graphcore has {', '.join(sorted(f.__name__ for f in set(_UFUNCS.values()))[:8])}, ...)")
    out = fn(*inputs)
    if isinstance(out, Tensor) and out.weak:  # numpy's ufuncs give numpy values, even of Python numbers
        out = array_ops.identity(out)
        out.weak = False
    return out


def _binary(fn):
    def op(self, other):
        return fn(self, other)

    def rop(self, other):
        return fn(other, self)

    return op, rop


def _no_array(self, dtype=None, copy=None):
    raise TypeError(
        f"the graph tensor {self.name} cannot become a numpy array while the graph is being built: its value "
        "is only known when the graph runs. Use graphcore ops on it, or fetch it with Session.run")


def _install() -> None:
    table = {
        "add": math_ops.add, "sub": math_ops.subtract, "mul": math_ops.multiply, "truediv": math_ops.divide,
        "floordiv": math_ops.floordiv, "mod": math_ops.mod, "pow": math_ops.pow, "matmul": math_ops.matmul,
        "and": math_ops.bitwise_and, "or": math_ops.bitwise_or, "xor": math_ops.bitwise_xor,
        "lshift": math_ops.left_shift, "rshift": math_ops.right_shift,
    }
    for name, fn in table.items():
        op, rop = _binary(fn)
        setattr(Tensor, f"__{name}__", op)
        setattr(Tensor, f"__r{name}__", rop)
    Tensor.__lt__ = lambda self, o: math_ops.less(self, o)
    Tensor.__le__ = lambda self, o: math_ops.less_equal(self, o)
    Tensor.__gt__ = lambda self, o: math_ops.greater(self, o)
    Tensor.__ge__ = lambda self, o: math_ops.greater_equal(self, o)
    # == and != build ops, as in TensorFlow 2 (Tensor keeps identity hashing for dict keys)
    Tensor.__eq__ = lambda self, o: math_ops.equal(self, o) if o is not None else False
    Tensor.__ne__ = lambda self, o: math_ops.not_equal(self, o) if o is not None else True
    Tensor.__neg__ = lambda self: math_ops.negative(self)
    Tensor.__pos__ = lambda self: self
    Tensor.__abs__ = lambda self: math_ops.abs(self)
    Tensor.__invert__ = lambda self: math_ops.invert(self)
    Tensor.__getitem__ = lambda self, key: array_ops.getitem(self, key)
    Tensor.T = property(lambda self: array_ops.transpose(self))
    Tensor.__array_ufunc__ = _array_ufunc
    Tensor.__array__ = _no_array


_install()
