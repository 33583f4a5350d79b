"""Issue 25: converted functions give Python's exact result (value and type, the caller's
objects changed as Python changes them) or refuse clearly, naming the user's line, under
every engine: sequence repetition by a tensor count, returned objects, returned Python
numbers, negation of path-typed values, arguments changed in place, grad of a tuple."""
from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

import autograph
from autograph import StagingError, function

ENGINES = [{}, {"optimize": False}, {"jit_compile": True}, {"devices": ["cpu:0", "cpu:1"]}]
try:
    import numba  # noqa: F401
    ENGINES.append({"jit_compile": "numba"})
except ImportError:  # the numba backend is optional
    pass
ENGINE_IDS = ["default", "unoptimized", "jit", "two_devices", "numba"][:len(ENGINES)]


def same_exactly(expected, got):
    """Equal values of the very same types, recursively (np.int64(3) is not 3)."""
    assert type(got) is type(expected), (expected, got)
    if isinstance(expected, (list, tuple)):
        assert len(expected) == len(got), (expected, got)
        for a, b in zip(expected, got):
            same_exactly(a, b)
    elif isinstance(expected, dict):
        assert expected.keys() == got.keys()
        for k in expected:
            same_exactly(expected[k], got[k])
    elif dataclasses.is_dataclass(expected) or hasattr(expected, "__dict__") and not isinstance(expected, type):
        same_exactly(vars(expected), vars(got))
    elif isinstance(expected, np.ndarray):
        assert expected.dtype == got.dtype and np.array_equal(expected, got, equal_nan=True), (expected, got)
    else:
        assert expected == got or (expected != expected and got != got), (expected, got)


def agree_exactly(fn, *args, engine=None, capsys=None):
    expected = fn(*args)
    out = capsys.readouterr().out if capsys else None
    got = function(fn, **(engine or {}))(*args)
    same_exactly(expected, got)
    if capsys:
        assert capsys.readouterr().out == out
    return got


@pytest.fixture(params=ENGINES, ids=ENGINE_IDS)
def engine(request):
    return request.param


# -- 6: returned values have Python's types ------------------------------------------

def counter(x):
    c = 0
    while x > 0:
        c += 1
        x -= 1
    return c


