"""Test models, built once for the tests and the benchmarks.

`rnn` is the tanh RNN that gradients through loops are measured and checked on:
h_(t+1) = tanh(W @ h_t + U @ x_t) for T steps, loss = sum(h_T ** 2), and the gradients
of the loss with respect to W, U and h0 through the while loop.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import graphcore as gc
from graphcore.gradients.control_flow_grad import GradWhileContext


@dataclass(frozen=True)
class RNN:
    """A built RNN graph: its placeholders, loss and gradients [dW, dU, dh0]."""

    graph: gc.Graph
    W: gc.Tensor
    U: gc.Tensor
    h0: gc.Tensor
    xs: gc.Tensor
    n: gc.Tensor | None  # the trip count, when it is fed (else the loop runs `steps` times)
    loss: gc.Tensor
    grads: list
    steps: int
    dtype: gc.DType

    @property
    def weights(self) -> list:
        return [self.W, self.U, self.h0]

    @property
    def forward_loop(self):
        """The WhileContext of the forward loop."""
        return next(c for c in self.graph.while_contexts.values() if not isinstance(c, GradWhileContext))

    @property
    def backward_loop(self):
        """The WhileContext of the backward loop that gradients built."""
        return next(c for c in self.graph.while_contexts.values() if isinstance(c, GradWhileContext))

    def feeds(self, rng: np.random.Generator, weight_scale: float | None = None) -> dict:
        """Random inputs: weights scaled by `weight_scale` (default 1/sqrt(fan-in)),
        h0 and xs standard normal; n (when fed) the full number of steps."""
        (H, D), T = self.U.shape.dims, self.steps
        d = self.dtype.np_dtype
        sw = weight_scale if weight_scale is not None else 1 / np.sqrt(H)
        su = weight_scale if weight_scale is not None else 1 / np.sqrt(D)
        out = {self.W: (rng.normal(size=(H, H)) * sw).astype(d), self.U: (rng.normal(size=(H, D)) * su).astype(d),
               self.h0: rng.normal(size=H).astype(d), self.xs: rng.normal(size=(T, D)).astype(d)}
        if self.n is not None:
            out[self.n] = np.int64(T)
        return out


def rnn(steps: int, hidden: int, inputs: int, dtype=gc.float64, fed_steps: bool = False) -> RNN:
    """Build the RNN in a new graph; with `fed_steps` the trip count is a placeholder `n`.

    Example:
        m = rnn(20, 4, 3)
        Session(m.graph).run(m.grads, m.feeds(np.random.default_rng(0)))
    """
    g = gc.Graph()
    with g.as_default():
        W = gc.placeholder(dtype, [hidden, hidden], name="W")
        U = gc.placeholder(dtype, [hidden, inputs], name="U")
        h0 = gc.placeholder(dtype, [hidden], name="h0")
        xs = gc.placeholder(dtype, [steps, inputs], name="xs")
        n = gc.placeholder(gc.int64, [], name="n") if fed_steps else None
        limit = n if fed_steps else steps

        def body(t, h):
            return t + 1, gc.tanh(gc.matmul(W, h) + gc.matmul(U, xs[t]))

        _, h = gc.while_loop(lambda t, h: t < limit, body, [gc.constant(np.int64(0)), h0])
        loss = gc.reduce_sum(h * h)
        grads = gc.gradients(loss, [W, U, h0])
    return RNN(g, W, U, h0, xs, n, loss, grads, steps, gc.as_dtype(dtype))
