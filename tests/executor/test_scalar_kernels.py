"""Python operators as kernels (executor/scalar_kernels.py) give what the ops' numpy
kernels give: the same value, the same dtype, and no warning or error where numpy has none
(integer overflow wraps around silently in numpy's ufuncs)."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graphcore as gc
from executor.scalar_kernels import scalar_kernel

BINARY = ["Add", "Sub", "Mul", "RealDiv", "FloorDiv", "Mod", "Less", "LessEqual", "Greater", "GreaterEqual",
          "Equal", "NotEqual"]
INTS = [np.int32, np.int64]
FLOATS = [np.float32, np.float64]


def _op(op_type, dtype, arity=2):
    g = gc.Graph()
    with g.as_default():
        xs = [gc.placeholder(gc.as_dtype(np.dtype(dtype)), [], name=f"x{i}") for i in range(arity)]
        return g.create_op(gc.registry.get_op_def(op_type), xs, {}, capture=False)


def _same(fast, slow, args):
    with warnings.catch_warnings(record=True) as slow_warnings, np.errstate(all="warn"):
        warnings.simplefilter("always")
        want = slow(*args)
    if slow_warnings:
        return  # numpy warned (a division by zero, a float overflow): the operator may say it otherwise
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        got = fast(*args)
    assert type(got) is type(want), (args, got, want)
    np.testing.assert_equal(got, want)


def _ints(dtype):
    info = np.iinfo(dtype)
    edges = st.sampled_from([info.min, info.max, 0, 1, -1, 2, info.max // 2, info.min // 2, 2 ** (info.bits // 2)])
    return st.one_of(edges, st.integers(int(info.min), int(info.max))).map(dtype)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op_type", BINARY)
@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_integer_ops_agree_with_numpy_and_never_overflow_loudly(op_type, dtype, data):
    op = _op(op_type, dtype)
    fast = scalar_kernel(op)
    if fast is None:
        assert op_type == "RealDiv"  # int / int is float64: left to numpy
        return
    a, b = data.draw(_ints(dtype)), data.draw(_ints(dtype))
    _same(fast, op.op_def.kernel, (a, b))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op_type", BINARY)
@settings(max_examples=80, deadline=None)
@given(a=st.floats(allow_nan=True, allow_infinity=True, width=32),
       b=st.floats(allow_nan=True, allow_infinity=True, width=32))
def test_float_ops_agree_with_numpy(op_type, dtype, a, b):
    op = _op(op_type, dtype)
    fast = scalar_kernel(op)
    assert fast is not None
    _same(fast, op.op_def.kernel, (dtype(a), dtype(b)))


@pytest.mark.parametrize("op_type", ["LogicalAnd", "LogicalOr", "Equal", "NotEqual", "LogicalNot"])
def test_bool_ops_agree_with_numpy(op_type):
    arity = 1 if op_type == "LogicalNot" else 2
    op = _op(op_type, np.bool_, arity)
    fast = scalar_kernel(op)
    for a in (np.False_, np.True_):
        for b in (np.False_, np.True_):
            _same(fast, op.op_def.kernel, (a, b)[:arity])


def test_anything_but_numpy_scalars_of_the_dtype_goes_to_numpy():
    fast = scalar_kernel(_op("Add", np.int64))
    assert type(fast(5, 7)) is np.int64                     # Python ints: numpy's answer
    np.testing.assert_array_equal(fast(np.arange(3), np.int64(1)), [1, 2, 3])
    assert fast(np.int64(2 ** 62), np.int64(2 ** 62)) == np.add(np.int64(2 ** 62), np.int64(2 ** 62))  # wraps


def test_ops_with_attributes_or_other_types_keep_their_kernel():
    assert scalar_kernel(_op("Maximum", np.float64)) is None  # NaN: np.maximum is not max()
    assert scalar_kernel(_op("Pow", np.int64)) is None


def _source_kernel(op_type, dtype, arity=2):
    """scalar_source's expression, compiled as the compiled-loop generator uses it."""
    from executor.scalar_kernels import scalar_source

    args = [f"a{i}" for i in range(arity)]
    made = scalar_source(op_type, [np.dtype(dtype)] * arity, args, "fallback", "T")
    if made is None:
        return None
    env = {"fallback": gc.registry.get_op_def(op_type).kernel, "T": made[1]}
    exec(f"def f({', '.join(args)}):\n    return {made[0]}\n", env)  # noqa: S102
    return env["f"]


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op_type", BINARY)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_the_written_out_operator_agrees_with_numpy_too(op_type, dtype, data):
    fast = _source_kernel(op_type, dtype)
    if fast is None:
        assert op_type == "RealDiv"
        return
    a, b = data.draw(_ints(dtype)), data.draw(_ints(dtype))
    _same(fast, gc.registry.get_op_def(op_type).kernel, (a, b))


@pytest.mark.parametrize("shape, has_operator", [([], True), (None, True), ([3], False), ([None, 4], False)])
def test_no_operator_kernel_for_an_op_whose_input_is_known_to_be_an_array(shape, has_operator):
    """An input of rank 1 or more is never a numpy scalar: the op gets its own kernel, without
    the operator's type test in front of it (an unknown shape may be a scalar's)."""
    g = gc.Graph()
    with g.as_default():
        a = gc.placeholder(gc.float32, shape, name="a")
        b = gc.placeholder(gc.float32, [], name="b")
        op = g.create_op(gc.registry.get_op_def("Add"), [a, b], {}, capture=False)
    assert (scalar_kernel(op) is not None) == has_operator
