"""The graph optimizer changes no result: every sample, every conformance program and a
few hundred random programs give the same values, printed lines and exceptions with the
optimizer on (the default) and off; random gradient programs give the same gradients,
also when the graph is differentiated after a call has optimized it."""
from __future__ import annotations

import contextlib
import copy
import io
import linecache

import numpy as np
import pytest

import autograph
import graphcore as gc
from autograph.testing import differential as diff
from autograph.testing import random_grad_programs as rgp
from autograph.testing.random_programs import generate
from executor import Session
from samples import available_samples
from test_conformance import CASES
from tests import scale

RANDOM_SEEDS = scale.seeds(1000, 100, 1000)
GRAD_SEEDS = range(0, 12)


def _outcome(fn, args):
    out = io.StringIO()
    args = copy.deepcopy(args)  # each run gets the arguments fresh: a run changes an argument array in place
    try:
        with contextlib.redirect_stdout(out):
            value, error = fn(*args), None
    except Exception as e:  # noqa: BLE001 (the exception is what is compared)
        value, error = None, type(e).__name__
    return value, error, out.getvalue()


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    if a is None or isinstance(a, (str, bool)):
        assert a == b
        return
    np.testing.assert_array_equal(np.asarray(b), np.asarray(a))
    assert np.asarray(a).dtype == np.asarray(b).dtype


def on_and_off(python_fn, args):
    on = _outcome(autograph.function(python_fn), args)
    off = _outcome(autograph.function(python_fn, optimize=False), args)
    assert on[1] == off[1] and on[2] == off[2], (on, off)
    _same(off[0], on[0])
    return on


@pytest.mark.parametrize("sample", available_samples(), ids=lambda s: s.name)
def test_samples(sample):
    for args in sample.examples:
        on_and_off(sample.python_function, args)


@pytest.mark.parametrize("f,args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_conformance_programs(f, args):
    on_and_off(f, args)


def disagreements(compare, seeds) -> list[str]:
    """`compare(python_fn, args)` on the random program of each seed: the seeds it fails."""
    failures = []
    for seed in seeds:
        program = generate(seed)
        fn, filename = diff.load_function(program)
        try:
            compare(fn, program.args)
        except AssertionError as e:
            failures.append(f"seed {seed}: {str(e)[:200]}")
        finally:
            linecache.cache.pop(filename, None)
    return failures


def test_random_programs():
    failures = disagreements(on_and_off, RANDOM_SEEDS)
    assert not failures, "\n".join(failures)


def test_random_gradient_programs():
    problems = [p for p in map(rgp.run_seed, GRAD_SEEDS) if p is not None]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("seed", GRAD_SEEDS)
def test_differentiating_after_a_call_optimized_the_graph(seed):
    program = rgp.generate(seed)
    f = rgp._load(program)
    args, k = program.args, program.wrt[0]
    results = []
    for call_first in (False, True):
        fn = autograph.function(f)
        if call_first:
            fn(*args)  # optimizes the traced graph in place
        concrete = fn.get_concrete_function(*args)
        assert (concrete.optimize_report is not None) == call_first
        x = concrete.inputs[[i for i, a in enumerate(args) if isinstance(a, (np.ndarray, np.generic))].index(k)]
        with concrete.graph.as_default():
            d = gc.gradients(concrete.structured_outputs, [x])[0]
            d = gc.zeros_like(x) if d is None else d
        feeds = dict(zip(concrete.inputs, [a for a in args if isinstance(a, (np.ndarray, np.generic))]))
        results.append(Session(concrete.graph, num_threads=1).run(d, feed_dict=feeds))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12, atol=1e-12)


def _poly(x):
    y = x * 1.0 + 0.0
    if x > 0:
        y = y * 2.0
    return y


def test_switches_off_and_skips(monkeypatch):
    x = np.float64(1.5)
    on = autograph.function(_poly)
    on(x)
    assert on.get_concrete_function(x).optimize_report is not None
    off = autograph.function(_poly, optimize=False)
    off(x)
    assert off.get_concrete_function(x).optimize_report is None
    skipping = autograph.function(_poly, skip_passes=["arithmetic"])
    skipping(x)
    names = [p.name for p in skipping.get_concrete_function(x).optimize_report.passes]
    assert "arithmetic" not in names and "cse" in names
    monkeypatch.setenv("AUTOGRAPH_OPTIMIZE", "0")
    by_env = autograph.function(_poly)
    assert by_env(x) == on(x) == off(x)
    assert by_env.get_concrete_function(x).optimize_report is None


def self_comparisons_in_nested_conds(n, m):
    """Found by the random program tester: `m != m` and `n <= n` fold to constants, so the
    Switches of nested conds fold, and an inner Merge feeds an outer one."""
    if m != m:
        if not n <= n:
            print("L1:", m, n)
        elif m <= m:
            print("L3:", m, n)
        return m == -1
    elif n <= 2.0 or m >= m:
        return m <= m


@pytest.mark.parametrize("args", [(np.int64(3), np.int64(-1)), (np.int64(1), np.int64(4)),
                                  (np.int32(5), np.int32(5))])
def test_constant_predicates_of_nested_conds(args):
    assert on_and_off(self_comparisons_in_nested_conds, args)[0] == self_comparisons_in_nested_conds(*args)
