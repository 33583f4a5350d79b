"""Errors name the user's file, line and variable."""
import numpy as np
import pytest

import graphcore as gc
from autograph import ConversionError, SourceNotFoundError, StagingError, UndefinedVariableError, function


def maybe_undefined(x):
    if x > 0:
        y = 1
    return y


@pytest.mark.parametrize("arg", [-1, np.int64(-1)])
def test_undefined_variable_read(arg):
    with pytest.raises(UndefinedVariableError) as e:
        function(maybe_undefined)(arg)
    msg = str(e.value)
    line = maybe_undefined.__code__.co_firstlineno
    assert "'y'" in msg and "test_errors.py" in msg
    assert f":{line + 3}" in msg          # the read
    assert f"line {line + 1}" in msg      # the if that may leave it undefined


def undefined_not_read(x):
    if x > 0:
        y = 1
    return x


def test_undefined_but_never_read_is_fine():
    assert function(undefined_not_read)(np.int64(-1)) == -1


def dtype_clash(x, f):
    y = x
    if x > 0:
        y = f
    return y


def test_branch_dtype_mismatch_names_variable_and_dtypes():
    with pytest.raises(StagingError) as e:
        function(dtype_clash)(np.int64(1), np.float32(2))
    msg = str(e.value)
    assert "'y'" in msg and "float32" in msg and "int64" in msg and "test_errors.py" in msg


def loop_dtype_clash(n, f):
    y = n
    for i in range(n):
        y = f
    return y


def test_loop_dtype_change_is_an_error():
    with pytest.raises(StagingError) as e:
        function(loop_dtype_clash)(np.int64(3), np.float32(1))
    assert "'y'" in str(e.value) and "int64" in str(e.value) and "float32" in str(e.value)


def a_generator(n):
    for i in range(n):
        yield i


def test_conversion_error_has_file_line_and_caret():
    with pytest.raises(ConversionError) as e:
        function(a_generator)(3)
    msg = str(e.value)
    line = a_generator.__code__.co_firstlineno + 2
    assert f"test_errors.py:{line}" in msg and "yield" in msg and "^" in msg


def failing_assert(x):
    assert x < 10, "x too big"
    return x


def test_runtime_failure_points_at_user_line():
    f = function(failing_assert)
    assert f(np.int64(3)) == 3
    with pytest.raises(AssertionError) as e:  # the exception Python raises, at the user's line
        f(np.int64(30))
    line = failing_assert.__code__.co_firstlineno + 1
    assert f"test_errors.py:{line}" in "".join(e.value.__notes__)
    assert isinstance(e.value.__cause__, gc.ExecutionError)


def test_source_not_found():
    ns = {}
    exec("def made(x):\n    return x * 2\n", ns)
    with pytest.raises(SourceNotFoundError) as e:
        function(ns["made"])(np.float64(2.0))
    assert "autograph=False" in str(e.value)
    assert function(ns["made"], autograph=False)(np.float64(2.0)) == 4.0


def fails_while_tracing(x):
    y = x * 2
    return y + {}["missing"]  # a Python error in the converted code


def test_a_python_error_while_tracing_notes_the_users_line():
    with pytest.raises(KeyError) as e:
        function(fails_while_tracing)(np.float64(1.0))
    line = fails_while_tracing.__code__.co_firstlineno + 2
    assert [n.strip() for n in getattr(e.value, "__notes__", [])] == [f"in the user's code at {__file__}:{line}"]
