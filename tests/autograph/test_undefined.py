"""Variables assigned only inside a tensor loop or in one branch of a tensor `if`:
reading them where Python would raise UnboundLocalError fails (at run time when only
the run knows), naming the variable, the statement that may leave it undefined and the
reading line; where they are defined the results match Python."""
import numpy as np
import pytest

import graphcore as gc
from _helpers import check
from autograph import UndefinedValueError, UndefinedVariableError, function


def last_of_loop(n):
    for i in range(n):
        last = i * 10
    return last


def last_row(x):
    for row in x:
        last = row
    return last


def while_defined(n):
    i = 0
    while i < n:
        i += 1
        found = i * 2
    return found


def test_zero_trip_loop_read_fails_others_match_python():
    check(last_of_loop, (0,), (1,), (4,))
    check(while_defined, (0,), (3,))
    check(last_row, (np.arange(6.0).reshape(3, 2),), (np.zeros((0, 2)),), python_args=False)


def test_zero_trip_error_names_variable_and_both_lines():
    f = function(last_of_loop)
    assert f(np.int64(3)) == 20
    with pytest.raises(UndefinedVariableError) as e:
        f(np.int64(0))
    assert isinstance(e.value, UndefinedValueError) and isinstance(e.value, gc.InvalidArgumentError)
    first = last_of_loop.__code__.co_firstlineno
    msg = str(e.value)
    assert "'last'" in msg and f"test_undefined.py:{first + 3}" in msg and f"line {first + 1}" in msg


def one_branch(x):
    if x > 0:
        y = x * 2
    return y


def one_branch_read_guarded(x):
    if x > 0:
        y = x * 2
    z = 0
    if x > 0:
        z = y + 1
    return z


def test_one_branch_if_is_checked_when_read():
    check(one_branch, (3,), (-1,))
    check(one_branch_read_guarded, (3,), (-1,))
    f = function(one_branch)
    assert f(np.int64(3)) == 6       # the same graph serves both: the check runs only when read
    with pytest.raises(UndefinedValueError, match="'y'"):
        f(np.int64(-1))
    assert function(one_branch).get_concrete_function(np.int64(1)) is not None


def only_inside(n):
    s = 0
    for i in range(n):
        t = i * i
        s += t
    return s


def test_variable_only_used_inside_costs_nothing():
    g = function(only_inside).get_concrete_function(np.int64(3)).graph
    assert "Assert" not in g.op_types()
    assert not any(op.type == "Enter" and op.outputs[0].dtype == gc.bool_ for op in g.get_operations())
    check(only_inside, (0,), (4,))


def unused_after(n):
    for i in range(n):
        last = i
    return n


def test_never_read_is_fine():
    check(unused_after, (0,), (3,))


def chained(n, m):
    for i in range(n):
        a = i
    for j in range(m):
        a = a + j if False else j
    return a


def test_maybe_defined_through_second_loop():
    check(chained, (0, 0), (0, 2), (2, 0), (3, 3))


def python_loop_zero(n):
    for i in []:
        last = i
    return n + last


def test_certainly_undefined_fails_while_tracing():
    with pytest.raises(UndefinedVariableError, match="'last'"):
        function(python_loop_zero).get_concrete_function(np.int64(1))
