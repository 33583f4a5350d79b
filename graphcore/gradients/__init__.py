"""Reverse-mode differentiation of graphs, control flow included (see backprop.py for
the walk and control_flow_grad.py for cond and while)."""
from . import control_flow_grad  # noqa: F401  (registers the rules of the five primitives)
from .backprop import gradients
from .control_flow_grad import accumulated_tensors, accumulators, iteration_count

__all__ = ["gradients", "accumulated_tensors", "accumulators", "iteration_count"]
