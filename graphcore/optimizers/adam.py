"""Adam (Kingma & Ba): bias-corrected first and second moment estimates. Each
variable keeps its own step count in a slot, so the correction needs no extra hook."""
from __future__ import annotations

import numpy as np

from ..ops.math_ops import sqrt
from .base import Optimizer


class Adam(Optimizer):
    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, name: str = "Adam"):
        super().__init__(learning_rate, name)
        self._beta1, self._beta2, self._epsilon = beta1, beta2, epsilon

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "m")
            self._zeros_slot(v, "v")
            self._slot(v, "step", np.zeros((), dtype=v.dtype.np_dtype))

    def _apply_dense(self, grad, var):
        b1, b2 = self._beta1, self._beta2
        t = self.get_slot(var, "step").assign_add(np.asarray(1, dtype=var.dtype.np_dtype))
        m = self.get_slot(var, "m")
        v = self.get_slot(var, "v")
        m_t = m.assign(m.value() * b1 + grad * (1 - b1))
        v_t = v.assign(v.value() * b2 + grad * grad * (1 - b2))
        lr_t = sqrt(1 - b2 ** t) / (1 - b1 ** t) * self._lr_value()
        return var.assign_sub(lr_t * m_t / (sqrt(v_t) + self._epsilon))
