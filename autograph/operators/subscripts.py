"""`a[k]` in converted code where `k` is not a constant (see converters/subscripts.py)."""
from __future__ import annotations

import builtins

import numpy as np

import graphcore as gc

from . import path_types
from .augmented import has_tensor
from .staging import is_array_value, is_number, is_tensor


def slice_(lower, upper, step):
    return builtins.slice(lower, upper, step)


def _float_index(key) -> bool:
    """A float scalar (a Python float or a float tensor) among the index's parts."""
    parts = key if isinstance(key, tuple) else (key,)
    return builtins.any(isinstance(k, (float, np.floating)) or is_tensor(k) and k.dtype.is_floating
                        and k.shape.rank == 0 for k in parts)


def getitem(container, key):
    """`container[key]`; a numpy array or a list / tuple of numbers of one kind indexed by a
    graph tensor is indexed as a graph constant (same values, numpy's and Python's negative
    indices, IndexError out of range)."""
    for k in (key if isinstance(key, tuple) else (key,)):  # an int on some paths, a float on others
        if is_tensor(k):
            path_types.refuse_mixed(k, path_types.INTS | path_types.BOOLS, "indexing with",
                                    "Convert it with int(...) first.")
    if is_tensor(container) and _float_index(key):  # numpy's error (raised where the path runs: staged)
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
                         "boolean arrays are valid indices")
    if is_tensor(container) or not has_tensor(key):
        return container[key]
    if is_array_value(container):
        return gc.constant(container)[key]
    if isinstance(container, (list, tuple)) and container and builtins.all(is_number(v) for v in container):
        kinds = {np.asarray(v).dtype.kind if isinstance(v, np.generic) else type(v) for v in container}
        if builtins.len(kinds) == 1 and not isinstance(key, (tuple, builtins.slice)):
            value = gc.constant(np.asarray(container))[key]
            if not isinstance(container[0], np.generic):
                value.weak = True  # an element of a Python list of Python numbers is a Python number
            return value
        raise TypeError(f"a Python {type(container).__name__} indexed by a graph tensor: "
                        + ("its elements are not all of one kind (Python would give an int or a float by index); "
                           if builtins.len(kinds) != 1 else "slicing it with a tensor gives a list whose length is "
                           "only known when the graph runs; ")
                        + "make it a numpy array first (np.array(xs))")
    if isinstance(container, dict) and is_tensor(key):
        raise TypeError("a dict looked up with a graph tensor as the key: a dict finds keys by hash and identity "
                        "while the graph is built, when the key's value is not known yet. Index a numpy array with "
                        "it, or compare the key with each candidate (if / elif, or np.where)")
    return container[key]
