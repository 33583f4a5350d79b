"""`nonlocal` and `global` names a converted function assigns graph values to, under Control
Flow v1, v2 lowered, v2 direct, jit_compile=True and numba. Python reads the name's current
value on each call and leaves the new one in it; the trace once left its tensor in the cell
(the next call failed: "tensor x:0 belongs to another graph"). Each test runs the same
sequence of calls on two fresh instances, one plain and one converted, and compares every
result and the name's value after every call, exact types included."""
from __future__ import annotations

import importlib.util
import inspect

import numpy as np
import pytest

import autograph
from autograph import function
from autograph.errors import StagingError
from autograph.testing import differential
from graphcore import Tensor

ENGINES = [
    pytest.param({"control_flow": "v1"}, id="v1"),
    pytest.param({"control_flow": "v2", "functional": "lower"}, id="v2-lowered"),
    pytest.param({"control_flow": "v2", "functional": "direct"}, id="v2-direct"),
    pytest.param({"jit_compile": True}, id="compiled"),
    pytest.param({"jit_compile": "numba"}, id="numba", marks=pytest.mark.skipif(
        importlib.util.find_spec("numba") is None, reason="numba is optional: pip install -e '.[jit]'")),
]


def line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, s in enumerate(lines) if text in s)


def same(plain, converted, what: str) -> None:
    mismatch = differential.compare_values(plain, converted)
    assert mismatch is None, f"{what}: {mismatch}"
    assert type(plain) is type(converted), f"{what}: {type(plain).__name__} in Python, {type(converted).__name__}"


def agree_over_calls(make, calls, engine, entry=0):
    """`make()` gives (functions..., read the state); function `entry` is converted in one
    instance and called plainly in another, with each argument tuple of `calls` in turn."""
    plain_parts, converted_parts = make(), make()
    plain_fn, plain_state = plain_parts[entry], plain_parts[-1]
    converted_fn, converted_state = function(converted_parts[entry], **engine), converted_parts[-1]
    for i, args in enumerate(calls):
        p = differential.call(plain_fn, args)
        c = differential.call(converted_fn, args)
        kind, detail = differential.compare(p, c)
        assert kind == differential.AGREE, f"call {i}: {kind}: {detail}\nplain: {p.describe()}\ngraph: {c.describe()}"
        if p.error is None:
            same(p.value, c.value, f"call {i}'s result")
        state = converted_state()
        assert not isinstance(state, Tensor), f"call {i} left a tensor in the user's variable"
        same(plain_state(), state, f"the state after call {i}")
    return converted_fn


F = [(np.float64(1.0),), (np.float64(2.0),), (np.float64(-0.5),), (np.float64(4.0),)]


def make_accumulator():
    total = np.float64(0)

    def add(x):
        nonlocal total
        total = total + x
        return total
    return add, lambda: total


def make_counter_and_sum():
    count, total = 0, np.float64(0)

    def step(x):
        nonlocal count, total
        count += 1
        total = total + x * count
        return total
    return step, lambda: (count, total)


def make_float_accumulator():
    total = 0.0  # a Python float: its first trace reads it as a constant, later ones as an input

    def add(x):
        nonlocal total
        total = total + 2.0 * x
        return total
    return add, lambda: total


def make_float32_array_accumulator():
    acc = np.zeros(3, np.float32)

    def add(x):
        nonlocal acc
        acc = acc + x
        return acc.sum()
    return add, lambda: acc


def make_if_on_tensor():
    total = np.float64(1.0)

    def update(x):
        nonlocal total
        if x > 0:
            total = total + x
        else:
            total = total * 2.0
        return x * 3.0
    return update, lambda: total


def make_if_one_branch():
    total = np.float64(1.0)

    def update(x):
        nonlocal total
        if x > 1:
            total = total - x
        return x
    return update, lambda: total


def make_while_on_tensor():
    total = np.float64(1.0)

    def grow(x):
        nonlocal total
        while total < x * 10.0:
            total = total * 2.0 + 1.0
        return total
    return grow, lambda: total


def make_read_before_assignment():
    last = np.float64(7.0)

    def swap(x):
        nonlocal last
        before = last * 2.0
        last = x
        return before
    return swap, lambda: last


def make_shared_cell():
    total = np.float64(10.0)

    def add(x):
        nonlocal total
        total = total + x
        return total

    def scale(x):
        nonlocal total
        total = total * x
        return total
    return add, scale, lambda: total


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("make", [make_accumulator, make_counter_and_sum, make_float_accumulator,
                                  make_if_on_tensor, make_if_one_branch, make_while_on_tensor,
                                  make_read_before_assignment])