def collatz(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def conversions(x):
    return int(x), float(x), round(x), x.item(), not x, bool(x > 1), math.sqrt(abs(x))


def to_list(a):
    return a.tolist()


def big_power(n):
    r = collatz(n)
    return r ** 10


def test_python_numbers_are_returned_as_python_types(engine, capsys):
    agree_exactly(counter, np.int64(4), engine=engine)
    agree_exactly(counter, np.int64(0), engine=engine)
    assert agree_exactly(collatz, np.int64(27), engine=engine) == 111
    for x in (np.float64(2.5), np.float64(0.0), np.float64(-3.25)):
        agree_exactly(conversions, x, engine=engine)
    agree_exactly(to_list, np.array([1.5, 2.0]), engine=engine)
    agree_exactly(to_list, np.array([3, 4], dtype=np.int64), engine=engine)


def test_python_int_beyond_int64_raises_instead_of_wrapping(engine):
    assert big_power(np.int64(27)) == 111 ** 10  # Python's int: beyond int64
    with pytest.raises(OverflowError):
        function(big_power, **engine)(np.int64(27))


# -- 3: returned objects hold values ---------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Point:
    x: float
    y: float
    label: str = "p"


class Box:
    def __init__(self, value, items):
        self.value, self.items = value, items


def make_objects(x):
    s = 0.0
    while x > 0:
        s += x
        x -= 1.0
    return Point(s, x), Box(s * 2, [Point(s, 1.0)]), {"k": Point(x, 2)}


def test_returned_dataclasses_and_objects_hold_values(engine):
    f = function(make_objects, **engine)
    for x in (np.float64(3.0), np.float64(-1.0)):
        same_exactly(make_objects(x), f(x))
    a, b = f(np.float64(2.0)), f(np.float64(2.0))
    assert a[0] is not b[0] and a[0] == b[0]  # a new object per call, as Python makes


# -- 2: a sequence repeated by a tensor count -------------------------------------------

def zeros_list(n):
    return [0] * n


def length_of_repeat(n):
    return len([7] * n)


def tuple_repeat(n):
    return n * (1, 2)


def text_repeat(n):
    return "ab" * n


def float_count(x):
    return [1.0] * x


def array_times_list(a):
    return a * [1, 2]


def repeated_and_looked_at(n, x):
    lst = [x, 1] * n
    print([0] * n, (1,) * n)
    return len(lst), sum([1, 2] * n), 2 in [1, 2] * n, ([5, 6] * n).count(5), -sum([1, 2] * n), lst


def sum_of_repeat_or_a_number(n):
    s = sum([1, 2] * n)
    return s if n > 1 else 0


@pytest.mark.parametrize("fn", [zeros_list, length_of_repeat, tuple_repeat])
def test_repetition_by_a_tensor_count_is_pythons_sequence(fn, engine):
    for n in (3, 0, -2):
        agree_exactly(fn, np.int64(n), engine=engine)  # a run-time list or tuple, made when the graph runs
    agree_exactly(fn, np.int32(2), engine=engine)


def test_a_repeated_sequence_is_looked_at_as_python_does(engine, capsys):
    for n in (2, 0):
        agree_exactly(repeated_and_looked_at, np.int64(n), np.float64(1.5), engine=engine, capsys=capsys)


def test_a_run_time_object_meeting_a_number_in_an_if_is_refused_with_the_line():
    with pytest.raises(StagingError, match=r"test_python_behaviour_round3.py:\d+: '<if expression>' is a run-time "
                                           r"Python object in the if branch .* but int64 in the else branch.*"
                                           r"Convert the object where it is made: int"):
        function(sum_of_repeat_or_a_number)(np.int64(3))


def test_text_repeated_by_a_tensor_count_is_pythons_text(engine):
    agree_exactly(text_repeat, np.int64(3), engine=engine)  # a run-time string (py_function's work)


def test_repetition_by_a_python_int_is_python_and_float_counts_raise_pythons_type_error(engine):
    assert function(zeros_list, **engine)(3) == [0, 0, 0]
    for x in (np.float64(2.0), np.bool_(True)):
        with pytest.raises(TypeError) as plain:
            float_count(x)
        with pytest.raises(TypeError) as converted:
            function(float_count, **engine)(x)
        assert str(plain.value) == str(converted.value)
    agree_exactly(array_times_list, np.array([1.0, 2.0]), engine=engine)  # numpy's elementwise product


# -- 8: exact operations on a path-typed float32 value ------------------------------------

def negated(x):
    h = 3.0
    if x > 1:
        h = x
    return -h, abs(h), h * 2


def test_negation_of_path_typed_float32_is_accepted(engine):
    for x in (np.float32(2.5), np.float32(0.5)):
        agree_exactly(negated, x, engine=engine)


# -- 7: a name first bound in both branches, in a loop that returns early ------------------

def returns_early_binds_in_branches(a, b):
    for j in range(a):
        if b > 0:
            return b
        if b < a:
            u = a
        else:
            u = b
        u = u + 1
    return a


def breaks_then_binds_in_nested_branches(n, x):
    total = 0.0
    k = 0
    while k < n:
        k += 1
        if x > 5:
            break
        if x > 0:
            if k > 1:
                v = x
            else:
                v = 2 * x
        else:
            v = -x
        total += v
    return total


def test_names_bound_in_branches_after_an_early_return(engine):
    for a, b in ((3, 1), (3, -1), (0, 1), (2, 5)):
        agree_exactly(returns_early_binds_in_branches, np.int64(a), np.int64(b), engine=engine)
    for x in (1.5, -2.0, 7.0):
        agree_exactly(breaks_then_binds_in_nested_branches, np.int64(3), np.float64(x), engine=engine)


# -- 10: grad of a function that returns a tuple --------------------------------------------

def power_and_steps(x):
    y = x
    i = 0
    while i < 3:
        y = y * x
        i += 1
    return y, i


def test_grad_of_a_tuple_names_the_function_and_offers_has_aux():
    with pytest.raises(TypeError, match=r"grad differentiates a function with one scalar output, and "
                                        r"power_and_steps \(defined at .*test_python_behaviour_round3.py:\d+\) "
                                        r"returns a tuple of 2 values.*has_aux=True"):
        autograph.grad(power_and_steps)(np.float64(2.0))
    gradient, steps = autograph.grad(power_and_steps, has_aux=True)(np.float64(2.0))
    same_exactly((np.float64(32.0), 3), (gradient, steps))
    (value, steps), gradient = autograph.value_and_grad(power_and_steps, has_aux=True)(np.float64(2.0))
    same_exactly(((np.float64(16.0), 3), np.float64(32.0)), ((value, steps), gradient))
    with pytest.raises(TypeError, match="must return a pair"):
        autograph.grad(lambda x: x * x, has_aux=True)(np.float64(2.0))


# -- 5: arguments changed in place ------------------------------------------------------------

def adds_in_place(x):
    x += 1
    return x.sum()


def sets_an_item(x, v):
    x[0] = v
    x[1] *= 2
    return x


def appends(lst, v):
    lst.append(v)
    lst.append(v * 2)
    lst.append("end")
    return len(lst)


def sets_a_key(d, v):
    d["k"] = v + 1
    return 0


def bump(a):
    a += 1
    return a


def rebinds_to_a_helpers_result(x):
    x = bump(x)
    return x.sum()


def changed_then_rebound(x):
    x += 1
    x = x * 10
    x += 1
    return x


def test_arguments_changed_in_place_are_written_back(engine):
    for fn, make in [(adds_in_place, lambda: (np.array([1.0, 2.0]),)),
                     (sets_an_item, lambda: (np.array([1.0, 2.0, 3.0]), np.float64(7.5))),
                     (rebinds_to_a_helpers_result, lambda: (np.array([1, 2], dtype=np.int64),)),
                     (changed_then_rebound, lambda: (np.array([1.0, 2.0]),)),
                     (appends, lambda: ([1.0], np.float64(2.0))),
                     (sets_a_key, lambda: ({"a": 1}, np.int64(2)))]:
        f = function(fn, **engine)
        for _ in range(2):  # the trace's call and a call of the traced graph
            plain_args, args = make(), make()
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # nothing to warn about: it is Python's behaviour
                same_exactly(fn(*plain_args), f(*args))
            same_exactly(plain_args, args)
    lst, v = [1.0], np.float64(2.0)
    function(appends, **engine)(lst, v)
    assert lst[1] is v  # the very object Python appends


def helper_changes_without_returning(a):
    a *= 2


def reads_after_a_helper_changed_it(x):
    helper_changes_without_returning(x)
    return x.sum()


def adds_in_a_loop(x, n):
    i = 0
    while i < n:
        x[i] += 1
        i += 1
    return x


def test_in_place_changes_the_graph_cannot_write_back_are_refused_with_the_line():
    with pytest.raises(StagingError, match=r"test_python_behaviour_round3.py:\d+: this changes the caller's array "
                                           r"'x' in place, and .*test_python_behaviour_round3.py:\d+ reads the array"):
        function(reads_after_a_helper_changed_it)(np.array([1.0, 2.0]))
    for fn in (changed_in_one_branch_rebound_in_the_other, changed_then_rebound_in_a_loop):
        with pytest.raises(StagingError, match=r"test_python_behaviour_round3.py:\d+: this changes the caller's array "
                                               r"'x' in place inside a loop or an `if` on a tensor, and after it 'x' "
                                               r"names another array on some path"):
            function(fn)(np.array([1.0, 2.0]), np.int64(1))


def changed_then_rebound_in_a_loop(x, n):
    for i in range(n):
        x[0] += 1
        x = x * 2
    return x


def changed_in_loops(x, n):
    for i in range(n):
        if i % 2 == 0:
            x[i] = -1
        for j in range(n):
            x[j] += i
    x *= 2
    return n


def changed_in_a_loop_that_returns(x, n):
    for i in range(n):
        if i > 1:
            return 1
        x[i] = 9
    return 0


def test_arguments_changed_in_place_in_loops_are_written_back(engine):
    for fn in (adds_in_a_loop, changed_in_loops, changed_in_a_loop_that_returns):
        f = function(fn, **engine)
        for n in (0, 1, 2):
            plain_x, x = np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0])
            same_exactly(fn(plain_x, np.int64(n)), f(x, np.int64(n)))
            same_exactly(plain_x, x)


