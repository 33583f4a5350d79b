"""Variable ops: a handle per graph, reads and assignments against the Runtime's store.

The handle's value at run time is the variable's name (its key in the store); its
static dtype and shape are the variable's, so the gradient reaching a handle (the
sum of the gradients of its reads) is shaped like the variable, as TensorFlow's
resource handles."""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..attr_schema import DTYPE, SHAPE, STR
from ..errors import InvalidArgumentError
from ..registry import CHEAP, define_op
from ..shapes import TensorShape, as_shape


def _handle_rule(*, var_name, dtype, shape):
    return dtype, as_shape(shape)


def _handle_kernel(*, var_name, dtype, shape):
    return var_name


var_handle_op = define_op("VarHandleOp", own_kind=True, shape=_handle_rule, kernel=_handle_kernel, cost=CHEAP,
                          attrs={"var_name": STR, "dtype": DTYPE, "shape": SHAPE})
var_handle_op.not_differentiable("a variable's handle: gradients stop here and are reported for the variable")


def _uninitialized(name: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"variable '{name}' is read before it was initialized: run its initializer "
        "(variable.initializer or graphcore.global_variables_initializer()) first")


def _read_kernel(rt, handle):
    with rt.lock:
        try:
            return rt.variables[handle]
        except KeyError:
            raise _uninitialized(handle) from None


def _read_rule(handle):
    return handle.dtype, handle.shape


read_variable_op = define_op("ReadVariableOp", own_kind=True, shape=_read_rule, kernel=_read_kernel, cost=CHEAP,
                             stateful=True,
                             uses_runtime=True)


@read_variable_op.gradient
def _read_grad(op, dy):
    return [dy]


def _assign_rule(handle, value):
    return handle.dtype, handle.shape


def _stored(handle_dtype, value):
    arr = np.array(value, dtype=handle_dtype, copy=True)
    return arr if arr.ndim else arr[()]


def _assign_kernel(rt, handle, value):
    with rt.lock:
        old = rt.variables.get(handle)
        d = np.asarray(old).dtype if old is not None else np.asarray(value).dtype
        new = _stored(d, value)
        rt.variables[handle] = new
        return new


def _assign_delta_kernel(sign):
    def kernel(rt, handle, delta):
        with rt.lock:
            try:
                old = rt.variables[handle]
            except KeyError:
                raise _uninitialized(handle) from None
            new = _stored(np.asarray(old).dtype, old + sign * np.asarray(delta))
            rt.variables[handle] = new
            return new
    return kernel


assign_op = define_op("AssignVariableOp", shape=_assign_rule, kernel=_assign_kernel, cost=CHEAP, stateful=True,
                      uses_runtime=True)
assign_op.not_differentiable("a state update")
assign_add_op = define_op("AssignAddVariableOp", shape=_assign_rule, kernel=_assign_delta_kernel(1), cost=CHEAP,
                          stateful=True, uses_runtime=True)
assign_add_op.not_differentiable("a state update")
assign_sub_op = define_op("AssignSubVariableOp", shape=_assign_rule, kernel=_assign_delta_kernel(-1), cost=CHEAP,
                          stateful=True, uses_runtime=True)
assign_sub_op.not_differentiable("a state update")


def _is_initialized_kernel(rt, handle):
    with rt.lock:
        return np.bool_(handle in rt.variables)


is_initialized_op = define_op("VarIsInitializedOp", shape=lambda h: (dt.bool_, TensorShape(())),
                              kernel=_is_initialized_kernel, cost=CHEAP, stateful=True, uses_runtime=True)
is_initialized_op.not_differentiable("boolean")