def test_assigned_nonlocal_follows_python_call_after_call(make, engine):
    agree_over_calls(make, F, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_float32_array_accumulator(engine):
    xs = [(np.array([1.0, 2.0, 3.0], np.float32),), (np.array([0.5, -1.0, 0.25], np.float32),),
          (np.array([2.0, 2.0, 2.0], np.float32),)]
    agree_over_calls(make_float32_array_accumulator, xs, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_change_of_type_retraces(engine):
    """The cell's dtype is part of the trace: a float32 put in it between calls is read as one."""
    plain_add, plain_state = make_accumulator()
    add, state = make_accumulator()
    converted = function(add, **engine)
    for fn in (plain_add, converted):
        fn(np.float64(1.0))
    plain_add.__closure__[0].cell_contents = np.float32(2.0)
    add.__closure__[0].cell_contents = np.float32(2.0)
    for x in (np.float32(1.5), np.float32(0.5)):
        same(plain_add(x), converted(x), "result")
        same(plain_state(), state(), "state")


@pytest.mark.parametrize("engine", ENGINES)
def test_two_functions_sharing_a_cell(engine):
    plain_add, plain_scale, plain_state = make_shared_cell()
    add, scale, state = make_shared_cell()
    g_add, g_scale = function(add, **engine), function(scale, **engine)
    for x in (np.float64(1.0), np.float64(3.0), np.float64(-2.0)):
        same(plain_add(x), g_add(x), "add")
        same(plain_state(), state(), "after add")
        same(plain_scale(x), g_scale(x), "scale")
        same(plain_state(), state(), "after scale")
        same(plain_add(x), add(x), "plain add of the converted instance")  # (Python's own code sees the value)


TOTAL = np.float64(0.0)


def add_to_global(x):
    global TOTAL
    if x > 0:
        TOTAL = TOTAL + x
    return TOTAL * 2.0


@pytest.mark.parametrize("engine", ENGINES)
def test_global(engine):
    global TOTAL
    plain = []
    TOTAL = np.float64(0.0)
    for (x,) in F:
        plain.append((add_to_global(x), TOTAL))
    TOTAL = np.float64(0.0)
    converted = function(add_to_global, **engine)
    for (x,), (value, total) in zip(F, plain):
        same(value, converted(x), "result")
        assert not isinstance(TOTAL, Tensor)
        same(total, TOTAL, "the global")


def make_raising():
    total = np.float64(0.0)

    def add(x):
        nonlocal total
        if x < 0:
            raise ValueError("negative")
        total = total + x
        return total
    return add, lambda: total


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failing_run_leaves_the_value_before_it(engine):
    agree_over_calls(make_raising, [(np.float64(1.0),), (np.float64(-1.0),), (np.float64(2.0),)], engine)


def make_failing_trace():
    total = np.float64(0.0)

    def add(x):
        nonlocal total
        total = total + x
        return total + "a string"
    return add, lambda: total


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failing_trace_leaves_no_tensor(engine):
    add, state = make_failing_trace()
    with pytest.raises(Exception):
        function(add, **engine)(np.float64(1.0))
    assert type(state()) is np.float64 and state() == 0.0


def make_list_in_loop():
    items = []

    def collect(n):
        nonlocal items
        i = 0
        while i < n:
            items = items + [i]
            i += 1
        return i
    return collect, lambda: items


@pytest.mark.parametrize("engine", ENGINES)
def test_a_list_rebuilt_in_a_loop_on_a_tensor_is_refused(engine):
    collect, state = make_list_in_loop()
    with pytest.raises(StagingError) as info:
        function(collect, **engine)(np.int64(3))
    message = str(info.value)
    assert f"{__file__}:{line_of(collect, 'items = items + [i]')}: the nonlocal 'items'" in message, message
    assert "build the list in a local variable and return it" in message
    assert state() == [] and type(state()) is list


def make_grad_target():
    seen = np.float64(0.0)

    def f(x):
        nonlocal seen
        seen = seen + x
        if x > 0:
            y = x * x * 3.0
        else:
            y = -x * 2.0
        return y
    return f, lambda: seen


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("x", [np.float64(1.5), np.float64(-0.75)])
def test_gradient_of_a_function_that_updates_a_nonlocal(engine, x):
    plain_f, plain_seen = make_grad_target()
    f, seen = make_grad_target()
    df = autograph.grad(function(f, **engine))
    for call in range(2):
        gradient = df(x)
        plain_f(x)
        same(plain_seen(), seen(), f"the nonlocal after call {call}")
        probe, _ = make_grad_target()
        h = 1e-6
        expected = (probe(x + h) - probe(x - h)) / (2 * h)
        assert abs(float(gradient) - expected) < 1e-5, (gradient, expected)


COUNTER = 0


def global_in_loop(n):
    """(Refused with a ConversionError before: a global assigned in a loop.)"""
    global COUNTER
    for i in range(n):
        COUNTER = COUNTER + i
    return n


@pytest.mark.parametrize("engine", ENGINES)
def test_python_int_global_counted_in_a_loop_on_a_tensor(engine):
    global COUNTER
    plain = []
    COUNTER = 0
    for n in (2, 3, 0):
        plain.append((global_in_loop(np.int64(n)), COUNTER))
    COUNTER = 0
    converted = function(global_in_loop, **engine)
    for n, (value, counter) in zip((2, 3, 0), plain):
        same(value, converted(np.int64(n)), "result")
        same(counter, COUNTER, "the global")


def nonlocal_in_branch(x):
    """(Refused with a ConversionError before: a nonlocal assigned in an if.) `total` is a
    cell of each call, made in the trace: carried through the if as its state."""
    total = 0

    def inner(v):
        nonlocal total
        if v > 0:
            total = v
        return v
    inner(x)
    return total


@pytest.mark.parametrize("engine", ENGINES)
def test_nonlocal_of_a_nested_function_assigned_in_an_if_on_a_tensor(engine):
    converted = function(nonlocal_in_branch, **engine)
    for x in (np.int64(2), np.int64(-1)):
        differential_result = differential.call(converted, (x,))
        plain_result = differential.call(nonlocal_in_branch, (x,))
        kind, detail = differential.compare(plain_result, differential_result)
        assert kind == differential.AGREE, f"{kind}: {detail}"


def make_helper_and_caller():
    total = 0

    def helper(v):
        nonlocal total
        if v > 0:
            total = total + v
        return total * 2

    def caller(x):
        return helper(x) + 1
    return caller, lambda: total


@pytest.mark.parametrize("engine", ENGINES)
def test_nonlocal_of_a_helper_the_function_calls(engine):
    """The helper's cell is the caller's to carry: it was left holding the trace's tensor."""
    agree_over_calls(make_helper_and_caller, [(np.int64(2),), (np.int64(-1),), (np.int64(3),)], engine)


def make_assigned_on_one_python_path():
    table = np.array([1.0, 2.0])

    def look(x, reset):
        nonlocal table
        if reset:  # (a Python bool: one trace per value)
            table = table * 0.0
        return table.sum() + x
    return look, lambda: table


@pytest.mark.parametrize("engine", ENGINES)
def test_a_name_the_trace_does_not_assign_keeps_its_object(engine):
    look, state = make_assigned_on_one_python_path()
    before = state()
    converted = function(look, **engine)
    assert converted(np.float64(1.0), False) == 4.0
    assert state() is before
    agree_over_calls(make_assigned_on_one_python_path,
                     [(np.float64(1.0), False), (np.float64(1.0), True), (np.float64(2.0), False)], engine)


class _Holder:
    pass


def make_helper_through_an_attribute():
    total = np.float64(0.0)

    def bump(v):
        nonlocal total
        total = total + v
        return v

    holder = _Holder()
    holder.bump = bump

    def caller(x):
        return holder.bump(x) * 2.0
    return caller, lambda: total


@pytest.mark.parametrize("engine", ENGINES)
def test_nonlocal_of_a_helper_reached_through_an_attribute(engine):
    """Not found from the function's closure and globals: its names are taken as it starts
    in the trace (a change of them retraces); it was left holding the trace's tensor."""
    agree_over_calls(make_helper_through_an_attribute, F, engine)


def make_python_numbers_in_an_if():
    total, count = 0.0, 0

    def f(x):
        nonlocal total, count
        if x > 0:
            total = total + 1.5
            count += 1
        return x
    return f, lambda: (total, count)


@pytest.mark.parametrize("engine", ENGINES)
def test_python_float_and_int_assigned_in_an_if_on_a_tensor_stay_python_numbers(engine):
    """Carried through the cond, written back as Python's float and int (each call retraces:
    the trace holds them as constants)."""
    agree_over_calls(make_python_numbers_in_an_if, F, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_change_of_the_cells_dtype_or_shape_alone_retraces(engine):
    """The arguments keep their types (the call's quick path): the cell's guard sees it."""
    plain_add, plain_state = make_float32_array_accumulator()
    add, state = make_float32_array_accumulator()
    converted = function(add, **engine)
    x = np.float32(1.5)
    for new in (None, np.zeros(4, np.float64), None, np.ones(2, np.float32)):
        if new is not None:
            plain_add.__closure__[0].cell_contents = new.copy()
            add.__closure__[0].cell_contents = new.copy()
        for _ in range(2):
            same(plain_add(x), converted(x), "result")
            same(plain_state(), state(), "state")
