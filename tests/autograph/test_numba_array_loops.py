"""Loops over arrays under `jit_compile="numba"` (executor/numba_numpy_loops.py): numba code
calling numpy's own strided loops. Every value is compared with the frame executor's and
plain numpy's bit for bit (bytes, dtype and shape: NaN payloads and -0.0 included); where
numpy's call cannot be reproduced (broadcasting, an index out of range, a floating-point
exception numpy reports) the Python kernel runs instead and gives numpy's values,
warnings and errors; the run contract (deadline, Ctrl-C) holds."""
from __future__ import annotations

import importlib.util
import os
import signal
import threading
import time
import warnings

import numpy as np
import pytest

pytest.importorskip("numba", reason="the numba backend is optional: pip install -e '.[jit]'")

import executor  # noqa: E402
import graphcore as gc  # noqa: E402
from autograph import function  # noqa: E402
from executor import numba_loop  # noqa: E402
from executor import numba_numpy_loops as loops  # noqa: E402
from executor.compiled_loop import compiled_loop_kernel  # noqa: E402
from test_compiled_loops import compiled_and_interpreted, compiled_ops  # noqa: E402
from tests import scale  # noqa: E402

pytestmark = pytest.mark.skipif(loops.unavailable() is not None, reason=str(loops.unavailable()))

FLOATS = (np.float32, np.float64)


def bits(x):
    if isinstance(x, (tuple, list)):
        return [bits(v) for v in x]
    x = np.asarray(x)
    return x.dtype, x.shape, x.tobytes()


def awkward_values(rng, shape, dtype):
    """Normal values with NaN, +-inf, -0.0, denormals and huge ones mixed in."""
    x = np.asarray(rng.normal(size=shape) * rng.choice([1e-3, 1, 30], size=shape))
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-42, -1e-310, 3e38, -1e300])
    mask = rng.random(shape) < 0.1
    x[mask] = rng.choice(specials, size=int(mask.sum()))
    with np.errstate(all="ignore"):
        return x.astype(dtype)


# -- numpy's loops called from numba give numpy's bits ---------------------------------------

UNARY = (np.tanh, np.exp, np.log, np.sqrt, np.negative, np.absolute, np.sin, np.cos)
BINARY = (np.add, np.subtract, np.multiply, np.maximum, np.minimum, np.less, np.equal, np.true_divide)
WITH_A_SCALAR = (np.add, np.subtract, np.multiply, np.true_divide, np.maximum)


def _cases():
    for ufunc in UNARY:
        yield ufunc, ("a",)
    for ufunc in BINARY:
        yield ufunc, ("a", "a")
    for ufunc in WITH_A_SCALAR:
        yield ufunc, ("a", "s")
        yield ufunc, ("s", "a")


def _at_offset(x, offset: int):
    """A copy of the C-contiguous array x starting `offset` bytes past a 64-byte boundary."""
    buf = np.empty(x.nbytes + 128, np.uint8)
    start = (-buf.ctypes.data) % 64 + offset
    y = buf[start:start + x.nbytes].view(x.dtype).reshape(x.shape)
    y[...] = x
    return y


@pytest.mark.parametrize("dtype", FLOATS)
def test_elementwise_loops_give_numpys_bits_at_any_alignment(dtype):
    """Each ufunc on arrays (and an array with a scalar), its operands at every offset from
    a 64-byte boundary an allocator may give: the bits of numpy's own call on aligned
    operands, over NaNs of both signs, infinities, -0.0, denormals and huge values."""
    rng = np.random.default_rng(0)
    d = np.dtype(dtype)
    for ufunc, kinds in _cases():
        fn = loops.elementwise(ufunc, kinds, d, loops.resolved_dtypes(ufunc, (d,) * len(kinds))[-1])
        for _ in range(4):
            shape = (int(rng.integers(1, 40)), int(rng.choice([1, 2, 3, 7, 16, 33])))
            values = [awkward_values(rng, shape, dtype) if k == "a" else d.type(awkward_values(rng, (), dtype))
                      for k in kinds]
            with np.errstate(all="ignore"):
                want = bits(ufunc(*values))
            for offset in range(0, 64, d.itemsize):
                moved = [_at_offset(v, offset) if k == "a" else v for v, k in zip(values, kinds)]
                with np.errstate(all="ignore"):
                    assert bits(fn(*moved)) == want, (ufunc.__name__, dtype, shape, kinds, offset)


