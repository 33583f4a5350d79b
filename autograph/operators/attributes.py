"""`x.shape`, `x.ndim` and `x.size` in converted code (converters/attributes.py): numpy's
answers for a graph tensor too. A graph tensor's own `shape` is the static TensorShape,
whose unknown dimensions are None: an array grown in a loop gave `a.shape[0] == None`,
a silent wrong value, where numpy gives the length."""
from __future__ import annotations

import numpy as np

import graphcore as gc

ARRAY_ATTRIBUTES = {"shape": np.shape, "ndim": np.ndim, "size": np.size}


def array_attribute(obj, name: str):
    if isinstance(obj, gc.Tensor):
        return ARRAY_ATTRIBUTES[name](obj)
    return getattr(obj, name)
