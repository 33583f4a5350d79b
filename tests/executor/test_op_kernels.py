"""executor/op_kernels.py: the kernels written once from an op's attributes give the generic
kernel's values and errors, and the executor, fused ops and compiled loops run them."""
import numpy as np
import pytest

import executor.blas
import executor.executor
import executor.kernel_contract
import executor.plan
import graphcore as gc
from executor import Session
from executor.fused_kernel import step_kernel
from executor.op_kernels import specialized_kernel
from graphcore.registry import get_op_def


def _slices():
    """StridedSlice ops of many index forms, each with the values of its dynamic inputs."""
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [4, 5, 6], name="x")
        t = gc.placeholder(gc.int64, [], name="t")
        u = gc.placeholder(gc.int64, [], name="u")
        ys = [x[t], x[-1], x[1:t], x[t, ::2, u], x[..., u], x[None, t], x[:, None, 1:-1:2],
              x[u:, t], x[::-1, -u], x[..., 1:u, None]]
    feeds = {t: np.int64(2), u: np.int64(-3)}
    return [(y.op, Session(g).run(list(y.op.inputs[1:]), feeds)) for y in ys]


def test_strided_slices_equal_the_generic_kernel_and_stay_views():
    x = np.arange(120.0).reshape(4, 5, 6)
    generic = get_op_def("StridedSlice").kernel
    for op, args in _slices():
        assert op.type == "StridedSlice"
        fast = specialized_kernel("StridedSlice", op.attrs)
        want = generic(x, *args, **op.attrs)
        got = fast(x, *args)
        assert got.dtype == want.dtype and got.shape == want.shape, op.attrs
        np.testing.assert_array_equal(got, want)
        assert np.shares_memory(got, x) == np.shares_memory(want, x)


def test_strided_slice_errors_and_index_conversions_are_the_generic_kernels():
    spec = _slices()[0][0].attrs  # x[t]
    fast, generic = specialized_kernel("StridedSlice", spec), get_op_def("StridedSlice").kernel
    x = np.arange(12).reshape(4, 3)
    for t in (np.int64(7), np.int64(-5)):
        with pytest.raises(IndexError) as want:
            generic(x, t, **spec)
        with pytest.raises(IndexError) as got:
            fast(x, t)
        assert str(got.value) == str(want.value)
    np.testing.assert_array_equal(fast(x, np.float64(2.7)), generic(x, np.float64(2.7), **spec))  # int(): 2
    np.testing.assert_array_equal(fast([[1, 2], [3, 4]], np.int32(1)), [3, 4])  # (np.asarray of a list)


_I = np.iinfo(np.int64)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
@pytest.mark.parametrize("x, y", [
    (np.int64(6), np.int64(-7)), (np.int64(_I.max), np.int64(0)), (np.int64(_I.min), np.int64(1)),
    (np.int64(_I.max), np.int64(1)), (np.int64(_I.min), np.int64(-1)), (np.int64(2 ** 40), np.int64(2 ** 40)),
    (np.float64(1.5), np.float64(-2.25)), (np.float64(1e308), np.float64(1e308)), (np.float64(np.nan), np.float64(1)),
    (np.int64(3), np.float64(0.5)), (np.float64(0.5), np.int64(3)), (np.bool_(True), np.int64(2))])
def test_python_arithmetic_equals_the_generic_kernel(op, x, y):
    """PythonArith's kernel for +, - and *: Python's value and its type (an int64 or a float64),
    and past int64 the generic kernel's OverflowError."""
    generic = get_op_def("PythonArith").kernel
    fast = specialized_kernel("PythonArith", {"op": op})
    assert fast is not None
    try:
        want = generic(x, y, op=op)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e), match="beyond int64"):
            fast(x, y)
        return
    got = fast(x, y)
    assert type(got) is type(want) and (got == want or np.isnan(got) and np.isnan(want))
    assert specialized_kernel("PythonArith", {"op": "FloorDiv"}) is None  # (its own rules: the generic kernel)


