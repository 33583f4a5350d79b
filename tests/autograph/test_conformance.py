"""Each program of conformance_programs, run as plain Python and through @function on
the same arguments: the same value (and dtype kind), the same printed lines, the same
exception type."""
import numpy as np
import pytest

import conformance_programs as cp
from autograph import ConversionError, StagingError, function
from autograph.testing.differential import value_kind

I64, I32, F64 = np.int64, np.int32, np.float64

CASES = [
    (cp.first_over, (I64(9),)), (cp.first_over, (I64(3),)), (cp.first_over, (I64(30),)),
    (cp.echo_until, (I64(6),)), (cp.echo_until, (I64(2),)),
    (cp.raise_if_negative, (I64(1),)), (cp.raise_if_negative, (I64(-1),)),
    (cp.raise_in_loop, (I64(2),)), (cp.raise_in_loop, (I64(5),)),
    (cp.assert_positive, (F64(2.0),)), (cp.assert_positive, (F64(-2.0),)),
    (cp.or_operand, (I64(0), I64(5))), (cp.or_operand, (I64(3), I64(5))),
    (cp.and_operand, (I64(2), I64(5))), (cp.and_operand, (I64(0), I64(5))),
    (cp.falls_off, (I64(-1),)), (cp.falls_off, (I64(2),)),
    (cp.falls_off_in_loop, (I64(3),)), (cp.falls_off_in_loop, (I64(8),)),
    (cp.body_local, (I64(5),)), (cp.body_local, (I64(0),)),
    (cp.mixed_tuple, (I64(3),)), (cp.mixed_tuple, (I64(-3),)),
    (cp.weak_return, (I32(-3),)), (cp.weak_return, (I32(3),)),
    (cp.weak_range, (I32(4),)), (cp.weak_counter, (I32(7), I64(4))),
    (cp.print_python_only, (I64(3),)),
    (cp.dict_item_both_branches, (I64(3),)), (cp.dict_item_both_branches, (I64(-3),)),
    (cp.inner_loop_from_invariant, (I64(-2), I64(4), np.array([4, 3, -2], dtype=np.int64))),
    (cp.inner_loop_from_invariant, (I64(5), I64(4), np.array([4, 3], dtype=np.int64))),
    (cp.guarded_read_in_loop_test, (I64(4),)), (cp.guarded_read_in_loop_test, (I64(0),)),
    (cp.no_return_through_empty_python_loop, (I64(-1),)), (cp.no_return_through_empty_python_loop, (I64(0),)),
    (cp.int_truth, (I32(6),)), (cp.int_truth, (I64(0),)), (cp.int_truth, (F64(0.5),)),
    (cp.and_operand_in_while_test, (I64(5), I64(8))), (cp.and_operand_in_while_test, (I64(0), I64(8))),
    (cp.python_int_joins_int32_in_loop, (I32(2), I32(7))), (cp.python_int_joins_int32_in_loop, (I32(6), I32(1))),
    (cp.tuple_first_returned_in_nested_loop, (F64(0.25), I64(2))),
    (cp.tuple_first_returned_in_nested_loop, (F64(-1.0), I64(2))),
    (cp.abs_of_counter, (I32(1),)), (cp.abs_of_counter, (I32(-2),)),
    (cp.cond_on_invariant_in_loop_body, (F64(5.75), F64(0.75))),
    (cp.cond_on_invariant_in_loop_body, (F64(5.75), F64(2.75))),
    (cp.python_false_assert_in_untaken_branch, (F64(2.25),)),
    (cp.python_false_assert_in_untaken_branch, (F64(1.0),)),
    (cp.undefined_read_in_untaken_branch, (4.0, I64(1))), (cp.undefined_read_in_untaken_branch, (4.0, I64(-1))),
    (cp.prints_before_a_python_raise, (np.array([0.25, 2.0]), 3)),
    (cp.prints_before_a_python_raise, (np.array([0.25, 2.0]), 4)),
    (cp.invariant_minus_itself_in_loop_test, (I64(2), np.array([0, 2, -3], dtype=np.int64))),
    (cp.early_bare_return, (F64(1.0),)), (cp.early_bare_return, (F64(-1.0),)),
    (cp.none_or_value, (F64(6.0),)), (cp.none_or_value, (F64(2.0),)), (cp.none_or_value, (F64(-2.0),)),
    (cp.returns_none_inside_loop, (I64(3),)), (cp.returns_none_inside_loop, (I64(8),)),
    (cp.returns_none_or_index_inside_loop, (I64(10),)), (cp.returns_none_or_index_inside_loop, (I64(2),)),
    (cp.tuple_or_none, (F64(1.0),)), (cp.tuple_or_none, (F64(-1.0),)),
    (cp.same_string_on_every_path, (F64(1.0),)), (cp.same_string_on_every_path, (F64(2.0),)),
    (cp.calls_search, (I64(9),)), (cp.calls_search, (I64(2),)),
] + [(f, (I64(n),)) for f in (cp.none_or_pair_in_loop, cp.none_in_inner_loop_pair_in_outer) for n in (0, 1, 3, 6)
] + [(cp.none_from_inner_loop_value_after, (I64(n), np.array(xs, dtype=np.int64)))
     for n in (0, 1, 2) for xs in ([1, 2, 3], [], [5])
] + [(cp.none_then_python_int_in_loop_then_argument, (I32(8), np.array(xs))) for xs in ([-0.75, 1.0], [])
] + [
] + [(cp.closure_reads_value_changed_in_if, (F64(x),)) for x in (1.5, -1.5)
] + [(f, (I64(n),)) for f in (cp.closure_reads_value_changed_in_loop, cp.nonlocal_bump_in_loop) for n in (0, 3)
] + [(cp.nonlocal_in_while_helper, (F64(x),)) for x in (10.0, 0.5)
] + [(cp.closure_appends_to_outer_list, (np.array(xs),)) for xs in ([1.0, 2.0, 3.0], [])
] + [(f, (F64(x),)) for f in (cp.unused_floor, cp.prints_around_sqrt) for x in (np.nan, np.inf, -1.0, 2.5)
] + [(cp.list_plus_equals_and_extend_in_loop, (np.array(xs),)) for xs in ([1.0, 2.5], [])
] + [(cp.stack_with_python_float, (x,)) for x in (np.float32(0.1), F64(0.1))
] + [(cp.stack_with_python_int, (n,)) for n in (I32(3), I64(3))
] + [(cp.arrays_of_lists_holding_tensors, (x, n)) for x, n in ((np.float32(0.1), I32(3)), (F64(-0.1), I64(2)))
] + [(cp.counts_nan_and_infinite, (np.array(xs, dtype=d),)) for xs in ([0.5, np.nan, -np.inf, np.inf], [])
     for d in (np.float64, np.float32)
] + [(cp.containers_made_in_the_body, (np.array(xs),)) for xs in ([1.0, 2.0], [])
] + [(cp.float_index_where_the_path_runs, (np.array([1.0, 2.0]), F64(x))) for x in (1.0, 6.0)
] + [(f, (n,)) for f in (cp.walrus_in_while, cp.walrus_with_break_and_continue)
     for n in (I64(7), I64(0), I64(20), I32(3), 5)
] + [(cp.unused_int, (F64(x),)) for x in (np.nan, np.inf, -np.inf, 2.5, 1e300)
] + [(cp.int_in_loop_prints_around, (np.array(xs),)) for xs in ([1.5, np.nan, 2.0], [0.5, 2.0], [np.inf])
] + [(cp.nested_spec_with_a_tensor, (x, w)) for x in (F64(2.0), F64(-1.25), 2.5, F64(123.0))
     for w in (I64(8), I32(3), 6)
] + [(cp.extremes_of_a_list, (x, n)) for x in (F64(0.25), F64(-1.0), F64(np.nan), F64(1.0), F64(0.5))
     for n in (I64(5), I32(-4), 2)
] + [(cp.big_python_int_joins_int32, (I32(1),)), (cp.big_python_int_joins_int32_in_loop, (I32(0),))  # the
]  # paths that assign 3000000000 fail the run: test_a_python_int_an_int32_join_cannot_hold_...
CASES += [(cp.round_of_a_path_typed_value, (F64(c), F64(x), I32(6789))) for c in (-1.0, 1.5, 3.0)
          for x in (2.675, 2.25, np.nan, -0.05)]
