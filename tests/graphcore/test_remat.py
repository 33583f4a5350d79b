"""Rematerialisation (graphcore/gradients/remat.py): under a memory budget a backward loop
recomputes elementwise forward values instead of keeping them; gradients are the same and
agree with central finite differences, and fewer values are kept."""
import numpy as np
import pytest

import graphcore as gc
from executor import Session
from graphcore.gradients import accumulated_tensors

from gradcheck import numeric_grad

X = np.linspace(-1.0, 1.0, 4)
W = np.array([0.3, -0.2, 0.5, 0.1])


def build(budget, with_cond=False):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [4], name="x")
        w = gc.placeholder(gc.float64, [4], name="w")

        def body(i, h):
            z = h * w + x
            a = gc.sin(z) * 0.5 + z * z * 0.1
            if with_cond:
                a = gc.cond(gc.reduce_sum(z) > 0.0, lambda: gc.exp(a) * 0.3, lambda: a - 1.0)
            return i + 1, gc.tanh(a)

        _, h = gc.while_loop(lambda i, h: i < 6, body, [0, x])
        loss = gc.reduce_sum(h * h)
        grads = gc.gradients(loss, [x, w], memory_budget=budget)
    kept = sum(len(accumulated_tensors(c)) for c in g.while_contexts.values() if not hasattr(c, "forward"))
    return g, (x, w), loss, grads, kept


def run(budget, with_cond=False):
    g, (x, w), loss, grads, kept = build(budget, with_cond)
    s = Session(g)
    values = s.run([loss, *grads], {x: X, w: W})
    return values, kept, (s, x, w, loss)


@pytest.mark.parametrize("with_cond", [False, True])
def test_recomputing_gives_the_same_gradients_and_keeps_fewer_values(with_cond):
    kept_all, n_all, _ = run(None, with_cond)
    recomputed, n_none, (s, x, w, loss) = run(0, with_cond)
    for a, b in zip(kept_all, recomputed):
        np.testing.assert_array_equal(a, b)  # the same ops on the same values
    assert n_none < n_all
    for i, (ph, value) in enumerate(((x, X), (w, W))):
        feeds = {x: X, w: W}

        def f(v, ph=ph):
            return s.run(loss, {**feeds, ph: v})
        np.testing.assert_allclose(recomputed[1 + i], numeric_grad(f, value), rtol=1e-6, atol=1e-8)


def test_the_budget_keeps_values_up_to_its_bytes():
    """Two values of 4 float64 are read per iteration; one of them (h, the loop variable
    before the step) cannot be recomputed and is kept whatever the budget says."""
    _, n_all, _ = run(None)
    assert [run(b)[1] for b in (0, X.nbytes, 2 * X.nbytes, 2 ** 20)] == [n_all - 1, n_all - 1, n_all, n_all]


def test_the_block_form_and_bad_budgets():
    with gc.memory_budget(0):
        _, n_block, _ = run(None)
    _, n_none, _ = run(0)
    assert n_block == n_none
    with pytest.raises(ValueError, match="bytes >= 0"):
        with gc.memory_budget(-1):
            pass


@pytest.mark.parametrize("seed", [7093, 7143, 7149])
def test_random_gradient_programs_under_a_zero_budget_first_and_second_order(seed):
    """Programs whose second derivatives failed when predicates were recomputed (conds in
    loops): first and second order against finite differences, gc.gradients twice too."""
    from autograph.testing import random_grad_programs as rgp

    with gc.memory_budget(0):
        assert rgp.run_seed(seed) is None
