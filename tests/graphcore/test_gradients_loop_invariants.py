"""Gradients of loop invariants summed as one contraction after the backward loop
(contraction.py), and loop variables read by the backward loop without a second
accumulator: results against finite differences, what is accumulated, second order."""
import numpy as np
import pytest

import graphcore as gc
from executor import Session

from gradcheck import check_graph_grads
from graphcore.gradients import accumulated_tensors
from graphcore.testing.models import rnn

rng = np.random.default_rng(1)


def test_rnn_weights_are_one_matmul_after_the_loop_and_h_is_stored_once():
    m = rnn(6, 3, 2, fed_steps=True)
    check_graph_grads(m.graph, m.loss, m.weights, m.grads, m.feeds(rng, weight_scale=0.5))
    # per iteration the backward loop forms no W-sized product and keeps no W-sized sum
    in_b = [op for op in m.graph.get_operations() if op.ctx is m.backward_loop]
    sized = ([3, 3], [3, 2])
    assert not [op for op in in_b if op.type == "MatMul" and op.outputs[0].shape.dims in sized]
    assert not [op for op in in_b if op.type == "AddN"]
    # h is accumulated once (as the loop variable's start value), not also as tanh's output
    assert sorted(t.op.type for t in accumulated_tensors(m.forward_loop)) == ["StridedSlice", "Switch"]


def test_zero_iterations_give_zero_weight_gradients():
    m = rnn(6, 3, 2, fed_steps=True)
    feeds = m.feeds(rng, weight_scale=0.5)
    feeds[m.n] = 0
    dW, dU, dh0 = Session(m.graph, num_threads=1).run(m.grads, feeds)
    np.testing.assert_array_equal(dW, np.zeros_like(feeds[m.W]))
    np.testing.assert_array_equal(dU, np.zeros_like(feeds[m.U]))
    np.testing.assert_allclose(dh0, 2 * feeds[m.h0])


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("which", ["left", "right"])
def test_matmul_of_matrices_with_transposes(ta, tb, which):
    # y = op(A) @ op(v) or op(v) @ op(B) in a loop, with the matrix a loop invariant
    g = gc.Graph()
    with g.as_default():
        M = gc.placeholder(gc.float64, [3, 3], name="M")
        x0 = gc.placeholder(gc.float64, [3, 2] if which == "left" else [2, 3], name="x0")

        def body(i, v):
            if which == "left":  # op(M) @ op(v), v: [3, 2]
                y = gc.matmul(M, gc.transpose(v) if tb else v, transpose_a=ta, transpose_b=tb)
            else:  # op(v) @ op(M), v: [2, 3]
                y = gc.matmul(gc.transpose(v) if ta else v, M, transpose_a=ta, transpose_b=tb)
            return i + 1, gc.tanh(y)

        y = gc.while_loop(lambda i, v: i < 3, body, [0, x0])[1]
        loss = gc.reduce_sum(y * y)
        grads = gc.gradients(loss, [M, x0])
    feeds = {M: rng.normal(size=(3, 3)) * 0.7, x0: rng.normal(size=(3, 2) if which == "left" else (2, 3))}
    check_graph_grads(g, loss, [M, x0], grads, feeds)


def test_vector_times_matrix_and_shared_factor():
    # h @ V (a row times a matrix) and W @ h share the gradient dy as one factor list
    g = gc.Graph()
    with g.as_default():
        W = gc.placeholder(gc.float64, [3, 3], name="W")
        V = gc.placeholder(gc.float64, [3, 3], name="V")
        h0 = gc.placeholder(gc.float64, [3], name="h0")

        def body(i, h):
            return i + 1, gc.tanh(gc.matmul(W, h) + gc.matmul(h, V, transpose_b=True))

        h = gc.while_loop(lambda i, h: i < 4, body, [0, h0])[1]
        loss = gc.reduce_sum(h * h)
        grads = gc.gradients(loss, [W, V, h0])
    feeds = {W: rng.normal(size=(3, 3)) * 0.5, V: rng.normal(size=(3, 3)) * 0.5, h0: rng.normal(size=3)}
    check_graph_grads(g, loss, [W, V, h0], grads, feeds)


def test_invariant_of_an_inner_loop():
    g = gc.Graph()
    with g.as_default():
        W = gc.placeholder(gc.float64, [2, 2], name="W")
        h0 = gc.placeholder(gc.float64, [2], name="h0")

        def outer(i, h):
            h = gc.while_loop(lambda j, h: j < i + 1, lambda j, h: (j + 1, gc.tanh(gc.matmul(W, h))), [0, h])[1]
            return i + 1, h * 0.9

        h = gc.while_loop(lambda i, h: i < 3, outer, [0, h0])[1]
        loss = gc.reduce_sum(h * h)
        grads = gc.gradients(loss, [W, h0])
    check_graph_grads(g, loss, [W, h0], grads, {W: rng.normal(size=(2, 2)), h0: rng.normal(size=2)})


def test_second_order_through_the_contraction():
    # loss = sum(h_T^2), h = tanh(W h); d/dh0 of sum(dloss/dW) needs the gradient of the
    # contraction (stack, matmul) and of the loop variable carried in place of tanh's output
    g = gc.Graph()
    with g.as_default():
        W = gc.placeholder(gc.float64, [2, 2], name="W")
        h0 = gc.placeholder(gc.float64, [2], name="h0")
        h = gc.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, gc.tanh(gc.matmul(W, h))), [0, h0])[1]
        loss = gc.reduce_sum(h * h)
        dW, = gc.gradients(loss, [W])
        s = gc.reduce_sum(dW * dW)
        d2, = gc.gradients(s, [h0])
    check_graph_grads(g, s, [h0], [d2], {W: rng.normal(size=(2, 2)), h0: rng.normal(size=2)}, rtol=1e-5)


def test_second_order_with_an_invariant_of_the_backward_loop():
    # dloss/dh0 reads W in the backward loop (W^T dy), so differentiating it for W sums
    # over the backward loop's iterations with the same contraction
    g = gc.Graph()
    with g.as_default():
        W = gc.placeholder(gc.float64, [2, 2], name="W")
        h0 = gc.placeholder(gc.float64, [2], name="h0")
        h = gc.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, gc.tanh(gc.matmul(W, h))), [0, h0])[1]
        dh0, = gc.gradients(gc.reduce_sum(h * h), [h0])
        s = gc.reduce_sum(dh0 * dh0)
        d2, = gc.gradients(s, [W])
    check_graph_grads(g, s, [W], [d2], {W: rng.normal(size=(2, 2)), h0: rng.normal(size=2)}, rtol=1e-5)
