"""@function: tracing, the cache, input_signature, retracing warning, methods, threads."""
import threading
import warnings

import numpy as np
import pytest

import graphcore as gc
from autograph import (RetracingWarning, TensorSpec, do_not_convert, function, run_functions_eagerly, to_code)


@function
def collatz(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def test_collatz_from_design():
    assert collatz(np.int64(27)) == 111
    assert collatz(27) == 111
    types = set(collatz.get_concrete_function(np.int64(27)).graph.op_types())
    assert {"Switch", "Merge", "Enter", "Exit", "NextIteration"} <= types


def test_to_code_is_converted_source():
    code = to_code(collatz)
    assert "ag__.while_stmt" in code and "ag__.if_stmt" in code


def test_cache_key_dtype_shape_and_python_values():
    @function
    def f(x, k):
        return x * k

    f(np.ones(3), 2)
    f(np.zeros(3), 2)
    assert f.trace_count == 1
    f(np.ones(4), 2)          # new shape
    f(np.ones(3, np.float32), 2)  # new dtype
    f(np.ones(3), 3)          # new Python value
    assert f.trace_count == 4


def test_input_signature_pins_one_trace():
    @function(input_signature=[TensorSpec([None], gc.float64)])
    def f(x):
        return x * 2

    for n in (1, 2, 5):
        out = f(np.ones(n))
        np.testing.assert_array_equal(out, 2 * np.ones(n))
    assert f.trace_count == 1
    with pytest.raises(TypeError):
        f(np.ones((2, 2)))


def test_a_returned_shape_is_a_tuple_as_numpy_gives_or_a_clear_refusal():
    @function
    def known(x):
        return x.shape, x.T.shape

    assert known(np.ones((2, 3))) == ((2, 3), (3, 2))

    @function(input_signature=[TensorSpec([None, 2], gc.float64)])
    def partial(x):
        return x.shape, x.shape[0] * 2, x.ndim, x.size

    for n in (0, 3):  # a dimension tracing does not know is the run's, as numpy's shape gives it
        assert partial(np.ones((n, 2))) == ((n, 2), 2 * n, 2, 2 * n)


def test_retracing_warning_names_argument():
    @function
    def f(x, scale):
        return x * scale

    with pytest.warns(RetracingWarning, match="'scale'"):
        for i in range(6):
            f(np.ones(2), i)


def test_no_warning_when_cached():
    @function
    def f(x):
        return x + 1

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in range(10):
            f(np.float64(i))


def test_output_structures():
    @function
    def f(x):
        return {"a": x, "b": (x + 1, [x * 2, None]), "c": 3}

    out = f(np.float64(1.0))
    assert out["a"] == 1.0 and out["b"][0] == 2.0 and out["b"][1] == [2.0, None] and out["c"] == 3


def test_nothing_returned():
    @function
    def f(x):
        y = x + 1  # noqa: F841

    assert f(np.float64(1.0)) is None


class Counter:
    def __init__(self, base):
        self.base = base

    @function
    def add(self, x):
        if x > 0:
            return x + self.base
        return x - self.base


def test_method():
    a, b = Counter(10), Counter(100)
    assert a.add(np.int64(1)) == 11 and b.add(np.int64(-1)) == -101


def helper(x):
    while x > 10:
        x = x - 10
    return x


def test_calls_user_functions_recursively():
    @function
    def f(x):
        return helper(x) + (lambda v: v * 2)(x)

    assert f(np.int64(35)) == 5 + 70


@do_not_convert
def unconverted(x):
    return x * 3


def test_do_not_convert_and_autograph_false():
    @function
    def f(x):
        return unconverted(x)

    assert f(np.float64(2.0)) == 6.0
    assert "converted_call" in to_code(f)

    @function(autograph=False)
    def g(x):
        return gc.cond(x > 0, lambda: x, lambda: -x)

    assert g(np.float64(-2.0)) == 2.0


def test_run_functions_eagerly():
    seen = []

    @function
    def f(x):
        seen.append(type(x))
        return x + 1

    run_functions_eagerly(True)
    try:
        assert f(np.int64(1)) == 2
    finally:
        run_functions_eagerly(False)
    assert seen == [np.int64]


def test_two_threads():
    results = {}

    def work(n):
        results[n] = collatz(np.int64(n))

    threads = [threading.Thread(target=work, args=(n,)) for n in (27, 7, 27, 97)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {27: 111, 7: 16, 97: 118}


def test_print_runs_in_order_once_per_call(capfd):
    @function
    def f(n):
        s = 0
        print("start")
        for i in range(n):
            print("i", i)
            s += i
        print("end", s)
        return s

    f(np.int64(3))
    out1 = capfd.readouterr().out
    assert out1.splitlines() == ["start", "i 0", "i 1", "i 2", "end 3"]
    f(np.int64(2))  # as in Python, every print runs on every call, the Python-only one too
    assert capfd.readouterr().out.splitlines() == ["start", "i 0", "i 1", "end 1"]
