"""try / except in converted code: Python's own for what happens while tracing (a KeyError
of a Python dict is caught as in Python); a body that builds graph ops that can fail when the
graph runs is refused, since its except clause could never see their errors."""
import math

import numpy as np
import pytest

from autograph import StagingError, function
from _helpers import agree


def guarded_sqrt(x):
    try:
        y = math.sqrt(x)
    except ValueError:
        y = 0.0
    return y


def guarded_index(xs, n):
    try:
        v = xs[n]
    except IndexError:
        v = -1.0
    return v


def guarded_raise(x):
    try:
        if x < 0:
            raise ValueError("negative")
        y = x
    except ValueError:
        y = 0.0
    return y


@pytest.mark.parametrize("fn, args", [(guarded_sqrt, (np.float64(-1.0),)),
                                      (guarded_index, (np.array([1.0, 2.0]), np.int64(5))),
                                      (guarded_raise, (np.float64(-1.0),))])
def test_a_try_around_graph_ops_that_can_fail_is_refused(fn, args):
    assert fn(*args) is not None  # plain Python catches the error
    with pytest.raises(StagingError, match="try/except around graph code"):
        function(fn)(*args)


def lookups(x, key):
    table = {"a": 1.5}
    try:
        scale = table[key]
    except KeyError:
        scale = -1.0
    try:
        y = x * scale + 1.0  # arithmetic cannot fail when the graph runs
    except FloatingPointError:
        y = 0.0
    s = 0.0
    try:
        for i in range(3):
            s += x
    finally:
        s += 100.0
    return y, s


@pytest.mark.parametrize("key", ["a", "b"])
def test_python_errors_while_tracing_and_ops_that_cannot_fail_keep_pythons_try(key):
    agree(lookups, np.float64(2.0), key)
