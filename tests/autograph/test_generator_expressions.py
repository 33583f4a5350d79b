"""Generator expressions given to any / all / sum / min / max / sorted / list / tuple in
converted code, under Control Flow v1, v2 lowered, v2 direct, jit_compile=True and numba:
the same values, exact result types, printed lines (order and count) and exception types as
plain Python. any / all stop at the item Python stops at, so later items' prints and errors
never happen; a generator over a tensor is refused naming the line and the iterable."""
from __future__ import annotations

import importlib.util
import os
import types

import numpy as np
import pytest
from _engines import exact_types

import autograph
from autograph import function
from autograph.errors import StagingError
from autograph.testing import differential

ENGINES = [
    pytest.param({"control_flow": "v1"}, id="v1"),
    pytest.param({"control_flow": "v2", "functional": "lower"}, id="v2-lowered"),
    pytest.param({"control_flow": "v2", "functional": "direct"}, id="v2-direct"),
    pytest.param({"jit_compile": True}, id="compiled"),
    pytest.param({"jit_compile": "numba"}, id="numba", marks=pytest.mark.skipif(
        importlib.util.find_spec("numba") is None, reason="numba is optional")),
]


def agree(fn, args, engine):
    plain = differential.call(fn, args)
    converted = differential.call(function(fn, **engine), args)
    kind, detail = differential.compare(plain, converted)
    assert kind == differential.AGREE, f"{kind}: {detail}\nplain: {plain.describe()}\ngraph: {converted.describe()}"
    if plain.error is None:
        exact_types(plain.value, converted.value)
    return plain


def over(x, i):
    print("checking", i)
    return x > i


def reached(x, i):
    if i == 2:
        raise ValueError("item 2 was computed")
    return x > i


# -- any / all: Python's short circuit -----------------------------------------------------------

def any_of_comparisons(x):
    return any(x > i for i in range(3))


def all_of_comparisons(x):
    return all(x > i for i in range(3))


def any_printing_each_item(x):
    return any(over(x, i) for i in range(4))


def all_printing_each_item(x):
    return all(over(x, i) for i in range(4))


def any_with_a_print_in_the_item(x):
    return any((print("item", i), x < i)[1] for i in (3, 1, 0))


def any_failing_at_the_third_item(x):
    return any(reached(x, i) for i in range(4))


def all_failing_at_the_third_item(x):
    return all(not reached(-x, i) for i in range(4))  # item i: x >= -i, item 2 raises


def any_over_a_list_a_tuple_and_a_dict(x):
    d = {"a": 1.0, "b": 2.5}
    return (any(v > x for v in [1.0, 2.0]), all(d[k] < x for k in d), any(x == t for t in (0.5, 3.0)),
            all(v for v in [x, x - 1]))


def any_of_python_values_and_tensors(x):
    # the first item is a Python True: decided while tracing, as Python decides it
    return any(x > 10 if i else i == 0 for i in range(3)), all(i < 5 for i in range(3)), any(i > 5 for i in [])


def any_with_nested_fors_and_a_filter(x):
    return any(x * i > j for i in range(3) if i != 1 for j in (0.5, 1.5))


def any_in_a_loop_on_a_tensor(x, n):
    c = 0
    while n > 0:
        if any(over(x, i + n) for i in range(2)):
            c += 1
        n -= 1
    return c


def any_in_an_if_on_a_tensor(x):
    found = False
    if x > -2:
        found = any(over(x, i) for i in range(3))
        print("found", found)
    return found


def made_outside_an_if_given_to_any_inside(x):
    g = (over(x, i) for i in range(3))
    found = False
    if x > -2:
        found = any(g)  # the branch is traced again (its prints): any() computes the same items again
        print("found", found)
    return found


