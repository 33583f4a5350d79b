"""Values whose Python type depends on the path a run takes (autograph/operators/path_types.py).

`total = 0; for v in x: total += v` is the int 0 when x is empty and an np.float64 otherwise;
the graph holds one dtype and carries which type the taken path gave the value. Converted
code must return, print and format what plain Python does on every path (types included),
and refuse clearly, naming the line and the variable, where it cannot."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

import autograph
import graphcore as gc
from autograph import StagingError
from autograph.testing.differential import call, value_kind
from graphcore.ops.python_type_ops import InexactTypeError


def _same_value(a, b) -> None:
    """Equal values of the same Python type (the int 0 is not 0.0, nor np.int64(0))."""
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same_value(x, y)
        return
    assert type(a) is type(b), f"{a!r} ({type(a).__name__}) != {b!r} ({type(b).__name__})"
    assert value_kind(a) == value_kind(b)
    if isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert a == b, (a, b)


def _same_kind(a, b) -> None:
    """Equal values of the same kind (a value whose type does not depend on the path comes
    back as numpy's: np.float64 for float(x), as the differential tests accept)."""
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same_kind(x, y)
        return
    assert value_kind(a) == value_kind(b) and a == b, (a, b)


def agrees(fn, *args, same=_same_value):
    """Plain Python and the converted function: the same value and type, the same lines
    printed, the same exception type."""
    plain = call(fn, args)
    converted = call(autograph.function(fn), args)
    assert converted.error == plain.error, (plain.describe(), converted.describe())
    assert converted.stdout == plain.stdout
    if plain.error is None:
        same(plain.value, converted.value)
    return converted


def refused(fn, *args, match: str, line_of: str, name: str | None = None):
    """The converted function refuses while tracing: a StagingError naming this file, the
    line that holds `line_of` and (if given) the variable."""
    with pytest.raises(StagingError) as info:
        autograph.function(fn)(*args)
    message = str(info.value)
    assert re.search(match, message), message
    assert f"test_path_typed_values.py:{_line(fn, line_of)}" in message, message
    if name is not None:
        assert f"'{name}'" in message, message
    return message


def _line(fn, text: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


EMPTY = np.array([], dtype=np.float64)


# -- the four programs of the report ---------------------------------------------------------

def int_float_join(x):
    total = 0
    for v in x:
        total += v
    print(total)
    return total


def mixed_big(c):
    r = 2**60 + 1 if c > 0 else 0.5
    return r


def mixed_print(c):
    r = 1 if c > 0 else 2.5
    print(r)
    return r


def neg_mod(a, b):
    r = 0
    if a > 0:
        r = a % b
    else:
        r = math.fmod(a, b)
    return r


@pytest.mark.parametrize("x", [EMPTY, np.array([1.5, 2.0]), np.array([], dtype=np.int64), np.array([3, 4]),
                               np.array([], dtype=np.int32), np.array([7], dtype=np.int32)])
def test_an_int_then_a_sum_of_items_is_the_int_0_when_the_loop_runs_no_iteration(x):
    out = agrees(int_float_join, x)
    if len(x) == 0:
        assert type(out.value) is int and out.stdout == "0\n"


@pytest.mark.parametrize("c", [np.int64(1), np.int64(-1)])
def test_an_int_or_a_float_by_a_conditional_expression_prints_as_python(c):
    agrees(mixed_print, c)


@pytest.mark.parametrize("a, b", [(np.int64(7), np.int64(-3)), (np.int64(-7), np.int64(-3)),
                                  (np.int64(-7), np.int64(2))])
def test_a_numpy_int_on_one_path_and_a_python_float_on_another_keeps_each_type(a, b):
    agrees(neg_mod, a, b)


def test_an_int_a_float64_cannot_hold_exactly_fails_the_run_naming_the_line_not_rounded():
    assert agrees(mixed_big, np.int64(-1)).value == 0.5
    with pytest.raises(InexactTypeError, match="int 1152921504606846977") as info:
        autograph.function(mixed_big)(np.int64(1))
    assert isinstance(info.value, OverflowError)
    assert f"test_path_typed_values.py:{_line(mixed_big, '2**60')}" in str(info.value)
    assert "conditional expression" in str(info.value)


def assigned_big(c):
    r = 0.5
    if c > 0:
        r = 2**60 + 1
    return r


def test_the_inexact_int_error_names_the_variable():
    with pytest.raises(InexactTypeError, match=r"'r' is the int 1152921504606846977 on this path of the if at line"):
        autograph.function(assigned_big)(np.int64(1))
    assert agrees(assigned_big, np.int64(-1)).value == 0.5


# -- loops that run zero and several times; nested conds and loops ----------------------------

def while_halves(n):
    r = 0
    i = 0
    while i < n:
        r = r + 0.5
        i += 1
    print(r, f"{r!r}")
    return r


def range_loop(n, x):
    s = 0
    for i in range(n):
        s = s + x * i
    return s, str(s)[:0]


def nested_loops(x, y):
    s = 0
    for v in x:
        t = 0
        for w in y:
            t += w * v
        s += t
    print(s)
    return s


def cond_in_loop(x):
    r = 0
    for v in x:
        if v > 1:
            r = r + 0.5
        else:
            r = r + 1
    print(r, isinstance(r, int), isinstance(r, float))
    return r


def nested_conds(a, b):
    r = 0
    if a > 0:
        if b > 0:
            r = 1.5
        else:
            r = np.int64(3)
    else:
        r = 2
    print(r, repr(r))
    return r


def early_return(x):
    total = 0
    for v in x:
        if v > 10:
            return total
        total += v
    return total


def helper(x):
    return 1 if x > 0 else 0.5


def calls_helper(x):
    r = helper(x)
    print(r * 2, r)
    return r * 2


@pytest.mark.parametrize("n", [np.int64(0), np.int64(3)])
def test_a_while_loop_that_runs_zero_or_several_times(n):
    agrees(while_halves, n)


@pytest.mark.parametrize("n", [np.int64(0), np.int64(4)])
def test_a_range_loop_over_a_float_that_runs_zero_or_several_times(n):
    agrees(range_loop, n, np.float64(1.5))


@pytest.mark.parametrize("x, y", [(np.array([1.0, 2.0]), EMPTY), (EMPTY, np.array([1.0])),
                                  (np.array([1.0, 2.0]), np.array([3.0]))])
def test_nested_loops(x, y):
    agrees(nested_loops, x, y)


@pytest.mark.parametrize("x", [EMPTY, np.array([0.5, 0.2]), np.array([0.5, 2.0])])
def test_an_if_inside_a_loop_adding_an_int_or_a_float(x):
    agrees(cond_in_loop, x)


@pytest.mark.parametrize("a, b", [(1, 1), (1, -1), (-1, 1)])
def test_nested_conds_give_a_python_float_a_numpy_int_or_a_python_int(a, b):
    agrees(nested_conds, np.int64(a), np.int64(b))


@pytest.mark.parametrize("x", [EMPTY, np.array([1.0, 20.0]), np.array([1.0, 2.0])])
def test_a_return_from_inside_the_loop(x):
    agrees(early_return, x)


@pytest.mark.parametrize("x", [np.int64(1), np.int64(-1)])
def test_a_helpers_result_keeps_its_paths_type_in_the_caller(x):
    agrees(calls_helper, x)


# -- values computed from a path-typed value ------------------------------------------------

def derived(x):
    total = 0
    for v in x:
        total += v
    a, b, c, d = total + 1, total * 2, total // 2, total / 2
    e, f, g, h = -total, abs(total), total < 3, total % 2
    i, j = total ** 2, total - 1.0
    print(a, b, c, d, e, f, g, h, i, j)
    print(repr(a), repr(g), f"{a!r} {total:>5} {total}", "%s|%r|%d" % (b, b, b))
    return a, b, c, d, e, f, g, h, i, j


def conversions(c):
    r = 3 if c > 0 else 2.5
    return float(r), int(r), round(r), np.float64(r), bool(r), np.int64(r)


def formatting(c):
    r = 7 if c > 0 else 2.5
    print("%d|%5.2f|%s|%r" % (r, r, r, r))
    print("{}|{:>6}|{!r}".format(r, r, r))
    print(str(r), repr(r), format(r, ""), f"{r}", f"{r:.3f}")
    print("r=" + str(r))


def isinstance_checks(c):
    r = 3 if c > 0 else 2.5
    if isinstance(r, int):
        print("int", r)
    else:
        print("float", r)
    return isinstance(r, float) == (c <= 0)


def max_of_path_typed(c, x):
    r = 1 if c > 0 else x
    m = max(r, 0.5)
    print(m)
    return m, min(r, 5.0)


def running_max(x):
    best = 0
    for v in x:
        best = max(best, v)
    print(best)
    return best


@pytest.mark.parametrize("x", [EMPTY, np.array([-2.5, -1.0]), np.array([2.5, 1.0])])
def test_max_of_an_int_and_floats_keeps_the_int_until_a_float_wins(x):
    agrees(running_max, x)


def numpy_int_or_python_int(c, x):
    k = 1 if c > 0 else x
    print(repr(k), k)
    return k + 1, k * 3, k // 2, -k


@pytest.mark.parametrize("x", [EMPTY, np.array([1.0, 2.5]), np.array([], dtype=np.int64), np.array([3, 4])])
def test_arithmetic_and_comparisons_follow_pythons_rules_for_the_paths_type(x):
    agrees(derived, x)


@pytest.mark.parametrize("c", [np.int64(1), np.int64(-1)])
def test_explicit_conversions_give_their_own_type_on_every_path(c):
    agrees(conversions, c, same=_same_kind)


@pytest.mark.parametrize("c", [np.int64(1), np.int64(-1)])
def test_print_str_repr_format_percent_and_fstrings_show_the_paths_type(c):
    agrees(formatting, c)


@pytest.mark.parametrize("c", [np.int64(1), np.int64(-1)])
def test_isinstance_is_answered_when_the_graph_runs(c):
    out = agrees(isinstance_checks, c)
    assert out.stdout in ("int 3\n", "float 2.5\n")


@pytest.mark.parametrize("c, x", [(1, 0.25), (-1, 0.75), (-1, 0.25)])
def test_max_and_min_keep_the_winners_type(c, x):
    agrees(max_of_path_typed, np.int64(c), np.float64(x))


@pytest.mark.parametrize("c", [np.int64(1), np.int64(-1)])
def test_a_python_int_or_a_numpy_int(c):
    agrees(numpy_int_or_python_int, c, np.int64(4))


def exact_big(c):
    r = 2**40 if c > 0 else 0.5
    return r * 2**20, r * 2**20 // 2**10


def inexact_big(c):
    r = 2**40 if c > 0 else 0.5
    s = r * 2**13 + 1
    return s - 1


def test_ints_beyond_2_53_computed_in_floats_are_exact_or_fail_the_run():
    agrees(exact_big, np.int64(1))
    agrees(exact_big, np.int64(-1))
    agrees(inexact_big, np.int64(-1))
    with pytest.raises(InexactTypeError, match=r"`\+` on the conditional expression") as info:
        autograph.function(inexact_big)(np.int64(1))
    assert f"test_path_typed_values.py:{_line(inexact_big, '2**13')}" in str(info.value)


def wraps_for_numpy_only(c, x):
    k = 3 if c > 0 else x
    return k * 2**62


def test_a_python_int_held_in_int64_with_numpys_ints_does_not_wrap_around():
    # numpy's int64 wraps around (as Python does with np.int64); a Python int fails the run beyond int64,
    # as Python ints in a graph do, instead of giving the wrapped value
    agrees(wraps_for_numpy_only, np.int64(-1), np.int64(5))
    with pytest.raises(OverflowError, match="beyond int64"):
        autograph.function(wraps_for_numpy_only)(np.int64(1), np.int64(5))


def float32_join(c):
    r = 0.1 if c > 0 else np.float32(0.5)
    return r


def float32_exact(c):
    r = 0.25 if c > 0 else np.float32(0.5)
    return r, r * 2


def test_a_python_float_a_float32_cannot_hold_exactly_fails_the_run():
    agrees(float32_join, np.int64(-1))
    agrees(float32_exact, np.int64(1))
    agrees(float32_exact, np.int64(-1))
    with pytest.raises(InexactTypeError, match="float 0.1 on this path"):
        autograph.function(float32_join)(np.int64(1))


# -- refusals where Python raises on one of the types -------------------------------------

def range_of(c):
    r = 3 if c > 0 else 2.5
    s = 0
    for i in range(r):
        s += i
    return s


def index_with(c, x):
    r = 1 if c > 0 else 2.5
    return x[r]


def bitwise(c):
    r = 3 if c > 0 else 2.5
    return r & 1


def percent_x(c):
    r = 3 if c > 0 else 2.5
    print("%x" % r)


def type_of(c):
    r = 3 if c > 0 else 2.5
    return type(r) is int


def untracked(c):
    r = 1 if c > 0 else 2.5
    y = np.full(3, r)
    print(y)


def power_of(c, k):
    total = 3 if c > 0 else 2.5
    return total ** k


def loop_range(x):
    total = 0
    for v in x:
        total += v
    for i in range(total):
        print(i)


def test_range_of_an_int_or_a_float_is_refused():
    refused(range_of, np.int64(1), match=r"range\(\) of .*int on some paths and float on others", line_of="range(r)")
    refused(loop_range, np.array([1.5]), match=r"range\(\) of 'total'.*Convert it with int", line_of="range(total)",
            name="total")
    agrees(loop_range, np.array([1, 2]))


def test_indexing_with_an_int_or_a_float_is_refused():
    refused(index_with, np.int64(1), np.arange(4.0), match="indexing with", line_of="x[r]")


def test_a_bitwise_op_python_refuses_for_floats_is_refused():
    refused(bitwise, np.int64(1), match=r"`&` on .*Python raises TypeError for `&`.*float", line_of="r & 1")


def test_percent_x_of_an_int_or_a_float_is_refused():
    refused(percent_x, np.int64(1), match="`%x` formatting of", line_of='"%x"')


def test_type_of_an_int_or_a_float_is_refused_with_isinstance_as_advice():
    refused(type_of, np.int64(1), match=r"type\(\) of .*isinstance", line_of="type(r)")


def test_an_op_outside_the_type_rules_is_refused_where_its_result_shows():
    refused(untracked, np.int64(1), match=r"printing a value computed by Fill .*float\(\.\.\.\) or int",
            line_of="print(y)")


def test_a_power_that_may_be_negative_of_a_value_that_may_be_an_int_is_refused():
    refused(power_of, np.int64(1), np.int64(2), match=r"`\*\*` of .*negative", line_of="total ** k")
    agrees(power_of, np.int64(1), 2)  # a Python int exponent: known to be >= 0


def float_range_loop(x):
    s = 0
    for i in range(x):
        s += i
    return s


def percent_x_float(x):
    print("%x" % x)


def test_a_float_tensor_in_range_or_percent_x_raises_pythons_type_error():
    agrees(float_range_loop, np.float64(2.5))
    agrees(percent_x_float, np.float64(2.5))


# -- gradients ------------------------------------------------------------------------------

def weighted(w, x):
    total = 0
    for v in x:
        total += v * w
    return total * w + total


def cond_mixed(w, c):
    r = 1 if c > 0 else w * 2.5
    return r * w + r


def loop_cond(w, x):
    r = 0
    for v in x:
        if v > 1:
            r = r + w * v
        else:
            r = r + 1
    return r * w


@pytest.mark.parametrize("fn, rest", [(weighted, (EMPTY,)), (weighted, (np.array([1.0, 2.0]),)),
                                      (cond_mixed, (np.int64(1),)), (cond_mixed, (np.int64(-1),)),
                                      (loop_cond, (np.array([0.5, 2.0, 3.0]),)), (loop_cond, (EMPTY,))])
def test_gradients_through_path_typed_values_match_finite_differences(fn, rest):
    eps = 1e-6
    for w in (0.7, -1.3):
        value, got = autograph.value_and_grad(fn)(np.float64(w), *rest)
        expected = (fn(w + eps, *rest) - fn(w - eps, *rest)) / (2 * eps)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)
        _same_value(fn(np.float64(w), *rest), value)


def gradient_inside(w, x):
    total = 0
    for v in x:
        total += v * w
    y = total * w
    return y, gc.gradients(y, [w])[0]


@pytest.mark.parametrize("x", [EMPTY, np.array([1.0, 3.0])])
def test_gc_gradients_in_converted_code_through_a_path_typed_value(x):
    y, dy = autograph.function(gradient_inside)(np.float64(2.0), x)
    assert y == 2.0 * 2.0 * x.sum() and dy == 2 * 2.0 * x.sum()


# -- what it costs ----------------------------------------------------------------------------

def abs_of_int_or_int32(n, m):
    for i in range(m, 1, 2):
        return abs(i if n < 0 else n), -(i if n < 0 else n)
    return 0, 0


@pytest.mark.parametrize("n", [np.int32(5), np.int32(-5)])
def test_abs_and_minus_of_a_python_int_or_an_int32(n):  # (found by autograph fuzz, seed 123246)
    agrees(abs_of_int_or_int32, n, np.int32(8))


def appends_running_total(x):
    total = 0
    acc = []
    for v in x:
        acc.append(total)
        total += v
    return np.array(acc)


def appends_float_of_total(x):
    total = 0
    acc = []
    for v in x:
        acc.append(float(total))
        total += v
    return acc, np.array(acc)


def test_appending_a_value_that_is_an_int_then_floats_to_a_graph_list_is_refused():
    # (the list took int64 from the first append and truncated the floats after it)
    refused(appends_running_total, np.array([1.5, 2.0]), match="appending a value whose Python type depends",
            line_of="acc.append(total)")
    agrees(appends_float_of_total, np.array([1.5, 2.0]), same=_same_kind_nested)


def _same_kind_nested(a, b):
    assert len(a) == len(b)
    assert [value_kind(v) for v in a[0]] == [value_kind(v) for v in b[0]] and a[0] == b[0]
    np.testing.assert_array_equal(a[1], b[1])
    assert a[1].dtype == b[1].dtype


def nested_ifs_in_loops(n, x, xs):  # (autograph fuzz seed 740: each nested if was traced again per level)
    r = -2
    for i, xv in enumerate(xs[::-1], 1):
        r = max(np.minimum(n, i), min(i, r))
        for j in range(0, 6, 2):
            if x <= 3:
                continue
            if i > -0.5:
                r -= j
            elif x < -0.5:
                break
            else:
                r = (3 + r) % 97
        return x * 2.0, abs(xv), r


def test_nested_ifs_over_a_path_typed_value_are_traced_once_per_plan():
    for x in (np.float32(-0.5), np.float32(4.0)):
        agrees(nested_ifs_in_loops, np.int64(1), x, np.array([0.25, -0.5, 5.25], dtype=np.float32))


def test_the_common_sum_loop_carries_one_small_tag_and_no_checks():
    graph = autograph.function(int_float_join).get_concrete_function(np.array([1.0])).graph
    types = [op.type for op in graph.get_operations()]
    assert "Assert" not in types  # the int 0 in a float64 is exact: nothing to check when the graph runs
    assert types.count("Merge") == 3  # the sum, the loop counter and the tag
