"""Effects in a loop's test (a print or an assert in the right operand of `and` / `or`, in a
conditional expression, in a called function, in a nested loop's test, in an `if` test inside
the loop) run as Python runs them: once per evaluation, in program order, under every engine.

Under v1 such a test's effects used to be chained to no token when the loop's body had none
(the loop counted only its body's effects, so the traced function fetched no token and the
prints, asserts among them, never ran)."""
import importlib.util

import numpy as np
import pytest

import graphcore as gc
from autograph import function
from autograph.testing import differential

MODES = [
    pytest.param({"control_flow": "v1"}, id="v1"),
    pytest.param({"control_flow": "v2"}, id="v2-lowered"),
    pytest.param({"control_flow": "v2", "functional": "direct"}, id="v2-direct"),
    pytest.param({"jit_compile": True}, id="compiled"),
    pytest.param({"jit_compile": "numba"}, id="numba", marks=pytest.mark.skipif(
        importlib.util.find_spec("numba") is None, reason="numba is optional: pip install -e '.[jit]'")),
]
ARGUMENTS = [np.float64(2.5), np.float64(0.0), np.float32(4.0)]


def print_in_and(x):  # the loop's only effect is the print in the test
    k = 0
    while k < x and print("test", k) is None:
        k += 1
    return k


def print_in_and_with_effects_around(x):
    print("before")
    k = 0
    while k < x and print("test", k) is None:
        k += 1
    print("after", k)
    return k


def print_first_in_and(x):  # the last evaluation of the test prints too
    k = 0
    while print("test", k) is None and k < x:
        k += 1
    print("after", k)
    return k


def print_in_or(x):
    k = 0.0
    while k > x or print("or", k) is None:
        k += 1.0
        if k > 3:
            break
    return k


def print_in_and_in_or(x):
    k = 0
    while k >= x or print("or", k) is None and k < 10:
        if k >= x:
            break
        k += 1
    print("after", k)
    return k


def print_in_conditional_expression(x):
    k = 0
    while (print("yes", k) is None if k < x else False):
        k += 1
    print("after", k)
    return k


def print_in_else_of_conditional_expression(x):
    k = 0
    while (k < 2 if k < x else print("no", k) is not None):
        k += 1
    return k


def _check(k, x):
    print("check", k)
    return k < x


def print_in_called_test(x):
    k = 0
    while _check(k, x):
        k += 1
    return k


def print_in_call_in_and(x):
    k = 0
    while k < 5 and _check(k, x):
        k += 1
    print("after", k)
    return k


def print_in_nested_loop_test(x):
    total = 0
    i = 0
    while i < x:
        j = 0
        while j < i and print("inner", i, j) is None:
            j += 1
        total += j
        i += 1
    print("total", total)
    return total


def prints_in_both_loop_tests(x):
    total = 0
    i = 0
    while i < x and print("outer", i) is None:
        j = 0
        while j < i and print("inner", i, j) is None:
            j += 1
        total += j
        i += 1
    return total


def print_in_if_test_in_loop(x):
    k = 0
    s = 0
    while k < x:
        if k > 0 and print("if", k) is None:
            s += k
        k += 1
    print("after", s)
    return s


def print_in_or_of_if_test_in_loop(x):
    k = 0
    s = 0
    while k < x:
        if k > 1 or print("if-or", k) is not None:
            s += k
        k += 1
    return s


def _non_negative(k):
    assert k >= 0, "k must be non-negative"
    return True


def assert_in_and(x):
    k = 0
    while k < x and _non_negative(k):
        k += 1
    return k


def _below(k, limit):
    assert k < limit, "k too large"
    return True


def failing_assert_in_test(x):  # Python raises after the prints of the evaluations before
    k = 0
    while print("t", k) is None and _below(k, 2) and k < x:
        k += 1
    return k


def print_in_if_test_of_for_loop(x):
    s = 0
    for i in range(int(x)):
        if i % 2 == 0 and print("even", i) is None:
            s += i
    return s


def prints_in_test_and_body(x):
    k = 0
    while k < x and print("test", k) is None:
        print("body", k)
        k += 1
    print("after", k)
    return k


def print_in_test_of_a_loop_in_a_loop_over_an_array(xs):
    s = 0
    for v in xs:
        j = 0
        while j < v and print("w", j, v) is None:
            j += 1
        s += j
    return s


def print_in_break_test_of_for_loop(xs):
    s = 0.0
    for v in xs:
        if v > 2.0 and print("big", v) is None:
            break
        s += v
    print("s", s)
    return s


def print_of_python_values_first_in_test(x):  # a Print with no tensor input, at the test's top level
    k = 0
    while print("test") is None and k < x:
        k += 1
    return k