SHORT_CIRCUIT = [
    (any_of_comparisons, [(np.float64(-1.0),), (np.float64(0.5),), (np.float64(5.0),)]),
    (all_of_comparisons, [(np.float64(-1.0),), (np.float64(1.5),), (np.float64(5.0),)]),
    (any_printing_each_item, [(np.float64(-1.0),), (np.float64(0.5),), (np.float64(2.5),)]),
    (all_printing_each_item, [(np.float64(-1.0),), (np.float64(1.5),), (np.float64(5.0),)]),
    (any_with_a_print_in_the_item, [(np.float64(-1.0),), (np.float64(2.0),), (np.float64(5.0),)]),
    (any_failing_at_the_third_item, [(np.float64(5.0),), (np.float64(1.5),), (np.float64(-1.0),)]),
    (all_failing_at_the_third_item, [(np.float64(5.0),), (np.float64(-0.5),), (np.float64(-5.0),)]),
    (any_over_a_list_a_tuple_and_a_dict, [(np.float64(0.5),), (np.float64(1.5),), (np.float64(3.0),)]),
    (any_of_python_values_and_tensors, [(np.float64(0.5),)]),
    (any_with_nested_fors_and_a_filter, [(np.float64(0.1),), (np.float64(0.5),), (np.float64(1.0),)]),
    (any_in_a_loop_on_a_tensor, [(np.float64(1.5), np.int64(2)), (np.float64(-1.0), np.int64(3))]),
    (any_in_an_if_on_a_tensor, [(np.float64(-3.0),), (np.float64(-1.0),), (np.float64(1.5),)]),
    (made_outside_an_if_given_to_any_inside, [(np.float64(-3.0),), (np.float64(-1.0),), (np.float64(1.5),)]),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fn,arg_sets", SHORT_CIRCUIT, ids=[f.__name__ for f, _ in SHORT_CIRCUIT])
def test_any_all_stop_where_python_stops(fn, arg_sets, engine):
    for args in arg_sets:
        agree(fn, args, engine)


def test_the_short_circuit_is_decided_when_the_graph_runs():
    """One trace serves every value: the items after the first are in cond branches, run or
    not when the graph runs (each call prints what Python prints for its own value)."""
    f = function(any_printing_each_item)
    for x in (np.float64(-1.0), np.float64(0.5), np.float64(2.5)):
        assert differential.call(f, (x,)).stdout == differential.call(any_printing_each_item, (x,)).stdout
    assert f.trace_count == 1


# -- sum / min / max / sorted / list / tuple: every item, in order -------------------------------

def sums(x):
    return sum(x * i for i in range(3)), sum(x > i for i in range(3)), sum((x - i for i in (1, 2)), 0.5)


def minimum_and_maximum(x):
    return min(x - i for i in range(3)), max(abs(x - i) for i in [1, 2]), max(x * i for i in range(1, 3))


def listed_and_sorted(x):
    return (list(x + i for i in (1, 2)), tuple(x * i for i in range(2)), sorted(x * i - i * i for i in range(4)),
            sorted((x - i for i in range(3)), reverse=True))


def sorted_as_python_orders(x):
    # Python's stable order (0.5 and np.float64(0.5) keep their places), its NaN placement, -0.0 before
    # 0.0 when it comes first, each item keeping its own type
    return (sorted([x, x - 1, 0.5]), sorted([x, 0.5, x - 1], reverse=True), sorted([x, x / x, 0.5, x - 1.0]),
            sorted([-0.0, x * 0.0, 0.0]), sorted([x > 0, x < 0, True]), sorted(int(x) - i for i in range(3)))


def sorted_by_keys(x):
    def squared(v):
        print("key of", v)
        return v * v
    return (sorted((x * i - i * i for i in range(4)), key=lambda v: -v), sorted([x, x - 2, 0.5], key=abs, reverse=True),
            sorted([x, x - 2, 0.5], key=squared), sorted([x, x - 2], key=str))


def every_item_printed(x):
    return list(over(x, i) for i in range(3)), sum(over(x, i) for i in range(2))


def generator_in_a_for_loop(x):
    total = 0.0
    for v in (x * i for i in range(3)):
        total += v
    return total


CONSUMING = [
    (sums, [(np.float64(1.5),), (np.float64(-2.0),)]),
    (minimum_and_maximum, [(np.float64(1.5),), (np.float64(-2.0),)]),
    (listed_and_sorted, [(np.float64(1.5),), (np.float64(3.0),)]),
    (sorted_as_python_orders, [(np.float64(1.5),), (np.float64(0.0),), (np.float64(-1.0),)]),
    (sorted_by_keys, [(np.float64(1.5),), (np.float64(-0.5),)]),
    (every_item_printed, [(np.float64(0.5),)]),
    (generator_in_a_for_loop, [(np.float64(1.5),)]),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fn,arg_sets", CONSUMING, ids=[f.__name__ for f, _ in CONSUMING])
def test_builtins_that_consume_every_item(fn, arg_sets, engine):
    for args in arg_sets:
        agree(fn, args, engine)


# -- gradients through them ------------------------------------------------------------------

def folded(x):
    return sum(x * x * i for i in range(3)) + max(x * i - i for i in range(1, 3))


def chosen_by_any(x):
    return x * 3.0 if any(x > i for i in range(2)) else x * x


def picked_by_sorted(x):
    return sorted(x * i - i * i for i in range(4))[1] * 3.0 + sorted([x, 0.5, x * x], reverse=True)[0] + \
        sorted([x * 2.0, x * 3.0], key=lambda v: -v)[1]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fn", [folded, chosen_by_any, picked_by_sorted])
def test_gradients_match_central_differences(fn, engine):
    grad = autograph.grad(function(fn, **engine))
    h = 1e-6
    for x in (-0.7, 0.4, 1.7, 2.6):
        numeric = (fn(np.float64(x + h)) - fn(np.float64(x - h))) / (2 * h)
        np.testing.assert_allclose(grad(np.float64(x)), numeric, rtol=1e-6)


# -- refused -------------------------------------------------------------------------------------

def any_over_a_tensor(x):
    return any(v > 0 for v in x)


def sum_over_range_of_a_tensor(n):
    return sum(i * 2 for i in range(n))


def reused_after_a_staged_any(x):
    g = (x > i for i in range(3))
    found = any(g)
    return found, list(g)


def kept(i):
    print("filter", i)
    return True


def printing_filter(x):
    return any(x > i for i in range(3) if kept(i))


REFUSED = [
    (any_over_a_tensor, (np.array([1.0, -2.0]),), ["`x`", "for loop"]),
    (sum_over_range_of_a_tensor, (np.int64(3),), ["`range(n)`", "for loop"]),
    (reused_after_a_staged_any, (np.float64(1.5),), ["given to any()", "new generator",
                                                      f"made at {os.path.basename(__file__)}:"
                                                      f"{reused_after_a_staged_any.__code__.co_firstlineno + 1} "]),
    (printing_filter, (np.float64(-1.5),), ["`for` / `if` part", "for loop"]),
]


@pytest.mark.parametrize("fn,args,words", REFUSED, ids=[f.__name__ for f, _, _ in REFUSED])
def test_refused_with_the_line_and_what_to_write(fn, args, words):
    fn(*args)  # plain Python runs it
    with pytest.raises(StagingError) as e:
        function(fn)(*args)
    message = str(e.value)
    line = fn.__code__.co_firstlineno + (3 if fn is reused_after_a_staged_any else 1)
    assert f"{os.path.basename(__file__)}:{line}:" in message, message
    for w in words:
        assert w in message, message


def generator_types(x):
    g = (x * i for i in range(2))
    return isinstance(g, types.GeneratorType), type(g).__name__, g.__name__, next(g)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_generator_expression_is_still_a_python_generator(engine):
    agree(generator_types, (np.float64(1.5),), engine)


def test_python_only_generators_keep_python_semantics():
    """On Python values nothing is staged: the generator is Python's, once through."""
    def f(n):
        g = (i * i for i in range(n))
        first = next(g)
        return first, any(v > 3 for v in g), list(g)
    assert function(f)(4) == f(4)


# -- lazy iterators the converter did not split (a generator function, := in the item) -------------

@autograph.do_not_convert
def comparisons(x, n):
    for i in range(n):
        yield x > i


def any_of_a_generator_function_ending_at_a_tensor(x):
    return any(comparisons(x, 1)), all(i < 5 for i in range(2)), any(i > 5 for i in range(2))


def any_with_an_assignment_expression_over_python_values(x):
    return any((y := i * 2) > 1 for i in range(3)), y, x


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fn", [any_of_a_generator_function_ending_at_a_tensor,
                                any_with_an_assignment_expression_over_python_values])
