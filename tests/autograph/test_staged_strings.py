"""Issue 25 items 1 and 4, issue 30 item 2: calls the graph has no op for run as Python at run
time. `str()` of a tensor is the value's text (never `<Tensor ...>`), its methods, len,
comparisons and int() give Python's values; json/math on tensors give Python's; the clock and
os.environ.get are read on every call. Each against plain Python under every engine."""
import json
import math
import os
import random
import sys
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _engines import ENGINES, agree, exact_types
from autograph import StagingError, function


def string_methods(x, n):
    s = str(x)
    return (len(s), str(n) == "7", s.split("."), s.startswith("-"), s in ("2.5", "3.5"), s.upper(),
            str(n).zfill(6), s[0], f"{x}".replace(".", ","), int(str(n)) + 1, "." in s, s.find("5"),
            repr(x), format(x, ".3f"), str(n) != "7", f"{x}" == "2.5", len(f"{n}"))


def json_and_math(x, n):
    return json.dumps(float(x)), json.dumps({"n": int(n), "x": [float(x)]}), math.floor(x), math.factorial(n)


def prints_and_writes(x, n):
    for i in range(n):
        print("line", i)
        sys.stdout.write(str(x * i) + "|" + str(i).rjust(3) + "\n")
    print("end", str(x).count("5"))
    return str(n)


def built_in_a_loop(n):
    s = ""
    for i in range(n):
        s = s + str(i) + ","
    return s, len(s)


def chosen_by_a_cond(x):
    if x > 0:
        label = str(x)
    else:
        label = "negative"
    short = label[:3] if len(label) > 3 else label
    return label, short.upper()


def parse_error(x):
    print("before")
    k = int(str(x))  # "2.5" is not an int: Python's ValueError, raised where the line runs
    print("after")
    return k


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fn, args", [
    (string_methods, (np.float64(2.5), np.int64(7))),
    (string_methods, (np.float64(-3.5), np.int64(12))),
    (json_and_math, (np.float64(2.75), np.int64(5))),
    (prints_and_writes, (np.float64(1.5), np.int64(3))),
    (built_in_a_loop, (np.int64(4),)),
    (built_in_a_loop, (np.int64(0),)),
    (chosen_by_a_cond, (np.float64(12.25),)),
    (chosen_by_a_cond, (np.float64(-1.0),)),
    (parse_error, (np.float64(2.5),)),
], ids=lambda v: getattr(v, "__name__", None) or "-")
def test_like_python(engine, fn, args):
    run = agree(fn, args, engine)
    assert "Tensor" not in repr(run.value) and "Tensor" not in run.stdout


def test_exact_values_not_descriptions():
    out = function(string_methods)(np.float64(2.5), np.int64(7))
    assert out[0] == 3 and out[2] == ["2", "5"] and out[7] == "2" and out[8] == "2,5" and out[12] == "np.float64(2.5)"
    assert type(out[0]) is int and type(out[1]) is bool and type(out[9]) is int


def clock():
    return time.perf_counter(), time.time()


def clock_in_a_loop(n):
    stamps = []
    for _ in range(n):
        stamps.append(time.perf_counter_ns())
    return stamps


def environment():
    return os.environ.get("AG_TEST_STAGED_ENV", "unset"), os.getenv("AG_TEST_STAGED_ENV")


@pytest.mark.parametrize("engine", ENGINES)
def test_the_clock_and_environment_are_read_on_every_call(engine, monkeypatch):
    f = function(clock, **engine)
    (a, wall_a), (b, wall_b) = f(), f()
    assert type(a) is float and b > a and wall_b >= wall_a and abs(wall_a - time.time()) < 60
    stamps = function(clock_in_a_loop, **engine)(np.int64(3))
    assert len(stamps) == 3 and stamps[0] < stamps[1] < stamps[2]  # once per iteration, in order
    g = function(environment, **engine)
    monkeypatch.delenv("AG_TEST_STAGED_ENV", raising=False)
    assert g() == ("unset", None)
    monkeypatch.setenv("AG_TEST_STAGED_ENV", "on")
    assert g() == ("on", "on")  # the same trace, read again


def draws(x, n):
    t = 0.0
    for _ in range(n):
        t += random.random()
    return x + t, random.randint(1, 6), random.choice(["a", "b", "c"]), random.uniform(2.0, 3.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_python_random_draws_when_the_graph_runs(engine):
    f = function(draws, **engine)
    args = (np.float64(1.0), np.int64(3))
    random.seed(7)
    expected = [draws(*args), draws(*args)]
    random.seed(7)
    got = [f(*args), f(*args)]  # the same global generator, drawn on each call as Python draws
    assert got == expected and got[0] != got[1]
    exact_types(expected, got)


def digits_by_index(x):
    s = str(x)
    total = 0
    for i in range(len(s)):
        if s[i] != ".":
            total += int(s[i])
    return total


def digits_by_iteration(x):
    total = 0
    for c in str(x):
        total += 1
    return total


@pytest.mark.parametrize("engine", ENGINES)
def test_indexing_a_runtime_string_in_a_graph_loop(engine):
    agree(digits_by_index, (np.float64(25.75),), engine)


def test_iterating_a_runtime_string_is_refused_naming_the_line():
    line = digits_by_iteration.__code__.co_firstlineno + 2
    with pytest.raises(StagingError, match=rf"test_staged_strings.py:{line}: a for loop over a run-time Python "
                                           r"object .* Loop over range\(len\(s\)\) and index s\[i\]"):
        function(digits_by_iteration)(np.float64(2.5))


def path_typed_text(x):
    h = 3  # an int on one path, x's np.float64 on the other: str() shows the path's type
    if x > 1:
        h = x
    return str(h), repr(h), f"{h:>5}|{x:.2f}"


def raises_with_text(x):
    if x > 0:
        raise ValueError("bad " + str(x) + " (" + repr(x * 2) + ")")
    return x


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fn, x", [(path_typed_text, 2.5), (path_typed_text, 0.5), (raises_with_text, 2.0),
                                   (raises_with_text, -1.0)], ids=lambda v: getattr(v, "__name__", str(v)))
