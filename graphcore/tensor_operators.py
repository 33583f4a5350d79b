"""Python operators on Tensor (`+ - * / // % ** @`, comparisons, indexing), each a
call to the public op function so graph and eager code share one definition."""
from __future__ import annotations

from .graph import Tensor
from .ops import array_ops, math_ops
from .registry import registered_ops

# numpy ufuncs that have a graph op: `np.tanh(t)` on a graph tensor builds gc.tanh(t), so
# numeric code written against numpy also stages (as with JAX's numpy dispatch). Each op
# type declares its ufunc and public function in its own block (define_op(..., ufunc=)).
_UFUNCS = {d.ufunc: d.public for d in registered_ops().values() if d.ufunc is not None and d.public is not None}


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
