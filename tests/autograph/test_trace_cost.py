"""Tracing cost grows linearly with nesting.

A loop's dry run and real trace, an if's provisional trace and replan, each retraced what was
nested in them, so k nested loops traced the innermost body 2**k times (and nested ifs as
often): a 20-line random program (fuzz seed 13000308) took seconds and created 55,000 ops to
keep 518. These tests count traces and ops (not time) on k nested while loops, each with an
if/elif chain with a `return` or `break` in it, and check the converted functions still
compute what Python does.
"""
from __future__ import annotations

import collections
import importlib.util
import sys

import numpy as np
import pytest

import autograph
from autograph.operators import conditionals, loops

SEED_13000308 = '''
def f(n, x):
    k = 0
    while k < n and x == n:
        k += 1
        k2 = 0
        while k2 < k:
            k2 += 1
            if k >= x:
                return ((-2 % 5) ** 3, n >= x + x, x * x + (x - 2.0))
            if n > x / 4 >= k:
                fsum = float(k if k2 != 2.0 else 3)
                avg = fsum
                fsum -= x
            elif n != 1:
                if k not in (3, 4, 5) and k < 0.25:
                    return None
            elif not x > n:
                if k2 < x:
                    return (k - k2, True, 1.5)
    return (n, False, -0.5)
'''


def nested_source(k: int, exit_stmt: str) -> str:
    """k nested while loops on a tensor bound, each with an if/elif chain holding `exit_stmt`."""
    lines = ["def f(n, x):", "    total = 0"]
    ind = "    "
    for d in range(k):
        lines += [f"{ind}i{d} = 0", f"{ind}while i{d} < n:", f"{ind}    i{d} += 1"]
        ind += "    "
        lines += [f"{ind}if total > x * {d + 3}:", f"{ind}    {exit_stmt}",
                  f"{ind}elif i{d} == {d + 2}:", f"{ind}    total += 2",
                  f"{ind}elif x < -{d + 1}:", f"{ind}    total -= i{d}"]
    lines += [f"{ind}total += 1", "    return total"]
    return "\n".join(lines) + "\n"