def changed_after_an_early_return(x, n):
    if n > 5:
        return 0.0
    x += 1
    x[0] = n
    return x.sum()


def changed_in_branches(x, n):
    if n > 0:
        if n > 2:
            x[0] = 7
        x += 1
    else:
        x *= 2
    x[1] = 3
    return n


def changed_in_one_branch_rebound_in_the_other(x, n):
    if n > 0:
        x += 1
    else:
        x = x * 2
    return x


def test_arguments_changed_in_place_in_branches_are_written_back(engine):
    for fn in (changed_after_an_early_return, changed_in_branches):
        f = function(fn, **engine)
        for n in (7, 3, 1, -1):
            plain_x, x = np.array([1.0, 2.0]), np.array([1.0, 2.0])
            same_exactly(fn(plain_x, np.int64(n)), f(x, np.int64(n)))
            same_exactly(plain_x, x)


def zero_d_changed(a, x):
    a += 1
    a *= x
    return a * 2


def zero_d_item_set(a, x):
    a[()] = x
    return x


def zero_d_changed_in_a_loop(a, n):
    for i in range(n):
        a += i
    return n


def zero_d_rebound_then_changed(a):
    a = a * 2  # a numpy scalar now: the caller's array keeps its value
    a += 1
    return a


def test_zero_d_array_arguments_changed_in_place_are_written_back(engine):
    for fn, make in [(zero_d_changed, lambda: (np.array(1.5), np.float64(3.0))),
                     (zero_d_item_set, lambda: (np.array(1.5), np.float64(3.0))),
                     (zero_d_item_set, lambda: (np.array(1, dtype=np.int64), np.float64(3.7))),
                     (zero_d_changed_in_a_loop, lambda: (np.array(1.5), np.int64(3))),
                     (zero_d_rebound_then_changed, lambda: (np.array(1.5),))]:
        f = function(fn, **engine)
        for _ in range(2):  # the trace's call and a call of the traced graph
            plain_args, args = make(), make()
            same_exactly(fn(*plain_args), f(*args))
            same_exactly(plain_args, args)


