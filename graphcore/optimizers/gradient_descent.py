"""Plain gradient descent: var -= learning_rate * grad."""
from __future__ import annotations

from .base import Optimizer


class GradientDescent(Optimizer):
    def __init__(self, learning_rate, name: str = "GradientDescent"):
        super().__init__(learning_rate, name)

    def _apply_dense(self, grad, var):
        return var.assign_sub(grad * self._lr_value())
