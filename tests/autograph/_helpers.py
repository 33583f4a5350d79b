"""Shared checks: the converted function must agree with plain Python."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from autograph import RetracingWarning, UndefinedVariableError, function
from autograph.testing import differential


def to_np(v):
    if isinstance(v, bool):
        return np.bool_(v)
    if isinstance(v, int):
        return np.int64(v)
    if isinstance(v, float):
        return np.float64(v)
    return v


def assert_same(a, b):
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    elif a is None:
        assert b is None
    else:
        np.testing.assert_allclose(np.asarray(b, dtype=np.float64), np.asarray(a, dtype=np.float64))


def check(fn, *arg_sets, tensor_args=True, python_args=True):
    """For each argument tuple: plain Python == @function with Python values == @function
    with numpy values (graph inputs). Where Python raises UnboundLocalError, both must
    raise UndefinedVariableError naming the same variable."""
    f = function(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RetracingWarning)  # many Python values on purpose
        _check(fn, f, arg_sets, tensor_args, python_args)
    return f


def _check(fn, f, arg_sets, tensor_args, python_args):
    for args in arg_sets:
        try:
            expected = fn(*args)
        except UnboundLocalError as e:  # the converted function must fail the same way
            expected = e
        if python_args:
            _compare(expected, f, args)
        if tensor_args:
            _compare(expected, f, [to_np(a) for a in args])


def _compare(expected, f, args):
    if not isinstance(expected, UnboundLocalError):
        assert_same(expected, f(*args))
        return
    with pytest.raises(UndefinedVariableError) as e:
        f(*args)
    name = str(expected).split("'")[1]
    assert f"'{name}'" in str(e.value), (str(e.value), str(expected))


def agree(fn, *args):
    """Plain Python and the graph give the same values of the same kinds and print the same,
    or raise the same exception type (autograph.testing.differential's comparison)."""
    plain, converted = differential.call(fn, args), differential.call(function(fn), args)
    kind, detail = differential.compare(plain, converted)
    assert kind == differential.AGREE, f"{kind}: {detail}\nplain: {plain.describe()}\ngraph: {converted.describe()}"
    return plain
