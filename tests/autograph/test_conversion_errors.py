"""Constructs that cannot be converted raise ConversionError with the user's file, line,
a caret under the construct and what to do instead; jumps inside try / with blocks are
supported and behave as in Python."""
import contextlib
import inspect

import numpy as np
import pytest

from _helpers import check
from autograph import ConversionError, function

def del_in_loop(n):
    s = 0
    for i in range(n):
        t = i
        del t
        s += i
    return s


def comprehension_condition(x):
    return [v for v in [x, x + 1] if v > 0]


def comprehension_over_tensor(x):
    return [v * 2 for v in x]


def a_generator(n):
    yield n


def _assert_points_at(err: ConversionError, fn, text: str, advice: str):
    lines, first = inspect.getsourcelines(fn)
    line = next(first + i for i, t in enumerate(lines) if text in t)
    msg = str(err)
    assert f"test_conversion_errors.py:{line}" in msg, msg
    src = lines[line - first]
    assert src.rstrip() in msg, msg
    caret_line = msg.splitlines()[-1]
    assert caret_line.strip() == "^", msg
    assert caret_line.index("^") - 4 == err.col, msg
    assert advice in msg, msg


@pytest.mark.parametrize("fn, arg, text, advice", [
    (del_in_loop, np.int64(2), "del t", "Assign 't = None' instead"),
    (comprehension_condition, np.int64(2), "if v > 0", "Write a for loop with an if statement"),
    (comprehension_over_tensor, np.arange(3.0), "for v in x", "Write a for loop that appends"),
    (a_generator, np.int64(2), "yield n", "Return a list"),
])
def test_unconvertible_constructs(fn, arg, text, advice):
    with pytest.raises(ConversionError) as e:
        function(fn)(arg)
    _assert_points_at(e.value, fn, text, advice)


def comprehension_python(n):
    return sum([i * n for i in range(4) if i % 2 == 0])


def test_comprehensions_over_python_values_stay_python():
    check(comprehension_python, (0,), (3,))


def break_in_try_finally(n):
    log = [0]
    s = 0
    for i in range(n):
        try:
            if i > 3:
                break
            s += i
        finally:
            log[0] += 1
    return s, log[0]


def return_in_try_finally(n):
    s = 0
    for i in range(n):
        try:
            s += i
            if s > 5:
                return s * 10
        finally:
            s += 1
    return s


def continue_in_with(n):
    s = 0
    for i in range(n):
        with contextlib.suppress(ZeroDivisionError):
            if i % 2 == 0:
                continue
            s += i
    return s


def test_jumps_inside_try_and_with_are_supported():
    check(break_in_try_finally, (0,), (2,), (8,))
    check(return_in_try_finally, (0,), (2,), (6,))
    check(continue_in_with, (0,), (5,))


def star_args(x, *rest, **kw):
    def add(*vs, scale=1):
        return sum(vs) * scale
    return add(x, *rest, **kw)


def test_star_args_and_kwargs():
    check(star_args, (1.0, 2.0, 3.0))
    assert function(star_args)(np.float64(1.0), np.float64(2.0), scale=3) == 9.0