def test_returned_fstrings_and_exception_messages_hold_values(engine, fn, x):
    run = agree(fn, (np.float64(x),), engine)
    if run.exception is not None:
        assert str(run.exception) == "bad 2.0 (np.float64(4.0))"


def number_methods(x, n):
    return x.is_integer(), (x * 2).is_integer(), int(n).bit_length(), float(x).as_integer_ratio(), float(x).hex()


@pytest.mark.parametrize("engine", ENGINES)
def test_methods_of_the_number_a_tensor_stands_for(engine):
    for x, n in ((2.5, 12), (-3.0, 1)):
        agree(number_methods, (np.float64(x), np.int64(n)), engine)


def test_a_runtime_object_has_only_the_methods_of_python_values():
    seen = {}

    def probe(x):
        s = str(x)
        seen["fields"], seen["upper"] = hasattr(s, "_fields"), hasattr(s, "upper")
        return s
    function(probe)(np.float64(1.0))
    assert seen == {"fields": False, "upper": True}


def repeated_text(n):
    return "ab" * n, n * "-", str(n) * 2, len("xy" * n)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_string_repeated_by_a_tensor_count(engine):
    for n in (np.int64(3), np.int64(0)):
        agree(repeated_text, (n,), engine)


def text_of_numbers(x, n):
    s, t = str(x), str(n)
    head = s.split(".")[0] if "." in s else s
    return (s, t, len(s), s.lstrip("-").isdigit(), t.zfill(4)[-4:], head, s.upper(), f"{x:.3g}|{n:+d}",
            json.dumps([float(x), int(n)]), repr(x), int(t) - n, s.count("0"))


@settings(max_examples=60, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True, width=64), st.integers(-2**62, 2**62))
def test_text_of_any_number_is_pythons(x, n):
    args = (np.float64(x), np.int64(n))
    plain = text_of_numbers(*args)
    got = _TEXT(*args)  # one trace, run on each pair of values
    assert got == plain  # (all text, ints and bools: nan and inf compare as their text)
    exact_types(plain, got)


_TEXT = function(text_of_numbers)


def builtins_of_text(n, x):
    c = chr(65 + n % 26)
    return hex(n), oct(n), bin(n), c, ord(c) + 1, sorted(str(x)), hash(str(n)) == hash(str(int(n)))


@pytest.mark.parametrize("engine", ENGINES)
def test_builtins_without_a_graph_op(engine):
    agree(builtins_of_text, (np.int64(41), np.float64(3.25)), engine)


def seeded_draws_and_sleep(n):
    random.seed(int(n))
    a = random.random()
    time.sleep(0.01)
    random.seed(int(n))
    return a == random.random(), random.randint(0, 1000)


@pytest.mark.parametrize("engine", ENGINES)
def test_seed_and_sleep_run_when_the_graph_runs(engine):
    f = function(seeded_draws_and_sleep, **engine)
    t0 = time.perf_counter()
    assert f(np.int64(3)) == seeded_draws_and_sleep(np.int64(3)) and f(np.int64(4)) == seeded_draws_and_sleep(4)
    assert time.perf_counter() - t0 >= 0.02  # slept on both calls


def environment_item(x):
    return x * 2, os.environ["AG_TEST_ENV_ITEM"]


def test_an_environment_item_read_while_tracing_retraces_when_it_changes(monkeypatch):
    monkeypatch.setenv("AG_TEST_ENV_ITEM", "first")
    f = function(environment_item)
    assert f(np.float64(1.0)) == (2.0, "first")
    monkeypatch.setenv("AG_TEST_ENV_ITEM", "second")  # a guard on os.environ's item: traced again
    assert f(np.float64(1.0)) == (2.0, "second")
    monkeypatch.delenv("AG_TEST_ENV_ITEM")
    with pytest.raises(KeyError):
        f(np.float64(1.0))


def list_built_in_a_loop(n, x):
    out, ks = [], []
    for i in range(n):
        out.append(x * i)
        ks.append(i)
    print(out, ks)
    return str(out), f"{ks}", json.dumps(ks), repr(out)


@pytest.mark.parametrize("engine", ENGINES)
def test_text_of_a_list_built_in_a_graph_loop(engine):
    for n in (np.int64(3), np.int64(0)):
        agree(list_built_in_a_loop, (n, np.float64(1.5)), engine)