def _blas_threads(n):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    return threadpoolctl.threadpool_limits(limits=n, user_api="blas")


@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_gives_numpys_bits_for_every_shape_layout_and_blas_thread_count(dtype):
    """numpy's matmul loop picks gemm, gemv (a dimension of 1), syrk (a @ a.T) or its own loop
    by shape and strides; called from numba with the same operands it picks the same. The
    frame executor and a numba loop may run under different BLAS thread counts (executor/blas.py
    takes small matmuls to one thread on a busy machine): the bits are the same on one or two."""
    rng = np.random.default_rng(1)
    sizes = [1, 2, 3, 8, 17, 64, 130]
    for case in range(60):
        m, n, p = (int(rng.choice(sizes)) for _ in range(3))
        ta, tb = bool(rng.integers(2)), bool(rng.integers(2))
        a = rng.normal(size=(n, m) if ta else (m, n)).astype(dtype)
        b = rng.normal(size=(p, n) if tb else (n, p)).astype(dtype)
        same = case % 5 == 0 and m == p and ta != tb  # a @ a.T: numpy's syrk
        if same:
            b = a
        fn = loops.matmul(np.dtype(dtype), ta, tb)
        x, y = (a.T if ta else a), (b.T if tb else b)
        results = []
        for threads in (1, 2):
            with _blas_threads(threads):
                results += [bits(np.matmul(x, y)), bits(fn(a, b))]
        assert all(r == results[0] for r in results), (m, n, p, ta, tb, same)


@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_bits_do_not_depend_on_where_the_operands_lie(dtype):
    """A numba loop's arrays are numba's allocations, the frame executor's numpy's: BLAS
    (gemm, gemv) gives the same bits whatever the operands' alignment."""
    rng = np.random.default_rng(2)
    fn = loops.matmul(np.dtype(dtype), False, False)
    for m, n, p in [(32, 256, 256), (1, 64, 33), (17, 9, 1), (8, 8, 8), (3, 130, 7)]:
        a, b = rng.normal(size=(m, n)).astype(dtype), rng.normal(size=(n, p)).astype(dtype)
        want = bits(a @ b)
        for offset in range(0, 64, np.dtype(dtype).itemsize):
            assert bits(fn(_at_offset(a, offset), _at_offset(b, (offset * 3) % 64))) == want, (m, n, p, offset)


def test_an_index_out_of_range_or_mismatched_shapes_hand_over():
    take = loops.index_first_axis()
    xs = np.arange(12.0).reshape(3, 4)
    assert bits(take(xs, -1)) == bits(xs[-1]) and bits(take(xs, 0)) == bits(xs[0])
    for i in (3, -4):
        with pytest.raises(loops.HandOver):
            take(xs, i)
    add = loops.elementwise(np.add, ("a", "a"), np.dtype(np.float64), np.dtype(np.float64))
    with pytest.raises(loops.HandOver):
        add(xs, xs[:1])  # (numpy broadcasts it)
    mm = loops.matmul(np.dtype(np.float64), False, False)
    with pytest.raises(loops.HandOver):
        mm(xs, xs)


@pytest.fixture
def handed_over(monkeypatch):
    """The loops (by where they are) whose numba kernel handed a call over to the Python kernel."""
    made = []
    python_loop = numba_loop.python_loop
    monkeypatch.setattr(numba_loop, "python_loop", lambda kernel, where: made.append(where) or python_loop(kernel, where))
    return made


