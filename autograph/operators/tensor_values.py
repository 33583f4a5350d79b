"""A Python value as a graph tensor of a join's dtype (`to_tensor`): a leaf below staging
(which joins the branches of conds and the iterations of loops) and path_types (which
checks what a join stored), so that neither imports the other to reach it."""
from __future__ import annotations

import numpy as np

import graphcore as gc


def to_tensor(value, dtype: gc.DType):
    if dtype is gc.pyobject:  # a Python string (or object) meeting a run-time one in a loop or branch
        return value if isinstance(value, gc.Tensor) else gc.py_function(lambda: value, [], gc.pyobject,
                                                                          stateful=False, name="PyValue")
    if isinstance(value, gc.Tensor):
        return value if value.dtype == dtype else gc.cast(value, dtype)
    return gc.constant(np.asarray(value, dtype=dtype.np_dtype), dtype=dtype)
