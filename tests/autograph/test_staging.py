"""Graph-specific staging: shape relaxation, lists in tensor loops, loop-local variables,
a break flag that becomes a tensor inside a Python loop."""
import numpy as np

from _helpers import check
from autograph import function


def grow_tensor(x, n):
    import graphcore as gc
    i = 0
    while i < n:
        x = gc.concat([x, x], 0)
        i += 1
    return x


def test_loop_variable_shape_is_relaxed():
    f = function(grow_tensor)
    out = f(np.ones(2), np.int64(3))
    assert out.shape == (16,)
    graph = f.get_concrete_function(np.ones(2), np.int64(3)).graph
    assert "Enter" in graph.op_types()


def defined_in_loop(n):
    for i in range(n):
        last = i * 10
    return last


def test_variable_defined_only_in_loop():
    check(defined_in_loop, (1,), (4,))


def collect(xs):
    out = []
    for x in xs:
        if x > 0:
            out.append(x * 2)
    return out


def test_python_list_append_stays_python():
    check(collect, ([1, -2, 3],), ([],), tensor_args=False)


def list_len(n):
    out = []
    for i in range(n):
        out.append(i)
    return len(out)


def test_list_append_and_len():
    check(list_len, (0,), (3,), python_args=True)
    f = function(list_len)
    assert f(np.int64(5)) == 5


def break_in_python_loop(t):
    s = 0
    for v in [1, 2, 3, 4]:
        if v * t > 5:
            break
        s += v
    return s


def test_tensor_break_flag_in_python_loop():
    check(break_in_python_loop, (1,), (2,), (10,))


def py_while_then_tensor(n):
    i = 0
    total = 0
    while i < 3:          # Python while the test is Python
        total += n        # total becomes a tensor when n is one
        i += 1
    while total > 0:      # a graph loop when total is a tensor
        total -= 4
    return total


def test_python_and_tensor_loops_mix():
    check(py_while_then_tensor, (0,), (5,), (7,))


def nested_calls(x):
    def inner(v):
        return v * 2 if v > 0 else -v
    total = 0
    for i in range(3):
        total += inner(x - i)
    return total


def test_nested_function_and_ifexp():
    check(nested_calls, (0,), (1,), (5,))


def test_for_over_a_tensor_range_with_a_print_in_the_body(capfd):
    """The loop is rebuilt to carry the effects token; the rebuild must not reuse tensors
    of the rolled-back first build (regression: KeyError in the executor's plan)."""
    import numpy as np

    from autograph import function

    @function
    def f(steps):
        for i in range(steps):
            print("i", i)
        return steps

    assert f(np.int64(3)) == 3
    assert capfd.readouterr().out == "i 0\ni 1\ni 2\n"
    f.get_concrete_function(np.int64(3)).graph.validate()
