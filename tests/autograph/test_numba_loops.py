"""`@function(jit_compile="numba")`: compiled loops whose values are numeric scalars and
whose steps have an exact machine form run as numba code (executor/numba_loop.py). The
results are identical to the frame executor's for every sample, the conformance programs
and random programs; numpy's integer wrap-around, division by zero and NaN rules hold;
a loop with an inexact step keeps the generated Python."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba", reason="the numba backend is optional: pip install -e '.[jit]'")

from autograph import function  # noqa: E402
from executor import numba_loop  # noqa: E402
from executor.compiled_loop import compiled_loop_kernel  # noqa: E402
from graphcore.errors import GraphError  # noqa: E402
from samples import available_samples  # noqa: E402
from test_compiled_loops import compiled_and_interpreted, compiled_ops  # noqa: E402
from test_conformance import CASES  # noqa: E402
from test_optimizer_differential import _same, disagreements  # noqa: E402

RANDOM_SEEDS = range(2000, 2100)


def numba_and_interpreted(python_fn, args):
    return compiled_and_interpreted(python_fn, args, mode="numba")


@pytest.mark.parametrize("sample", available_samples(), ids=lambda s: s.name)
def test_samples(sample):
    for args in sample.examples:
        numba_and_interpreted(sample.python_function, args)


@pytest.mark.parametrize("f,args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_conformance_programs(f, args):
    numba_and_interpreted(f, args)


def test_random_programs():
    failures = disagreements(numba_and_interpreted, RANDOM_SEEDS)
    assert not failures, "\n".join(failures)


def backends(fn, *args):
    return [getattr(compiled_loop_kernel(op), "backend", "python") for op in compiled_ops(fn, *args)]


def fib(n):
    a, b, i = np.int64(1), np.int64(1), np.int64(1)
    while i < n:
        a, b, i = b, a + b, i + 1
    return a


def int_edges(a, b, n):
    """Wrap-around, a zero divisor and the smallest integer divided by -1, in a loop."""
    i = np.int64(0)
    s = np.int64(0)
    while i < n:
        s = s + a * a + (a // b) + (a % b) + (a // (b - b)) + (a % (b - b))
        a = a * np.int64(3) + np.int64(1)
        i += 1
    return s, a // np.int64(-1)


def float_edges(x, n):
    """NaN through maximum/minimum, division by zero, sqrt of a negative."""
    i = 0
    m = x
    while i < n:
        m = np.maximum(m, x / (x - x)) + np.minimum(x, np.sqrt(x - 3.0))
        i += 1
    return m


def casts_and_signs(a, n):
    """Casts between kinds (int -> float, int64 -> int32 wrapping, numbers -> bool), and
    sign/abs of the smallest integer."""
    i = np.int64(0)
    f = np.float64(0.5)
    k = np.int32(0)
    while i < n:
        f = f + a.astype(np.float64) / 3.0
        k = k + (a * np.int64(2**40 + 7)).astype(np.int32) + (f > 2.0).astype(np.int32)
        a = np.abs(a) * np.sign(a) - np.int64(2**62)
        i += 1
    return f, k, (a != 0), np.abs(np.int64(-2**63) + a - a)


def zero_d_input(x, n):
    """np.where on scalars gives a 0-d array, which enters the loop (seed 9728 found it)."""
    s = np.where(x > 0, x, -x)
    i = np.int64(0)
    while i < n:
        s = s * np.int64(3) + np.int64(1)
        i += 1
    return s


@pytest.mark.parametrize("fn, args", [
    (fib, (np.int64(100),)),
    (zero_d_input, (np.int64(-4), np.int64(6))),
    (casts_and_signs, (np.int64(-5), np.int64(9))),
    (int_edges, (np.int64(-2**62), np.int64(-1), np.int64(40))),
    (int_edges, (np.int64(7), np.int64(3), np.int64(25))),
    (float_edges, (np.float64(2.0), np.int64(3))),
    (float_edges, (np.float64(-1.5), np.int64(2))),
])
def test_numpy_rules_hold_in_numba_code(fn, args):
    with np.errstate(all="ignore"):
        got = numba_and_interpreted(fn, args)[0]
        want = fn(*args)
    _same(want, got)
    assert backends(function(fn, jit_compile="numba"), *args) == ["numba"]


def transcendental(x, n):
    i = 0
    while i < n:
        x = np.tanh(x) + 0.5
        i += 1
    return x


def test_a_loop_with_an_inexact_step_keeps_the_python_kernel():
    jit = function(transcendental, jit_compile="numba")
    x, n = np.float64(0.3), np.int64(5)
    assert jit(x, n) == function(transcendental)(x, n)
    assert backends(jit, x, n) == ["python"]
    (kernel,) = [compiled_loop_kernel(op) for op in compiled_ops(jit, x, n)]
    assert "Tanh" in kernel.numba_refused and "test_numba_loops.py:" in kernel.numba_refused  # the step, its line


def rnn_steps(h, xs, w, u, n):
    t = 0
    while t < n:
        h = np.tanh(h @ w + xs[t] @ u)
        t += 1
    return h


def kernel_of(jit, *args):
    (kernel,) = [compiled_loop_kernel(op) for op in compiled_ops(jit, *args)]
    return kernel


def bits(x):
    x = np.asarray(x)
    return x.dtype, x.shape, x.tobytes()


@pytest.fixture
def handed_over(monkeypatch):
    """The loops (by where they are) whose numba kernel handed a call over to the Python
    kernel (made then, once per kernel)."""
    made = []
    python_loop = numba_loop.python_loop
    monkeypatch.setattr(numba_loop, "python_loop", lambda kernel, where: made.append(where) or python_loop(kernel, where))
    return made


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_rnn_step_runs_in_numba_with_the_frame_executors_very_bits(dtype, handed_over):
    """matmul, add and tanh on arrays: numba code calling numpy's own loops
    (executor/numba_numpy_loops.py), the same bits as the frame executor and plain numpy."""
    rng = np.random.default_rng(0)
    args = tuple(a.astype(dtype) for a in (rng.normal(size=(4, 8)), rng.normal(size=(6, 4, 8)),
                                           rng.normal(size=(8, 8)) / 3, rng.normal(size=(8, 8)) / 3))
    args += (np.int64(6),)
    jit = function(rnn_steps, jit_compile="numba")
    got = jit(*args)
    assert bits(got) == bits(function(rnn_steps)(*args)) == bits(rnn_steps(*args))
    assert not handed_over
    kernel = kernel_of(jit, *args)
    assert kernel.backend == "numba" and "numba_refused" not in vars(kernel)


def test_the_cli_listing_says_why_a_loop_is_not_numba(tmp_path):
    from typer.testing import CliRunner

    from cli.main import app
    path = tmp_path / "loops.py"
    path.write_text("import numpy as np\n\ndef f(x, n):\n    i = 0\n    while i < n:\n"
                    "        x = np.tanh(x) + 0.5\n        i += 1\n    return x\n")
    r = CliRunner().invoke(app, ["graph", f"{path}:f", "0.5", "3", "--numba"])
    assert r.exit_code == 0, r.output
    assert "compiled as Python: not numba" in r.output and "Tanh" in r.output and "loops.py:6" in r.output


def same_constant_twice(n):
    """LICM enters one constant in several places (the compiled loop takes it once)."""
    s = np.int64(0)
    for i in range(n):
        for j in range(n):
            s += i * j - (i + 1) * (j + 1) + 1
    return s


def test_a_constant_entered_several_times_is_one_input_and_the_values_hold():
    jit = function(same_constant_twice, jit_compile="numba")
    (op,) = compiled_ops(jit, np.int64(5))
    n_vars = op.attrs["n_vars"]
    invariants = [id(t) for t in op.inputs[n_vars:]]
    assert len(set(invariants)) == len(invariants)
    for n in (0, 1, 7, 40):
        assert jit(np.int64(n)) == same_constant_twice(np.int64(n)) == function(same_constant_twice)(np.int64(n))
    assert backends(jit, np.int64(5)) == ["numba"]
    assert "stop_flag" in compiled_loop_kernel(op).source


def test_nested_loops_become_one_numba_function():
    from samples.count_primes import count_primes
    jit = function(count_primes, jit_compile="numba")
    assert [jit(np.int64(n)) for n in (2, 30, 100)] == [count_primes(np.int64(n)) for n in (2, 30, 100)]
    (kernel,) = [compiled_loop_kernel(op) for op in compiled_ops(jit, np.int64(30))]
    assert kernel.backend == "numba" and "k" in kernel.source  # the inner loop: a numba function it calls


def test_bad_jit_compile_values_and_a_missing_numba_are_refused(monkeypatch):
    with pytest.raises(ValueError, match="jit_compile must be False, True or 'numba'"):
        function(fib, jit_compile="llvm")
    monkeypatch.setattr(numba_loop, "numba_available", lambda: False)
    with pytest.raises(GraphError, match=r"pip install -e '.\[jit\]'"):
        function(fib, jit_compile="numba")


def python_int_counter(n):
    s = 1
    k = 0
    while k < n:
        s = s * 3 - k // 2 + k % 5
        k += 1
    return s


def test_python_int_arithmetic_compiles_and_stops_where_python_leaves_int64():
    """Python ints (PythonArith) run in numba with checked helpers: the same values while
    they fit int64; where Python's result would not fit, the OverflowError of the Python
    kernel, at the user's line."""
    jit = function(python_int_counter, jit_compile="numba")
    assert [jit(np.int64(n)) for n in (0, 1, 10, 39)] == [python_int_counter(n) for n in (0, 1, 10, 39)]
    assert backends(jit, np.int64(10)) == ["numba"]
    assert python_int_counter(41) > 2 ** 63
    with pytest.raises(OverflowError, match="beyond int64") as e:
        jit(np.int64(41))
    assert "test_numba_loops.py" in str(e.value)