def test_functions_with_an_input_signature_write_back(engine):
    f = function(changed_in_branches, input_signature=[autograph.TensorSpec([None], np.float64),
                                                       autograph.TensorSpec([], np.int64)], **engine)
    for n in (3, -1):
        plain_x, x = np.array([1.0, 2.0]), np.array([1.0, 2.0])
        same_exactly(changed_in_branches(plain_x, np.int64(n)), f(x, np.int64(n)))
        same_exactly(plain_x, x)
    g = function(appends, input_signature=[], **engine)
    plain_lst, lst = [1.0], [1.0]
    same_exactly(appends(plain_lst, np.float64(2.0)), g(lst, np.float64(2.0)))
    same_exactly(plain_lst, lst)


def python_float_then_appended_in_an_if(x):
    acc = [1.0]
    if x > 0:
        acc.append(x)
    return acc


def python_and_numpy_items_then_a_loop(x, n):
    acc = [1.0, x]
    for i in range(n):
        acc.append(x * i)
    return acc


def numpy_item_then_python_numbers_in_a_loop(x, n):
    acc = [x]
    for i in range(n):
        acc.append(i * 0.5)
    print(acc)
    return acc


def two_loops_append_two_kinds(x, n):
    acc = []
    for i in range(n):
        acc.append(x)
    for i in range(n):
        acc.append(i * 1.0)
    return acc


