"""Gradients of loops whose variables are swapped in a cycle (`a, b = b, a`): each one's next
value is another's value at the start of the iteration, and building the backward loop's
carried values went round that cycle forever (RecursionError; random grad seed 11911)."""
from __future__ import annotations

import numpy as np
import pytest

import autograph
from autograph.testing import random_grad_programs


def swap(x):
    a, b = x, 2.0 * x
    i = 0
    while i < 3:
        a, b = b, a
        i += 1
    return a * b + a


def rotate_three(x):
    a, b, c = x, 2.0 * x, np.tanh(x)
    i = 0
    while i < 4:
        a, b, c = b, c, a * 1.5
        i += 1
    return a * b * c


@pytest.mark.parametrize("fn", [swap, rotate_three])
@pytest.mark.parametrize("control_flow", ["v1", "v2"])
def test_gradient_of_a_loop_of_swapped_variables_is_the_finite_difference(fn, control_flow):
    g = autograph.grad(autograph.function(fn, control_flow=control_flow))
    for x in (np.float64(1.3), np.float64(-0.4)):
        h = 1e-6
        assert np.isclose(g(x), (fn(x + h) - fn(x - h)) / (2 * h), rtol=1e-6, atol=1e-8)


def test_random_grad_seed_11911_agrees():
    assert random_grad_programs.run_seed(11911) is None
