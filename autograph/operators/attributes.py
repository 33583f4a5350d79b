"""`x.shape`, `x.ndim` and `x.size` in converted code (converters/attributes.py): numpy's
answers for a graph tensor too. A graph tensor's own `shape` is the static TensorShape,
whose unknown dimensions are None: an array grown in a loop gave `a.shape[0] == None`,
a silent wrong value, where numpy gives the length."""
from __future__ import annotations

import numpy as np

import graphcore as gc

def _is_integer(x):
    """`x.is_integer` of a tensor: the method of the value it stands for (a float's,
    numpy's, int's), giving a Python bool when the graph runs; numpy's AttributeError for
    an array or a numpy bool."""
    from .py_builtins import _stands_for  # noqa: PLC0415 (py_builtins imports much of operators)
    from .staging import python_value  # noqa: PLC0415

    samples = _stands_for(x)
    if not samples or not all(hasattr(v, "is_integer") for v in samples):
        kind = next((type(v) for v in samples if not hasattr(v, "is_integer")), gc.Tensor)
        raise AttributeError(f"'{kind.__module__ + '.' if kind.__module__ != 'builtins' else ''}{kind.__name__}' "
                             f"object has no attribute 'is_integer'")

    def is_integer():
        if not x.dtype.is_floating:
            return True
        return python_value(gc.equal(x - gc.floor(x), gc.constant(0.0, dtype=x.dtype)))  # NaN, inf: False
    return is_integer


ARRAY_ATTRIBUTES = {"shape": np.shape, "ndim": np.ndim, "size": np.size, "is_integer": _is_integer}


def array_attribute(obj, name: str):
    if isinstance(obj, gc.Tensor):
        return ARRAY_ATTRIBUTES[name](obj)
    return getattr(obj, name)
