"""A failing kernel or an index known to be out of range raises what Python would (an
IndexError is an IndexError), still carrying the op, frame and the user's line."""
import numpy as np
import pytest

import graphcore as gc
from autograph import function


def read_past_the_end(x, n):
    s = 0.0
    for i in range(n):
        s = s + x[i]
    return s


def constant_index(x):
    return x[5]


@pytest.mark.parametrize("fn, args", [
    (read_past_the_end, (np.arange(3.0), np.int64(5))),
    (constant_index, (np.arange(3.0),)),
])
def test_an_index_out_of_range_is_an_index_error_as_in_python(fn, args):
    with pytest.raises(IndexError):
        fn(*args)
    with pytest.raises(IndexError, match="out of bounds") as caught:
        function(fn)(*args)
    assert isinstance(caught.value, gc.AutographError)


def test_the_run_time_error_still_names_the_op_frame_and_line():
    with pytest.raises(gc.ExecutionError) as caught:
        function(read_past_the_end)(np.arange(3.0), np.int64(5))
    e = caught.value
    assert isinstance(e, IndexError) and isinstance(e.original, IndexError)
    assert e.iteration == 3 and "StridedSlice" in str(e) and "test_python_exception_types.py:13" in str(e)


def test_a_kernel_value_error_is_a_value_error_and_an_execution_error():
    from executor import Session

    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [None], name="x")
        y = gc.reshape(x, [3])
    with pytest.raises(ValueError) as caught:
        Session(g).run(y, {x: np.ones(2)})
    assert isinstance(caught.value, gc.ExecutionError) and caught.value.op.type == "Reshape"


def _range_with_step(n, k):
    out = 0
    for i in range(0, n, k):
        out += i
    return out


@pytest.mark.parametrize("k", [np.int64(0), 0])
def test_a_zero_range_step_raises_value_error_as_in_python(k):
    with pytest.raises(ValueError, match="range\\(\\) arg 3 must not be zero"):
        function(_range_with_step)(np.int64(10), k)
    assert function(_range_with_step)(np.int64(10), np.int64(3)) == _range_with_step(10, 3)


def _int8_sum(n):
    y = np.int8(100)
    while n > 0:
        y = y + np.int8(100)
        n -= 1
    return y


def test_numpy_dtypes_a_graph_cannot_hold_are_refused_not_widened():
    # in numpy, int8 100 + 100 wraps to -56; widened to int64 it would silently be 200
    with pytest.raises(TypeError, match="numpy int8 value, which a graph cannot hold"):
        function(_int8_sum)(np.int64(1))
    with pytest.raises(TypeError, match="argument 'n' of _int8_sum is a numpy uint8 value"):
        function(_int8_sum)(np.uint8(1))
