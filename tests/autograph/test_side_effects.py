"""Changes to objects from outside the function (attributes or items of parameters,
closure variables and globals, their lists' `append`) inside a loop or `if` on a tensor
would run once while the graph is built. Where the object certainly outlives the trace (a
global, an argument of the traced function) that is refused, naming the user's line;
where it may be an object of the trace itself (a closure variable, a helper's argument)
a SideEffectWarning names the line. The same statements in Python control flow, on the
function's own objects, or at its top level run as Python and do not warn."""
import inspect
import os
import warnings

import numpy as np
import pytest

import autograph
from autograph import SideEffectWarning, StagingError, function


def line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def traced_warnings(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = function(fn)(*args)
    return out, [w for w in caught if issubclass(w.category, SideEffectWarning)]


def assert_warns_at(caught, fn, text: str, what: str):
    assert len(caught) == 1, [str(w.message) for w in caught]
    w = caught[0]
    line = line_of(fn, text)
    assert (w.filename, w.lineno) == (__file__, line)
    assert str(w.message).startswith(f"{os.path.basename(__file__)}:{line}: '{what}' changes")


class Counter:
    def __init__(self):
        self.count = 0

    def run(self, n):
        i = 0
        while i < n:
            self.count += 1
            i += 1
        return self.count


def test_attribute_of_self_in_a_tensor_loop_is_refused():
    # the object kept a graph tensor and a second call counted from the traced 0 again (4, 4; Python 4, 8)
    with pytest.raises(StagingError, match=rf"{os.path.basename(__file__)}:{line_of(Counter.run, 'self.count +=')}: "
                                           r"'self.count' changes an argument of the traced function inside a loop"):
        function(Counter().run)(np.int64(4))


SEEN = []


def append_to_global(n):
    i = 0
    while i < n:
        SEEN.append(i)
        i += 1
    return i


def test_append_to_a_global_list_in_a_tensor_loop_is_refused():
    # it appended once while tracing: len 1 where Python appends 3 times
    with pytest.raises(StagingError, match=r"'SEEN.append\(...\)' changes a global object inside a loop or `if` "
                                           r"on a tensor.*local variable and return it"):
        function(append_to_global)(np.int64(3))


def test_append_to_a_global_list_in_a_python_loop_runs_as_python():
    SEEN.clear()
    out, caught = traced_warnings(append_to_global, 3)
    assert (out, SEEN, caught) == (3, [0, 1, 2], [])


def make_closure_appender():
    found = []

    def collect(n):
        for i in range(n):
            found.append(i * 2)
        return len(found)
    return collect, found


def test_append_to_a_closure_list_as_python_and_in_a_tensor_loop():
    collect, found = make_closure_appender()
    out, caught = traced_warnings(collect, 3)  # a Python loop
    assert (out, found, caught) == (3, [0, 2, 4], [])
    collect, _ = make_closure_appender()
    _, caught = traced_warnings(collect, np.int64(3))
    assert_warns_at(caught, collect, "found.append", "found.append(...)")


def add_items(x, n, total):
    i = 0
    while i < n:
        total[0] += x
        i += 1
    return total[0]


def test_item_of_a_list_argument_in_a_tensor_loop_is_refused():
    # the caller's list stayed [0.0] (Python: [6.0]) and a second call gave 6.0 again (Python: 12.0)
    with pytest.raises(StagingError, match=r"'total\[0\]' changes the caller's list 'total' inside a loop or `if` on a tensor"):
        function(add_items)(np.float64(1.5), np.int64(4), [0.0])


def test_gradient_through_a_warned_loop_matches_finite_differences():
    def f(x):
        return add_items(x * x, 3, [0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SideEffectWarning)
        got = autograph.grad(lambda x: add_items(x * x, np.int64(3), [0.0]))(np.float64(1.5))
    eps = 1e-6
    np.testing.assert_allclose(got, (f(1.5 + eps) - f(1.5 - eps)) / (2 * eps), rtol=1e-6)


def branch_append(x):
    if x > 0:
        SEEN.append(1)
    return x


def test_append_in_a_tensor_if_is_refused():
    with pytest.raises(StagingError, match=r"'SEEN.append\(...\)' changes a global object inside a loop or `if`"):
        function(branch_append)(np.float64(-1.0))


class Accumulator:
    def __init__(self):
        self.total = 0.0


def own_objects(x, n):
    acc = Accumulator()
    items = [0.0]
    i = 0
    while i < n:
        acc.total += x
        items[0] += x
        i += 1
    return acc.total + items[0]


def top_level(counter, x):
    counter.count += 1
    return x * 2


def test_no_warning_for_own_objects_top_level_changes_or_python_loops():
    out, caught = traced_warnings(own_objects, np.float64(0.5), np.int64(4))
    assert (out, caught) == (own_objects(0.5, 4), [])
    c = Counter()
    out, caught = traced_warnings(top_level, c, np.float64(1.0))
    assert (out, c.count, caught) == (2.0, 1, [])
    out, caught = traced_warnings(Counter().run, 3)
    assert (out, caught) == (3, [])


def count_in_own_loops(x, box):
    i = 0
    while i < 2:
        j = 0
        while j < x:
            box.count += 1
            j += 1
        i += 1
    return box.count


def test_a_helpers_argument_changed_in_its_own_loop_warns_once_per_statement_and_trace():
    # the box may be the caller's own object, made while tracing: warned, not refused
    out, caught = traced_warnings(lambda x: count_in_own_loops(x, Counter()), np.int64(2))
    assert out == count_in_own_loops(2, Counter()) == 4
    assert_warns_at(caught, count_in_own_loops, "box.count += 1", "box.count")


def nonlocal_in_loop(n):
    c = 0

    def bump(k):
        nonlocal c
        c += k
    for i in range(n):
        bump(i)
    return c


def nonlocal_in_if(x):
    c = 0

    def bump():
        nonlocal c
        c = c + x
    if x > 0:
        bump()
    return c


@pytest.mark.parametrize("fn, arg", [(nonlocal_in_loop, np.int64(4)), (nonlocal_in_loop, np.int64(0)),
                                     (nonlocal_in_if, np.int64(3)), (nonlocal_in_if, np.int64(-3))])
def test_a_value_changed_through_nonlocal_in_graph_control_flow_is_its_state(fn, arg):
    """A name a nested function changes through `nonlocal` is state of every loop or `if`
    that calls something (converters/control_flow.py), so each iteration's change is
    carried as in Python (it was refused; a bump() without arguments gave 1 for 3 calls)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SideEffectWarning)
        assert function(fn)(arg) == fn(arg)


GLOBAL_TOTAL = 0


def global_in_loop(n):
    def bump(k):
        global GLOBAL_TOTAL
        GLOBAL_TOTAL = GLOBAL_TOTAL + k
    for i in range(n):
        bump(i)
    return GLOBAL_TOTAL


def test_a_value_changed_through_global_in_graph_control_flow_is_refused():
    """It has one value per iteration (a global is no variable of the loop): refused at
    trace time, naming the helper's assignment and the fix."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SideEffectWarning)
        with pytest.raises(StagingError, match=r"test_side_effects.py:\d+: the global 'GLOBAL_TOTAL' is assigned a "
                                               r"tensor of one iteration.*assign 'GLOBAL_TOTAL' in the loop"):
            function(global_in_loop)(np.int64(4))


COUNTS = {"calls": 0}
TOTALS = [0.0]


def count_calls(x):
    COUNTS["calls"] += 1
    TOTALS[0] = 2.0
    return x * 2


def make_closure_counter():
    hist = [0, 0]

    def counted(x):
        hist[0] += 1
        return x + 1
    return counted, hist


def test_items_of_global_and_closure_containers_change_as_in_python_at_the_top_level():
    # `G[k] op= v` on an outside object must not make G a local of the converted function
    COUNTS["calls"], TOTALS[0] = 0, 0.0
    out, caught = traced_warnings(count_calls, np.float64(1.5))
    assert (out, COUNTS["calls"], TOTALS[0], caught) == (3.0, 1, 2.0, [])
    counted, hist = make_closure_counter()
    out, caught = traced_warnings(counted, np.float64(1.5))
    assert (out, hist, caught) == (2.5, [1, 0], [])


def push(acc, v):
    acc.append(v * 2)


def push_and_return(acc, v):
    acc.append(v * 2)
    return acc


def pushes_through_a_helper(xs):
    acc = []
    for v in xs:
        push(acc, v)
    return len(acc)


def pushes_and_assigns(xs):
    acc = []
    for v in xs:
        acc = push_and_return(acc, v)
    return len(acc), acc


def test_a_helper_changing_an_argument_in_the_callers_tensor_loop_and_returning_nothing_is_refused():
    # the caller's loop cannot carry what the helper changes: it used to give 1 where Python gives 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SideEffectWarning)
        with pytest.raises(StagingError, match=r"test_side_effects.py:\d+: 'acc.append\(...\)' changes an object "
                                               r"passed to push, .* returns nothing.*acc = push\(acc, v\)"):
            function(pushes_through_a_helper)(np.array([3.0, 1.0, 7.0]))
        xs = np.array([3.0, 1.0, 7.0])
        n, acc = function(pushes_and_assigns)(xs)
        assert n == 3 and [float(a) for a in acc] == [6.0, 2.0, 14.0]


def noisy(x):
    return x + np.random.rand()


_RNG = np.random.default_rng(0)


def noisy_generator(x):
    return x + _RNG.normal()


# (Python's random.random() is drawn when the graph runs: tests/autograph/test_staged_strings.py)


@pytest.mark.parametrize("fn, what", [(noisy, r"rand\(\) of numpy.random"),
                                      (noisy_generator, r"normal\(\) of a numpy Generator")])
def test_a_random_draw_while_tracing_is_refused(fn, what):
    # it would be drawn once and become a constant: every call would return the same "random" value
    with pytest.raises(StagingError, match=rf"test_side_effects.py:\d+: {what} is called while the graph is built"):
        function(fn)(np.float64(1.0))


class Stepper:
    def __init__(self, w):
        self.w, self.steps = w, 0

    def step(self, x):
        self.steps += 1
        return x * self.w

    def step_and_self(self, x):
        self.steps += 1
        return self, x * self.w


def steps_in_loop(x, n):
    m = Stepper(0.5)
    i = 0
    while i < n:
        x = m.step(x)
        i += 1
    return x, m.steps


def steps_handing_self_back(x, n):
    m = Stepper(0.5)
    i = 0
    while i < n:
        m, x = m.step_and_self(x)
        i += 1
    return x, m.steps


def steps_in_the_callers_loop(x, n):
    m = Stepper(0.5)
    i = 0
    while i < n:
        m.steps += 1
        x = x * m.w
        i += 1
    return x, m.steps


def add_to_item(a, v):
    a[0] += v
    return a, v * 2


def items_handed_back(xs):
    a = [0.0, 1.0]
    t = 0.0
    for v in xs:
        a, w = add_to_item(a, v)
        t += w
    return a[0], t


@pytest.mark.parametrize("fn", [steps_in_loop, steps_handing_self_back])
def test_a_method_changing_an_attribute_in_the_callers_tensor_loop_is_refused(fn):
    # self.steps += 1 ran once while tracing: the call gave 2 steps where Python counts 3,
    # even when the method returned self and the caller assigned it
    assert fn(np.float64(2.0), np.int64(3))[1] == 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SideEffectWarning)
        with pytest.raises(StagingError, match=r"test_side_effects.py:\d+: 'self.steps' changes an object passed to "
                                               r"step\w*, .* through an attribute.*`m.steps \+= 1` there"):
            function(fn)(np.float64(2.0), np.int64(3))


@pytest.mark.parametrize("n", [0, 3])
def test_the_same_change_in_the_callers_own_loop_counts_every_iteration(n):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SideEffectWarning)
        assert function(steps_in_the_callers_loop)(np.float64(2.0), np.int64(n)) == \
            steps_in_the_callers_loop(np.float64(2.0), np.int64(n))


@pytest.mark.parametrize("xs", [np.array([]), np.array([1.0, 2.0, 3.0])])
def test_items_changed_by_a_helper_that_returns_the_object_are_loop_state(xs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SideEffectWarning)
        assert function(items_handed_back)(xs) == items_handed_back(xs)
