"""Tensor lists: growable lists of tensors that are values (see tensor_list.ListValue).
Autograph stages `list.append` in a loop with them; gradients use them as the
accumulators that carry forward intermediates to the backward loop, and sum and zero
their gradients with the list ops at the end of this file."""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..attr_schema import DTYPE, ELEMENT_SHAPE, opt
from ..errors import GraphError
from ..graph import Tensor, get_default_graph
from ..registry import CHEAP, define_op
from ..shapes import TensorShape, as_shape
from ..tensor_list import EMPTY, ListValue
from .array_ops import constant, next_to, zeros_shaped_like

LIST_ATTRS = {"element_dtype": DTYPE, "element_shape": opt(ELEMENT_SHAPE)}


def _list_rule(*inputs, **attrs):
    return dt.variant, TensorShape(())


def _check_list(t, what):
    if t.dtype is not dt.variant:
        raise GraphError(f"{what}: expected a tensor list (variant), got {t.dtype}")


def _new_kernel(*, element_dtype, element_shape=None):
    return EMPTY


new_op = define_op("TensorListNew", own_kind=True, shape=_list_rule, kernel=_new_kernel, cost=CHEAP, attrs=LIST_ATTRS)
new_op.not_differentiable("an empty list: no inputs")


def _push_rule(l, x, *, element_dtype, element_shape=None):
    _check_list(l, "TensorListPushBack")
    if x.dtype != element_dtype:
        raise GraphError(f"TensorListPushBack: the list holds {element_dtype} but the element is {x.dtype}")
    return dt.variant, TensorShape(())


def _push_kernel(l, x, *, element_dtype, element_shape=None):
    return l.push(x)


push_back_op = define_op("TensorListPushBack", own_kind=True, shape=_push_rule, kernel=_push_kernel, cost=CHEAP,
                         attrs=LIST_ATTRS)


@push_back_op.gradient
def _push_back_grad(op, dl):
    """Pushing's gradient pops: the top of the list's gradient belongs to the pushed element."""
    x = op.inputs[1]
    rest, dx = pop_back_op(dl, element_dtype=x.dtype, element_shape=x.shape.dims)
    return [rest, dx]


def _pop_rule(l, *, element_dtype, element_shape=None):
    _check_list(l, "TensorListPopBack")
    return [(dt.variant, TensorShape(())), (element_dtype, as_shape(element_shape))]


def _pop_kernel(l, *, element_dtype, element_shape=None):
    return l.pop()


pop_back_op = define_op("TensorListPopBack", own_kind=True, shape=_pop_rule, kernel=_pop_kernel, num_outputs=2,
                        cost=CHEAP,
                        attrs=LIST_ATTRS)


@pop_back_op.gradient
def _pop_back_grad(op, dl, dx):
    """Popping's gradient pushes the element's gradient back onto the rest's gradient."""
    rest, item = op.outputs
    if dl is None:
        dl = list_zeros_like_fwd(rest)
    if dx is None:
        dx = zeros_shaped_like(item)
    return [push_back_op(dl, dx, element_dtype=item.dtype, element_shape=item.shape.dims)]


def _stack_rule(l, *, element_dtype, element_shape=None):
    _check_list(l, "TensorListStack")
    es = as_shape(element_shape)
    return element_dtype, (TensorShape(None) if es.dims is None else TensorShape([None, *es.dims]))


def _stack_kernel(l, *, element_dtype, element_shape=None):
    items = l.items()
    if not items:
        es = as_shape(element_shape)
        if not es.is_fully_defined():
            es = TensorShape(())
        return np.zeros((0, *es.dims), dtype=element_dtype.np_dtype)
    return np.stack([np.asarray(x, dtype=element_dtype.np_dtype) for x in items])


stack_op = define_op("TensorListStack", own_kind=True, shape=_stack_rule, kernel=_stack_kernel, attrs=LIST_ATTRS)


@stack_op.gradient
def _stack_grad(op, dy):
    es = op.attrs.get("element_shape")
    return [from_tensor_op(dy, element_dtype=dy.dtype, element_shape=es)]


def _length_rule(l):
    _check_list(l, "TensorListLength")
    return dt.int32, TensorShape(())


length_op = define_op("TensorListLength", own_kind=True, shape=_length_rule, kernel=lambda l: np.int32(l.length),
                      cost=CHEAP)
length_op.not_differentiable("integer")


def _get_rule(l, i, *, element_dtype, element_shape=None):
    _check_list(l, "TensorListGetItem")
    return element_dtype, as_shape(element_shape)


def _get_kernel(l, i, *, element_dtype, element_shape=None):
    return l.get(int(i))


get_item_op = define_op("TensorListGetItem", own_kind=True, shape=_get_rule, kernel=_get_kernel, cost=CHEAP,
                        attrs=LIST_ATTRS)


@get_item_op.gradient
def _get_item_grad(op, dy):
    return [get_item_grad_op(op.inputs[0], op.inputs[1], dy), None]


def _from_tensor_rule(t, *, element_dtype, element_shape=None):
    return dt.variant, TensorShape(())


