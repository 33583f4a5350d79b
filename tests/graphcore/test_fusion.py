"""The fusion pass (graphcore/passes/fusion.py) and the Fused op: what it fuses, what it
leaves alone, that fused graphs compute exactly what the unfused ones did (values and
dtypes), that a failing step is reported at its own line, and that fused graphs survive a
JSON round trip. Gradients of Fused are checked in test_gradients_ops.py."""
import numpy as np
import pytest

import graphcore as gc
from autograph import function
from executor import Session
from executor.fused_kernel import fused_kernel
from graphcore.passes import optimize
from samples import find_sample


def fused_ops(g):
    return [op for op in g.get_operations() if op.type == "Fused"]


def steps_of(op):
    return [s[0] for s in op.attrs["steps"]]


def run_both(build, feeds_of, **kw):
    """Build twice, fuse the second; results must be equal in value and dtype. Returns the
    fused graph and the two runs' node counts."""
    g0, f0, p0 = build()
    s0 = Session(g0, num_threads=1)
    expected = s0.run(f0, feeds_of(p0))
    g, fetches, p = build()
    report = optimize(g, fetches, passes=["fusion"], validate=True, **kw)
    s = Session(g, num_threads=1)
    got = s.run(report.fetches, feeds_of(p))
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(a, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype
    return g, s0.last_stats.nodes, s.last_stats.nodes


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("activation", [gc.tanh, gc.relu, gc.sigmoid])
def test_matmul_bias_activation_is_one_op(dtype, activation):
    rng = np.random.default_rng(0)
    values = [rng.normal(size=s).astype(dtype) for s in ((8, 5), (5, 3), (3,))]

    def build():
        g = gc.Graph()
        with g.as_default():
            x, w, b = (gc.placeholder(gc.as_dtype(dtype), v.shape) for v in values)
            y = activation(gc.matmul(x, w) + b)
        return g, [y], (x, w, b)

    g, _, _ = run_both(build, lambda p: dict(zip(p, values)))
    (op,) = fused_ops(g)
    assert steps_of(op) == ["MatMul", "Add", activation.__name__.capitalize()]
    assert [t.op.type for t in op.inputs] == ["Placeholder"] * 3


def _chains_graph(n_chains, depth, tail=None):
    rng = np.random.default_rng(1)
    values = [rng.normal(size=(4, 4)) for _ in range(n_chains)] + [rng.normal(size=(4, 4)) / 2]

    def build():
        g = gc.Graph()
        with g.as_default():
            ps = [gc.placeholder(gc.float64, (4, 4)) for _ in values]
            *xs, w = ps
            total = None
            for x in xs:
                for _ in range(depth):
                    x = gc.matmul(x, w)
                x = tail(x) if tail is not None else x
                total = x if total is None else total + x
        return g, [total], ps
    return build, lambda p: dict(zip(p, values))


def test_a_fused_op_holds_one_heavy_op_and_no_wait_for_another_branch():
    """8 chains of matmuls summed: each MatMul stays a node of its own, so the executor's
    pool runs the chains side by side (one Fused op of all 80 ran them one after the other)."""
    build, feeds = _chains_graph(8, 10)
    g, _, _ = run_both(build, feeds)
    assert [steps_of(op) for op in fused_ops(g)] == [["Add"] * 7]  # the sum alone
    assert sum(op.type == "MatMul" for op in g.get_operations()) == 80


def test_the_cheap_work_after_a_heavy_op_waits_for_no_other_branch():
    """tanh(x @ w) per chain, summed: the tanhs and the sum fuse, but no matmul joins them (the
    fused op would start once both chains are done, and that matmul would wait for the other)."""
    build, feeds = _chains_graph(2, 3, tail=gc.tanh)
    g, _, _ = run_both(build, feeds)
    (op,) = fused_ops(g)
    assert steps_of(op) == ["Tanh", "Tanh", "Add"]
    assert [t.op.type for t in op.inputs] == ["MatMul", "MatMul"]


def test_two_matmuls_of_one_sum_are_not_fused_together():
    rng = np.random.default_rng(2)
    values = [rng.normal(size=(3, 3)) for _ in range(4)]

    def build():
        g = gc.Graph()
        with g.as_default():
            x, w, h, u = (gc.placeholder(gc.float64, (3, 3)) for _ in values)
            y = gc.tanh(gc.matmul(x, w) + gc.matmul(h, u))
        return g, [y], (x, w, h, u)

    g, _, _ = run_both(build, lambda p: dict(zip(p, values)))
    (op,) = fused_ops(g)
    assert steps_of(op) == ["Add", "Tanh"]  # both matmuls outside, free to run at once
    assert [t.op.type for t in op.inputs] == ["MatMul", "MatMul"]


collatz = find_sample("collatz").python_function


def test_scalar_loop_runs_fewer_nodes_and_agrees_with_python():
    fused, plain = function(collatz), function(collatz, skip_passes=("fusion",))
    for n in (np.int64(27), np.int32(97), np.int64(1)):
        assert fused(n) == plain(n) == collatz(n)
    graph = fused.get_concrete_function(np.int64(27)).graph
    assert {tuple(steps_of(op)) for op in fused_ops(graph)} >= {("Const", "Mul", "Const", "Add")}  # 3 * n + 1
    ran = {}
    for name, f in (("fused", fused), ("plain", plain)):
        c = f.get_concrete_function(np.int64(27))
        c(np.int64(27))
        ran[name] = c.session.last_stats.nodes
    assert ran["fused"] < 0.85 * ran["plain"]


def test_what_fusion_leaves_alone():
    """An intermediate read outside the tree, a fetched intermediate, a cond's predicate,
    ops in another control-flow context and ops with control outputs stay as they are."""
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [3], name="x")
            shared = gc.exp(x)                     # read by two trees
            a = gc.tanh(shared) * 2.0
            b = gc.sqrt(shared) + 1.0
            fetched = gc.sin(x)                    # fetched itself
            c = fetched * 3.0
            p = gc.reduce_sum(x) > 0.0             # the cond's predicate: an anchor
            d = gc.cond(p, lambda: x * 2.0 + 1.0, lambda: x - 1.0)
            waited_for = gc.cos(x) * 4.0               # something waits for it
            with g.control_dependencies([waited_for.op]):
                e = gc.identity(x)
        return g, [a, b, fetched, c, d, e, waited_for], x

    g, _, _ = run_both(build, lambda x: {x: np.array([0.5, -1.0, 2.0])})
    kinds = [op.type for op in g.get_operations()]
    assert "Exp" in kinds and "Sin" in kinds and "Greater" in kinds and "Cos" in kinds
    trees = sorted(tuple(steps_of(op)) for op in fused_ops(g))
    assert ("Const", "Mul", "Const", "Add") in trees  # x * 2.0 + 1.0, inside the true branch only
    for op in fused_ops(g):
        assert "Exp" not in steps_of(op) and "Sin" not in steps_of(op)


