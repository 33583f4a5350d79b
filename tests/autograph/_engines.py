"""Every engine a converted function runs on, and a check that each agrees with plain Python
in value, exact type, printed output and exception type."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from autograph import function
from autograph.testing import differential

ENGINES = [
    pytest.param({}, id="default"),
    pytest.param({"optimize": False}, id="unoptimized"),
    pytest.param({"jit_compile": True}, id="compiled"),
    pytest.param({"jit_compile": "numba"}, id="numba", marks=pytest.mark.skipif(
        importlib.util.find_spec("numba") is None, reason="numba is optional: pip install -e '.[jit]'")),
    pytest.param({"devices": ["cpu:0", "cpu:1"]}, id="two-devices"),
]


def exact_types(a, b, path="result"):
    """The same Python types all the way down (str, int, bool, list: not numpy's)."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} in Python, {type(b).__name__} converted"
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            exact_types(x, y, f"{path}[{i}]")
    elif isinstance(a, dict):
        for k in a:
            exact_types(a[k], b[k], f"{path}[{k!r}]")


def agree(fn, args, engine, same_types=True):
    """Plain Python and @function(**engine) give the same values (of the same types), print
    the same lines and raise the same exception type; returns the converted run."""
    plain = differential.call(fn, args)
    converted = differential.call(function(fn, **engine), args)
    kind, detail = differential.compare(plain, converted)
    assert kind == differential.AGREE, f"{kind}: {detail}\nplain: {plain.describe()}\ngraph: {converted.describe()}"
    if same_types and plain.error is None:
        exact_types(plain.value, converted.value)
    return converted


__all__ = ["ENGINES", "agree", "exact_types", "np"]
