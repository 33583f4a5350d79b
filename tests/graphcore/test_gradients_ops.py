"""Every op of the registry either has a gradient rule, checked here against central
finite differences on random float64 inputs, or says why it has none."""
import numpy as np
import pytest

import graphcore as gc
from executor import Session
from graphcore import passes
from graphcore.ops import array_ops, list_ops, math_ops
from graphcore.ops.python_math_ops import python_math, python_to_numpy_op

from gradcheck import numeric_grad

I64 = np.int64


def _c(v):
    return gc.constant(np.asarray(v, dtype=np.int64))


def _fused(y):
    """y's tree of elementwise ops (and MatMul) as one Fused op, as the optimizer makes it."""
    return passes.optimize(y.graph, [y], passes=["fusion"]).fetches[0]


def _list_of(t):
    return gc.tensor_list_from_tensor(t)


# op type -> (input specs, builder). Specs: ("f", shape) normal, ("p", shape) in [0.5, 2].
CASES = {
    "Add": ([("f", (2, 3)), ("f", (3,))], lambda a, b: a + b),
    "Sub": ([("f", (2, 1)), ("f", (2, 3))], lambda a, b: a - b),
    "Mul": ([("f", (2, 3)), ("f", (1, 3))], lambda a, b: a * b),
    "RealDiv": ([("f", (2, 3)), ("p", (3,))], lambda a, b: a / b),
    "Pow": ([("p", (2, 3)), ("f", (2, 3))], lambda a, b: a ** b),
    "Mod": ([("f", (2, 3)), ("p", (3,))], lambda a, b: a % b),
    "PythonArith": ([("f", ()), ("p", ())], lambda a, b: math_ops.python_arith_op(a, b, op="RealDiv")),
    "SetItem": ([("f", (4, 3)), ("f", (3,))], lambda a, b: array_ops.set_item(a, (slice(1, 3), slice(None)), b)
                * array_ops.set_item(a, 2, b * 2.0)),
    "PythonToNumpy": ([("f", ())], lambda a: python_to_numpy_op(a, dtype=gc.float64) * 3.0),
    "PythonMath": ([("p", ()), ("p", ())], lambda a, b: sum(
        python_math(fn, a) for fn in ("sqrt", "exp", "expm1", "log", "log1p", "log10", "log2", "sin", "cos", "tan",
                                      "atan", "sinh", "cosh", "tanh", "fabs", "erf", "erfc"))
        + python_math("asin", a * 0.4) + python_math("acos", b * 0.4) + python_math("pow", a, b)
        + python_math("hypot", a, b) + python_math("atan2", a, b) + python_math("log_base", a, b + 1.0)),
    "Maximum": ([("f", (2, 3)), ("f", (2, 3))], gc.maximum),
    "Minimum": ([("f", (2, 3)), ("f", (3,))], gc.minimum),
    "Neg": ([("f", (3,))], gc.negative),
    "Abs": ([("f", (4,))], gc.abs),
    "Square": ([("f", (4,))], gc.square),
    "Exp": ([("f", (4,))], gc.exp),
    "Log": ([("p", (4,))], gc.log),
    "Sqrt": ([("p", (4,))], gc.sqrt),
    "Tanh": ([("f", (4,))], gc.tanh),
    "Sin": ([("f", (4,))], gc.sin),
    "Cos": ([("f", (4,))], gc.cos),
    "Log1p": ([("p", (4,))], gc.log1p),
    "Expm1": ([("f", (4,))], gc.expm1),
    "Sigmoid": ([("f", (4,))], gc.sigmoid),
    "Relu": ([("f", (5,))], gc.relu),
    "Sinh": ([("f", (4,))], gc.sinh),
    "Cosh": ([("f", (4,))], gc.cosh),
    "Arctan": ([("f", (4,))], gc.arctan),
    "Hypot": ([("f", (2, 3)), ("f", (3,))], gc.hypot),
    # Control Flow v2's functional ops: the gradient of an If is an If, of a While a While
    "If": ([("f", (3,)), ("f", (3,))], lambda x, y: _v2(lambda: gc.cond(
        gc.reduce_sum(x) > -100.0, lambda: x * y + gc.sin(y), lambda: gc.sin(x)))),
    "While": ([("f", (3,)), ("p", (3,))], lambda x, y: _v2(lambda: gc.while_loop(
        lambda i, v: i < 3, lambda i, v: (i + 1, gc.tanh(v * y) + x), [np.int64(0), x])[1])),
    "Fused": ([("f", (2, 3)), ("f", (3, 4)), ("f", (4,)), ("p", (2, 4))],  # a used twice, a constant, a comparison
               lambda a, b, c, d: _fused(gc.tanh(gc.matmul(a, b) + c) * gc.sqrt(d) / (1.5 + d * d)
                                         + gc.reduce_sum(a) * gc.where(d > 1.0, d, -d))),
    "AddN": ([("f", (2, 2)), ("f", (2, 2)), ("f", (2, 2))], lambda a, b, c: gc.add_n([a, b, c])),
    "MatMul": ([("f", (2, 3)), ("f", (3, 4)), ("f", (4, 3)), ("f", (3,)), ("f", (2,))],
               lambda a, b, bt, v, w: gc.reduce_sum(gc.matmul(a, b)) + gc.reduce_sum(gc.matmul(a, bt, transpose_b=True))
               + gc.reduce_sum(gc.matmul(a, a, transpose_a=True))
               + gc.reduce_sum(gc.matmul(b, bt, transpose_a=True, transpose_b=True))
               + gc.reduce_sum(gc.matmul(a, v) * w) + gc.reduce_sum(gc.matmul(w, a)) + gc.reduce_sum(gc.matmul(v, v) * v)),
    "Sum": ([("f", (2, 3, 2))], lambda x: gc.reduce_sum(x, axis=1) * gc.reduce_sum(x, axis=[0, 2], keepdims=True)[0, 0]),
    "Prod": ([("p", (2, 3))], lambda x: gc.reduce_prod(x, axis=0)),
    "Max": ([("f", (3, 4))], lambda x: gc.reduce_max(x, axis=1)),
    "Min": ([("f", (3, 4))], lambda x: gc.reduce_min(x)),
    "Mean": ([("f", (3, 4))], lambda x: gc.reduce_mean(x, axis=0)),
    "Identity": ([("f", (3,))], gc.identity),
    "Cast": ([("f", (3,))], lambda x: array_ops.cast_op(x, dtype=gc.float64)),
    "Fill": ([("f", ())], lambda v: gc.fill([2, 3], v)),
    "Reshape": ([("f", (2, 3))], lambda x: gc.reshape(x, [3, 2])),
    "Transpose": ([("f", (2, 3, 4))], lambda x: gc.transpose(x, [2, 0, 1])),
    "ExpandDims": ([("f", (2, 3))], lambda x: gc.expand_dims(x, 1)),
    "Squeeze": ([("f", (2, 1, 3))], lambda x: gc.squeeze(x, 1)),
    "ConcatV2": ([("f", (2, 3)), ("f", (1, 3))], lambda a, b: gc.concat([a, b, a], 0)),
    "Pack": ([("f", (2,)), ("f", (2,))], lambda a, b: gc.stack([a, b], axis=1)),
    "Unpack": ([("f", (3, 2))], lambda x: gc.unstack(x)[0] * 2.0 + gc.unstack(x)[2]),
    "Tile": ([("f", (2, 3))], lambda x: gc.tile(x, [2, 2])),
    "Slice": ([("f", (4, 3))], lambda x: gc.slice(x, [1, 0], [2, -1])),
    "StridedSlice": ([("f", (5, 4))], lambda x: x[1:4:2, 1] + x[-1, ::3][0]),
    "GatherV2": ([("f", (4, 3))], lambda x: gc.gather(x, _c([0, 2, 0]), axis=0)),
    "Select": ([("f", (2, 3)), ("f", (2, 3))], lambda a, b: gc.where(a > b, a * 2.0, b)),
    "TensorListPushBack": ([("f", (2,)), ("f", (2,))],
                           lambda a, b: gc.tensor_list_stack(gc.tensor_list_push_back(
                               gc.tensor_list_push_back(gc.tensor_list_new(gc.float64, [2]), a), b), gc.float64, [2])),
    "TensorListPopBack": ([("f", (3, 2))],
                          lambda x: gc.tensor_list_pop_back(_list_of(x), gc.float64, [2])[1] * 3.0
                          + gc.tensor_list_stack(gc.tensor_list_pop_back(_list_of(x), gc.float64, [2])[0],
                                                 gc.float64, [2])[0]),
    "TensorListStack": ([("f", (3, 2))], lambda x: gc.tensor_list_stack(_list_of(x), gc.float64, [2])),
    "TensorListFromTensor": ([("f", (3, 2))], lambda x: gc.tensor_list_get_item(_list_of(x * x), 1, gc.float64, [2])),
    "TensorListGetItem": ([("f", (3, 2))], lambda x: gc.tensor_list_get_item(_list_of(x), 2, gc.float64, [2])),
    "TensorListAddN": ([("f", (3, 2)), ("f", (3, 2))],
                       lambda a, b: gc.tensor_list_stack(list_ops.list_add_n_op(_list_of(a), _list_of(b)), gc.float64,
                                                         [2])),
    "TensorListGetItemGrad": ([("f", (3, 2)), ("f", (2,))],
                              lambda x, d: gc.tensor_list_stack(list_ops.get_item_grad_op(_list_of(x), _c(1), d),
                                                                gc.float64, [2])),
    "BroadcastTo": ([("f", (1, 3))], lambda x: array_ops.broadcast_to_op(x, _c([2, 2, 3]))),
    "UnbroadcastTo": ([("f", (2, 2, 3))], lambda x: array_ops.unbroadcast_to_op(x, _c([2, 1]))
                      if False else array_ops.unbroadcast_to_op(x, _c([1, 3]))),
    "BroadcastReduced": ([("f", (2,))], lambda x: math_ops.broadcast_reduced_op(x, _c([2, 3]), axis=1,
                                                                                keepdims=False)),
    "TileGrad": ([("f", (4, 6))], lambda x: array_ops.tile_grad_op(x, _c([2, 3]), _c([2, 2]))),
    "SliceGrad": ([("f", (2, 2))], lambda x: array_ops.slice_grad_op(x, _c([4, 3]), _c([1, 1]))),
    "StridedSliceGrad": ([("f", (2,))], lambda x: array_ops.strided_slice_grad_op(
        x, _c([5, 4]), spec=(("slice", ("c", 1), ("c", 4), ("c", 2)), ("index", ("c", 1))))),
    "GatherGrad": ([("f", (3, 2))], lambda x: array_ops.gather_grad_op(x, _c([0, 2, 0]), _c([4, 2]), axis=0)),
    "SplitByShapes": ([("f", (5, 2))], lambda x: array_ops.split_by_shapes_op(x, _c([2, 2]), _c([3, 2]), axis=0)[1]),
    # a Python call's gradient is the user's grad=, also called when the graph runs
    "PyFunction": ([("f", (2, 3)), ("p", (3,))], lambda a, b: gc.py_function(
        lambda u, v: u * np.sin(v), [a, b], gc.float64, shapes=[2, 3],
        grad=lambda u, v, dy: (dy * np.sin(v), (dy * u * np.cos(v)).sum(axis=0)))),
}