def _load(tmp_path, name: str, source: str):
    path = tmp_path / f"{name}.py"
    path.write_text("import numpy as np\n\n" + source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


@pytest.fixture
def counted(monkeypatch):
    """Counts loop body traces and if-branch traces while tracing."""
    counts = collections.Counter()
    graph_if, graph_while = conditionals._graph_if, loops._graph_while

    def counting_if(cond, body, orelse, state, line, **kw):
        def traced(fn):
            def run():
                counts["branch traces"] += 1
                return fn()
            return run
        counts["if builds"] += 1
        return graph_if(cond, traced(body), traced(orelse), state, line, **kw)

    def counting_while(test, body, get_state, set_state, names, line, **kw):
        def traced():
            counts["body traces"] += 1
            return body()
        counts["loops"] += 1
        return graph_while(test, traced, get_state, set_state, names, line, **kw)

    monkeypatch.setattr(conditionals, "_graph_if", counting_if)
    monkeypatch.setattr(loops, "_graph_while", counting_while)
    return counts


def _cost(counted, fn, args) -> dict:
    counted.clear()
    graph = autograph.function(fn).get_concrete_function(*args).graph
    return dict(counted, **{"ops created": graph.checkpoint(), "ops kept": len(graph.get_operations())})


@pytest.mark.parametrize("exit_stmt", ["return total", "break"])
def test_nested_loops_trace_linearly(tmp_path, counted, exit_stmt):
    args = (np.int64(4), np.int64(3))
    costs = [_cost(counted, _load(tmp_path, f"nested_{exit_stmt[:5]}_{k}", nested_source(k, exit_stmt)), args)
             for k in range(1, 6)]
    shown = "\n".join(f"k={k}: {c}" for k, c in enumerate(costs, 1))
    for k, c in enumerate(costs, 1):
        # a body traced a constant number of times: its dry run, its real trace, one more per enclosing level
        # at most once (the enclosing loop's real trace, with the plan it learnt)
        assert c["body traces"] <= 3 * k, shown
        assert c["branch traces"] <= 40 * k, shown
    for what in ("body traces", "branch traces", "ops created", "ops kept"):
        steps = [b[what] - a[what] for a, b in zip(costs, costs[1:])]
        # linear: each level adds about as much as the one before (2**k doubled each step)
        assert steps[-1] <= 1.3 * steps[0] + 2, f"{what} grows faster than linearly:\n{shown}"


@pytest.mark.parametrize("exit_stmt", ["return total", "break"])
@pytest.mark.parametrize("k", [1, 3])
def test_nested_loops_compute_what_python_does(tmp_path, exit_stmt, k):
    f = _load(tmp_path, f"values_{exit_stmt[:5]}_{k}", nested_source(k, exit_stmt))
    converted = autograph.function(f)
    for n, x in [(0, 0), (3, 1), (4, 3), (5, -3), (2, -1), (6, 2)]:
        want = f(n, x)
        got = converted(np.int64(n), np.int64(x))
        assert got == want, (n, x, got, want)


def test_fuzz_seed_13000308_traces_in_bounded_work(tmp_path, counted):
    f = _load(tmp_path, "seed_13000308", SEED_13000308)
    args = (np.int64(-1), np.float64(-1.75))
    c = _cost(counted, f, args)
    # it took 1070 if builds, 3700 branch traces and 55,280 ops created (518 kept)
    assert c["if builds"] <= 400 and c["branch traces"] <= 1000 and c["ops created"] <= 15_000, c
    converted = autograph.function(f)
    for n, x in [(-1, -1.75), (3, 3.0), (4, 4.0), (2, 2.0), (5, 5.0), (1, 1.0)]:
        assert converted(np.int64(n), np.float64(x)) == f(n, x), (n, x)


NESTED_CONSTRUCTS = '''
def f(n):
    s = 0
    for i in range(n):
        j = 0
        while j < i:
            if (i + j) % 3 == 0:
                s += j
            else:
                s -= 1
            j += 1
    return s
'''


def test_loops_over_numbers_and_tensors_trace_each_body_once(tmp_path, counted):
    # every loop variable is a tensor or a number that keeps its dtype: the plan guessed from the
    # values before each loop holds, so no dry run (which traced the innermost body 2**depth times)
    f = _load(tmp_path, "nested_constructs", NESTED_CONSTRUCTS)
    c = _cost(counted, f, (np.int64(5),))
    assert c["loops"] == 2 and c["body traces"] == 2 and c["if builds"] == 1 and c["branch traces"] == 2, c
    converted = autograph.function(f)
    for n in [0, 1, 2, 5, 10]:
        assert converted(np.int64(n)) == f(n), n


RETYPED = '''
def f(n):
    x = 0
    i = 0
    while i < n:
        x = x + 0.5
        i += 1
    return x, i
'''

LEFT_AS_IT_IS = '''
def f(n, y):
    i = 0
    while i < n:
        i += 1
        if n is None:
            y = y + 1
    return i, y
'''

PRINTS = '''
def f(n):
    i = 0
    while i < n:
        print("step", i)
        i += 1
    return i
'''


@pytest.mark.parametrize("name, source, args", [
    ("retyped", RETYPED, [(0,), (1,), (4,)]),                       # an int that becomes a float
    ("left_as_it_is", LEFT_AS_IT_IS, [(0, 2.5), (3, -1.0)]),        # a tensor the body does not change
    ("prints", PRINTS, [(0,), (3,)]),                               # effects chained through a token
])
def test_a_guess_that_does_not_hold_plans_from_a_dry_run(tmp_path, counted, capsys, name, source, args):
    f = _load(tmp_path, f"guess_{name}", source)
    converted = autograph.function(f)
    for a in args:
        want = f(*a)
        want_out = capsys.readouterr().out
        counted.clear()
        got = converted(*map(np.asarray, a))
        assert capsys.readouterr().out == want_out, a
        assert np.asarray(got).tolist() == np.asarray(want).tolist() and type(got) is type(want), (a, got, want)
    converted = autograph.function(f)
    counted.clear()
    converted.get_concrete_function(*map(np.asarray, args[-1]))
    assert counted["body traces"] >= 3, counted  # the guessed trace, the dry run, the loop's body