# -- loops of random programs: numba against the frame executor and plain numpy --------------

SCALARS = ("0.5", "1.5", "2.0")


def _expression(rng, depth: int) -> str:
    """A random expression of shape (B, H) in h, b (loop variables), xs[t], w and u (H, H)."""
    if depth == 0 or rng.random() < 0.2:
        return str(rng.choice(["h", "b", "xs[t]"]))
    a = _expression(rng, depth - 1)
    form = rng.integers(7)
    if form == 0:
        return f"({a} @ {rng.choice(['w', 'u'])})"
    if form == 1:
        return f"({a} {rng.choice(['+', '-', '*'])} {_expression(rng, depth - 1)})"
    if form == 2:
        return f"np.{rng.choice(['maximum', 'minimum'])}({a}, {_expression(rng, depth - 1)})"
    if form == 3:
        return f"({a} {rng.choice(['*', '+', '-'])} {rng.choice(SCALARS)})" if rng.random() < 0.5 else \
            f"({rng.choice(SCALARS)} {rng.choice(['*', '+', '-'])} {a})"
    if form == 4:
        return f"np.{rng.choice(['tanh', 'sin', 'cos', 'abs'])}({a})"
    if form == 5:
        return f"np.{rng.choice(['sqrt', 'log'])}(np.abs({a}) + 1.0)"
    return f"np.exp(-np.abs({a}))"


def random_array_loop(seed: int) -> str:
    rng = np.random.default_rng(seed)
    lines = ["import numpy as np", "", "", "def f(h, b, xs, w, u, n):", "    t = 0", "    while t < n:"]
    for _ in range(rng.integers(1, 4)):
        lines.append(f"        {rng.choice(['h', 'b'])} = np.tanh({_expression(rng, 3)})")
    lines += ["        t += 1", "    return h, b", ""]
    return "\n".join(lines)


def _load(source: str, path):
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


@pytest.mark.parametrize("seed", scale.seeds(4000, 12, 120))
def test_random_array_loops_are_the_frame_executors_bit_for_bit(seed, tmp_path, handed_over):
    """Random loops of matmuls, elementwise ops (with Python floats) and xs[t] on float32 or
    float64 arrays of random shapes, each statement bounded by a tanh: the numba code's
    values (not the Python kernel's: nothing is handed over) are the frame executor's."""
    rng = np.random.default_rng(seed)
    dtype = FLOATS[seed % 2]
    B, H, T = (int(x) for x in rng.integers(1, 9, size=3))
    args = tuple(rng.normal(size=s).astype(dtype) for s in [(B, H), (B, H), (T, B, H), (H, H), (H, H)])
    args += (np.int64(rng.integers(0, T + 1)),)
    source = random_array_loop(seed)
    f = _load(source, tmp_path / f"array_loop_{seed}.py")
    with np.errstate(all="ignore"):
        got = compiled_and_interpreted(f, args, mode="numba")[0]
        assert bits(got) == bits(function(f)(*args)) == bits(f(*args)), source
    kernels = [compiled_loop_kernel(op) for op in compiled_ops(function(f, jit_compile="numba"), *args)]
    assert [k.backend for k in kernels] == ["numba"], (source, [getattr(k, "numba_refused", "") for k in kernels])
    assert not handed_over, source


# -- where numpy's call is not reproduced, numpy's kernels run ------------------------------

def scaled_steps(h, xs, s, n):
    t = 0
    while t < n:
        h = np.exp(h * s) + xs[t]
        t += 1
    return h