def _from_tensor_kernel(t, *, element_dtype, element_shape=None):
    out = EMPTY
    for row in np.asarray(t):
        out = out.push(row)
    return out


from_tensor_op = define_op("TensorListFromTensor", own_kind=True, shape=_from_tensor_rule, kernel=_from_tensor_kernel,
                           attrs=LIST_ATTRS)


@from_tensor_op.gradient
def _from_tensor_grad(op, dl):
    t = op.inputs[0]
    es = t.shape.dims[1:] if t.shape.dims is not None else None
    return [stack_op(dl, element_dtype=t.dtype, element_shape=es)]


# -- public functions ----------------------------------------------------------

def tensor_list_new(element_dtype, element_shape=None, name=None):
    """An empty tensor list (eagerly: the empty ListValue)."""
    attrs = {"element_dtype": dt.as_dtype(element_dtype),
             "element_shape": None if element_shape is None else as_shape(element_shape).dims}
    if get_default_graph() is None:
        return EMPTY
    return new_op(name=name, **attrs)


def tensor_list_push_back(l, x, element_dtype=None, element_shape=None, name=None):
    if isinstance(l, ListValue) and not isinstance(x, Tensor):
        return l.push(np.asarray(x))
    if not isinstance(x, Tensor):
        x = constant(x, dtype=element_dtype)
    d = dt.as_dtype(element_dtype) if element_dtype is not None else x.dtype
    return push_back_op(l, x, element_dtype=d, element_shape=element_shape if element_shape is not None
                        else x.shape.dims, name=name)


def tensor_list_pop_back(l, element_dtype, element_shape=None, name=None):
    return pop_back_op(l, element_dtype=dt.as_dtype(element_dtype), element_shape=element_shape, name=name)


def tensor_list_stack(l, element_dtype, element_shape=None, name=None):
    return stack_op(l, element_dtype=dt.as_dtype(element_dtype),
                    element_shape=None if element_shape is None else as_shape(element_shape).dims, name=name)


def tensor_list_length(l, name=None):
    return length_op(l, name=name)


def tensor_list_get_item(l, index, element_dtype, element_shape=None, name=None):
    return get_item_op(l, index, element_dtype=dt.as_dtype(element_dtype),
                       element_shape=None if element_shape is None else as_shape(element_shape).dims, name=name)


def tensor_list_from_tensor(t, name=None):
    if not isinstance(t, Tensor):
        return _from_tensor_kernel(t, element_dtype=None)
    es = t.shape.dims[1:] if t.shape.dims is not None else None
    return from_tensor_op(t, element_dtype=t.dtype, element_shape=es, name=name)


# -- the gradients' list ops: zeros, sums, one-hot lists ---------------------------------

def _zeros_like_item(item):
    """Zeros like a list's item; an item that is a list itself (an inner loop's accumulator,
    pushed by an outer loop) gives a list of zeros like it, not numpy's 0-d object array."""
    return _list_zeros_like_kernel(item) if isinstance(item, ListValue) else np.zeros_like(item)


def _list_zeros_like_kernel(l):
    out = EMPTY
    for item in l.items():
        out = out.push(_zeros_like_item(item))
    return out


list_zeros_like_op = define_op("TensorListZerosLike", own_kind=True, shape=_list_rule, kernel=_list_zeros_like_kernel,
                               cost=CHEAP)
list_zeros_like_op.not_differentiable("constant output (zeros)")


def _list_add_kernel(*lists):
    n = max(len(l) for l in lists)
    out = EMPTY
    for i in range(n):
        acc = None
        for l in lists:
            if len(l) == n:
                item = l.get(i)
                acc = item if acc is None else _list_add_kernel(acc, item) if isinstance(acc, ListValue) else acc + item
        out = out.push(acc)
    return out


list_add_n_op = define_op("TensorListAddN", own_kind=True, shape=_list_rule, kernel=_list_add_kernel, cost=CHEAP,
                          doc="Elementwise sum of tensor lists: gradients of a list with several consumers.")


@list_add_n_op.gradient
def _list_add_n_grad(op, dy):
    return [dy] * len(op.inputs)


def _get_item_grad_kernel(l, i, dy):
    n = len(l)
    i = int(i) % n if n else 0
    out = EMPTY
    for k, item in enumerate(l.items()):
        out = out.push(np.asarray(dy) if k == i else _zeros_like_item(item))
    return out


get_item_grad_op = define_op("TensorListGetItemGrad", own_kind=True, shape=_list_rule, kernel=_get_item_grad_kernel,
                             cost=CHEAP,
                             doc="A list like `l` of zeros with `dy` at index `i` (the gradient of GetItem).")


@get_item_grad_op.gradient
def _get_item_grad_grad(op, dl):
    dy = op.inputs[2]
    return [None, None, get_item_op(dl, op.inputs[1], element_dtype=dy.dtype, element_shape=dy.shape.dims)]


def list_zeros_like_fwd(t: Tensor) -> Tensor:
    """A list of zeros like the forward list `t` (built next to it: it reads its items)."""
    with next_to(t) as g:
        return g.create_op(list_zeros_like_op, [t], name="grad_zeros").outputs[0]