def test_a_loop_over_ranges_multiplies_its_counters_by_the_python_arith_kernel(monkeypatch):
    from autograph import function  # noqa: PLC0415

    calls = []
    real = specialized_kernel

    def counting(op_type, attrs):
        k = real(op_type, attrs)
        if op_type == "PythonArith" and k is not None:
            calls.append(attrs["op"])
        return k
    monkeypatch.setattr(executor.plan, "specialized_kernel", counting)

    def nested(n):
        s = np.int64(0)
        for i in range(n):
            for j in range(n):
                s += i * j
        return s
    assert function(nested)(np.int64(7)) == nested(np.int64(7)) == 441
    assert "Mul" in calls


def test_matmul_without_transposes_is_numpy_matmul_itself():
    assert specialized_kernel("MatMul", {"transpose_a": False, "transpose_b": False}) is np.matmul
    assert specialized_kernel("MatMul", {}) is np.matmul
    assert specialized_kernel("MatMul", {"transpose_a": True, "transpose_b": False}) is None
    assert specialized_kernel("Tanh", {}) is None
    step = ("MatMul", (0, 1), {"transpose_a": False, "transpose_b": False}, "mm", "", gc.float32)
    assert step_kernel(step, [np.dtype(np.float32)] * 2) is np.matmul


def test_fused_steps_on_arrays_call_the_ops_kernels_without_a_scalar_test(monkeypatch):
    """tanh(h @ w + b) fused: the Add's inputs are arrays (static rank 2), so its step calls
    np.add itself, not the scalar operator's wrapper that would test both types first; a step
    on scalars keeps the wrapper. Values the same as unfused."""
    monkeypatch.setattr(executor.kernel_contract, "_enabled", False)
    g = gc.Graph()
    with g.as_default():
        h = gc.placeholder(gc.float32, [3, 4], name="h")
        a = gc.placeholder(gc.float32, [], name="a")
        y = gc.tanh(h + h * 2.0)
        z = gc.tanh(a + a * 2.0)
    s = Session(g, optimize=True)
    hv, av = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), np.float32(0.25)
    out = s.run([y, z], {h: hv, a: av})
    assert np.array_equal(out[0], np.tanh(hv + hv * np.float32(2.0))) and out[1] == np.tanh(av + av * np.float32(2.0))
    plan = next(iter(s._plans.values()))
    fused = {tuple(it.op.outputs[0].shape.as_list() or ()): it.kernel for it in plan.items
             if it.op is not None and it.op.type == "Fused"}
    on_arrays, on_scalars = fused[(3, 4)], fused[()]
    assert on_arrays.__globals__["k1"] is np.add and on_arrays.__globals__["k0"] is np.multiply
    assert on_scalars.__globals__["k1"] is not np.add  # (the operator, tested for numpy scalars)


def _rnn(T=6, H=8, B=3):
    g = gc.Graph()
    with g.as_default():
        W = gc.placeholder(gc.float32, [H, H], name="W")
        h0 = gc.placeholder(gc.float32, [B, H], name="h0")
        xs = gc.placeholder(gc.float32, [T, B, H], name="xs")
        _, h = gc.while_loop(lambda t, h: t < T, lambda t, h: (t + 1, gc.tanh(gc.matmul(h, W) + xs[t])),
                             [gc.constant(np.int64(0)), h0])
    rng = np.random.default_rng(0)
    feeds = {W: rng.normal(size=(H, H)).astype(np.float32), h0: rng.normal(size=(B, H)).astype(np.float32),
             xs: rng.normal(size=(T, B, H)).astype(np.float32)}
    want = feeds[h0]
    for t in range(T):
        want = np.tanh(want @ feeds[W] + feeds[xs][t])
    return g, h, feeds, want


@pytest.mark.parametrize("jit", [False, True])
def test_a_loop_runs_the_specialized_kernels_with_the_same_values(jit, monkeypatch):
    monkeypatch.setattr(executor.kernel_contract, "_enabled", False)  # (the suite wraps every kernel)
    g, h, feeds, want = _rnn()
    s = Session(g, jit_compile=jit)
    out = s.run(h, feeds)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, want)
    if not jit:
        plan = next(iter(s._plans.values()))
        kernels = {it.op.type: it.kernel for it in plan.items if it.op is not None}
        assert kernels["MatMul"] is np.matmul
        assert kernels["StridedSlice"].source.startswith("def strided_slice(x, d0")