CASES += [(cp.unused_bool_of_a_slice, (np.array([1.0, 0.0]), I64(k))) for k in (0, 1, 2)]
CASES += [(cp.float_of_a_one_element_array, (np.array(xs),)) for xs in ([3.0], [1.0, 2.0])] + [(cp.matcher, (x, k)) for x in (I64(3), I64(-3)) for k in (1, 2, None, 5, 8, 3, I64(2), I64(5), I64(9))]


def _run(f, args, capfd):
    try:
        value, error = f(*args), None
    except Exception as e:  # noqa: BLE001 (the exception is what is compared)
        value, error = None, type(e)
    return value, error, capfd.readouterr().out


def assert_same(py, graph):
    if isinstance(py, tuple):
        assert isinstance(graph, tuple) and len(graph) == len(py)
        for a, b in zip(py, graph):
            assert_same(a, b)
        return
    if py is None:
        assert graph is None
        return
    assert graph is not None and value_kind(py) == value_kind(graph)
    assert np.asarray(py).dtype == np.asarray(graph).dtype or not isinstance(py, (np.generic, np.ndarray))
    np.testing.assert_array_equal(np.asarray(graph), np.asarray(py))


@pytest.mark.parametrize("f,args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_converted_matches_python(f, args, capfd):
    py_value, py_error, py_out = _run(f, args, capfd)
    g_value, g_error, g_out = _run(function(f), args, capfd)
    # an error of the run is the executor's subclass of Python's (ExecutionError[ValueError])
    assert g_error == py_error or (py_error is not None and g_error is not None and issubclass(g_error, py_error))
    assert g_out == py_out
    if py_error is None:
        assert_same(py_value, g_value)


def test_python_only_print_runs_on_every_call(capfd):
    f = function(cp.print_python_only)
    f(I64(2))
    assert capfd.readouterr().out == "tick\ntick\ndone\n"
    f(I64(1))
    assert capfd.readouterr().out == "tick\ndone\n"


def test_mixed_dtype_or_is_refused_clearly():
    with pytest.raises(Exception, match="`or` on a tensor gives one of its operands"):
        function(cp.or_operand)(I64(0) > 0, I64(5))


def test_raise_keeps_the_users_line():
    with pytest.raises(ValueError) as e:
        function(cp.raise_if_negative)(I64(-4))
    assert "conformance_programs.py" in "".join(getattr(e.value, "__notes__", []))


def test_walrus_outside_a_while_test_in_and_is_refused_with_advice():
    with pytest.raises(ConversionError, match="'y := ...' in an `and` / `or`") as e:
        function(cp.walrus_in_and)(I64(7))
    assert e.value.lineno is not None


def test_destructuring_case_is_refused():
    with pytest.raises(ConversionError, match="cannot be converted"):
        function(cp.destructure)(I64(1))


def test_dict_key_added_on_one_path_only_is_refused():
    with pytest.raises(StagingError, match="a dict may gain a key only if every branch adds it"):
        function(cp.dict_item_one_branch)(I64(1))


@pytest.mark.parametrize("f,match", [
    # which of two Python values is returned is decided when the graph runs
    (cp.string_on_one_path, "returned value is a Python str 'other' on one path and a Python str 'positive'"),
    # a helper that returns None on a path chosen at run time: its caller cannot test for None
    (cp.uses_maybe_value, "maybe_value .* returns None on some paths"),
    # `pop` in a loop on a tensor would run once, while the graph is built
    (cp.pops_in_loop, "'stack' is a list of 4 elements before the loop but a list of 3"),
])
def test_run_time_choices_the_graph_cannot_make_are_refused(f, match):
    with pytest.raises(StagingError, match=match):
        function(f)(I64(2))


def _best_from_none(xs):
    best = None
    for v in xs:
        if best is None or v > best:
            best = v
    return best


def test_a_loop_variable_that_starts_as_none_is_refused_with_advice():
    with pytest.raises(StagingError, match=r"'best' is a Python NoneType that changes inside a loop on a tensor.*"
                                           r"Start it with a number instead of None"):
        function(_best_from_none)(np.array([1.0, 3.0]))


@pytest.mark.parametrize("f,arg,match", [
    (cp.appends_through_one_name, np.array([1.0, 2.0]), r"`acc.append\(...\)` inside a loop or `if` on a tensor "
                                                         r"changes the list that 'alias' also names"),
    (cp.appends_in_if_through_one_name, F64(1.0), r"`acc \+= ...` .* changes the list that 'alias' also names"),
    (cp.appends_to_a_list_a_dict_holds, np.array([1.0]), r"a list that line \d+ puts into a list, dict or object"),
    (cp.changes_array_another_name_shares_in_if, F64(1.0), r"`y \+= ...` changes the array in place in numpy, and 'z' "
                                                           r"shares its memory"),
    (cp.adds_to_a_set_in_loop, np.array([1.0, 2.0, 1.0]), r"'seen.add\(...\)' changes a set inside a loop or `if` "
                                                          r"on a tensor"),
])
def test_a_change_another_name_would_see_is_refused(f, arg, match):
    """Python's other name (or container) sees the change; the graph's would keep the old
    value: refused at trace time, naming the line (each gave a wrong value before)."""
    with pytest.raises(StagingError, match=match) as e:
        function(f)(arg)
    assert "conformance_programs.py:" in str(e.value)


@pytest.mark.parametrize("f,match", [
    (cp.label_by_if_expression, r"conformance_programs.py:\d+: The conditional expression \(`a if c else b`\) is "
                                r"'big' in the if branch and 'small' in the else branch .*write numbers in it"),
    (cp.message_by_if_statement, r"conformance_programs.py:\d+: 'msg' is 'pos' in the if branch and 'neg' in the "
                                 r"else branch .*give msg a number on every path"),
])
def test_a_str_chosen_at_run_time_is_refused_saying_which_and_what_to_write(f, match):
    with pytest.raises(StagingError, match=match):
        function(f)(F64(2.0))


@pytest.mark.parametrize("f,n", [(cp.big_python_int_joins_int32, I32(-1)), (cp.big_python_int_joins_int32_in_loop,
                                                                             I32(2))])
def test_a_python_int_an_int32_join_cannot_hold_fails_the_run_on_its_path(f, n):
    """Python gives the int 3000000000 there; the graph holds the join as int32: the run
    fails with InexactTypeError (an OverflowError) naming the variable, only on that path."""
    with pytest.raises(OverflowError, match=r"'y' is the int 3000000000 on this path of the (if|loop) at line \d+, "
                                            r"but the graph holds it as int32 .*wrap around.*np.int64"):
        function(f)(n)
