"""The checking mode the suite runs in: kernels must return what their ops declare."""
import numpy as np
import pytest

import graphcore as gc
from executor import Session, kernel_contract
from graphcore.registry import define_op, same_as_input

# an op whose rule says "same as input" but whose kernel widens to float64
_widening = define_op("TestWideningKernel", shape=same_as_input, kernel=lambda x: x.astype(np.float64))
_widening.not_differentiable("a test op")


def test_the_suite_runs_with_the_check_on():
    assert kernel_contract.enabled()


def test_a_kernel_that_returns_another_dtype_fails_where_it_runs():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float32, [2], name="x")
        y = _widening(x, name="widen")
    with pytest.raises(gc.ExecutionError, match="widen.*dtype float64, but the op declares float32"):
        Session(g).run(y, {x: np.ones(2, np.float32)})


def test_reductions_accumulate_in_the_declared_dtype():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.int32, [2])
        s, p = gc.reduce_sum(x), gc.reduce_prod(x)
    assert s.dtype == p.dtype == gc.int32
    big = np.array([2 ** 30, 2 ** 30], np.int32)
    sv, pv = Session(g).run([s, p], {x: big})
    assert sv.dtype == np.int32 and sv == np.sum(big, dtype=np.int32)  # wraps around, as TensorFlow's does
    assert pv == np.prod(big, dtype=np.int32)


def test_summing_bools_asks_for_a_cast():
    g = gc.Graph()
    with g.as_default():
        b = gc.placeholder(gc.bool, [3])
        with pytest.raises(gc.GraphError, match="cast it to an integer"):
            gc.reduce_sum(b)
