"""Every op: the graph result (through the executor) equals numpy on the same inputs,
and the eager call equals both."""
import numpy as np
import pytest

import graphcore as gc
from executor import Session

rng = np.random.default_rng(0)
A = rng.normal(size=(3, 4))
B = rng.normal(size=(3, 4))
P = np.abs(A) + 0.5
M = rng.normal(size=(4, 2))
I = np.array([[3, -7, 8], [2, 5, -9]], dtype=np.int64)
J = np.array([[2, 3, -4], [5, 2, 3]], dtype=np.int64)
BOOL = A > 0

# name -> (graphcore fn, numpy fn, inputs)
CASES = {
    "add": (gc.add, np.add, [A, B]),
    "subtract": (gc.subtract, np.subtract, [A, B]),
    "multiply": (gc.multiply, np.multiply, [A, B]),
    "divide": (gc.divide, np.divide, [A, P]),
    "divide_int": (gc.divide, np.true_divide, [I, J]),
    "floordiv": (gc.floordiv, np.floor_divide, [I, J]),
    "mod": (gc.mod, np.mod, [I, J]),
    "pow": (gc.pow, np.power, [P, B]),
    "maximum": (gc.maximum, np.maximum, [A, B]),
    "minimum": (gc.minimum, np.minimum, [A, B]),
    "negative": (gc.negative, np.negative, [A]),
    "abs": (gc.abs, np.abs, [A]),
    "sign": (gc.sign, np.sign, [A]),
    "square": (gc.square, np.square, [A]),
    "exp": (gc.exp, np.exp, [A]),
    "log": (gc.log, np.log, [P]),
    "sqrt": (gc.sqrt, np.sqrt, [P]),
    "tanh": (gc.tanh, np.tanh, [A]),
    "sigmoid": (gc.sigmoid, lambda x: 1 / (1 + np.exp(-x)), [A]),
    "relu": (gc.relu, lambda x: np.maximum(x, 0), [A]),
    "less": (gc.less, np.less, [A, B]),
    "less_equal": (gc.less_equal, np.less_equal, [A, B]),
    "greater": (gc.greater, np.greater, [A, B]),
    "greater_equal": (gc.greater_equal, np.greater_equal, [A, B]),
    "equal": (gc.equal, np.equal, [I, J]),
    "not_equal": (gc.not_equal, np.not_equal, [I, J]),
    "logical_and": (gc.logical_and, np.logical_and, [BOOL, B > 0]),
    "logical_or": (gc.logical_or, np.logical_or, [BOOL, B > 0]),
    "logical_not": (gc.logical_not, np.logical_not, [BOOL]),
    "matmul": (gc.matmul, np.matmul, [A, M]),
    "matmul_t": (lambda a, b: gc.matmul(a, b, transpose_b=True), lambda a, b: a @ b.T, [A, B]),
    "reduce_sum": (gc.reduce_sum, np.sum, [A]),
    "reduce_sum_axis": (lambda x: gc.reduce_sum(x, axis=1, keepdims=True), lambda x: x.sum(1, keepdims=True), [A]),
    "reduce_mean": (lambda x: gc.reduce_mean(x, axis=0), lambda x: x.mean(0), [A]),
    "reduce_max": (lambda x: gc.reduce_max(x, axis=[0, 1]), np.max, [A]),
    "reduce_min": (lambda x: gc.reduce_min(x, axis=-1), lambda x: x.min(-1), [A]),
    "reduce_prod": (lambda x: gc.reduce_prod(x, axis=0), lambda x: x.prod(0), [A]),
    "argmax": (lambda x: gc.argmax(x, axis=1), lambda x: x.argmax(1), [A]),
    "argmin": (lambda x: gc.argmin(x, axis=0), lambda x: x.argmin(0), [A]),
    "add_n": (lambda a, b: gc.add_n([a, b, a]), lambda a, b: a + b + a, [A, B]),
    "reshape": (lambda x: gc.reshape(x, [2, -1]), lambda x: x.reshape(2, -1), [A]),
    "transpose": (gc.transpose, np.transpose, [A]),
    "transpose_perm": (lambda x: gc.transpose(gc.reshape(x, [3, 2, 2]), [1, 2, 0]),
                       lambda x: x.reshape(3, 2, 2).transpose(1, 2, 0), [A]),
    "expand_dims": (lambda x: gc.expand_dims(x, 1), lambda x: x[:, None], [A]),
    "squeeze": (lambda x: gc.squeeze(gc.expand_dims(x, 0), [0]), lambda x: x, [A]),
    "concat": (lambda a, b: gc.concat([a, b], axis=1), lambda a, b: np.concatenate([a, b], 1), [A, B]),
    "stack": (lambda a, b: gc.stack([a, b], axis=1), lambda a, b: np.stack([a, b], 1), [A, B]),
    "slice": (lambda x: gc.slice(x, [1, 1], [2, -1]), lambda x: x[1:3, 1:], [A]),
    "strided_slice": (lambda x: x[::2, 1:-1], lambda x: x[::2, 1:-1], [A]),
    "strided_slice_rev": (lambda x: x[::-1, None, 2], lambda x: x[::-1, None, 2], [A]),
    "gather": (lambda x: gc.gather(x, np.array([2, 0, 2]), axis=0), lambda x: x[[2, 0, 2]], [A]),
    "gather_axis1": (lambda x: gc.gather(x, np.array([[1], [3]]), axis=1), lambda x: np.take(x, [[1], [3]], 1), [A]),
    "tile": (lambda x: gc.tile(x, [2, 1]), lambda x: np.tile(x, (2, 1)), [A]),
    "fill": (lambda x: gc.fill([2, 3], x[0, 0]), lambda x: np.full((2, 3), x[0, 0]), [A]),
    "zeros_like": (gc.zeros_like, np.zeros_like, [A]),
    "ones_like": (gc.ones_like, np.ones_like, [A]),
    "shape": (gc.shape, lambda x: np.array(x.shape), [A]),
    "size": (gc.size, np.size, [A]),
    "rank": (gc.rank, np.ndim, [A]),
    "range": (lambda n: gc.range(n[0, 0], n[1, 2], n[0, 1]), lambda n: np.arange(n[0, 0], n[1, 2], n[0, 1]),
              [np.array([[1, 2, 0], [0, 0, 9]], np.int64)]),
    "cast": (lambda x: gc.cast(x, gc.int32), lambda x: x.astype(np.int32), [A * 10]),
    "where": (gc.where, np.where, [BOOL, A, B]),
    "identity": (gc.identity, lambda x: x, [A]),
    "unstack": (lambda x: gc.unstack(x)[1], lambda x: x[1], [A]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_equals_numpy_and_eager(name):
    fn, ref, inputs = CASES[name]
    g = gc.Graph()
    with g.as_default():
        phs = [gc.placeholder(gc.as_dtype(v.dtype), v.shape) for v in inputs]
        out = fn(*phs)
    assert out.shape.is_compatible_with(np.shape(ref(*inputs))), (out.shape, np.shape(ref(*inputs)))
    got = Session(g, num_threads=1).run(out, dict(zip(phs, inputs)))
    want = ref(*inputs)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.asarray(got).dtype == out.dtype.np_dtype, (np.asarray(got).dtype, out.dtype)
    eager = fn(*inputs)
    np.testing.assert_allclose(eager, want, rtol=1e-12)


def test_print_prints_when_run_not_when_built(capfd):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.int64, [])
        p = gc.print("x is", x, sep=" ")
    assert capfd.readouterr().out == ""
    s = Session(g, num_threads=1)
    s.run(p, {x: 4})
    s.run(p, {x: 5})
    assert capfd.readouterr().out == "x is 4\nx is 5\n"


def test_assert_fails_the_run_with_its_message():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [])
        a = gc.Assert(x > 0, [x], message="x must be positive")
        with g.control_dependencies([a]):
            y = gc.sqrt(x)
    s = Session(g, num_threads=1)
    assert s.run(y, {x: 4.0}) == 2.0
    with pytest.raises(gc.InvalidArgumentError, match="x must be positive.*-1"):
        s.run(y, {x: -1.0})


def test_tensor_lists_push_stack_pop():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [2])
        l0 = gc.tensor_list_new(gc.float64, [2])
        l1 = gc.tensor_list_push_back(l0, x)
        l2 = gc.tensor_list_push_back(l1, x * 2)
        st = gc.tensor_list_stack(l2, gc.float64, [2])
        n = gc.tensor_list_length(l2)
        l3, last = gc.tensor_list_pop_back(l2, gc.float64, [2])
        first = gc.tensor_list_get_item(l3, 0, gc.float64, [2])
        empty = gc.tensor_list_stack(l0, gc.float64, [2])
    xv = np.array([1.0, 2.0])
    s, nn, la, fi, em = Session(g, num_threads=1).run([st, n, last, first, empty], {x: xv})
    np.testing.assert_array_equal(s, [xv, 2 * xv])
    assert nn == 2
    np.testing.assert_array_equal(la, 2 * xv)
    np.testing.assert_array_equal(fi, xv)
    assert em.shape == (0, 2)
