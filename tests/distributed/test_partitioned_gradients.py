"""Gradients across devices: the backward graph is partitioned like the forward one.
First and second derivatives of random gradient programs (loops, conds, arrays) are
identical on two devices and on one, under each placement; when the forward ops are
placed before differentiating, every gradient op lands on its forward op's device and
each loop accumulator on the device of the value it keeps."""
from __future__ import annotations

import numpy as np
import pytest

import autograph
import graphcore as gc
from autograph.testing import random_grad_programs as rgp
from executor import Session
from placements import DEVICES, PLACEMENTS
from tests import scale

GRAD_SEEDS = scale.seeds(0, 10, 40)


def _derivative_graph(program):
    """The traced graph of a random gradient program with its first and second
    derivatives, the fetches and the feeds; None if its output is not a tensor."""
    f = rgp._load(program)
    concrete = autograph.function(f).get_concrete_function(*program.args)
    out = concrete.structured_outputs
    if not isinstance(out, gc.Tensor):
        return None
    inputs = iter(concrete.inputs)
    placeholders = {k: next(inputs) for k, a in enumerate(program.args) if isinstance(a, (np.ndarray, np.generic))}
    fetches = [out]
    with concrete.graph.as_default():
        for k in program.wrt:
            d1 = gc.gradients(out, [placeholders[k]])[0]
            d1 = gc.zeros_like(placeholders[k]) if d1 is None else d1
            d2 = gc.gradients(gc.reduce_sum(d1), [placeholders[k]])[0]
            fetches += [d1, gc.zeros_like(placeholders[k]) if d2 is None else d2]
    feeds = {p: program.args[k] for k, p in placeholders.items()}
    return concrete.graph, fetches, feeds


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_random_gradient_programs_agree_with_one_device(placement):
    compared = sends = 0
    for seed in GRAD_SEEDS:
        built = _derivative_graph(rgp.generate(seed))
        if built is None:
            continue
        graph, fetches, feeds = built
        one = Session(graph, num_threads=1).run(fetches, feed_dict=feeds)
        PLACEMENTS[placement](graph)
        session = Session(graph, devices=DEVICES)
        two = session.run(fetches, feed_dict=feeds)
        for a, b in zip(one, two):
            np.testing.assert_array_equal(b, a, err_msg=f"seed {seed}")
        sends += session.last_partitioning.sends
        compared += 1
    assert compared >= len(GRAD_SEEDS) // 2 and sends > compared


def body_on_cpu1(x, n):
    i = 0
    while i < n:
        with gc.device("cpu:1"):
            x = gc.tanh(x * 1.5) + x
        i += 1
    return x


def test_gradient_ops_and_accumulators_follow_the_forward_devices():
    x0, n = np.float64(0.3), np.int64(4)
    concrete = autograph.function(body_on_cpu1).get_concrete_function(x0, n)
    g = concrete.graph
    with g.as_default():
        (dx,) = gc.gradients(concrete.structured_outputs, [concrete.inputs[0]])
    kept = [op for op in g.get_operations() if op.type == "TensorListPushBack"]
    assert kept and all(op.device == op.inputs[1].op.device or op.inputs[1].op.type == "Merge" for op in kept)
    assert any(op.device == "cpu:1" for op in kept)  # tanh's output is kept where tanh ran
    grads_of_tanh = [op for op in g.get_operations() if "gradients" in op.name and op.type in ("Mul", "Sub")
                     and op.device == "cpu:1"]
    assert grads_of_tanh
    session = Session(g, devices=DEVICES)
    got = session.run(dx, {concrete.inputs[0]: x0, concrete.inputs[1]: n})
    want = Session(g).run(dx, {concrete.inputs[0]: x0, concrete.inputs[1]: n})
    assert got == want
    h = 1e-6
    f = autograph.function(body_on_cpu1)
    fd = (f(x0 + h, n) - f(x0 - h, n)) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-6)
    assert session.last_partitioning.control_loops >= 2  # forward and backward loops span the devices
