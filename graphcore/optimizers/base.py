"""The Optimizer base class, TensorFlow 1's: compute_gradients -> (optionally transform) ->
apply_gradients; minimize does both. A subclass only says what slots it keeps
(`_create_slots`), what it computes once per step (`_prepare`) and how one variable
is updated from its gradient (`_apply_dense`).

gate_gradients:
  GATE_NONE  - no gating: the update of a variable may start as soon as its own
               gradient is ready, while other gradients are still being computed
               (most parallel; the results may not be reproducible).
  GATE_OP    - for each op, the gradients of all its inputs are computed before any
               of them is used (the default).
  GATE_GRAPH - every gradient is computed before any variable is updated.
"""
from __future__ import annotations

import numpy as np

from ..control_flow import group, tuple_
from ..errors import GraphError
from ..gradients import gradients
from ..graph import Tensor, get_default_graph
from ..variables import Variable, trainable_variables

GATE_NONE = 0
GATE_OP = 1
GATE_GRAPH = 2


class Optimizer:
    """Base class of optimizers.

    Args:
      learning_rate: a Python float (or a scalar tensor in graph mode).
      name: prefix of the slot variables and of the update ops.
    """

    GATE_NONE = GATE_NONE
    GATE_OP = GATE_OP
    GATE_GRAPH = GATE_GRAPH

    def __init__(self, learning_rate, name: str = "Optimizer"):
        self._lr = learning_rate
        self._name = name
        self._slots: dict[str, dict[str, Variable]] = {}

    # -- the three steps ------------------------------------------------------------
    def compute_gradients(self, loss, var_list=None, gate_gradients: int = GATE_OP, grad_loss=None):
        """[(gradient, variable)] for `var_list` (default: the trainable variables of
        loss's graph); a gradient is None where loss does not depend on the variable."""
        if gate_gradients not in (GATE_NONE, GATE_OP, GATE_GRAPH):
            raise GraphError(f"gate_gradients must be GATE_NONE, GATE_OP or GATE_GRAPH, got {gate_gradients!r}")
        if not isinstance(loss, Tensor):
            raise GraphError("compute_gradients needs the loss as a graph tensor (use it inside a graph or an "
                             "@autograph.function)")
        var_list = list(var_list) if var_list is not None else trainable_variables(loss.graph)
        if not var_list:
            raise GraphError("compute_gradients: there are no variables to optimize")
        grads = gradients(loss, var_list, grad_ys=grad_loss, gate_gradients=gate_gradients == GATE_OP)
        if gate_gradients == GATE_GRAPH:
            with loss.graph.as_default():
                live = [g for g in grads if g is not None]
                gated = iter(tuple_(live))
                grads = [next(gated) if g is not None else None for g in grads]
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step: Variable | None = None, name: str | None = None):
        """Update each variable from its gradient; returns one op that runs them all (and
        increments `global_step` after them). Eagerly, updates at once and returns None."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise GraphError("apply_gradients: no variable has a gradient; check that the loss depends on them")
        var_list = [v for _, v in pairs]
        graph = next((g.graph for g, _ in pairs if isinstance(g, Tensor)), None) or get_default_graph()
        ctx = graph.as_default() if graph is not None else _Nothing()
        with ctx:
            self._create_slots(var_list)
            self._prepare()
            updates = [self._apply_dense(g, v) for g, v in pairs]
            if graph is None:
                if global_step is not None:
                    global_step.assign_add(1)
                return None
            with graph.name_scope(name or self._name):
                if global_step is not None:
                    with graph.control_dependencies([u for u in updates if u is not None]):
                        return global_step.assign_add(np.asarray(1, dtype=global_step.dtype.np_dtype)).op
                return group(*updates, name="update")

    def minimize(self, loss, global_step: Variable | None = None, var_list=None, gate_gradients: int = GATE_OP,
                 grad_loss=None, name: str | None = None):
        """compute_gradients then apply_gradients: one op that takes one step."""
        gv = self.compute_gradients(loss, var_list=var_list, gate_gradients=gate_gradients, grad_loss=grad_loss)
        return self.apply_gradients(gv, global_step=global_step, name=name)

    # -- hooks for subclasses -------------------------------------------------------
    def _create_slots(self, var_list) -> None:
        """Make the per-variable state (e.g. with `self._zeros_slot(v, "m")`)."""

    def _prepare(self) -> None:
        """Compute what every update of this step shares (e.g. hyper-parameters as tensors)."""

    def _apply_dense(self, grad, var):
        """Build the update of `var` from `grad`; return the op or tensor that does it."""
        raise NotImplementedError

    # -- slots ------------------------------------------------------------------------
    def _slot(self, var: Variable, slot_name: str, initial) -> Variable:
        table = self._slots.setdefault(slot_name, {})
        v = table.get(var.name)
        if v is None:
            v = Variable(initial, name=f"{var.name}/{self._name}/{slot_name}", trainable=False, dtype=var.dtype)
            table[var.name] = v
        return v

    def _zeros_slot(self, var: Variable, slot_name: str) -> Variable:
        return self._slot(var, slot_name, np.zeros(var.shape.dims, dtype=var.dtype.np_dtype))

    def get_slot(self, var: Variable, name: str) -> Variable | None:
        return self._slots.get(name, {}).get(var.name)

    def get_slot_names(self) -> list[str]:
        return sorted(self._slots)

    def variables(self) -> list[Variable]:
        return [v for table in self._slots.values() for v in table.values()]

    def _lr_value(self):
        return self._call_if_callable(self._lr)

    @staticmethod
    def _call_if_callable(v):
        return v() if callable(v) else v


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