def test_a_fused_op_in_an_untaken_branch_is_dead_and_in_a_loop_runs_each_iteration():
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [], name="x")
            y = gc.cond(x > 0.0, lambda: gc.tanh(x * 3.0 + 1.0), lambda: gc.exp(x) * 2.0)
            _, z = gc.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, v * 0.5 + x), [0, x])
        return g, [y, z], x

    for v in (0.7, -0.7):
        g, _, _ = run_both(build, lambda x, v=v: {x: np.float64(v)})
        assert len(fused_ops(g)) >= 3


def add_then_double(x, y):
    return (x + y) * 2.0


def test_a_failing_step_is_reported_at_its_own_line():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [None], name="x")
        y = gc.placeholder(gc.float64, [None], name="y")
        z = add_then_double(x, y)
    z = optimize(g, [z], passes=["fusion"]).fetches[0]
    assert z.op.type == "Fused"
    with pytest.raises(gc.ExecutionError) as e:
        Session(g).run(z, {x: np.ones(3), y: np.ones(4)})
    message = str(e.value)
    assert "(Add)" in message and "test_fusion.py" in message
    assert f":{add_then_double.__code__.co_firstlineno + 1}" in message


def test_generated_kernel_has_one_line_per_step_and_binds_constants():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        y = 3 * n + 1
    y = optimize(g, [y], passes=["fusion"]).fetches[0]
    kernel = fused_kernel(y.op)
    assert kernel.source.count("= k") == 2 and "c0" in kernel.source
    for v in (np.int64(5), np.int64(2 ** 62), np.int64(-7)):  # wraps around as numpy's ufuncs do
        expected = np.add(np.multiply(np.int64(3), v), np.int64(1))
        assert kernel(v) == expected and type(kernel(v)) is np.int64


def test_fused_graph_survives_json():
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float32, [2, 2], name="x")
            y = gc.relu(gc.matmul(x, x) - 0.5)
        return g, [y], x

    g, _, _ = run_both(build, lambda x: {x: np.eye(2, dtype=np.float32)})
    g2 = gc.Graph.from_json(g.to_json())
    (op,) = fused_ops(g2)
    x2 = next(o for o in g2.get_operations() if o.name == "x").outputs[0]
    v = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    np.testing.assert_array_equal(Session(g2).run(op.outputs[0], {x2: v}), np.maximum(v @ v - np.float32(0.5), 0))
