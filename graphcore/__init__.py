"""graphcore: the dataflow-graph IR, its ops, and control flow built from the five v1
primitives (Switch, Merge, Enter, Exit, NextIteration)."""
from . import nest
from .control_flow import case, cond, group, switch_case, while_loop
from .v2_control_flow import control_flow_v2, control_flow_v2_enabled
from .function_graph import FuncGraph
from .control_flow import tuple_ as tuple  # noqa: A004 (TensorFlow's name)
from .dtypes import DType, as_dtype, bool_, float32, float64, int32, int64, variant
from .errors import (AutographError, DeadlineExceededError, ExecutionError, GraphError, GraphFileError,
                     InvalidArgumentError, StagingError)
from .graph import Graph, Operation, Tensor, control_dependencies, device, get_default_graph, is_tensor, name_scope
from .ops.array_ops import (cast, concat, constant, expand_dims, fill, gather, identity, ones, ones_like,
                            placeholder, rank, reshape, set_item, shape, size, slice, squeeze, stack,
                            stop_gradient, tile, transpose, unstack, zeros, zeros_like)
from .ops.array_ops import range  # noqa: A004 (TensorFlow's name)
from .ops.array_ops import getitem as strided_slice
from .ops.list_ops import (tensor_list_from_tensor, tensor_list_get_item, tensor_list_length, tensor_list_new,
                           tensor_list_pop_back, tensor_list_push_back, tensor_list_stack)
from .ops.logging_ops import Assert
from .ops.py_function_ops import py_function, pyobject
from .ops.logging_ops import print  # noqa: A004
from .ops.math_ops import (abs, add, add_n, argmax, argmin, bitwise_and, bitwise_or, bitwise_xor,  # noqa: A004
                           ceil, cos, divide, equal, exp, expm1, floor, floordiv, greater, greater_equal, invert,
                           left_shift, less, less_equal, log, log1p, logical_and, logical_not, logical_or, matmul,
                           maximum, minimum, mod, multiply, negative, not_equal, pow, reduce_max, reduce_mean,
                           reduce_min, reduce_prod, reduce_sum, relu, right_shift, round, sigmoid, sign, sin, sqrt,
                           square, subtract, tanh, truediv, where)
from .registry import define_op, get_op_def, public_functions, registered_ops
from .shapes import TensorShape

# every op block's public function (`define_op(...).exported`), those not imported above by name
globals().update({_n: _f for _n, _f in public_functions().items() if _n not in globals()})
from . import dot as _dot, printer as _printer, serialization as _serialization, validate as _validate
from . import function_graph as _function_graph, graph_copy as _graph_copy
from .graph import install as _install

# the functions over graphs behind Graph's shortcut methods (see graph.py's docstring)
_install(op_def=get_op_def, constant=constant, validate=_validate.validate_graph, format=_printer.format_graph,
         to_dot=_dot.to_dot, to_json=_serialization.to_json, from_json=_serialization.from_json,
         repr=_dot.graph_repr, mimebundle=_dot.mimebundle, lift=_function_graph.lift_output,
         copy=_graph_copy.copy_graph)
from . import tensor_operators  # noqa: F401  (installs Tensor.__add__ and friends)
from . import numpy_api as _numpy_api  # noqa: E402

_numpy_api.install()  # np.sum(t), t.mean(), t.astype(...) on graph tensors, with numpy's semantics

bool = bool_  # noqa: A001 (gc.bool, as tf.bool)
from .functional import foldl, map_fn, scan
from .gradients import gradients, memory_budget  # noqa: E402  (reverse mode; registers the control-flow rules)
from .gradients import functional_grad as _functional_grad  # noqa: E402,F401  (If/While gradients)
from .ops import state_ops as _state_ops  # noqa: E402,F401  (registers the variable ops)
from .variables import (Variable, global_variables, global_variables_initializer,  # noqa: E402
                        trainable_variables, variables_initializer)
from . import eager, optimizers  # noqa: E402
from . import optimizers as train  # noqa: E402  (gc.train.GradientDescentOptimizer, as TensorFlow 1)