# The five primitives are checked through cond and while_loop in test_gradients_control_flow.py;
# reads of variables (whose gradient goes to the variable) in test_variables.py.
CONTROL_FLOW = {"Switch", "Merge", "Enter", "Exit", "NextIteration", "ReadVariableOp"}
# ... and a compiled loop's rule refuses (tests/autograph/test_compiled_loops.py)
REFUSING = {"CompiledLoop"}


def _v2(build):
    """`build()` with conds and loops built as If and While ops."""
    with gc.control_flow_v2():
        return build()


def test_every_op_has_a_gradient_or_a_reason():
    missing = [t for t, d in gc.registered_ops().items() if d.grad_fn is None and d.no_gradient_reason is None]
    assert not missing, f"ops with neither a gradient rule nor .not_differentiable(reason): {missing}"
    untested = [t for t, d in gc.registered_ops().items()
                if d.grad_fn is not None and t not in CASES and t not in CONTROL_FLOW | REFUSING]
    assert not untested, f"ops with a gradient rule but no finite-difference case in CASES: {untested}"


@pytest.mark.parametrize("op_type", sorted(CASES))
def test_gradient_matches_finite_differences(op_type):
    specs, build = CASES[op_type]
    rng = np.random.default_rng(abs(hash(op_type)) % 2 ** 32)
    values = []
    for kind, shape in specs:
        v = rng.normal(size=shape) if kind == "f" else rng.uniform(0.5, 2.0, size=shape)
        values.append(np.asarray(v, dtype=np.float64))
    g = gc.Graph()
    with g.as_default():
        xs = [gc.placeholder(gc.float64, v.shape, name=f"x{i}") for i, v in enumerate(values)]
        out = build(*xs)
        assert any(op.type == op_type for op in g.get_operations()), f"the case for {op_type} does not build it"
        w = gc.placeholder(gc.float64, None, name="w")
        loss = gc.reduce_sum(out * w)
        grads = gc.gradients(loss, xs)
    s = Session(g, num_threads=1)
    feeds = dict(zip(xs, values))
    feeds[w] = rng.normal(size=np.shape(s.run(out, feeds)))
    sym = s.run([t if t is not None else loss for t in grads], feeds)
    sym = [v if t is not None else None for v, t in zip(sym, grads)]
    for i, (x, gsym) in enumerate(zip(xs, sym)):
        def f(v, i=i):
            d = dict(feeds)
            d[xs[i]] = v
            return s.run(loss, d)

        num = numeric_grad(f, values[i])
        if gsym is None:  # the output does not depend on this input's values
            np.testing.assert_allclose(num, 0.0, atol=1e-9, err_msg=f"{op_type}: no gradient for input {i}")
            continue
        np.testing.assert_allclose(np.asarray(gsym), num, rtol=1e-5, atol=1e-7, err_msg=f"{op_type} input {i}")


