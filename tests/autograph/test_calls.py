"""Calls in and into converted code behave as in Python: decorated functions keep their
decorators, recursion, defaults and closures resolve where the user wrote them,
partials keep their arguments, static and class methods bind as they do in Python, and
grad of grad differentiates the gradient."""
import functools
import inspect

import numpy as np
import pytest

import autograph
from autograph import StagingError, function, to_code
from _helpers import check


def central_difference(f, x: float, eps: float = 1e-5) -> float:
    return (float(f(np.float64(x + eps))) - float(f(np.float64(x - eps)))) / (2 * eps)


# -- decorators ------------------------------------------------------------------------

def doubling(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args) * 2
    return wrapper


@doubling
def decorated(x):
    if x > 0:
        return x + 1
    return x - 1


def test_a_wraps_decorator_runs():
    check(decorated, (3,), (-2,))


def test_the_wrapper_is_what_is_converted():
    assert "def wrapper" in to_code(decorated)


def registering(fn):
    registering.seen = fn
    return fn


@registering
def registered(x):
    return x * 3


def test_a_decorator_returning_the_function_itself():
    check(registered, (4,))


# -- recursion ---------------------------------------------------------------------------

def countdown(x, depth):
    return x if depth == 0 else countdown(x + 1, depth - 1)


def same_as_python(fn, x, *python_args):
    """fn(x, ...) converted, with x a graph input and the rest Python values, == Python."""
    assert function(fn)(np.float64(x), *python_args) == fn(x, *python_args)


def test_recursion_with_a_python_depth():
    same_as_python(countdown, 1.0, 3)
    same_as_python(countdown, 2.5, 0)
    assert function(lambda x: countdown(x, 3))(np.int64(1)) == 4


def test_recursion_under_a_tensor_condition_with_a_python_depth():
    def walk(x, depth):
        if depth == 0:
            return x
        return walk(x * 2, depth - 1) if x > 0 else walk(x - 1, depth - 1)
    same_as_python(walk, 1.5, 3)
    same_as_python(walk, -1.5, 3)


def test_nested_recursive_function():
    def outer(x):
        def fact(n):
            return 1 if n <= 1 else n * fact(n - 1)
        return x * fact(4)
    check(outer, (2,))


def halve_in_if(x):
    if x < 1:
        return x
    return halve_in_if(x / 2)


def halve_in_expression(x):
    return x if x < 1 else halve_in_expression(x / 2)


def halve_in_loop(x):
    while x > 1:
        x = halve_in_loop(x / 2)
    return x


def _line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("fn", [halve_in_if, halve_in_expression, halve_in_loop])
def test_recursion_ending_on_a_tensor_is_refused_naming_the_function_and_line(fn):
    assert fn(10.0) == 0.625  # plain Python ends: the value decides
    with pytest.raises(StagingError) as e:
        function(fn)(np.float64(10.0))
    message = str(e.value)
    assert f"{__file__}:{_line_of(fn, fn.__name__ + '(x / 2)')}: {fn.__name__}" in message
    assert "calls itself without end" in message and "Python value" in message
    assert function(fn)(10.0) == fn(10.0)  # with a Python value it stays Python recursion


@function
def factorial(n):
    return 1 if n <= 1 else n * factorial(n - 1)


def test_recursion_through_an_at_function():
    assert factorial(5) == 120
    with pytest.raises(StagingError, match="factorial .* calls itself without end"):
        factorial(np.int64(5))


# -- defaults, annotations, globals --------------------------------------------------------

OFFSET = 5


class Meters(float):
    pass


def with_defaults(x, y=OFFSET, *, z=OFFSET * 2):
    return x + y + z


def annotated(x: Meters, scale: "Meters" = Meters(2.0)) -> Meters:
    return x * scale


def test_defaults_naming_module_globals():
    check(with_defaults, (1,), (1, 2))
    assert function(with_defaults)(np.int64(1), z=np.int64(0)) == 6


def test_annotations_are_not_evaluated_again():
    check(annotated, (3.0,), (3.0, 0.5))
    assert autograph.to_graph(annotated).__annotations__ == annotated.__annotations__


# -- functools.partial, staticmethod, classmethod -------------------------------------------

def scaled_sum(x, y=OFFSET, *, scale=1):
    if x > y:
        return (x - y) * scale
    return (x + y) * scale


@pytest.mark.parametrize("bound", [functools.partial(scaled_sum, y=np.int64(2)),
                                   functools.partial(scaled_sum, scale=3),
                                   functools.partial(functools.partial(scaled_sum, y=4.0), scale=np.float64(0.5))])
@pytest.mark.parametrize("x", [1.0, 7.0])
def test_partial_keeps_its_bound_arguments(bound, x):
    assert function(bound)(np.float64(x)) == bound(x)
    assert function(bound)(x) == bound(x)


