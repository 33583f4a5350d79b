"""The IR: naming, scopes, control dependencies, source lines, operators, weak typing, eager."""
import numpy as np
import pytest

import graphcore as gc
from executor import Session


def run(fetches, feeds=None, g=None):
    return Session(g or gc.get_default_graph(), num_threads=1).run(fetches, feeds)


def test_names_are_unique_and_readable():
    g = gc.Graph()
    with g.as_default():
        a = gc.constant(1.0)
        b = a + a
        c = a + b
        with g.name_scope("layer"):
            d = c * 2.0
        with g.name_scope("layer"):
            e = d * 2.0
    assert b.op.name == "add" or b.op.name == "Add"
    assert c.op.name == b.op.name + "_1"
    assert d.op.name.startswith("layer/")
    assert e.op.name.startswith("layer_1/")
    assert g.get_tensor_by_name(c.name) is c
    assert len({op.name for op in g.operations}) == len(g.operations)


def test_every_op_records_the_user_line_and_device():
    g = gc.Graph()
    with g.as_default():
        with g.device("cpu:0"):
            x = gc.constant(1.0) * 3.0  # this line is recorded
    src = x.op.source
    assert src.filename == __file__
    assert "this line is recorded" in open(__file__).read().splitlines()[src.lineno - 1]
    assert x.op.device == "cpu:0"


def test_control_dependencies_order_side_effects(capfd):
    g = gc.Graph()
    with g.as_default():
        p1 = gc.print("first")
        with g.control_dependencies([p1]):
            p2 = gc.print("second")
        with g.control_dependencies([p2]):
            out = gc.identity(gc.constant(7))
    assert p1 in out.op.control_inputs or p2 in out.op.control_inputs
    assert run(out, g=g) == 7
    assert capfd.readouterr().out.splitlines() == ["first", "second"]


def test_tensor_as_python_bool_says_what_to_do():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [])
        with pytest.raises(TypeError, match="@autograph.function.*cond"):
            if x > 0:
                pass


def test_operators_build_the_expected_ops():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        m = gc.placeholder(gc.float64, [3, 3], name="m")
        exprs = {"Add": x + 1, "Sub": 1 - x, "Mul": x * x, "RealDiv": x / 2, "FloorDiv": x // 2, "Mod": x % 2,
                 "Pow": x ** 2, "MatMul": m @ m, "Neg": -x, "Abs": abs(x), "Less": x < 1, "LessEqual": x <= 1,
                 "Greater": x > 1, "GreaterEqual": x >= 1, "Equal": x == 1, "NotEqual": x != 1,
                 "StridedSlice": m[:, 0]}
    for t, e in exprs.items():
        assert e.op.type == t
    assert len(x) == 3
    assert m[1:3].shape.dims == (2, 3)
    assert m[:, 0].shape.dims == (3,)
    assert m[0, 1].shape.dims == ()
    xv = np.array([1.5, -2.0, 3.25])
    mv = np.arange(9.0).reshape(3, 3)
    got = run({k: v for k, v in exprs.items()}, {x: xv, m: mv}, g)
    want = {"Add": xv + 1, "Sub": 1 - xv, "Mul": xv * xv, "RealDiv": xv / 2, "FloorDiv": xv // 2, "Mod": xv % 2,
            "Pow": xv ** 2, "MatMul": mv @ mv, "Neg": -xv, "Abs": abs(xv), "Less": xv < 1, "LessEqual": xv <= 1,
            "Greater": xv > 1, "GreaterEqual": xv >= 1, "Equal": xv == 1, "NotEqual": xv != 1,
            "StridedSlice": mv[:, 0]}
    for k in want:
        np.testing.assert_allclose(got[k], want[k], err_msg=k)


def test_indexing_with_tensor_index_and_len_unknown():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [None, 2], name="x")
        i = gc.placeholder(gc.int64, [], name="i")
        row = x[i]
        tail = x[i:]
        with pytest.raises(TypeError, match="len"):
            len(x)
    xv = np.arange(8.0).reshape(4, 2)
    r, t = run([row, tail], {x: xv, i: 2}, g)
    np.testing.assert_array_equal(r, xv[2])
    np.testing.assert_array_equal(t, xv[2:])