@pytest.mark.parametrize("op_type", ["Mul", "Tanh", "MatMul", "Sum", "StridedSlice", "Pow", "Max"])
def test_second_order_matches_finite_differences_of_the_gradient(op_type):
    specs, build = CASES[op_type]
    rng = np.random.default_rng(7)
    values = [np.asarray(rng.normal(size=s) if k == "f" else rng.uniform(0.5, 2.0, size=s)) for k, s in specs]
    g = gc.Graph()
    with g.as_default():
        xs = [gc.placeholder(gc.float64, v.shape, name=f"x{i}") for i, v in enumerate(values)]
        out = build(*xs)
        loss = gc.reduce_sum(out * out)
        g1 = gc.gradients(loss, xs)
        y1 = gc.add_n([gc.reduce_sum(t * t) for t in g1 if t is not None])
        g2 = gc.gradients(y1, xs)
    s = Session(g, num_threads=1)
    feeds = dict(zip(xs, values))
    sym = s.run(g2, feeds)
    for i in range(len(xs)):
        def f(v, i=i):
            d = dict(feeds)
            d[xs[i]] = v
            return s.run(y1, d)

        np.testing.assert_allclose(np.asarray(sym[i]), numeric_grad(f, values[i]), rtol=1e-5, atol=1e-6)


