"""A traced function depends on the Python values it read while tracing (globals,
closure variables, attributes and items of its arguments and of globals): changed, they
make the next call retrace (autograph/guards.py), so every call returns what the plain
Python returns on the same inputs."""
import functools
import types
import warnings

import numpy as np
import pytest

import autograph
from autograph import RetracingWarning, function

LR = 0.1
TABLE = np.array([1.0, 2.0, 3.0])
BIG = np.zeros(100_000)
CONFIG = {"steps": 3, "scale": 2.0}
DEBUG = False
OFFSET = 1.0
SCALE = 2.0


def calls(f, *args, n=1):
    """The graph's result and the plain Python's, `n` calls each."""
    out = [f(*args) for _ in range(n)]
    plain = [f.python_function(*args) for _ in range(n)]
    return out[-1], plain[-1]


def one(x):
    return np.float64(x)


@function
def step(w, g):
    return w - LR * g


def test_a_global_float_changed_between_calls():
    global LR
    LR = 0.1
    assert step(one(1.0), one(1.0)) == pytest.approx(0.9)
    LR = 0.5
    assert step(one(1.0), one(1.0)) == 0.5 == step.python_function(1.0, 1.0)
    LR = 0.1


@function
def lookup(i):
    return TABLE[i] * 2.0


def test_a_global_array_changed_in_place():
    TABLE[:] = [1.0, 2.0, 3.0]
    assert lookup(np.int64(1)) == 4.0
    TABLE[1] = 10.0
    assert lookup(np.int64(1)) == 20.0 == lookup.python_function(1)
    TABLE[:] = [1.0, 2.0, 3.0]


def make_scaled():
    factor = 2.0

    @function
    def scaled(x):
        return x * factor

    def set_factor(v):
        nonlocal factor
        factor = v
    return scaled, set_factor


def test_a_closure_cell():
    scaled, set_factor = make_scaled()
    assert scaled(one(3.0)) == 6.0
    set_factor(5.0)
    assert scaled(one(3.0)) == 15.0 == scaled.python_function(3.0)


class Params:
    def __init__(self, lr):
        self.lr = lr


@function
def step_with(w, g, p):
    return w - p.lr * g


def test_an_argument_objects_attribute():
    p = Params(0.1)
    assert step_with(one(1.0), one(1.0), p) == pytest.approx(0.9)
    p.lr = 0.5
    out, plain = calls(step_with, one(1.0), one(1.0), p)
    assert out == plain == 0.5


@function
def repeat_add(x):
    for _ in range(CONFIG["steps"]):
        x = x + CONFIG["scale"]
    return x


def test_a_dict_item_of_a_global_config():
    CONFIG.update(steps=3, scale=2.0)
    assert repeat_add(one(0.0)) == 6.0
    CONFIG["steps"] = 5
    assert repeat_add(one(0.0)) == 10.0
    CONFIG["scale"] = 1.0
    out, plain = calls(repeat_add, one(0.0))
    assert out == plain == 5.0
    CONFIG.update(steps=3, scale=2.0)


def scale_by_global(x):
    return x * SCALE


@function
def uses_helper(x):
    return scale_by_global(x) + 1.0


def test_a_global_read_only_inside_a_helper():
    global SCALE
    SCALE = 2.0
    assert uses_helper(one(1.0)) == 3.0
    SCALE = 10.0
    out, plain = calls(uses_helper, one(1.0))
    assert out == plain == 11.0
    SCALE = 2.0


@function
def maybe_debug(x):
    if DEBUG:
        x = x * 100.0
    return x + 1.0


def test_a_global_that_decides_control_flow():
    global DEBUG
    DEBUG = False
    assert maybe_debug(one(1.0)) == 2.0
    DEBUG = True
    out, plain = calls(maybe_debug, one(1.0))
    assert out == plain == 101.0
    DEBUG = False


@function
def count_up(n):
    total = 0.0
    while n > 0:
        total = total + OFFSET
        n = n - 1
    return total


def test_a_value_read_inside_a_loop_on_a_tensor():
    global OFFSET
    OFFSET = 1.0
    assert count_up(np.int64(3)) == 3.0
    OFFSET = 2.5
    out, plain = calls(count_up, np.int64(3))
    assert out == plain == 7.5
    OFFSET = 1.0


@function
def many_reads(x, p):
    y = step(x, x) + scale_by_global(x) + p.lr
    if DEBUG:
        y = y * 2.0
    for _ in range(CONFIG["steps"]):
        y = y + TABLE[0] + np.float64(SCALE)
    return y


def test_unchanged_values_do_not_retrace():
    p = Params(0.25)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RetracingWarning)
        first = many_reads(one(1.0), p)
        for _ in range(50):
            assert many_reads(one(1.0), p) == first
    assert many_reads.trace_count == 1
    assert first == many_reads.python_function(1.0, p)


@function
def step_lr(w, g):
    return w - LR * g


