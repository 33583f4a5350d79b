"""Reverse-mode differentiation of graphs, control flow included: backprop.py is the
walk, control_flow_grad.py the rules of cond and while (the backward loop and its
accumulators), liveness.py which branches a loop's tensor depends on, contraction.py
the gradients of loop invariants summed as one matmul, util.py what they share. The
rules of the other ops sit with each op, in ops/."""
from . import control_flow_grad  # noqa: F401  (registers the rules of the five primitives)
from .backprop import gradients
from .control_flow_grad import accumulated_tensors, accumulators, iteration_count
from .remat import memory_budget

__all__ = ["gradients", "accumulated_tensors", "accumulators", "iteration_count", "memory_budget"]