def test_lists_of_python_numbers_and_numpy_values_keep_each_items_type(engine, capsys):
    for x, n in ((2.0, 3), (-1.0, 0)):
        agree_exactly(python_float_then_appended_in_an_if, np.float64(x), engine=engine)
        agree_exactly(python_and_numpy_items_then_a_loop, np.float64(x), np.int64(n), engine=engine)
        agree_exactly(numpy_item_then_python_numbers_in_a_loop, np.float64(x), np.int64(n), engine=engine,
                      capsys=capsys)


def test_a_list_whose_items_types_depend_on_the_run_is_refused_naming_the_function():
    with pytest.raises(StagingError, match=r"two_loops_append_two_kinds \(defined at .*test_python_behaviour_round3.py:"
                                           r"\d+.*\): returning a list appended to in graph control flow with both "
                                           r"Python numbers and numpy values.*Append one kind"):
        function(two_loops_append_two_kinds)(np.float64(2.0), np.int64(2))


def counted_in_a_conditional_expression(x, n):
    c = 0

    def g(v):
        nonlocal c
        c += 1
        return v * 2
    r = (g(x) if x > 0 else 1.0) if n > 1 else (g(-x) if n > 0 else 0.0)
    return r, c


def nonlocal_read_in_a_nested_conditional_expression(x, n):
    c = 0.0

    def g(v):
        nonlocal c
        c = c + v
        return c
    r = 0.0
    if n > 0:
        r = g(x) if x > 1 else (c if x > 0 else g(1.0))
    return r + c


def counted_in_a_loop_of_conditional_expressions(x, n):
    cnt = 0

    def g(v):
        nonlocal cnt
        cnt += 1
        return v + 1
    for i in range(n):
        x = (g(x) if x > 0 else -x) if i > 0 else (cnt if x > 1 else x)
    return x, cnt


def test_names_changed_through_nonlocal_in_conditional_expressions_are_pythons(engine):
    # the cell took every trace's change (c was 2 for 1), or a branch's tensor was read in the other
    for fn in (counted_in_a_conditional_expression, nonlocal_read_in_a_nested_conditional_expression,
               counted_in_a_loop_of_conditional_expressions):
        for x, n in ((2.0, 3), (0.5, 1), (-1.0, 0), (1.5, 2)):
            agree_exactly(fn, np.float64(x), np.int64(n), engine=engine)


def returns_a_list_appended_in_the_loop(x, n):
    acc = [1.0]
    for i in range(n):
        if x > i:
            acc.append(x)
        else:
            return acc
    return acc


def appends_to_a_list_in_a_dict(x, n):
    res = {"a": [1.0]}
    for i in range(n):
        if x > i:
            res["a"].append(x)
    return res


def appends_to_its_own_variable_then_stores_it(x, n):
    res = {"a": [1.0]}
    items = res["a"]
    for i in range(n):
        if x > i:
            items.append(x)
        else:
            break
    res["a"] = items
    return res


def test_lists_appended_in_graph_control_flow_where_the_graph_cannot_carry_them_are_refused_clearly(engine):
    with pytest.raises(StagingError, match=r"test_python_behaviour_round3.py:\d+: the returned value is a list that a "
                                           r"loop on a tensor appends to, returned from inside the loop.*`break`"):
        function(returns_a_list_appended_in_the_loop, **engine)(np.float64(2.0), np.int64(3))
    with pytest.raises(StagingError, match=r"test_python_behaviour_round3.py:\d+: 'res\['a'\]' is a list inside 'res' "
                                           r"that an if on a tensor appends to.*`items = res\['a'\]` before"):
        function(appends_to_a_list_in_a_dict, **engine)(np.float64(2.0), np.int64(3))
    for x in (2.0, -1.0):  # what the message says to write
        agree_exactly(appends_to_its_own_variable_then_stores_it, np.float64(x), np.int64(3), engine=engine)


