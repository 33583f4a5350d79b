"""Programs placed across two devices give the same results as on one: every sample, the
converter's conformance programs and random programs, under three placements (ops
round-robin; loop bodies on one device and predicates on the other, cond branches
apart; nesting depths alternating), in process."""
from __future__ import annotations

import contextlib
import io

import pytest

import autograph
from placements import DEVICES, PLACEMENTS
from samples import available_samples
from test_conformance import CASES
from test_optimizer_differential import _outcome, _same, disagreements
from tests import scale

RANDOM_SEEDS = scale.seeds(3000, 25, 200)


def across_devices(python_fn, args, place, engine="local"):
    """(value, error type, printed) of `python_fn` on two devices, against one device."""
    f = autograph.function(python_fn, devices=DEVICES, engine=engine)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            place(f.get_concrete_function(*args).graph)
    except Exception:  # noqa: BLE001 (tracing raises what Python raises: the call below compares it)
        pass
    two = _outcome(f, args)
    one = _outcome(autograph.function(python_fn), args)
    assert two[1] == one[1] and two[2] == one[2], (two, one)
    _same(one[0], two[0])
    return two


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
@pytest.mark.parametrize("sample", available_samples(), ids=lambda s: s.name)
def test_samples(sample, placement):
    for args in sample.examples:
        across_devices(sample.python_function, args, PLACEMENTS[placement])


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
@pytest.mark.parametrize("f,args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_conformance_programs(f, args, placement):
    across_devices(f, args, PLACEMENTS[placement])


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_random_programs(placement):
    failures = disagreements(lambda fn, args: across_devices(fn, args, PLACEMENTS[placement]), RANDOM_SEEDS)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("jit", [True, "numba"])
def test_compiled_loops_run_across_devices(jit):
    """A compiled loop is one op: it runs on its device, its inputs and outputs cross."""
    if jit == "numba":
        pytest.importorskip("numba")
    sample = next(s for s in available_samples() if s.name == "collatz")
    for args in sample.examples:
        f = autograph.function(sample.python_function, jit_compile=jit, devices=DEVICES)
        PLACEMENTS["round_robin"](f.get_concrete_function(*args).graph)
        assert f(*args) == sample.python_function(*args)


def test_a_session_optimizes_then_partitions():
    import numpy as np  # noqa: PLC0415

    import graphcore as gc  # noqa: PLC0415
    from executor import Session  # noqa: PLC0415
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        with gc.device("cpu:1"):
            y = (x * 1.0 + 0.0) * (2.0 + 3.0)  # folded and simplified before partitioning
    s = Session(g, devices=DEVICES, optimize=True)
    assert s.run(y, {x: 1.5}) == 7.5
    assert s.last_optimize_report is not None and s.last_partitioning.sends >= 1
    assert np.isclose(Session(g).run(y, {x: 1.5}), 7.5)