def test_an_overflow_warns_as_numpy_does(handed_over):
    """exp overflows: numpy's warning, at the same line, from the Python kernel."""
    h, xs = np.full((2, 3), 50.0, np.float32), np.zeros((4, 2, 3), np.float32)
    jit = function(scaled_steps, jit_compile="numba")
    caught = []
    for f in (jit, function(scaled_steps)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            caught.append((bits(f(h, xs, np.float32(1), np.int64(3))), sorted({str(x.message) for x in w})))
    assert caught[0] == caught[1] and any("overflow" in m for m in caught[0][1]), caught
    assert handed_over
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        jit(h, xs, np.float32(1), np.int64(3))
    handed_over.clear()
    small = np.full((2, 3), 0.5, np.float32)
    assert bits(jit(small, xs, np.float32(0.5), np.int64(4))) == bits(scaled_steps(small, xs, np.float32(0.5), 4))
    assert not handed_over  # (no exception raised: numba's result)


def test_an_index_past_the_end_raises_numpys_error_at_the_users_line(handed_over):
    h, xs = np.ones((2, 3)), np.ones((4, 2, 3))
    jit = function(scaled_steps, jit_compile="numba")
    assert bits(jit(h, xs, np.float64(0.1), np.int64(4))) == bits(scaled_steps(h, xs, np.float64(0.1), 4))
    assert not handed_over
    with pytest.raises(IndexError) as e:
        jit(h, xs, np.float64(0.1), np.int64(5))
    assert "test_numba_array_loops.py" in str(e.value) and handed_over


def test_inputs_numba_was_not_compiled_for_run_in_the_python_kernel(handed_over):
    """A Fortran-ordered or strided argument, and one numpy broadcasts: numpy's values."""
    rng = np.random.default_rng(3)
    h, xs = rng.normal(size=(3, 4)), rng.normal(size=(5, 3, 4))
    jit = function(scaled_steps, jit_compile="numba")
    for hh, xx in [(np.asfortranarray(h), xs), (h, xs[:, :, ::-1]), (h[:1], xs)]:
        want = scaled_steps(hh, xx, np.float64(0.3), 5)
        assert bits(jit(hh, xx, np.float64(0.3), np.int64(5))) == bits(want)
    assert handed_over


def test_a_loop_with_a_step_numba_cannot_take_says_which():
    def sigmoid_steps(h, n):
        t = 0
        while t < n:
            h = 1.0 / (1.0 + np.exp(-h)) + np.sum(h)
            t += 1
        return h
    jit = function(sigmoid_steps, jit_compile="numba")
    h = np.ones((2, 2), np.float32)
    assert bits(jit(h, np.int64(3))) == bits(function(sigmoid_steps)(h, np.int64(3)))
    (kernel,) = [compiled_loop_kernel(op) for op in compiled_ops(jit, h, np.int64(3))]
    assert kernel.numba_refused and "test_numba_array_loops.py:" in kernel.numba_refused, kernel.numba_refused


# -- the run contract ------------------------------------------------------------------------

def forever(h, w, n):
    t = np.int64(0)
    while t < n:
        h = np.tanh(h @ w)
        t += 1
    return h


def _forever_jit():
    jit = function(forever, jit_compile="numba")
    h, w = np.ones((4, 4), np.float32), np.eye(4, dtype=np.float32)
    assert bits(jit(h, w, np.int64(3))) == bits(forever(h, w, np.int64(3)))
    return jit, h, w


def test_a_deadline_ends_an_array_loop():
    jit, h, w = _forever_jit()
    t0 = time.monotonic()
    with executor.deadline(0.5), pytest.raises(gc.DeadlineExceededError) as e:
        jit(h, w, np.int64(2 ** 62))
    assert time.monotonic() - t0 < 10
    assert "in the compiled loop" in str(e.value) and "test_numba_array_loops.py" in str(e.value), str(e.value)
    assert bits(jit(h, w, np.int64(5))) == bits(forever(h, w, np.int64(5)))  # and it runs again


def test_ctrl_c_ends_an_array_loop():
    jit, h, w = _forever_jit()
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            jit(h, w, np.int64(2 ** 62))
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 10
    assert bits(jit(h, w, np.int64(5))) == bits(forever(h, w, np.int64(5)))