def appends_python_numbers_made_from_tensors(lst, x):
    lst.append(math.ceil(x))
    lst.append(len(str(x)))
    lst += [int(x), x]
    return len(lst)


def changed_in_a_loop_that_breaks(x, n):
    for i in range(1, n - 1, 3):
        x[1] = 2.0
        if not n >= 5:
            break
    return n


def test_arguments_get_pythons_types_and_loops_that_break_write_back(engine):
    f = function(appends_python_numbers_made_from_tensors, **engine)
    for _ in range(2):
        plain_lst, lst = [1], [1]
        same_exactly(appends_python_numbers_made_from_tensors(plain_lst, np.float64(3.25)), f(lst, np.float64(3.25)))
        same_exactly(plain_lst, lst)  # [1, 4, 4, 3, np.float64(3.25)]: ints where Python puts ints
    g = function(changed_in_a_loop_that_breaks, **engine)
    for n in (1, 3, 8):
        plain_x, x = np.array([1.0, 0.0, 3.0]), np.array([1.0, 0.0, 3.0])
        same_exactly(changed_in_a_loop_that_breaks(plain_x, np.int64(n)), g(x, np.int64(n)))
        same_exactly(plain_x, x)


def prints_in_a_loop_then_int_of_nan(x, y):
    k = 0
    while k < 2:
        k += 1
        print("T1:", str(y).split("."))
    if y >= -1.25 != k:
        return int(x)
    return 0


def test_int_of_nan_fails_after_the_prints_before_it(engine, capsys):
    # the int's own op failed first (its NaN check is in program order): a print was missing
    for _ in range(3):
        with pytest.raises(ValueError):
            prints_in_a_loop_then_int_of_nan(np.float64("nan"), np.float64(-0.75))
        plain = capsys.readouterr().out
        with pytest.raises(ValueError):
            function(prints_in_a_loop_then_int_of_nan, **engine)(np.float64("nan"), np.float64(-0.75))
        assert capsys.readouterr().out == plain


# -- 9: errors that were raw or confusing ------------------------------------------------------

def appends_lambdas(n):
    fs = []
    i = 0
    while i < n:
        fs.append(lambda v: v + 1)
        i += 1
    return len(fs)


def counts_and_finds(n, x):
    lst = [x, x + 1, 5.0, x]
    c, k = 0, 0
    if n > 0:
        c = lst.count(x)
        k = lst.index(x + 1)
    return c, k, [1, 2, 1].count(1)


def finds_missing(x):
    return [x, x + 1].index(7.0)


def sorts(x):
    lst = [x, 1.0]
    lst.sort()
    return lst


def filters(x):
    return list(filter(lambda v: v > x, [1.0, 2.0, 3.0]))


def is_integer(x):
    return x.is_integer()


def big_int_comparisons(n):
    return n < 2 ** 64, n > -2 ** 70, n == 2 ** 64, 2 ** 64 != n


def python_int_times_big(a):
    return a.tolist()[0] * 2 ** 63


def test_list_methods_with_tensors_give_pythons_answer(engine):
    for n, x in ((1, 2.0), (0, 2.0), (1, 4.0)):
        agree_exactly(counts_and_finds, np.int64(n), np.float64(x), engine=engine)
    for x in (6.0, 7.0):
        agree_exactly(finds_missing, np.float64(x), engine=engine)
    with pytest.raises(ValueError, match="7.0 is not in list"):
        function(finds_missing, **engine)(np.float64(2.0))
    agree_exactly(filters, 2.0, engine=engine)


