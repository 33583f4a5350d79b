"""Gradients through values the graph cannot differentiate. A run-time Python object (dtype
pyobject: Python's sorted of mixed kinds kept for the run, str(x), a py_function returning an
object) may hold numbers made from x, so a gradient through it exists; it was silently 0.0.
Now gc.gradients raises NoGradientError (a LookupError, as TensorFlow's "No gradient defined for
operation ...") naming the op and the user's line. Truly non-differentiable paths (integer and
bool outputs, comparisons, floor) keep their zero / None, checked against central differences."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from gradcheck import check_graph_grads, numeric_grad

import autograph
import graphcore as gc
from autograph import function
from graphcore.errors import NoGradientError

ENGINES = [
    pytest.param({"control_flow": "v1"}, id="v1"),
    pytest.param({"control_flow": "v2", "functional": "lower"}, id="v2-lowered"),
    pytest.param({"control_flow": "v2", "functional": "direct"}, id="v2-direct"),
    pytest.param({"jit_compile": True}, id="compiled"),
]


def line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, s in enumerate(lines) if text in s)


# -- graphcore: gc.gradients ------------------------------------------------------------------

def _object_graph():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, shape=[], name="x")
        other = gc.placeholder(gc.float64, shape=[], name="other")
        text = gc.py_function(lambda v: f"{v:.17g}", [x * 2.0], gc.pyobject, name="as_text")  # LINE: as_text
        back = gc.py_function(lambda s: float(s), [text], gc.float64, shapes=[], name="from_text")
    return g, x, other, text, back


def test_a_float_computed_through_a_python_object_raises_naming_the_op():
    g, x, _, _, back = _object_graph()
    with pytest.raises(NoGradientError) as info:
        gc.gradients(back, [x])
    assert isinstance(info.value, LookupError) and isinstance(info.value, gc.GraphError)
    message = str(info.value)
    line = line_of(_object_graph, "LINE: as_text")
    assert "No gradient defined for operation 'as_text'" in message, message
    assert f"test_gradients_without_kernels.py:{line}" in message, message


def test_a_python_object_differentiated_itself_raises():
    g, x, _, text, _ = _object_graph()
    with g.as_default(), pytest.raises(NoGradientError, match="'as_text'"):
        gc.gradients(text, [x])


def test_no_path_is_still_none():
    g, x, other, text, back = _object_graph()
    with g.as_default():
        assert gc.gradients(text, [other]) == [None]
        assert gc.gradients(back, [other]) == [None]
        assert gc.gradients(gc.cast(x, gc.int64), [x]) == [None]  # an integer output


def test_an_object_reached_only_through_an_integer_keeps_the_gradient():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, shape=[], name="x")
        items = gc.py_function(lambda v: [v, 1.0], [x * 2.0], gc.pyobject, name="pair")
        n = gc.py_function(len, [items], gc.int64, shapes=[], name="count")  # an integer: no gradient
        y = x * x + gc.cast(n, gc.float64) + gc.floor(x)
        dx, = gc.gradients(y, [x])
    check_graph_grads(g, y, [x], [dx], {x: np.float64(1.3)})


# -- autograph.grad under every engine -----------------------------------------------------------

def sorted_of_mixed_kinds(x):
    s = sorted([x * 2.0, 1])  # a float and an int: Python's sorted when the graph runs
    return s[0] * 1.0


def sorted_with_a_text_key(x):
    s = sorted([x * 2.0, x * 3.0], key=lambda v: str(v))
    return s[0]


def float_of_its_text(x):
    return float(str(x * 3.0))


def a_py_function_returning_an_object(x):
    pair = autograph.py_function(lambda v: (v, v * v), [x], object)
    return autograph.py_function(lambda p: p[1], [pair], np.float64, shapes=[])


def in_a_branch(x):  # refused whichever branch the run takes: the gradient graph has both
    if x > 0:
        y = float(sorted([x * 2.0, 1])[0]) * 1.0
    else:
        y = x * 1.0
    return y


def in_a_loop(x, n):
    y = x
    for _ in range(n):
        y = float(str(y * 1.5))
    return y


X = (np.float64(1.5),)
REFUSED = [(sorted_of_mixed_kinds, X, "s = sorted(", "sorted"), (sorted_with_a_text_key, X, "s = sorted(", "sorted"),
           (float_of_its_text, X, "return float(str(", "str"),
           (a_py_function_returning_an_object, X, "pair = autograph.py_function", None),
           (in_a_branch, X, "y = float(sorted(", "sorted"), (in_a_branch, (np.float64(-1.5),), "y = float(sorted(", "sorted"),
           (in_a_loop, (np.float64(1.5), np.int64(2)), "y = float(str(", "str")]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fn,args,text,call", REFUSED, ids=[f"{f.__name__}-{a[0]}" for f, a, _, _ in REFUSED])
def test_grad_through_a_run_time_object_raises(fn, args, text, call, engine):
    fn(*args)  # plain Python computes it
    with pytest.raises(LookupError) as info:
        autograph.grad(function(fn, **engine))(*args)
    message = str(info.value)
    assert "No gradient defined for operation" in message, message
    assert f"test_gradients_without_kernels.py:{line_of(fn, text)}" in message, message
    if call is not None:
        assert f"Python's {call}()" in message, message


def floor_and_comparison(x):
    y = x * 3.0 + np.floor(x)
    if x > 0:  # a comparison: no gradient through the predicate
        y = y * x
    return y


def length_of_a_run_time_list(x):
    return x * 2.0 + len(sorted([x * 2.0, 1]))  # the object reaches the result only as an int


def text_of_its_integer_part(x):
    return x * 2.0 + float(str(int(x)))  # the object is made from an int: its gradient is zero


def sorted_of_one_kind(x):
    return sorted([x * 2.0, x * 3.0, 1.0])[0]  # picked by a gather: differentiable


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fn", [floor_and_comparison, length_of_a_run_time_list, text_of_its_integer_part,
                                sorted_of_one_kind])
def test_non_differentiable_steps_keep_their_zero(fn, engine):
    for x in (np.float64(1.3), np.float64(-0.7)):
        got = autograph.grad(function(fn, **engine))(x)
        want = numeric_grad(lambda v: fn(np.float64(v)), np.array(x))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
