"""A small recurrent network, h = tanh(h W + x_t U + b) with a linear readout, trained
with Adam to continue a sine wave: at each time step it predicts the next sample.

Both loops are graph loops: the loop over time in `sequence_loss` (a `for` over
`range(n)` with a tensor `n`) and the loop over training steps in `train`; the
gradient of the time loop (a backward loop that pops the saved activations in
reverse order) is built inside the training loop by `autograph.value_and_grad`.

Adam is written out on the parameters (a tuple of arrays carried by the training
loop) rather than taken from `gc.optimizers.Adam` with Variables, for two reasons:
the result is a pure function of the arguments, so the demo can run it repeatedly and
compare the graph with plain Python; and the library optimizer cannot yet be used in
a graph loop (its slot variables are created in the loop body's first trace, which
autograph rolls back). As plain Python, the same code runs with numpy values: the
graphcore ops run eagerly and `autograph.value_and_grad` traces and runs the loss's
gradient graph once per step.
"""
import numpy as np

import autograph
import graphcore as gc


def make_data(batch=16, n=12, seed=0):
    """Sine waves with random phases: inputs x[t] and targets x[t + 1], [n, batch, 1]."""
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0.0, 2.0 * np.pi, batch)
    wave = np.sin(0.5 * np.arange(n + 1)[:, None] + phase[None, :])[:, :, None]
    return wave[:-1], wave[1:]


def init_params(hidden=8, seed=1):
    """(W, U, b, V, c): recurrent, input, bias, readout weights and readout bias."""
    rng = np.random.default_rng(seed)
    return (0.3 * rng.standard_normal((hidden, hidden)), 0.5 * rng.standard_normal((1, hidden)),
            np.zeros(hidden), 0.3 * rng.standard_normal((hidden, 1)), np.zeros(1))


def sequence_loss(w, u, b, v, c, xs, ys, n):
    """Mean squared error of the next-sample predictions over n time steps."""
    h = gc.zeros_like(gc.matmul(xs[0], u))
    total = gc.constant(0.0, dtype=gc.float64)
    for t in range(n):
        h = gc.tanh(gc.matmul(h, w) + gc.matmul(xs[t], u) + b)
        err = gc.matmul(h, v) + c - ys[t]
        total = total + gc.reduce_mean(err * err)
    return total / gc.cast(n, gc.float64)


@autograph.function
def train(params, xs, ys, n, steps, learning_rate=0.05):
    """Adam on `params` for `steps` steps; returns (first loss, final loss)."""
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    loss_and_grads = autograph.value_and_grad(sequence_loss, argnums=(0, 1, 2, 3, 4))
    first = sequence_loss(*params, xs, ys, n)
    m = tuple(gc.zeros_like(p) for p in params)
    v = tuple(gc.zeros_like(p) for p in params)
    for step in range(steps):
        loss, grads = loss_and_grads(*params, xs, ys, n)
        t = gc.cast(step + 1, gc.float64)
        m = tuple(beta1 * mi + (1 - beta1) * g for mi, g in zip(m, grads))
        v = tuple(beta2 * vi + (1 - beta2) * g * g for vi, g in zip(v, grads))
        lr_t = learning_rate * gc.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        params = tuple(p - lr_t * mi / (gc.sqrt(vi) + eps) for p, mi, vi in zip(params, m, v))
    final = sequence_loss(*params, xs, ys, n)
    return first, final


XS, YS = make_data()
EXAMPLES = [(init_params(), XS, YS, np.int64(12), np.int64(40))]
TOLERANCE = 1e-9

if __name__ == "__main__":
    for steps in (0, 10, 20, 40, 60, 100):
        first, final = train(init_params(), XS, YS, np.int64(12), np.int64(steps))
        print(f"after {steps:3d} Adam steps: loss {final:.5f}  ({first / final:5.1f}x lower than at the start)")
