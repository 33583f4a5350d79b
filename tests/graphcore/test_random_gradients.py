"""Random programs with converted control flow (autograph.testing.random_grad_programs):
first and second derivatives through the graph must agree with finite differences of
the same program run as plain Python. A failing seed prints what disagreed;
`program_source(seed)` is a file that reproduces it."""
import subprocess
import sys

import numpy as np
import pytest

import graphcore as gc
from autograph.testing import random_grad_programs as rgp
from tests import scale

# the first 40 seeds (300 under AUTOGRAPH_TESTS=long), seeds that write a helper function and a lambda,
# and seeds of 0..999 that found a bug the first 100 do not show (a return value lost in a tensor while
# loop; a backward loop that never ends)
SEEDS = sorted({*scale.seeds(0, 40, 300), 61, 83, 212, 589})


@pytest.mark.parametrize("seed", SEEDS)
def test_gradients_of_random_program_agree_with_finite_differences(seed):
    # (conftest gives these a generous time limit; a loop that never ends, as seed 589's backward loop did,
    # is still caught)
    problem = rgp.run_seed(seed)
    assert problem is None, f"{problem}\n(reproduce with: autograph fuzz --kind grads, or program_source({seed}))"


def test_the_seeds_cover_every_construct():
    # a construct no fixed seed generates would go untested without anyone noticing
    programs = [rgp.generate(s) for s in SEEDS]
    seen = set().union(*(p.features for p in programs))
    assert seen >= {"if", "if_in_loop", "counter_if", "while", "for", "nested_loop", "loop_in_if", "break",
                    "return_in_loop", "float_return", "tensor_loop", "python_int_loop"}
    assert any(np.ndim(p.args[0]) == 1 for p in programs), "no program on an array"
    assert any(len(p.wrt) == 2 for p in programs), "no program differentiated by two arguments"


def test_generation_is_deterministic_per_seed():
    for seed in (0, 7, 123):
        a, b = rgp.generate(seed), rgp.generate(seed)
        assert (a.source, a.wrt, a.features) == (b.source, b.wrt, b.features)
        assert all(type(x) is type(y) and np.array_equal(x, y) for x, y in zip(a.args, b.args))
        assert rgp.program_source(seed) == rgp.program_source(seed)
    assert rgp.generate(0).source != rgp.generate(1).source


# Deliberately wrong gradients: gc.stop_gradient is the identity in plain Python but cuts
# the gradient in the graph, so the graph's derivative is wrong and the checker must say so.

def wrong_first_order(x, n):
    v = x
    i = 0
    while i < n:
        v = v * gc.stop_gradient(x)  # plain: x^(n+1); graph derivative: x^n
        i += 1
    return v


def wrong_second_order(x, n):
    v = x * x
    for _ in range(n):
        v = v + 0.5 * np.square(x - gc.stop_gradient(x))  # zero, with zero slope, but curvature n
    return v


def test_a_wrong_first_derivative_is_detected():
    problem = rgp.check_function(wrong_first_order, (np.float64(1.3), np.int64(3)), (0,))
    assert problem is not None and "first order d/dx by gc.gradients is 2.197" in problem


def test_a_wrong_second_derivative_is_detected():
    problem = rgp.check_function(wrong_second_order, (np.float64(0.7), np.int64(2)), (0,))
    assert problem is not None and "second order d/dx (d/dx f) by gc.gradients twice is 4." in problem
    assert "first order" not in problem


def test_program_source_runs_as_a_script(tmp_path):
    path = tmp_path / "repro.py"
    path.write_text(rgp.program_source(4))
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
