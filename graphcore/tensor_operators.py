"""Python operators on Tensor (`+ - * / // % ** @`, comparisons, indexing), each a
call to the public op function so graph and eager code share one definition."""
from __future__ import annotations

from .graph import Tensor
from .ops import array_ops, math_ops


def _binary(fn):
    def op(self, other):
        return fn(self, other)

    def rop(self, other):
        return fn(other, self)

    return op, rop


def _install() -> None:
    table = {
        "add": math_ops.add, "sub": math_ops.subtract, "mul": math_ops.multiply, "truediv": math_ops.divide,
        "floordiv": math_ops.floordiv, "mod": math_ops.mod, "pow": math_ops.pow, "matmul": math_ops.matmul,
        "and": math_ops.logical_and, "or": math_ops.logical_or,
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
    Tensor.__invert__ = lambda self: math_ops.logical_not(self)
    Tensor.__getitem__ = lambda self, key: array_ops.getitem(self, key)
    Tensor.T = property(lambda self: array_ops.transpose(self))


_install()