def print_of_python_values_in_and(x):
    k = 0
    while k < x and print("test") is None:
        if k > 0 and print("if") is None:
            k += 1
        k += 1
    return k


def print_in_test_of_a_loop_in_a_branch(x):
    k = 0
    if x > 1:
        while k < x and print("in-if", k) is None:
            k += 1
    else:
        k = -1
    print("end", k)
    return k


def _counts_with_a_print_in_its_test(x):
    k = 0
    while print("h", k) is None and k < x:
        k += 1
    return k


def print_in_test_of_a_helper_called_twice(x):
    return _counts_with_a_print_in_its_test(x) + _counts_with_a_print_in_its_test(x + 1)


def print_in_elif_test_in_loop(x):
    k = 0
    s = 0
    while k < x:
        if k == 0:
            s += 1
        elif k > 1 and print("elif", k) is None:
            s += 10
        k += 1
    return s


def print_under_not_in_test(x):
    k = 0
    while not print("n", k) and k < x:
        k += 1
    return k


def print_in_comprehension_filter_in_loop_test(x):  # the comprehension runs as Python, in each test
    k = 0
    while k < x and sum([1 for i in range(3) if print("c", i, k) is None]) == 3:
        k += 1
    return k


def print_in_comprehension_filter_in_loop_body(x):
    k = 0
    n = 0
    while k < x:
        n += len([i for i in range(3) if i != 1 and print("f", i, k) is None])
        k += 1
    return n


SCALAR_PROGRAMS = [print_in_comprehension_filter_in_loop_test, print_in_comprehension_filter_in_loop_body, print_in_test_of_a_loop_in_a_branch, print_in_test_of_a_helper_called_twice,
                   print_in_elif_test_in_loop, print_under_not_in_test, print_of_python_values_first_in_test, print_of_python_values_in_and, print_in_and, print_in_and_with_effects_around, print_first_in_and, print_in_or,
                   print_in_and_in_or, print_in_conditional_expression, print_in_else_of_conditional_expression,
                   print_in_called_test, print_in_call_in_and, print_in_nested_loop_test, prints_in_both_loop_tests,
                   print_in_if_test_in_loop, print_in_or_of_if_test_in_loop, assert_in_and, failing_assert_in_test,
                   print_in_if_test_of_for_loop, prints_in_test_and_body]


def _agrees(fn, args, options):
    plain = differential.call(fn, args)
    converted = differential.call(function(fn, **options), args)
    kind, detail = differential.compare(plain, converted)
    assert kind == differential.AGREE, f"{fn.__name__}{args!r}: {kind}: {detail}\n{plain.stdout!r}\n{converted.stdout!r}"


@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("fn", SCALAR_PROGRAMS, ids=lambda f: f.__name__)
def test_effects_in_loop_tests_run_as_python_runs_them(fn, options):
    for x in ARGUMENTS:
        _agrees(fn, (x,), options)


@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("fn", [print_in_break_test_of_for_loop, print_in_test_of_a_loop_in_a_loop_over_an_array],
                         ids=lambda f: f.__name__)
def test_effects_in_tests_inside_a_loop_over_an_array(fn, options):
    for xs in (np.array([0.0, 1.0, 3.0, 2.0]), np.array([1.5, 0.5]), np.array([], dtype=np.float64)):
        _agrees(fn, (xs,), options)


def _ancestors_in_the_iteration(t: gc.Tensor) -> set:
    """The ops `t` waits for within one iteration of its loop (not across NextIteration)."""
    seen, todo = set(), [t.op]
    while todo:
        op = todo.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type == "NextIteration":
            continue
        todo.extend(i.op for i in op.inputs)
        todo.extend(op.control_inputs)
    return seen


def test_under_v1_the_token_leaving_a_loop_waits_for_the_last_evaluation_of_its_test():
    """The last evaluation of the test (the one that ends the loop) may print; an effect after
    the loop is chained to the token the loop's Exit gives, so that token must wait for it."""
    g = function(print_first_in_and, control_flow="v1", optimize=False) \
        .get_concrete_function(np.float64(2.5)).graph
    in_loop = [op for op in g.get_operations() if op.type == "Print" and op.name.startswith("while")]
    after = [op for op in g.get_operations() if op.type == "Print" and not op.name.startswith("while")]
    assert len(in_loop) == 1 and len(after) == 1
    waits_for = set()
    for dep in list(after[0].inputs) + [c.outputs[0] for c in after[0].control_inputs if c.outputs]:
        waits_for |= _ancestors_in_the_iteration(dep)
    assert in_loop[0] in waits_for
