"""`with` in converted code, against plain Python. The manager's enter and exit run while
the graph is built, so what the graph cannot honour is refused, naming the line: an
np.errstate that raises around graph ops (Python raised FloatingPointError, the graph gave
inf) and a user's context manager inside a loop or `if` on a tensor (it entered once per
trace, not once per iteration). graphcore's own managers, errstates that only ignore or
warn, warnings.catch_warnings and managers at the function's top level run as written."""
import contextlib
import warnings

import numpy as np
import pytest

from _helpers import agree

import graphcore as gc
from autograph import StagingError, function


def divide_raising(x):
    with np.errstate(divide="raise"):
        y = 1.0 / x
    return y


def log_ignoring(x):
    with np.errstate(all="ignore"):
        y = np.log(x)
    return y


def errstate_around_python_only(x):
    with np.errstate(divide="raise"):
        k = 2 * 3
    return x * k


@contextlib.contextmanager
def section(name):
    print("enter", name)
    yield name
    print("exit", name)


def section_in_a_loop(n):
    s = 0
    for i in range(n):
        with section("loop"):
            s += i
    return s


def section_around_a_loop(n):
    s = 0
    with section("all") as label:
        for i in range(n):
            s += i
    return s, label


def warnings_in_a_branch(x):
    if x > 0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = x * 2
    return x


def on_a_device(x, n):
    for _ in range(n):
        with gc.device("cpu:0"), gc.name_scope("step"):
            x = x + 1.0
    return x


def test_an_errstate_that_raises_around_graph_ops_is_refused():
    with pytest.raises(FloatingPointError):
        divide_raising(np.float64(0.0))
    with pytest.raises(StagingError, match=r"test_with_statements.py:\d+: np.errstate\(...\) that raises around graph "
                                           r"ops.*FloatingPointError"):
        function(divide_raising)(np.float64(0.0))


@pytest.mark.parametrize("fn, x", [(log_ignoring, -1.0), (log_ignoring, 2.0), (errstate_around_python_only, 1.5)])
def test_an_errstate_that_changes_no_value_runs(fn, x):
    agree(fn, np.float64(x))


def test_a_context_manager_in_a_tensor_loop_is_refused():
    with pytest.raises(StagingError, match=r"test_with_statements.py:\d+: `with section\('loop'\)` inside a loop or "
                                           r"`if` on a tensor.*around the whole loop"):
        function(section_in_a_loop)(np.int64(3))


@pytest.mark.parametrize("n", [0, 3])
def test_managers_that_can_run_as_written(n):
    agree(section_around_a_loop, np.int64(n))
    agree(warnings_in_a_branch, np.float64(n - 1.0))
    assert function(on_a_device)(np.float64(0.5), np.int64(n)) == 0.5 + n  # (graphcore's managers need a graph)