def test_is_integer_and_big_python_ints_are_pythons(engine):
    for x in (2.0, 2.5, np.inf, np.nan, -0.0):
        agree_exactly(is_integer, np.float64(x), engine=engine)
    for n in (np.int64(5), np.int64(-3), np.int32(7)):
        agree_exactly(big_int_comparisons, n, engine=engine)
    assert python_int_times_big(np.array([3])) == 3 * 2 ** 63  # Python's int: beyond int64
    with pytest.raises(OverflowError, match="a Python int in a graph is an int64"):
        function(python_int_times_big, **engine)(np.array([3]))


@pytest.mark.parametrize("fn,args,error,message", [
    (appends_lambdas, (np.int64(3),), StagingError, r"'fs' is appended a function inside a loop on a tensor"),
    (sorts, (np.float64(2.0),), TypeError, r"list.sort\(\) of a list compared with graph tensors.*np.sort"),
    (filters, (np.float64(2.0),), TypeError, r"filter\(\) with a test that is a graph tensor.*numpy mask"),
])
def test_what_the_graph_cannot_do_is_refused_with_the_line(fn, args, error, message):
    fn(*args)  # Python runs it
    with pytest.raises(error, match=r"test_python_behaviour_round3.py:\d+: .*" + message):
        function(fn)(*args)


# -- 6 (lists built in a graph loop): their items keep Python's types ---------------------------

def appends_ints(x):
    acc = []
    for v in x:
        acc.append(int(v))
    return acc


def appends_halves(n):
    acc = [1.5]
    i = 0
    while i < n:
        acc.append(i * 0.5)
        i += 1
    return acc


def appends_numpy_values(x):
    acc = []
    for v in x:
        acc.append(v * 2)
    return acc


def appends_bools_to_ints(x):
    acc = [0]
    for v in x:
        acc.append(v > 1)
    return acc


def test_lists_built_in_a_graph_loop_return_pythons_types(engine):
    agree_exactly(appends_ints, np.array([1.5, 2.5, -3.5]), engine=engine)
    agree_exactly(appends_halves, np.int64(3), engine=engine)
    agree_exactly(appends_numpy_values, np.array([1.5, 2.5]), engine=engine)
    with pytest.raises(StagingError, match=r"the list 'acc' holds a Python int before the loop and the loop appends "
                                           r"a bool tensor"):
        function(appends_bools_to_ints, **engine)(np.array([1.5, 2.5]))


# -- 6 and 8, found by `autograph fuzz`: chained comparisons, numpy's ufuncs, bitwise ops ------

def chained_comparison(m):
    return m != 1.0 >= 1, 0 < m < 5


def numpy_of_python_numbers(x):
    c = np.minimum(7, int(x))
    return c, np.maximum(0.7, float(x)), np.abs(int(x)), np.floor(float(x)), c // 3 + (c * 1) ** 2


def bitwise_of_path_typed(m):
    r = 2
    for i in range(0, m):
        r = m
    return 3 & r, r | 8, r ^ 5, r >> 1, (r if m > 2 else 7) << 2


def test_types_fuzz_found(engine):
    for m in (np.int64(8), np.int64(3), np.int64(1)):
        agree_exactly(chained_comparison, m, engine=engine)
    agree_exactly(numpy_of_python_numbers, np.float64(4.75), engine=engine)
    for m in (np.int32(3), np.int32(0)):
        agree_exactly(bitwise_of_path_typed, m, engine=engine)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __eq__(self, other):
        return type(other) is Slotted and (self.a, self.b) == (other.a, other.b)


def returns_slotted_and_ordered(x):
    import collections
    return Slotted(x * 2, 3), collections.OrderedDict(k=x + 1)


def test_returned_slotted_objects_and_dict_subclasses_hold_values(engine):
    plain = returns_slotted_and_ordered(np.float64(2.0))
    got = function(returns_slotted_and_ordered, **engine)(np.float64(2.0))
    assert got[0] == plain[0] and type(got[0].a) is np.float64
    same_exactly(plain[1], got[1])
