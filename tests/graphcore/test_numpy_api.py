"""numpy functions and ndarray methods on graph tensors give what numpy gives: the same
values and the same dtype, for every dtype; what has no graph version refuses clearly."""
import numpy as np
import pytest

import graphcore as gc
from executor import Session

DTYPES = ["bool", "int32", "int64", "float32", "float64"]

_VALUES = {
    "bool": np.array([[True, False, True], [False, False, True]]),
    "int32": np.array([[3, -7, 2], [2 ** 30, 5, -1]], np.int32),
    "int64": np.array([[3, -7, 2], [9, 5, -1]], np.int64),
    "float32": np.array([[0.5, -1.25, 3.0], [2.5, 0.125, -4.0]], np.float32),
    "float64": np.array([[0.5, -1.25, 3.0], [2.5, 0.125, -4.0]]),
}

CASES = {
    "np.sum": lambda x: np.sum(x),
    "np.sum axis 0": lambda x: np.sum(x, axis=0),
    "np.sum axis -1 keepdims": lambda x: np.sum(x, axis=-1, keepdims=True),
    "np.sum dtype": lambda x: np.sum(x, dtype=np.float64),
    "x.sum axis 1": lambda x: x.sum(axis=1),
    "np.prod axis 1": lambda x: np.prod(x, axis=1),
    "np.mean": lambda x: np.mean(x),
    "x.mean axis 0": lambda x: x.mean(axis=0),
    "np.max": lambda x: np.max(x),
    "x.min axis 1": lambda x: x.min(axis=1),
    "np.amax axis 0": lambda x: np.amax(x, axis=0),
    "np.argmax": lambda x: np.argmax(x),
    "np.argmin axis 1": lambda x: np.argmin(x, axis=1),
    "np.where 0": lambda x: np.where(x > 1, x, 0),
    "np.where 0.5": lambda x: np.where(x > 1, x, 0.5),
    "np.where mixed": lambda x: np.where(x > 1, -x, x),
    "np.stack": lambda x: np.stack([x, x * 2]),
    "np.stack 1": lambda x: np.stack([x[0], x[1]], axis=1),
    "np.concatenate": lambda x: np.concatenate([x, x], axis=1),
    "np.concatenate None": lambda x: np.concatenate([x, x[:1]], axis=None),
    "np.clip": lambda x: np.clip(x, -1, 2),
    "np.clip floats": lambda x: np.clip(x, -0.5, 2.5),
    "np.dot": lambda x: np.dot(x, x.T),
    "x.dot vector": lambda x: x[0].dot(x[1]),
    "np.zeros_like": lambda x: np.zeros_like(x),
    "np.ones_like dtype": lambda x: np.ones_like(x, dtype=np.float32),
    "np.reshape": lambda x: np.reshape(x, (3, 2)),
    "x.reshape": lambda x: x.reshape(-1),
    "x.reshape args": lambda x: x.reshape(3, 2),
    "np.transpose": lambda x: np.transpose(x),
    "x.transpose axes": lambda x: x.transpose(1, 0),
    "np.expand_dims": lambda x: np.expand_dims(x, 1),
    "np.squeeze": lambda x: np.squeeze(x[:1], axis=0),
    "np.ravel": lambda x: np.ravel(x),
    "x.flatten": lambda x: x.flatten(),
    "x.astype float32": lambda x: x.astype(np.float32),
    "x.astype int64": lambda x: x.astype(np.int64),
    "x.astype bool": lambda x: x.astype(bool),
    "x.copy": lambda x: x.copy(),
    "np.any": lambda x: np.any(x),
    "np.all axis 1": lambda x: np.all(x, axis=1),
    "x.any axis 0": lambda x: x.any(axis=0),
    "np.any empty": lambda x: np.any(x[:0]),
    "np.all empty": lambda x: np.all(x[:0]),
    "np.var": lambda x: np.var(x),
    "x.var axis 0": lambda x: x.var(axis=0),
    "np.var ddof": lambda x: np.var(x, axis=1, ddof=1),
    "np.std keepdims": lambda x: np.std(x, axis=1, keepdims=True),
    "np.sin": lambda x: np.sin(x),
    "np.cos": lambda x: np.cos(x),
    "np.log1p": lambda x: np.log1p(np.abs(x)),
    "np.expm1": lambda x: np.expm1(x * 0.5),
    "np.floor": lambda x: np.floor(x * 0.5),
    "np.ceil": lambda x: np.ceil(x),
}

# numpy computes these, but the graph refuses on purpose, with a message that says why
_REFUSED = {
    ("np.sin", "bool"), ("np.cos", "bool"),  # numpy gives float16, which the graph has not
    ("np.ceil", "bool"), ("np.log1p", "bool"),
    ("np.where mixed", "bool"),  # -x of a bool: numpy refuses too
}


def _graph_value(fn, value):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.as_dtype(value.dtype), value.shape, name="x")
        y = fn(x)
    return y, Session(g).run(y, {x: value})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_numpy_on_a_graph_tensor_matches_numpy(case, dtype):
    fn, value = CASES[case], _VALUES[dtype]
    if (case, dtype) in _REFUSED:
        with pytest.raises((TypeError, gc.GraphError)):
            _graph_value(fn, value)
        return
    with np.errstate(over="ignore"):
        expected = np.asarray(fn(value))
    y, got = _graph_value(fn, value)
    got = np.asarray(got)
    assert y.dtype.np_dtype == expected.dtype, f"declared {y.dtype}, numpy gives {expected.dtype}"
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_a_numpy_function_without_a_graph_version_refuses_and_says_what_works():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        with pytest.raises(TypeError, match=r"numpy.cumsum cannot run on the graph tensor x:0.*np.sum"):
            np.cumsum(x)
        with pytest.raises(TypeError, match="indices form"):
            np.where(x > 0)
        with pytest.raises(TypeError, match="does not take out"):
            np.sum(x, out=np.zeros(()))


def test_size_dtype_and_scalar_use_of_a_tensor():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float32, [2, 3], name="x")
        n = gc.placeholder(gc.int64, [], name="n")
        assert x.size == 6 and x.ndim == 2
        assert x.dtype == np.float32 and x.dtype == np.dtype("float32") and x.dtype != np.float64
        assert x.dtype == gc.float32 and x.dtype is not None
        with pytest.raises(TypeError, match="n:0 is used as a Python integer"):
            [1, 2, 3][n]
        with pytest.raises(TypeError, match="items of the graph tensor x:0 cannot be assigned.*np.where"):
            x[0] = 1.0
