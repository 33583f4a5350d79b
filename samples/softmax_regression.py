"""Softmax regression trained by gradient descent: backpropagation through a small
model, on linearly separable synthetic data made with a fixed numpy seed.

The loop over training steps is a graph loop (a `for` over `range(steps)` with a tensor
`steps`); each step takes the gradient of the cross-entropy with
`autograph.value_and_grad`, which, inside the traced function, builds the backward ops
into the loop body. The loss uses a stable log-softmax (subtract the row maximum).

As plain Python the same code runs on numpy values: graphcore ops run eagerly and
`autograph.value_and_grad` traces and runs the loss's gradient graph once per step, so
the comparison is the same computation, not a hand-written gradient.
"""
import numpy as np

import autograph
import graphcore as gc


def make_data(n=200, margin=0.3, seed=0):
    """n points in [-2, 2]^2 labelled by which of three lines scores highest, so the
    classes are linearly separable; points within `margin` of a boundary are dropped.
    Returns the points [m, 2] and one-hot labels [m, 3]."""
    rng = np.random.default_rng(seed)
    w_true = np.array([[1.0, -1.0, 0.0], [0.5, 0.5, -1.0]])
    x = rng.uniform(-2.0, 2.0, (2 * n, 2))
    scores = x @ w_true + np.array([0.0, 0.3, -0.2])
    top2 = np.sort(scores, axis=1)[:, -2:]
    keep = (top2[:, 1] - top2[:, 0] > margin).nonzero()[0][:n]
    return x[keep], np.eye(3)[scores[keep].argmax(axis=1)]


def cross_entropy(w, b, x, y):
    """Mean cross-entropy of softmax(x w + b) against the one-hot labels y."""
    logits = gc.matmul(x, w) + b
    z = logits - gc.reduce_max(logits, axis=1, keepdims=True)
    log_p = z - gc.log(gc.reduce_sum(gc.exp(z), axis=1, keepdims=True))
    return -gc.reduce_mean(gc.reduce_sum(y * log_p, axis=1))


def accuracy(w, b, x, y):
    predicted = gc.argmax(gc.matmul(x, w) + b, axis=1)
    return gc.reduce_mean(gc.cast(gc.equal(predicted, gc.argmax(y, axis=1)), gc.float64))


@autograph.function
def train(x, y, steps, learning_rate=0.5):
    """Gradient descent from zero weights; returns (training accuracy, final loss)."""
    w = gc.zeros([2, 3], dtype=gc.float64)
    b = gc.zeros([3], dtype=gc.float64)
    loss_and_grads = autograph.value_and_grad(cross_entropy, argnums=(0, 1))
    for _ in range(steps):
        loss, (dw, db) = loss_and_grads(w, b, x, y)
        w = w - learning_rate * dw
        b = b - learning_rate * db
    return accuracy(w, b, x, y), cross_entropy(w, b, x, y)


X, Y = make_data()
EXAMPLES = [(X, Y, np.int64(50)), (X, Y, np.int64(5), np.float64(0.1))]
TOLERANCE = 1e-9

if __name__ == "__main__":
    for steps in (0, 1, 2, 5, 10, 25, 50, 100):
        acc, loss = train(X, Y, np.int64(steps))
        print(f"after {steps:3d} steps: loss {loss:.4f}  training accuracy {acc:.1%}")