def test_alternating_values_reuse_their_traces():
    global LR
    with warnings.catch_warnings():
        warnings.simplefilter("error", RetracingWarning)
        for i in range(20):
            LR = (0.1, 0.5)[i % 2]
            assert step_lr(one(1.0), one(1.0)) == pytest.approx(1.0 - LR)
    assert step_lr.trace_count == 2
    LR = 0.1


class Model:
    decay = 0.5

    def __init__(self):
        self.w = np.array([1.0, 2.0])

    @function
    def forward(self, x):
        return x @ self.w * self.decay


def test_self_attributes_and_class_attributes_of_a_method():
    m = Model()
    x = np.array([1.0, 1.0])
    assert m.forward(x) == 1.5
    m.w[0] = 3.0                 # in place
    assert m.forward(x) == 2.5
    Model.decay = 1.0            # on the class
    assert m.forward(x) == 5.0 == Model.forward.python_function(m, x)
    m.decay = 2.0                # the instance's own now hides the class's
    assert m.forward(x) == 10.0
    Model.decay = 0.5


class Schedule:
    def __init__(self):
        self._lr = 1.0

    @property
    def lr(self):
        return self._lr


@function
def scheduled(x, s):
    return x * s.lr


def test_a_property_is_guarded_through_what_its_getter_reads():
    s = Schedule()
    assert scheduled(one(2.0), s) == 2.0
    s._lr = 0.5
    assert scheduled(one(2.0), s) == 1.0


class Counter:
    def __init__(self):
        self.t = 0

    @function
    def decayed(self, w):
        self.t += 1
        return w * 0.5 ** self.t


def test_a_value_the_function_changes_itself_is_read_anew_each_call():
    """`self.t += 1` runs while tracing: the next call finds t changed and retraces, as
    Python reads the new t; the warning names the value."""
    c, plain = Counter(), Counter()
    with pytest.warns(RetracingWarning, match=r"self\.t"):
        got = [float(c.decayed(one(1.0))) for _ in range(6)]
    want = [Counter.decayed.python_function(plain, 1.0) for _ in range(6)]
    assert got == want and c.t == plain.t == 6


def test_a_large_array_is_guarded_by_identity():
    """Above guards.ARRAY_BYTES an array is not copied: a new array retraces, a change in
    place is not seen (README: known limits)."""
    global BIG
    f = function(lambda i: BIG[i] + 1.0)
    assert f(np.int64(0)) == 1.0
    BIG = np.ones(100_000)
    assert f(np.int64(0)) == 2.0
    BIG = np.zeros(100_000)


def test_partial_arguments_functions_traced_as_they_are_and_gradients():
    cfg = {"k": 2.0}
    f = function(functools.partial(lambda x, cfg: x * cfg["k"], cfg=cfg))
    assert f(one(1.0)) == 2.0
    cfg["k"] = 3.0
    assert f(one(1.0)) == 3.0

    global SCALE
    SCALE = 2.0
    plain = function(lambda x: x * SCALE, autograph=False)
    dloss = autograph.grad(lambda x: x * x * SCALE)
    assert (plain(one(1.0)), dloss(one(1.0))) == (2.0, 4.0)
    SCALE = 3.0
    assert (plain(one(1.0)), dloss(one(1.0))) == (3.0, 6.0)
    SCALE = 2.0


def test_a_user_modules_attribute():
    config = types.ModuleType("config")
    config.LR = 0.1
    f = function(lambda x: x * config.LR)
    assert f(one(1.0)) == 0.1
    config.LR = 0.7
    assert f(one(1.0)) == 0.7


def test_guards_can_be_listed():
    c = step_with.get_concrete_function(one(1.0), one(1.0), Params(0.3))
    assert c.guards.describe() == ["p.lr == 0.3"]


class Box:
    def __init__(self, v):
        self.v = v * SCALE


@autograph.do_not_convert
def scaled_plainly(x):
    return x * SCALE


def test_globals_read_by_code_called_as_it_is():
    """A `do_not_convert` function and a class's __init__ run while tracing as they are:
    what they read is guarded too."""
    global SCALE
    SCALE = 2.0
    f = function(lambda x: scaled_plainly(x) + Box(1.0).v)
    assert f(one(1.0)) == 4.0
    SCALE = 3.0
    assert f(one(1.0)) == 6.0
    SCALE = 2.0


def test_a_value_that_keeps_changing_warns_naming_it_and_keeps_a_few_traces():
    global LR
    f = function(lambda w: w - LR)
    with pytest.warns(RetracingWarning, match=r"the Python value LR, which it reads, keeps changing \(e\.g\. 0\.0"):
        for i in range(12):
            LR = i / 100
            assert f(one(1.0)) == 1.0 - LR
    from autograph.function import TRACES_PER_SIGNATURE
    assert f.trace_count == TRACES_PER_SIGNATURE
    LR = 0.1
