"""f-strings and str() of tensors: formatted when the graph runs, on every run, as Python
formats them (conversions, format specs, nested specs, Python ints), in prints and in the
messages of raise and assert; a string with a tensor in it cannot be returned."""
import contextlib
import io

import numpy as np
import pytest

import graphcore as gc
from autograph import function
from _helpers import agree


def printed(fn, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        value = fn(*args)
    return value, out.getvalue()


def loop_prints(x, n):
    k = 0
    while k < n:
        x = x * 1.5
        print(f"step {k}: x = {x:.3f}, raw {x!r} | {x} | {k:>3}|{k!s:<2}|")
        k += 1
    width = 8
    print(f"[{n:>{width}}] done" + " " + str(x) + f"{'ok'!r}" + str(width))
    return x


def branch_prints(x):
    if x > 0:
        print(f"positive {x:+d}")
    else:
        print("non-positive " + str(x) + "!")
    return x


def python_only(a):
    print(f"{3.14159:.2f}|{'a'!r}|{7:5d}|{'b':^5}|")
    return a


def array_print(v):
    print(f"v={v} sum={np.sum(v):.2f}")
    return v


Point = __import__("collections").namedtuple("Point", "x y")


def container_prints(x, n):
    k = np.int32(n) * 2
    for i in range(n):
        print(k, [k, i], (x,), {'x': x, 2: [i, None]}, Point(x, i))
        print(f"{[x, 'a']} {(k,)!r}", str([x]), "{} {!r}".format([k], (x, 1)), "%s %r" % ([x], (i,)))
    return x


@pytest.mark.parametrize("fn, args", [
    (container_prints, (np.float64(1.5), np.int64(2))), (container_prints, (np.float32(0.5), np.int64(1))),
    (loop_prints, (np.float64(1.0), np.int64(3))), (loop_prints, (np.float32(2.0), np.int64(0))),
    (branch_prints, (np.int64(2),)), (branch_prints, (np.int64(-2),)), (python_only, (np.int64(1),)),
    (array_print, (np.array([1.5, 2.25]),)),
])
def test_f_strings_print_what_python_prints(fn, args):
    want = printed(fn, *args)
    f = function(fn)
    assert printed(f, *args)[1] == want[1]
    assert printed(f, *args)[1] == want[1]  # on every run, not once while tracing


def check_positive(x):
    if x <= 0:
        raise ValueError(f"x must be positive, got {x} ({x * 2:.1f} doubled)")
    assert x < 100, f"x={x:.1f} is too large"
    return x


@pytest.mark.parametrize("x, error", [(-3.0, ValueError), (250.0, AssertionError)])
def test_raise_and_assert_messages_carry_the_values_of_the_run(x, error):
    with pytest.raises(error) as want:
        check_positive(x)
    with pytest.raises(error) as got:
        function(check_positive)(np.float64(x))
    assert str(got.value) == str(want.value).splitlines()[0]  # (pytest adds its own lines to an assert's)


def describe(x):
    return f"x={x}"


def test_returning_a_string_with_a_tensor_gives_its_text():
    out = function(describe)(np.int64(3))  # formatted when the graph runs (autograph/operators/python_calls.py)
    assert out == "x=3" and type(out) is str
    assert function(describe)(3) == "x=3"  # a Python value: Python's string


def loop_prints_fstrings_only(x, n):
    k = 0
    while k < n:
        x = x * 1.5
        print(f"step {k}: x = {x:.3f}, raw {x!r} | {x} | {k:>3}|{k!s:<2}|")
        k += 1
    width = 8
    print(f"[{n:>{width}}] done" + " " + f"{x}" + f"{'ok'!r}" + str(width))
    return x


def test_a_formatted_print_survives_a_graph_file(capsys):
    # (str(x) of a tensor is a run-time Python string, which a graph file cannot hold: f-strings only)
    g = function(loop_prints_fstrings_only).get_concrete_function(np.float64(1.0), np.int64(2)).graph
    (p,) = [op for op in gc.Graph.from_json(g.to_json()).get_operations() if op.type == "Print"][:1]
    (q,) = [op for op in g.get_operations() if op.type == "Print"][:1]
    assert [list(x) if isinstance(x, (list, tuple)) else x for x in p.attrs["template"]] == \
        [list(x) if isinstance(x, tuple) else x for x in q.attrs["template"]]


# -- str.format and printf-style `%` with tensors: formatted when the graph runs ---------------

def percent_fields(n, x):
    print('n=%d x=%.2f' % (n, x))
    print('%5d|%-5d|%05d|%+d|% d|%x|%#X|%o|%c' % (n, n, n, n, n, n, n, abs(n) + 60, abs(n) + 60))
    print('%e %E %g %10.3f %-10.1f| %s %r %5s| %-8s| %d%%' % (x, x, x, x, x, x, x, n, n, x))
    print('%(a)s and %(b).1f' % {'a': n, 'b': x})
    print('%d' % x, '%s' % n, 'plain %d' % 3)
    return n


def format_calls(n, x):
    print('n={} x={:.2f} {!r} {0} {k:>6}'.format(n, x, x, k=n))  # noqa: F525 (Python's ValueError is the point)
    print('{:{w}.{p}f}|{:^9}'.format(x, n, w=9, p=2))
    k = int(x)
    print('%d %r %s' % (k, k, float(k)), '{!r} {}'.format(k, float(k)))
    return k


def formatted_in_a_loop(n):
    s = 0.0
    for i in range(n):
        s += i / 4
        print('step %d: s=%.3f' % (i, s), 'half={:.1f}'.format(s / 2))
    return s


@pytest.mark.parametrize("n, x", [(2, 1.234), (-17, 2.5e-7), (255, -3.75)])
def test_str_format_and_percent_formatting_print_what_python_prints(n, x):
    agree(percent_fields, np.int64(n), np.float64(x))
    agree(format_calls, np.int64(n), np.float64(x))
    agree(formatted_in_a_loop, np.int64(abs(n) % 5))


def reprs(x, n):
    z = x * 2
    k = 0
    for i in range(n):
        k += 1
    print(repr(z), repr(k), ascii(z), format(z, '.3f'), format(k, '>4'), repr(float(k)))
    return z


def test_repr_ascii_and_format_of_tensors_print_what_python_prints():
    agree(reprs, np.float64(2.0), np.int64(3))
    agree(reprs, np.float32(-0.5), np.int64(0))


def python_or_numpy(x):
    z = 1.5
    if x > 0:
        z = x
    print(repr(z))
    return z


def python_until_the_loop_runs(x, n):
    z = 0
    for i in range(n):
        z = z + x
    print(f"{z!r}")
    return z


@pytest.mark.parametrize("fn, args", [(python_or_numpy, (np.float64(2.0),)), (python_or_numpy, (np.float64(-2.0),)),
                                      (python_until_the_loop_runs, (np.float64(2.0), np.int64(0))),
                                      (python_until_the_loop_runs, (np.float64(2.0), np.int64(2)))])
def test_repr_of_a_value_whose_python_type_depends_on_the_path_is_the_paths(fn, args):
    """Python prints 1.5 on one path and np.float64(2.0) on the other: the graph carries which
    type the path gave the value (autograph/operators/path_types.py) and prints that."""
    assert printed(function(fn), *args) == printed(fn, *args)
