"""End-to-end training: softmax regression with gradient descent; an RNN (a while
loop differentiated through its accumulators) with Adam."""
import numpy as np

import graphcore as gc
from executor import Session


def _log_softmax(z):
    m = gc.stop_gradient(gc.reduce_max(z, axis=1, keepdims=True))
    s = z - m
    return s - gc.log(gc.reduce_sum(gc.exp(s), axis=1, keepdims=True))


def test_softmax_regression_reaches_95_percent():
    rng = np.random.default_rng(1)
    centers = np.array([[3.0, 0.0], [-2.0, 2.5], [-1.0, -3.0]])
    labels = rng.integers(0, 3, size=300)
    data = centers[labels] + rng.normal(scale=0.6, size=(300, 2))
    onehot = np.eye(3)[labels]
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [None, 2], name="x")
        y = gc.placeholder(gc.float64, [None, 3], name="y")
        W = gc.Variable(np.zeros((2, 3)), name="W")
        b = gc.Variable(np.zeros(3), name="b")
        logits = gc.matmul(x, W) + b
        loss = -gc.reduce_mean(gc.reduce_sum(y * _log_softmax(logits), axis=1))
        train = gc.train.GradientDescentOptimizer(0.5).minimize(loss)
        acc = gc.reduce_mean(gc.cast(gc.equal(gc.argmax(logits, 1), gc.argmax(y, 1)), gc.float64))
        init = gc.global_variables_initializer()
    s = Session(g, num_threads=1)
    s.run(init)
    feeds = {x: data, y: onehot}
    for _ in range(60):
        s.run(train, feeds)
    assert s.run(acc, feeds) >= 0.95


def test_rnn_with_adam_lowers_loss_tenfold():
    rng = np.random.default_rng(2)
    T, B, D, H = 6, 16, 2, 8
    xs_val = rng.normal(size=(T, B, D))
    target = xs_val[:, :, 0].sum(axis=0, keepdims=False)[:, None] * 0.3
    g = gc.Graph()
    with g.as_default():
        xs = gc.placeholder(gc.float64, [T, B, D], name="xs")
        tgt = gc.placeholder(gc.float64, [B, 1], name="target")
        W = gc.Variable(rng.normal(size=(H, H)) * 0.1, name="W")
        U = gc.Variable(rng.normal(size=(D, H)) * 0.3, name="U")
        V = gc.Variable(rng.normal(size=(H, 1)) * 0.3, name="V")

        def body(t, h):
            return t + 1, gc.tanh(gc.matmul(h, W) + gc.matmul(xs[t], U))

        _, h = gc.while_loop(lambda t, h: t < T, body, [gc.constant(np.int64(0)), gc.zeros([B, H])])
        loss = gc.reduce_mean(gc.square(gc.matmul(h, V) - tgt))
        train = gc.optimizers.Adam(0.05).minimize(loss)
        init = gc.global_variables_initializer()
    s = Session(g, num_threads=1)
    s.run(init)
    feeds = {xs: xs_val, tgt: target}
    first = s.run(loss, feeds)
    for _ in range(150):
        s.run(train, feeds)
    assert s.run(loss, feeds) * 10 <= first
