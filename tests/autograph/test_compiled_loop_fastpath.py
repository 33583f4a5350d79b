"""The fast path of compiled loops on numpy scalars (executor/scalar_loop.py): types are
checked once at the loop's entry, operators on known scalars run without per-step guards
(integers as Python ints, floats as numpy scalars under np.errstate), and any surprise
(an integer leaving its range, a zero divisor, a float overflow, NaN) hands the loop
over to a slower path that gives numpy's exact results, warnings and errors. These tests
pin the semantics at those edges against the interpreted graph and plain Python, and
check that the fast path is really the one that runs."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

from autograph import function
from executor import compiled_loop
from executor.compiled_loop import compiled_loop_kernel
from executor.scalar_loop import RULES, SCALAR_TYPES
from graphcore.registry import get_op_def
from test_compiled_loops import compiled_and_interpreted, compiled_ops
from test_optimizer_differential import _same

INT64_MIN = np.iinfo(np.int64).min


def fib(n):
    a, b, i = np.int64(1), np.int64(1), np.int64(1)
    while i < n:
        a, b, i = b, a + b, i + 1
    return a


def fib32(n):
    a, b, i = np.int32(1), np.int32(1), np.int32(1)
    while i < n:
        a, b, i = b, a + b, i + 1
    return a, b


def grow(x, n):
    """x * 3 + 1 until it wraps around (x's dtype decides where)."""
    i = 0
    while i < n:
        x = x * 3 + 1
        i += 1
    return x


def collatz_steps(m):
    steps = m - m
    while m != 1:
        if m % 2 == 0:
            m = m // 2
        else:
            m = 3 * m + 1
        steps += 1
    return steps


def int_division(a, b, n):
    """// and % of integers with a divisor that reaches 0 and -1; the smallest integer."""
    i = np.int64(0)
    q = a - a
    r = a - a
    while i < n:
        q = q + a // (b - i)
        r = r + a % (b - i)
        i += 1
    return q, r


def float_edges(x, y, n):
    """Overflow to inf, inf - inf (NaN), floor division and modulo with signs, -0.0."""
    i = 0
    s = x - x
    while i < n:
        s = s + x // y + x % y - x * 0.0
        x = x * 1e150
        y = -y
        i += 1
    return s, x, x - x


def flags(n):
    """Bool loop variables through and, or, not and comparisons."""
    i = np.int64(0)
    seen = np.bool_(False)
    odd = np.bool_(False)
    while i < n:
        odd = np.logical_not(odd)
        seen = np.logical_or(seen, np.logical_and(odd, i > 3))
        i += 1
    return seen, odd, i


def newton(x, n):
    y = x
    k = 0
    while k < n:
        y = 0.5 * (y + x / y)
        k += 1
    return y


def python_ints(n):
    """Arithmetic of Python ints: Python's values; beyond int64, Python's own error."""
    x = 1
    i = 0
    while i < n:
        x = x * 7 + i
        i += 1
    return x


def counted(i, n, step):
    """A counted loop (a `for` over a range in the fast path): its counter's last value."""
    k = i - i
    total = i - i
    while i < n:
        total = total + i * k
        k = k + 1
        i = i + step
    return i, k, total


def count_to(i, n):
    """Nothing but the count."""
    while i < n:
        i += 1
    return i


def counted_lag(n):
    """The counter's value becomes another variable's: the counted loop must keep it."""
    i = np.int64(0)
    last = np.int64(-1)
    s = np.int64(0)
    while i < n:
        last, i = i, i + 1
        s = s * 31 + last   # wraps around: the numpy-scalar variant runs the counted loop
    return last, i, s


def lazy_sums(x, n):
    """Sums read by nothing in the loop: checked once, after it (they may wrap around)."""
    s = x - x
    d = x - x
    i = 0
    while i < n:
        s = s + x
        d = d - x
        i += 1
    return s, d


def nested_sums(x, n):
    """An inner loop's sum, wrapping around inside it."""
    s = x - x
    for i in range(n):
        j = np.int64(0)
        while j < n:
            s = s + x
            j += 1
    return s


def affine_compare(n, big):
    """i * big + 7 read by a comparison: its range check moves before the counted loop,
    at both ends of the range (big enough, it wraps around near the end)."""
    i = np.int64(0)
    s = np.int64(0)
    while i < n:
        if i * big + 7 > 0:
            s += 1
        i += 1
    return s


def affine_python(n):
    """Python ints: j * 10 ** 17 leaves int64 near the end: Python's OverflowError there."""
    j = 0
    s = 0
    while j < n:
        s = s + j * 100000000000000000 % 7
        j += 1
    return s


def counted_up_to(i, n):
    """<= and Python ints (i += 1 of Python ints is Python's arithmetic)."""
    j = 0
    s = 0
    while j <= n:
        s += j * j
        j += 1
    return j, s + i


INT64_MAX = np.iinfo(np.int64).max


def outcome_and_warnings(fn, args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value, error = fn(*args), None
        except Exception as e:  # noqa: BLE001 (compared)
            value, error = None, type(e).__name__
    return value, error, sorted({(w.category.__name__, str(w.message)) for w in caught})


CASES = [
    (fib, (np.int64(10),)), (fib, (np.int64(100),)), (fib, (np.int64(3000),)),
    (fib32, (np.int32(60),)), (fib32, (np.int64(60),)),
    (grow, (np.int64(5), np.int64(50))), (grow, (np.int32(5), np.int64(30))), (grow, (np.int64(-5), np.int64(50))),
    (collatz_steps, (np.int64(27),)), (collatz_steps, (np.int32(97),)),
    (int_division, (np.int64(7), np.int64(5), np.int64(3))),       # no zero divisor
    (int_division, (np.int64(-7), np.int64(2), np.int64(5))),      # divisors 2, 1, 0, -1, -2
    (int_division, (np.int64(INT64_MIN), np.int64(-1), np.int64(1))),  # INT64_MIN // -1
    (int_division, (np.int64(INT64_MIN), np.int64(1), np.int64(3))),   # then -1
    (float_edges, (np.float64(7.5), np.float64(-2.0), np.int64(4))),
    (float_edges, (np.float32(-7.5), np.float32(2.0), np.int64(3))),
    (float_edges, (np.float64(-0.0), np.float64(3.0), np.int64(1))),
    (float_edges, (np.float64(5.0), np.float64(-0.0), np.int64(1))),   # % and // by -0.0
    (flags, (np.int64(9),)),
    (newton, (np.float64(2.0), np.int64(6))), (newton, (np.float32(9.0), np.int64(4))),
    (newton, (np.float64(0.0), np.int64(2))),                      # 0 / 0
    (python_ints, (np.int64(5),)), (python_ints, (np.int64(40),)),  # 7 ** 40 is beyond int64
    (counted, (np.int64(0), np.int64(10), np.int64(1))), (counted, (np.int64(3), np.int64(20), np.int64(4))),
    (counted, (np.int64(5), np.int64(5), np.int64(1))), (counted, (np.int64(9), np.int64(2), np.int64(3))),
    (counted, (np.int32(-7), np.int32(30), np.int32(6))),
    (counted, (np.int64(INT64_MAX - 10), np.int64(INT64_MAX - 4), np.int64(4))),  # the last i is INT64_MAX
    (counted, (np.int64(INT64_MAX - 10), np.int64(INT64_MAX - 3), np.int64(4))),  # stop + step beyond: a while
    (counted, (np.int64(-3), np.int64(4), np.int64(2**62))),
    (counted_up_to, (np.int64(1), np.int64(12))), (counted_up_to, (np.int64(1), np.int64(-1))),
    (count_to, (np.int64(0), np.int64(10))), (count_to, (np.int64(12), np.int64(10))),
    (counted_lag, (np.int64(5),)), (counted_lag, (np.int64(40),)), (counted_lag, (np.int64(0),)),
    (lazy_sums, (np.int64(3), np.int64(10))), (lazy_sums, (np.int64(2**62), np.int64(10))),
    (lazy_sums, (np.int32(2**29), np.int64(10))), (lazy_sums, (np.int64(-2**62), np.int64(3))),
    (nested_sums, (np.int64(5), np.int64(6))), (nested_sums, (np.int64(2**61), np.int64(5))),
    (affine_compare, (np.int64(10), np.int64(3))), (affine_compare, (np.int64(10), np.int64(2**60))),
    (affine_compare, (np.int64(10), np.int64(-2**60))), (affine_compare, (np.int64(0), np.int64(2**62))),
    (affine_python, (np.int64(50),)), (affine_python, (np.int64(100),)),
    # inputs that are not numpy scalars of their dtype: 0-d arrays, Python numbers
    (fib, (np.array(90),)), (grow, (np.array(5), np.int64(45))), (collatz_steps, (np.array(27),)),
    (fib, (100,)), (newton, (2.0, 5)), (collatz_steps, (27,)),
]


@pytest.mark.parametrize("fn, args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_edges_agree_with_the_interpreted_graph_and_python(fn, args):
    """Values, dtypes, errors and warnings as interpreted; values as plain Python's."""
    compiled_and_interpreted(fn, args)
    jit = outcome_and_warnings(function(fn, jit_compile=True), args)
    interpreted = outcome_and_warnings(function(fn), args)
    assert jit[1:] == interpreted[1:]
    _same(interpreted[0], jit[0])
    with np.errstate(all="ignore"):
        try:
            plain = fn(*args)
        except Exception:  # noqa: BLE001 (Python raises where the graph does: compared above)
            return
    if jit[1] is None and fn is not python_ints:
        got, want = (jit[0], plain) if isinstance(plain, tuple) else ((jit[0],), (plain,))
        assert len(got) == len(want)
        for x, y in zip(got, want):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_the_callers_errstate_holds():
    """A float overflow raises under the caller's errstate(over="raise"), as interpreted;
    integers wrap around silently either way; the caller's errstate is left as it was."""
    before = np.geterr()
    jit_fib, jit_edges = function(fib, jit_compile=True), function(float_edges, jit_compile=True)
    with np.errstate(over="raise"):
        assert jit_fib(np.int64(100)) == function(fib)(np.int64(100))
        with pytest.raises(FloatingPointError):
            function(float_edges)(np.float64(7.5), np.float64(-2.0), np.int64(4))
        with pytest.raises(FloatingPointError):
            jit_edges(np.float64(7.5), np.float64(-2.0), np.int64(4))
    assert np.geterr() == before
    with np.errstate(all="ignore"):
        _same(function(float_edges)(np.float64(7.5), np.float64(-2.0), np.int64(4)),
              jit_edges(np.float64(7.5), np.float64(-2.0), np.int64(4)))
    assert np.geterr() == before


@pytest.fixture
def guarded_calls(monkeypatch):
    """The number of times the guarded kernel of a compiled loop built from now on runs."""
    calls = []
    make = compiled_loop.guarded_loop_kernel_for

    def counting(*a, **k):
        kernel = make(*a, **k)

        def run(*xs):
            calls.append(1)
            return kernel(*xs)
        return run
    monkeypatch.setattr(compiled_loop, "guarded_loop_kernel_for", counting)
    return calls


@pytest.mark.parametrize("fn, args", [(fib, (np.int64(60),)), (fib, (np.int64(3000),)),  # 3000: wraps around
                                      (fib32, (np.int32(100),)), (collatz_steps, (np.int64(27),)),
                                      (counted, (np.int64(3), np.int64(20), np.int64(4))),
                                      (counted_up_to, (np.int64(1), np.int64(12))),
                                      (counted_lag, (np.int64(40),)), (lazy_sums, (np.int64(2**62), np.int64(10))),
                                      (nested_sums, (np.int64(2**61), np.int64(5))),
                                      (flags, (np.int64(9),)), (newton, (np.float64(2.0), np.int64(6))),
                                      (grow, (np.int64(5), np.int64(50)))])
def test_the_fast_path_runs(fn, args, guarded_calls):
    """The loop runs without the guarded kernel, wrap-around included; its generated
    source has no per-step type guard."""
    jit = function(fn, jit_compile=True)
    with np.errstate(all="ignore"):
        _same(function(fn)(*args), jit(*args))
    assert guarded_calls == []
    (op,) = compiled_ops(jit, *args)
    kernel = compiled_loop_kernel(op)
    body = kernel.source.split("while True:")[1]
    assert "type(" not in body and " else k" not in body
    assert "type(" not in "".join(kernel.fallback.source.split("while True:")[1:])


@pytest.mark.parametrize("fn, args", [(int_division, (np.int64(-7), np.int64(2), np.int64(5))),
                                      (int_division, (np.int64(INT64_MIN), np.int64(-1), np.int64(1))),
                                      (float_edges, (np.float64(7.5), np.float64(-2.0), np.int64(4))),
                                      (newton, (np.float64(0.0), np.int64(2)))])
def test_what_numpy_warns_about_runs_on_the_guarded_kernel(fn, args, guarded_calls):
    jit = function(fn, jit_compile=True)
    assert outcome_and_warnings(jit, args)[1:] == outcome_and_warnings(function(fn), args)[1:]
    assert guarded_calls  # the fast path handed over


def test_other_inputs_take_a_variant_made_for_them(guarded_calls):
    """A 0-d array (or a Python number) where a numpy scalar was expected: a variant
    that takes that input as unknown, with guards on what depends on it."""
    jit = function(grow, jit_compile=True)
    for x in (np.int64(5), np.array(5), np.array(7, dtype=np.int32), np.int32(7)):
        with np.errstate(all="ignore"):
            _same(function(grow)(x, np.int64(45)), jit(x, np.int64(45)))
    assert guarded_calls == []


def test_threads_keep_their_own_errstate():
    """numpy 2's errstate is a context variable: a compiled loop raising on overflow in
    one thread leaves another thread's error handling alone."""
    jit = function(fib, jit_compile=True)
    jit(np.int64(3000))
    errors, seen = [], []

    def run():
        try:
            for _ in range(30):
                assert jit(np.int64(3000)) == function(fib)(np.int64(3000))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)
    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        seen.append(np.geterr()["over"])
    for t in threads:
        t.join()
    assert not errors and set(seen) <= {"warn"}


def _bits(x):
    return type(x), np.asarray(x).tobytes()


def _edge_values(T):
    if T is np.bool_:
        return [T(False), T(True)]
    if np.issubdtype(T, np.integer):
        info = np.iinfo(T)
        return [T(v) for v in (0, 1, -1, 2, -2, 3, -7, 7, info.max, info.min, info.max - 1, info.min + 1,
                               2 ** (info.bits // 2), -2 ** (info.bits // 2), 2 ** (info.bits - 2))]
    info = np.finfo(T)
    return [T(v) for v in (0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.25, -7.25, 1e-3, float(info.max), -float(info.max),
                           float(info.tiny), float(info.smallest_subnormal), np.inf, -np.inf, np.nan, -np.nan)]


def _rule_cases(key):
    """(the rule's operator as a function, the op's kernel, operand tuples of edge values of
    its type, the rule's result type) for the RULES entry `key`."""
    name, T = key
    source, out_type = RULES[key]
    fast = eval("lambda a, b=None: " + source.format("a", "b"))  # noqa: S307 (the rule's source)
    values = _edge_values(T)
    pairs = [(a,) for a in values] if "{1}" not in source else [(a, b) for a in values for b in values]
    return fast, get_op_def(name).kernel, pairs, out_type


@pytest.mark.parametrize("key", sorted(RULES, key=str), ids=lambda k: f"{k[0]}-{k[1].__name__}")
def test_each_numpy_operator_rule_is_the_kernels_bit_for_bit(key):
    """Where a numpy scalar operator runs in place of the op's kernel (under the fast
    path's errstate), it gives the kernel's bits and type, or raises where the kernel
    would warn; never a silent difference."""
    fast, kernel, pairs, out_type = _rule_cases(key)
    for args in pairs:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            want = kernel(*args)
        try:
            with np.errstate(over="raise", divide="raise", invalid="raise"):
                got = fast(*args)
        except FloatingPointError:
            continue
        assert not caught, (key, args, caught)
        assert type(got) is out_type and _bits(got) == _bits(want), (key, args, got, want)


@pytest.mark.parametrize("T", [np.int32, np.int64])
def test_python_int_operators_are_numpys_in_range(T):
    """Known integers run as Python ints: + - * agree with numpy's kernels modulo 2**bits,
    and // % and comparisons of in-range operands agree exactly (but a zero divisor and
    the smallest integer // -1, which the fast path hands over)."""
    info = np.iinfo(T)
    rng = np.random.default_rng(0)
    values = [int(v) for v in _edge_values(T)] + [int(v) for v in rng.integers(info.min, info.max, 40)]
    values += [int(v) for v in rng.integers(-100, 100, 20)]
    size = 2 ** info.bits
    for a in values:
        for b in values:
            x, y = T(a), T(b)
            with np.errstate(all="ignore"):
                assert (a + b - int(np.add(x, y))) % size == 0
                assert (a - b - int(np.subtract(x, y))) % size == 0
                assert (a * b - int(np.multiply(x, y))) % size == 0
            assert (a < b) == np.less(x, y) and (a == b) == np.equal(x, y) and (a >= b) == np.greater_equal(x, y)
            if b != 0 and not (a == info.min and b == -1):
                assert a // b == int(np.floor_divide(x, y)) and a % b == int(np.mod(x, y))


def test_known_types_are_numpy_scalar_types():
    assert set(SCALAR_TYPES.values()) == {np.bool_, np.int32, np.int64, np.float32, np.float64}


def test_counted_loops_run_as_a_for_over_a_range():
    for fn, args in [(fib, (np.int64(60),)), (counted, (np.int64(3), np.int64(20), np.int64(4))),
                     (counted_up_to, (np.int64(1), np.int64(12)))]:
        (op,) = compiled_ops(function(fn, jit_compile=True), *args)
        source = compiled_loop_kernel(op).source
        assert "counted = range(" in source and "while True:" in source  # the while where the range may not do


@pytest.mark.parametrize("key", sorted((k for k in RULES if k[1] in (np.int32, np.int64) and
                                        k[0] in ("Add", "Sub", "Mul", "Neg", "Abs", "Mod")), key=str),
                         ids=lambda k: f"{k[0]}-{k[1].__name__}")
def test_integer_rules_wrap_around_as_numpys_kernels_with_overflows_ignored(key):
    """The numpy-scalar variant of an integer loop ignores overflows: its operators must
    then wrap around exactly as the kernels do, silently (a zero divisor still raises)."""
    fast, kernel, pairs, _ = _rule_cases(key)
    for args in pairs:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            want = kernel(*args)
        try:
            with np.errstate(over="ignore", divide="raise", invalid="raise"):
                got = fast(*args)
        except FloatingPointError:
            assert caught, (key, args)
            continue
        assert not caught and _bits(got) == _bits(want), (key, args, got, want)