def test_python_numbers_are_weakly_typed():
    g = gc.Graph()
    with g.as_default():
        f32 = gc.placeholder(gc.float32, [])
        i64 = gc.placeholder(gc.int64, [])
        assert (f32 + 1.0).dtype == gc.float32
        assert (f32 * 2).dtype == gc.float32
        assert (i64 + 1).dtype == gc.int64
        assert (i64 + 1.5).dtype == gc.float64
        assert (i64 / 2).dtype == gc.float64
        assert (i64 // 2).dtype == gc.int64
        assert (f32 + gc.constant(1.0, dtype=gc.float64)).dtype == gc.float64
        assert (i64 * f32).dtype == gc.float64  # numpy's result_type, not JAX's float32
        assert (gc.cast(i64, gc.int32) + i64).dtype == gc.int64
        assert (f32 + (i64 > 0)).dtype == gc.float32  # a bool counts as the number it meets, as in numpy


@pytest.mark.parametrize("a", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("b", ["float32", "float64", "int32", "int64"])
def test_two_tensors_promote_as_numpy_does(a, b):
    g = gc.Graph()
    with g.as_default():
        x, y = gc.placeholder(gc.as_dtype(a), [2]), gc.placeholder(gc.as_dtype(b), [2])
        z = x * y
    xv, yv = np.array([3, -2], dtype=a), np.array([5, 7], dtype=b)
    assert z.dtype.np_dtype == np.result_type(xv, yv)
    out = Session(g).run(z, {x: xv, y: yv})
    assert out.dtype == (xv * yv).dtype
    np.testing.assert_array_equal(out, xv * yv)


def test_eager_ops_run_at_once():
    assert isinstance(gc.tanh(0.5), np.floating)
    np.testing.assert_allclose(gc.reduce_sum(np.arange(4.0)), 6.0)
    np.testing.assert_allclose(gc.matmul(np.eye(2), np.ones((2, 2))), np.ones((2, 2)))
    assert gc.add(np.float32(1), 2.5).dtype == np.float32
    assert gc.cond(np.bool_(True), lambda: 1, lambda: 2) == 1
    assert gc.while_loop(lambda i: i < 5, lambda i: i + 1, [0]) == 5


def test_shapes_and_dtypes():
    assert gc.TensorShape([None, 3]).is_compatible_with([5, 3])
    assert not gc.TensorShape([2, 3]).is_compatible_with([5, 3])
    from graphcore.shapes import broadcast
    assert broadcast([3, 1], [4]).dims == (3, 4)
    with pytest.raises(ValueError, match="broadcast"):
        broadcast([3], [4])
    assert gc.as_dtype(np.float32) is gc.float32
    assert gc.as_dtype("int64") is gc.int64
    g = gc.Graph()
    with g.as_default():
        with pytest.raises(gc.GraphError, match="MatMul"):
            gc.placeholder(gc.float64, [2, 3]) @ gc.placeholder(gc.float64, [2, 3])


def test_shapes_may_mix_ints_and_scalar_tensors():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [None, 2])
        z = gc.zeros([gc.shape(x)[0], 3])
        r = gc.reshape(x, [gc.shape(x)[0], 2, 1])
        t = gc.tile(x, [gc.shape(x)[0], 1])
    assert z.shape.dims == (None, 3) and r.shape.dims == (None, 2, 1)
    zv, rv, tv = Session(g, num_threads=1).run([z, r, t], {x: np.ones((4, 2))})
    assert zv.shape == (4, 3) and rv.shape == (4, 2, 1) and tv.shape == (16, 2)


def test_rollback_removes_ops_and_the_captures_that_refer_to_them():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        mark = g.checkpoint()
        y = x * 2.0
        g.rollback(mark)
        assert [op.name for op in g.operations] == ["x"]
        assert x.consumers() == []
        z = x + 1.0
    g.validate()
    assert Session(g, num_threads=1).run(z, {x: 1.0}) == 2.0


def test_numpy_ufuncs_on_graph_tensors_build_ops_and_others_say_what_to_do():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        y = np.exp(x) * 2.0 + np.ones(3)
        with pytest.raises(TypeError, match="numpy's arcsinh cannot run on the graph tensor x:0.*graphcore op"):
            np.arcsinh(x)  # (np.arctan has its op now: Arctan)
        with pytest.raises(TypeError, match="numpy.cumsum cannot run on the graph tensor x:0.*no graph version"):
            np.cumsum(x)
        with pytest.raises(TypeError, match="cannot become a numpy array"):
            np.asarray(x)
    xv = np.array([0.0, 1.0, 2.0])
    np.testing.assert_allclose(Session(g, num_threads=1).run(y, {x: xv}), np.exp(xv) * 2 + 1)