def test_unsplit_iterators_decided_by_python_values_or_their_last_item(fn, engine):
    for x in (np.float64(-1.0), np.float64(1.7)):
        agree(fn, (x,), engine)


def any_of_a_generator_function(x):
    return any(comparisons(x, 3))


def any_with_an_assignment_expression(x):
    return any((y := x * i) > 1 for i in range(3)), y


@pytest.mark.parametrize("fn", [any_of_a_generator_function, any_with_an_assignment_expression])
def test_unsplit_iterators_with_items_after_a_tensor_are_refused(fn):
    fn(np.float64(0.7))
    with pytest.raises(StagingError, match=r"test_generator_expressions.py:\d+: any\(\) of an iterator .* for loop"):
        function(fn)(np.float64(0.7))


def given_to_any_twice(x):
    g = (x > i for i in range(3))
    return any(g), any(g)


def given_to_any_in_an_if_then_listed(x):
    g = (x > i for i in range(3))
    found = False
    if x > -2:
        found = any(g)
    return found, list(g)


def given_to_all_in_both_branches(x):
    g = (x > i for i in range(3))
    if x > 0:
        found = all(g)
    else:
        found = any(g)
    return found, any(g)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fn", [given_to_any_twice, given_to_any_in_an_if_then_listed, given_to_all_in_both_branches])
def test_a_second_use_after_a_staged_any_is_refused(fn, engine):
    fn(np.float64(1.5))
    with pytest.raises(StagingError, match="given to (any|all)\\(\\) before"):
        function(fn, **engine)(np.float64(1.5))
