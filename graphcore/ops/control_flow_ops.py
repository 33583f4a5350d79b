"""The v1 control-flow primitives. The executor gives them their meaning (the rules of
execution, executor/executor.py); here they have only shape rules. Their gradients are
registered in graphcore/gradients/control_flow_grad.py, next to the loop machinery, and
the wiring of a loop variable through them is WhileContext's (control_flow.py)."""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..attr_schema import BOOL, NAME, int_in, opt
from ..errors import GraphError
from ..registry import CHEAP, define_op, registered_ops, same_as_input
from ..shapes import TensorShape


def _switch_rule(data, pred):
    if not pred.dtype.is_bool or pred.shape.rank not in (0, None):
        raise GraphError(f"Switch: the predicate must be a scalar bool, got {pred.dtype}{pred.shape}")
    return [(data.dtype, data.shape), (data.dtype, data.shape)]


def _merge_rule(*inputs):
    if not inputs:
        raise GraphError("Merge needs at least one input")
    shape = inputs[0].shape
    for t in inputs[1:]:
        if t.dtype != inputs[0].dtype:
            raise GraphError(f"Merge: inputs have different dtypes {inputs[0].dtype} and {t.dtype}")
        shape = shape.most_specific_compatible(t.shape)
    return [(inputs[0].dtype, shape), (dt.int32, TensorShape(()))]


def _enter_rule(data, *, frame_name, is_constant=False, parallel_iterations=10):
    # the executor reads these attrs to make frames, so their types are checked here
    if not isinstance(frame_name, str) or not frame_name:
        raise GraphError(f"Enter needs a frame_name (a non-empty str), got {frame_name!r:.60}")
    if not isinstance(is_constant, (bool, np.bool_)):
        raise GraphError(f"Enter: is_constant must be True or False, got {is_constant!r:.60}")
    if isinstance(parallel_iterations, (bool, np.bool_)) or not isinstance(parallel_iterations, (int, np.integer)) \
            or parallel_iterations < 1:
        raise GraphError(f"Enter: parallel_iterations must be an int >= 1, got {parallel_iterations!r:.60}")
    return data.dtype, data.shape


def _loop_cond_rule(pred):
    if not pred.dtype.is_bool or pred.shape.rank not in (0, None):
        raise GraphError(
            f"a while loop's condition must be a scalar bool, got {pred.dtype}{pred.shape}; "
            "reduce it with graphcore.reduce_all / reduce_any or index one element")
    return dt.bool_, TensorShape(())


def _primitive_kernel(*args, **attrs):
    raise GraphError("control-flow primitives run only inside the executor")


def _loop_cond_kernel(pred):
    return pred


switch_op = define_op("Switch", shape=_switch_rule, kernel=_primitive_kernel, num_outputs=2, cost=CHEAP,
                      control_flow=True, forwards=True, fails=None,
                      picture={"shape": "diamond", "style": "filled", "fillcolor": "#f4a261"})
merge_op = define_op("Merge", shape=_merge_rule, kernel=_primitive_kernel, num_outputs=2, cost=CHEAP,
                     control_flow=True, forwards=True, fails=None,
                     picture={"shape": "invtriangle", "style": "filled", "fillcolor": "#8ecae6"})
enter_op = define_op("Enter", shape=_enter_rule, kernel=_primitive_kernel, cost=CHEAP, control_flow=True,
                     loop_frame=True, forwards=True, fails=None, picture={"shape": "house", "style": "filled", "fillcolor": "#90be6d"},
                     attrs={
    "frame_name": NAME, "is_constant": opt(BOOL), "parallel_iterations": opt(int_in(1, 2 ** 31 - 1))})
exit_op = define_op("Exit", shape=same_as_input, kernel=_primitive_kernel, cost=CHEAP, control_flow=True,
                    loop_frame=True, forwards=True, fails=None,
                    picture={"shape": "invhouse", "style": "filled", "fillcolor": "#f94144", "fontcolor": "white"})
next_iteration_op = define_op("NextIteration", shape=same_as_input, kernel=_primitive_kernel, cost=CHEAP,
                              control_flow=True, loop_frame=True, forwards=True, fails=None,
                              picture={"shape": "doubleoctagon", "style": "filled", "fillcolor": "#b5179e",
                                       "fontcolor": "white"})
loop_cond_op = define_op("LoopCond", shape=_loop_cond_rule, kernel=_loop_cond_kernel, cost=CHEAP,
                         control_flow=True, loop_frame=True, fails=None,
                         picture={"shape": "hexagon", "style": "filled", "fillcolor": "#f9c74f"})
loop_cond_op.not_differentiable("boolean")

# the five v1 primitives: the control-flow op types that forward a value (LoopCond computes one)
CONTROL_FLOW_TYPES = frozenset(t for t, d in registered_ops().items() if d.control_flow and d.forwards)
