"""Momentum: accum = momentum * accum + grad; var -= lr * accum (Nesterov:
var -= lr * (grad + momentum * accum))."""
from __future__ import annotations

from .base import Optimizer


class Momentum(Optimizer):
    def __init__(self, learning_rate, momentum: float = 0.9, use_nesterov: bool = False, name: str = "Momentum"):
        super().__init__(learning_rate, name)
        self._momentum = momentum
        self._nesterov = use_nesterov

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "momentum")

    def _apply_dense(self, grad, var):
        accum = self.get_slot(var, "momentum")
        new = accum.assign(accum.value() * self._momentum + grad)
        step = (grad + new * self._momentum) if self._nesterov else new
        return var.assign_sub(step * self._lr_value())
