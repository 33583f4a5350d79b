"""print(..., file=, sep=, end=, flush=) in converted code writes when the graph runs, on
every call, to the stream Python's print would (it printed `<Tensor x:0 ...>` once, while
tracing, before)."""
import io
import sys

import numpy as np
import pytest

from autograph import function


def _to_stderr(x):
    print("x =", x, file=sys.stderr)
    if x > 0:
        print("positive", file=sys.stderr, flush=True)
    print(x, 2, sep="-", end="!\n", file=sys.stdout)
    return x


@pytest.mark.parametrize("x", [np.float64(1.5), np.float64(-0.5)])
def test_stderr_and_stdout_as_python(x, capfd):
    _to_stderr(x)
    py = capfd.readouterr()
    f = function(_to_stderr)
    for _ in range(2):  # every call prints, not only the one that traced
        f(x)
        got = capfd.readouterr()
        assert (got.out, got.err) == (py.out, py.err)


BUF = io.StringIO()


def _to_buffer(n):
    for i in range(n):
        print(i, n * 2, sep=",", end=";", file=BUF)
    return n


def test_a_file_object_gets_the_lines_of_every_run():
    _to_buffer(np.int64(3))
    expected = BUF.getvalue() * 2
    BUF.seek(0)
    BUF.truncate()
    f = function(_to_buffer)
    f(np.int64(3))
    f(np.int64(3))
    assert BUF.getvalue() == expected == "0,6;1,6;2,6;" * 2


def _opens_inside(x, path):
    with open(path, "w") as fh:
        print("x is", x, file=fh)
    return x


def test_a_file_opened_inside_is_closed_by_the_run_and_the_error_says_so(tmp_path):
    with pytest.raises(ValueError, match=r"closed file.*Open the file outside the function and pass it in"):
        function(_opens_inside)(np.float64(1.0), str(tmp_path / "out.txt"))


def _bad_file(x):
    print(x, file=3)
    return x


def _bad_sep(x):
    print(x, x, sep=3)
    return x


@pytest.mark.parametrize("f,error", [(_bad_file, AttributeError), (_bad_sep, TypeError)])
def test_bad_arguments_raise_pythons_errors(f, error):
    with pytest.raises(error) as plain:
        f(np.float64(1.0))
    with pytest.raises(error) as converted:
        function(f)(np.float64(1.0))
    assert str(converted.value) == str(plain.value)
