"""RMSProp: ms = decay * ms + (1 - decay) * grad^2; mom = momentum * mom + lr * grad /
sqrt(ms + epsilon); var -= mom."""
from __future__ import annotations

import numpy as np

from ..ops.math_ops import sqrt
from .base import Optimizer


class RMSProp(Optimizer):
    def __init__(self, learning_rate: float, decay: float = 0.9, momentum: float = 0.0, epsilon: float = 1e-10,
                 name: str = "RMSProp"):
        super().__init__(learning_rate, name)
        self._decay, self._momentum, self._epsilon = decay, momentum, epsilon

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, "rms", np.ones(v.shape.dims, dtype=v.dtype.np_dtype))
            self._zeros_slot(v, "momentum")

    def _apply_dense(self, grad, var):
        ms = self.get_slot(var, "rms")
        mom = self.get_slot(var, "momentum")
        ms_t = ms.assign(ms.value() * self._decay + grad * grad * (1 - self._decay))
        mom_t = mom.assign(mom.value() * self._momentum + grad * self._lr_value() / sqrt(ms_t + self._epsilon))
        return var.assign_sub(mom_t)
