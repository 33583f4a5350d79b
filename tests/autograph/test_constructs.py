"""Behaviour: every construct gives the same results converted (Python and tensor inputs)
as plain Python."""
import numpy as np
import pytest

from _helpers import check

from autograph import StagingError, function


def if_else(x):
    if x > 0:
        y = x * 2
    elif x < -5:
        y = -x
    else:
        y = x + 100
    return y


def if_no_else(x):
    y = x
    if x > 3:
        y = y - 3
    return y


def ifexp_nested(x):
    return 1 if x > 5 else (2 if x > 0 else 3)


def chained(x):
    return 0 < x < 10


def lazy_logic(x, y):
    a = x > 0 and y > 0
    b = x > 0 or y > 0
    return a, b, not (x > y)


def test_if():
    check(if_else, (3,), (-7,), (-1,))
    check(if_no_else, (5,), (1,))


def test_conditional_expressions():
    check(ifexp_nested, (7,), (3,), (-2,))


def test_logical_and_chained():
    check(chained, (5,), (0,), (12,))
    check(lazy_logic, (1, 2), (-1, 2), (1, -2), (-1, -2))


def while_loop(n):
    i = 0
    s = 0
    while i < n:
        s += i * i
        i += 1
    return s


def while_else(n):
    i = 0
    while i < n:
        i += 2
        if i == 6:
            break
    else:
        i = -i
    return i


def test_while():
    check(while_loop, (0,), (5,), (10,))
    check(while_else, (3,), (10,), (0,))


def for_range(n):
    s = 0
    for i in range(n):
        s += i
    return s


def for_range_step(a, b, c):
    s = 0
    for i in range(a, b, c):
        s = s * 2 + i
    return s


def for_else(n):
    s = 0
    for i in range(n):
        if i == 4:
            break
        s += i
    else:
        s = 100
    return s


def test_for_range():
    check(for_range, (0,), (5,))
    check(for_range_step, (10, 0, -3), (0, 10, 3), (5, 5, 1), (0, 5, -1), (7, -3, -2))
    check(for_else, (3,), (8,), (0,))


def for_tensor(x):
    s = 0.0
    for row in x:
        s = s + row * 2
    return s


def test_for_over_tensor():
    x = np.arange(6.0).reshape(3, 2)
    check(for_tensor, (x,), (np.zeros((0, 2)),))


def for_python(n):
    s = 0
    for i, v in enumerate([3, 4, 5]):
        s += i * v * n
    for a, b in zip([1, 2], [3, 4]):
        s += a * b
    for k, v in {"a": 1, "b": 2}.items():
        s += v
    for t in (1, 2):
        s -= t
    return s


def test_for_python_iterables():
    check(for_python, (2,), (-1,))


def break_continue(n):
    s = 0
    i = 0
    while i < n:
        i += 1
        if i % 2 == 0:
            continue
        if i > 7:
            break
        s += i
    return s


def test_break_continue():
    check(break_continue, (0,), (5,), (20,))


def early_return(n):
    for i in range(n):
        for j in range(n):
            if i * j > 6:
                return i + j
    return -1


def return_in_while(n):
    i = 0
    while True:
        if i * i >= n:
            return i
        i += 1


def test_early_return_from_nested_loops():
    check(early_return, (0,), (3,), (4,), (10,))
    check(return_in_while, (0,), (10,), (16,))


def aug_and_unpack(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    c = [a, b]
    c[0] += 1
    return c[0], b


class Box:
    def __init__(self):
        self.total = 0


BOX = Box()


def attribute_target(n):
    BOX.total = 0
    for i in range(n):
        BOX.total += i
    return BOX.total


def test_assignment_forms():
    check(aug_and_unpack, (0,), (7,))
    check(attribute_target, (0,), (5,), tensor_args=False)  # a Python loop: runs as Python
    # in a loop on a tensor the global object would get a graph tensor and keep it across calls
    with pytest.raises(StagingError, match=r"'BOX.total' changes a global object inside a loop"):
        function(attribute_target)(np.int64(5))


def weak_typing(n):
    x = 1
    i = 0
    while i < n:
        x = x / 2
        i += 1
    return x


def test_weak_python_numbers():
    check(weak_typing, (0,), (3,))


def list_append(n):
    out = []
    for i in range(n):
        out.append(i * 2)
    return out, len(out)


def test_list_append_in_loop():
    f = check(list_append, (4,), python_args=True, tensor_args=False)
    vals, length = f(np.int64(4))
    np.testing.assert_array_equal(vals, [0, 2, 4, 6])
    assert length == 4


def builtins_used(x, n):
    return abs(x), min(x, n), max(x, n), int(x), float(n), bool(n)


def test_builtins():
    check(builtins_used, (-3, 2), (4, 9))


def first_above(xs, t):
    idx = -1
    for i in range(len(xs)):     # a Python range: unrolled, but the break test is a tensor
        if xs[i] > t:
            idx = i
            break
    return idx


def first_above_return(xs, t):
    for i in range(len(xs)):
        if xs[i] > t:
            return i
    return -1


def test_tensor_break_and_return_in_an_unrolled_python_loop():
    cases = [(np.array([1.0, 5.0, 2.0, 7.0]), 4.0), (np.array([5.0, 1.0, 7.0]), 4.0),
             (np.array([1.0, 2.0, 3.0, 9.0]), 4.0), (np.array([1.0, 2.0]), 4.0)]
    check(first_above, *cases)
    check(first_above_return, *cases)