def test_checked_python_int_helpers_are_exact_on_edges():
    import itertools
    import operator
    lo, hi = -2 ** 63, 2 ** 63 - 1
    edges = [0, 1, -1, 2, -2, 3, -7, 2 ** 31, -2 ** 31, 2 ** 62, -2 ** 62, 2 ** 62 + 1, -2 ** 62 - 1, 3037000499,
             3037000500, -3037000500, hi, lo, hi - 1, lo + 1, hi // 3, lo // 3]
    helpers = numba_loop._python_helpers()
    for name, op in (("py_int_add", operator.add), ("py_int_sub", operator.sub), ("py_int_mul", operator.mul),
                     ("py_int_floordiv", operator.floordiv), ("py_int_mod", operator.mod)):
        for a, b in itertools.product(edges, edges):
            try:
                want = op(a, b)
                want = want if lo <= want <= hi else OverflowError
            except ZeroDivisionError:
                want = ZeroDivisionError
            try:
                got = int(helpers[name](np.int64(a), np.int64(b)))
            except (OverflowError, ZeroDivisionError) as e:
                got = type(e)
            assert got == want, (name, a, b)


def test_a_signal_whose_handler_returns_resumes_the_loop_where_it_stopped():
    """A signal on the main thread stops a numba loop (its flag), its Python handler runs,
    and the loop resumes from the state it returned (its loop variables): the value is the
    uninterrupted one."""
    import os
    import signal
    import threading

    jit = function(same_constant_twice, jit_compile="numba")
    assert jit(np.int64(3)) == same_constant_twice(np.int64(3))
    handled = []
    previous = signal.signal(signal.SIGUSR1, lambda *a: handled.append(1))
    done = threading.Event()

    def poke():
        while not done.wait(0.01):
            os.kill(os.getpid(), signal.SIGUSR1)
    poker = threading.Thread(target=poke)
    poker.start()
    try:
        n = 20_000  # 4e8 inner iterations: long enough for many signals to arrive mid-loop
        got = jit(np.int64(n))
    finally:
        done.set()
        poker.join()
        signal.signal(signal.SIGUSR1, previous)
    assert handled
    assert got == -n * n * (n - 1)  # sum over i, j of (i * j - (i + 1) * (j + 1) + 1) = -(i + j)
