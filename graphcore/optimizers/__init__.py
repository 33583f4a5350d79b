"""Optimizers: `gc.optimizers.GradientDescent(0.1).minimize(loss)`; the same classes
under TensorFlow 1's names in `gc.train` (`gc.train.AdamOptimizer`)."""
from .adam import Adam
from .base import GATE_GRAPH, GATE_NONE, GATE_OP, Optimizer
from .gradient_descent import GradientDescent
from .momentum import Momentum
from .rmsprop import RMSProp

GradientDescentOptimizer = GradientDescent
MomentumOptimizer = Momentum
AdamOptimizer = Adam
RMSPropOptimizer = RMSProp

__all__ = ["Optimizer", "GradientDescent", "Momentum", "Adam", "RMSProp", "GATE_NONE", "GATE_OP", "GATE_GRAPH",
           "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer", "RMSPropOptimizer"]