def test_errors():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        with pytest.raises(gc.GraphError, match="not a scalar"):
            gc.gradients(x * 2.0, [x])
        i = gc.placeholder(gc.int64, [], name="i")
        assert gc.gradients(gc.reduce_sum(x) * 1.0, [i]) == [None]
        assert gc.gradients(gc.cast(i, gc.float64) * 2.0, [i]) == [None]
        assert gc.gradients(gc.reduce_sum(gc.stop_gradient(x)), [x]) == [None]
    from graphcore.registry import define_op, same_as_input
    try:
        nograd = define_op("TestNoGradientOp", shape=same_as_input, kernel=lambda v: v)
        with g.as_default():
            y = gc.reduce_sum(nograd(x))
            with pytest.raises(gc.GraphError, match="TestNoGradientOp.*test_gradients_ops.py"):
                gc.gradients(y, [x])
    finally:
        from graphcore import registry
        registry._REGISTRY.pop("TestNoGradientOp", None)


def test_several_consumers_are_summed_with_addn():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = x * x + gc.tanh(x) + x
        dx, = gc.gradients(y, [x])
    assert dx.op.type == "AddN"
    assert abs(Session(g, num_threads=1).run(dx, {x: 0.3}) - (0.6 + 1 - np.tanh(0.3) ** 2 + 1)) < 1e-12