def test_heavy_fused_ops_of_known_shapes_are_estimated_once_in_the_plan(monkeypatch):
    """(estimate_ns of a Fused op costs microseconds: not per run of the node)"""
    monkeypatch.setattr(executor.blas, "threads", lambda: 1)  # (else a matmul never takes the heavy path)
    T, H, B = 3, 512, 64
    g = gc.Graph()
    with g.as_default():  # two RNN cells side by side: their steps may overlap
        W = gc.placeholder(gc.float32, [H, H], name="W")
        h0 = gc.placeholder(gc.float32, [B, H], name="h0")
        _, h, k = gc.while_loop(lambda t, h, k: t < T,
                                lambda t, h, k: (t + 1, gc.tanh(gc.matmul(h, W) + 1.0), gc.tanh(gc.matmul(k, W) - 1.0)),
                                [gc.constant(np.int64(0)), h0, h0])
    rng = np.random.default_rng(0)
    w, x = rng.normal(size=(H, H)).astype(np.float32) / 20, rng.normal(size=(B, H)).astype(np.float32)
    s = Session(g, optimize=True, num_threads=2)
    s.run([h, k], {W: w, h0: x})
    plan = next(iter(s._plans.values()))
    fused = [it for it in plan.items if it.op is not None and it.op.type == "Fused"]
    assert len(fused) == 2 and not any(it.cheap for it in fused) and all(it.cost_ns > 0 for it in fused)
    assert plan.needs_pool

    def no_estimate(*a):
        raise AssertionError("estimated per run")
    monkeypatch.setattr(executor.executor, "estimate_ns", no_estimate)
    want_h, want_k = x, x
    for _ in range(T):
        want_h, want_k = np.tanh(want_h @ w + np.float32(1)), np.tanh(want_k @ w - np.float32(1))
    out = s.run([h, k], {W: w, h0: x})
    np.testing.assert_allclose(out[0], want_h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[1], want_k, rtol=1e-5, atol=1e-5)


def test_a_lone_heavy_op_on_a_recurrence_runs_inline_without_the_pool(monkeypatch):
    """Each step of an RNN waits for the one before, and nothing else is heavy: no two heavy
    kernels are ever ready at once, so the plan needs no pool (no lock, no heavy-op queue)."""
    monkeypatch.setattr(executor.blas, "threads", lambda: 1)
    g, h, feeds, want = _rnn(T=4, H=512, B=64)
    s = Session(g, optimize=True, num_threads=2)
    np.testing.assert_allclose(s.run(h, feeds), want, rtol=1e-4, atol=1e-5)
    plan = next(iter(s._plans.values()))
    fused = [it for it in plan.items if it.op is not None and it.op.type == "Fused"]
    assert len(fused) == 1 and fused[0].cost_ns > 80_000 and fused[0].cheap and not plan.needs_pool
    # one heavy op whose steps do not wait for each other (a sum of x[t] @ W) may use the pool
    T, H, B = 4, 512, 64
    g = gc.Graph()
    with g.as_default():
        W = gc.placeholder(gc.float32, [H, H], name="W")
        xs = gc.placeholder(gc.float32, [T, B, H], name="xs")
        _, acc = gc.while_loop(lambda t, a: t < T, lambda t, a: (t + 1, a + gc.reduce_sum(gc.matmul(xs[t], W))),
                               [gc.constant(np.int64(0)), gc.constant(np.float32(0))])
    s = Session(g, optimize=True, num_threads=2)
    x = np.ones((T, B, H), np.float32)
    assert s.run(acc, {W: np.ones((H, H), np.float32), xs: x}) == T * B * H * H
    plan = next(iter(s._plans.values()))
    assert plan.needs_pool and [it.op.type for it in plan.items if not it.cheap] == ["MatMul"]