def test_partial_called_from_converted_code_is_converted():
    half = functools.partial(scaled_sum, scale=0.5)

    def caller(x):
        return half(x, 1.0)
    check(caller, (3.0,), (-3.0,))  # `if` on a tensor inside the partial's function


def test_grad_of_a_partial():
    bound = functools.partial(scaled_sum, y=1.0, scale=3.0)
    for x in (2.0, 0.5):
        np.testing.assert_allclose(autograph.grad(bound)(np.float64(x)), central_difference(bound, x), rtol=1e-6)


class Shapes:
    factor = 3

    @function
    @staticmethod
    def static_inner(x):
        return x * 2 if x > 0 else -x

    @staticmethod
    @function
    def static_outer(x):
        return x * 2 if x > 0 else -x

    @function
    @classmethod
    def class_inner(cls, x):
        return x * cls.factor if x > 0 else -x

    @classmethod
    @function
    def class_outer(cls, x):
        return x * cls.factor if x > 0 else -x


class MoreShapes(Shapes):
    factor = 5


@pytest.mark.parametrize("name", ["static_inner", "static_outer"])
@pytest.mark.parametrize("x", [2.0, -2.0])
def test_staticmethod_in_either_order(name, x):
    expected = 2 * x if x > 0 else -x
    assert getattr(Shapes, name)(np.float64(x)) == expected
    assert getattr(Shapes(), name)(np.float64(x)) == expected


@pytest.mark.parametrize("name", ["class_inner", "class_outer"])
@pytest.mark.parametrize("x", [2.0, -2.0])
def test_classmethod_in_either_order_binds_the_class(name, x):
    for cls in (Shapes, MoreShapes):
        expected = cls.factor * x if x > 0 else -x
        assert getattr(cls, name)(np.float64(x)) == expected
        assert getattr(cls(), name)(np.float64(x)) == expected


def test_grad_of_a_staticmethod():
    np.testing.assert_allclose(autograph.grad(Shapes.static_inner)(np.float64(1.5)), 2.0)
    np.testing.assert_allclose(autograph.grad(MoreShapes.class_inner)(np.float64(1.5)), 5.0)


# -- grad of grad ----------------------------------------------------------------------------

def cube_thrice(x):
    i = 0
    while i < 3:
        x = x * x
        i += 1
    return x


@pytest.mark.parametrize("x", [1.1, -0.7])
def test_grad_of_grad_through_a_tensor_loop(x):
    d1, d2, d3 = (autograph.grad(cube_thrice), autograph.grad(autograph.grad(cube_thrice)),
                  autograph.grad(autograph.grad(autograph.grad(cube_thrice))))
    np.testing.assert_allclose(d1(np.float64(x)), 8 * x ** 7, rtol=1e-12)
    np.testing.assert_allclose(d2(np.float64(x)), 56 * x ** 6, rtol=1e-12)
    np.testing.assert_allclose(d3(np.float64(x)), 336 * x ** 5, rtol=1e-12)
    np.testing.assert_allclose(d2(np.float64(x)), central_difference(d1, x), rtol=1e-6)
    np.testing.assert_allclose(d3(np.float64(x)), central_difference(d2, x), rtol=1e-6)


LAST_POSITIVE = None


def keeps_a_global(x):
    global LAST_POSITIVE
    if x > 0:
        LAST_POSITIVE = x
    return x * 2


def test_grad_reports_a_staging_error_instead_of_running_unconverted():
    """The global is carried through the if on a tensor (it was refused at conversion): None
    on one path and a tensor on the other cannot be, and grad says so (never runs the
    function unconverted)."""
    with pytest.raises(StagingError, match="LAST_POSITIVE"):
        autograph.grad(keeps_a_global)(np.float64(1.0))


def test_grad_of_a_decorated_function():
    df = autograph.grad(decorated)
    np.testing.assert_allclose(df(np.float64(2.0)), 2.0)
    np.testing.assert_allclose(df(np.float64(2.0)), central_difference(decorated, 2.0), rtol=1e-6)


# -- helpers defined in a module whose source lives only in linecache (IPython cells) ----------

CELL = '''
import numpy as np

def relu(v):
    if v > 0:
        return v
    return 0.0 * v

def f(x):
    s = 0.0
    for i in range(3):
        s += relu(x - i)
    return s
'''


def _cell_function(name: str):
    import linecache

    filename = "<ipython-input-7-cell>"
    linecache.cache[filename] = (len(CELL), None, CELL.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(CELL, filename, "exec"), namespace)  # noqa: S102 (a test module's own text)
    return namespace[name]


@pytest.mark.parametrize("x", [1.5, -0.5, 2.75])
def test_a_helper_defined_in_a_notebook_cell_is_converted(x):
    f = _cell_function("f")
    assert function(f)(np.float64(x)) == f(np.float64(x))
