"""Control Flow v2 run directly on devices (`functional="direct", devices=[...]`): each
If/While op is placed like any op and runs its functions whole on its device, its inputs
and outputs crossing devices; the results are those of v1 and of v2 lowered, bit for bit,
and the run really used the devices (the partitioning, and the nodes each device ran)."""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import autograph
import graphcore as gc
from autograph.testing import control_flow_modes
from executor import Session
from graphcore.errors import GraphError
from placements import DEVICES, PLACEMENTS
from samples import available_samples
from test_conformance import CASES

V1 = {"control_flow": "v1"}
LOWERED = {"control_flow": "v2", "functional": "lower"}
DIRECT = {"control_flow": "v2", "functional": "direct"}
_V1_PRIMITIVES = {"Switch", "Merge", "Enter", "Exit", "NextIteration"}


def _outcome(f, args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            value, error = f(*args), None
        except Exception as e:  # noqa: BLE001 (the exception type is compared)
            value, error = None, type(e)
    return value, error, out.getvalue()


def _placed(python_fn, args, options, place):
    """`python_fn` as an @function with `options`, its traced graph's ops placed by `place`."""
    f = autograph.function(python_fn, devices=DEVICES, **options)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            place(f.get_concrete_function(*args).graph)
    except Exception:  # noqa: BLE001 (tracing raises what the call raises: the outcome compares it)
        pass
    return f


@pytest.fixture
def direct_runs(monkeypatch):
    """What each direct run did: a list of (the If/While and v1 primitive op types of the
    graph its devices ran, the devices whose executors ran nodes); a direct run that did
    not go through the partitioner (devices ignored) fails the test."""
    runs = []
    run_on_devices, run_direct = Session._run_on_devices, Session._run_direct

    def on_devices(self, graph, *rest):
        out = run_on_devices(self, graph, *rest)
        if self.functional == "direct":
            types = {op.type for op in self.last_partitioning.graph.get_operations()}
            ran = {d for d, st in self._engine.last_stats.items() if st.nodes}
            runs.append((types & ({"If", "While"} | _V1_PRIMITIVES), ran))
        return out

    def direct(self, *args):
        if self.devices is not None:
            raise AssertionError("a direct run on devices ran on the calling thread: devices= ignored")
        return run_direct(self, *args)
    monkeypatch.setattr(Session, "_run_on_devices", on_devices)
    monkeypatch.setattr(Session, "_run_direct", direct)
    return runs


def _ran_directly_on_devices(runs, both: bool = True) -> None:
    """The direct runs of `runs` (direct_runs) ran If/While ops as ops (no v1 primitive) on
    the devices (on both, if `both`)."""
    assert runs, "no direct run went through the partitioner"
    assert all(not types & _V1_PRIMITIVES for types, _ in runs), runs
    assert any(types and (not both or ran == set(DEVICES)) for types, ran in runs), runs


@pytest.mark.parametrize("f,args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_conformance_programs_direct_on_two_devices_as_v1_and_lowered(f, args, direct_runs):
    place = PLACEMENTS["round_robin"]
    v1 = _outcome(_placed(f, args, V1, place), args)
    lowered = _outcome(_placed(f, args, LOWERED, place), args)
    g = _placed(f, args, DIRECT, place)
    direct = _outcome(g, args)
    for other in (v1, lowered):
        assert direct[1] == other[1] and direct[2] == other[2], (direct, other)
        assert control_flow_modes._same_bits(direct[0], other[0]), (direct[0], other[0])
    assert all(not types & _V1_PRIMITIVES for types, _ in direct_runs), direct_runs


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
@pytest.mark.parametrize("sample", available_samples(), ids=lambda s: s.name)
def test_samples_direct_on_two_devices_as_v1_and_lowered(sample, placement, direct_runs):
    for args in sample.examples:
        direct_runs.clear()
        v1 = _outcome(autograph.function(sample.python_function), args)
        lowered = _outcome(_placed(sample.python_function, args, LOWERED, PLACEMENTS[placement]), args)
        g = _placed(sample.python_function, args, DIRECT, PLACEMENTS[placement])
        direct = _outcome(g, args)
        assert direct[1] is None and direct[2] == v1[2] == lowered[2]
        assert control_flow_modes._same_bits(direct[0], lowered[0]), (direct[0], lowered[0])
        # (v1 adds a loop's gradient contributions in another order: the last bits may differ, rnn_adam)
        np.testing.assert_allclose(np.asarray(direct[0], dtype=float), np.asarray(v1[0], dtype=float), rtol=1e-12,
                                   atol=0)
        _ran_directly_on_devices(direct_runs, both=placement == "round_robin")


def test_random_programs_run_every_mode_on_the_devices(direct_runs):
    """control_flow_modes --devices: every mode agrees, and v2 direct's runs went through
    the partitioner, If/While ops on both devices."""
    found = [(seed, *control_flow_modes.check("values", seed, {"devices": DEVICES})) for seed in range(13000, 13012)]
    assert not [f for f in found if f[1] in ("disagree", "refused-v2")], found
    _ran_directly_on_devices(direct_runs)


def _counting_loop(**where):
    """sum(range(n)) by a v2 while loop; `where`: {"loop": device around the while_loop call,
    "body": device around the body's ops}."""
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        n = gc.placeholder(gc.int64, [], name="n")

        def body(i, total):
            with gc.device(where["body"]) if "body" in where else contextlib.nullcontext():
                return i + 1, total + i
        with gc.device(where["loop"]) if "loop" in where else contextlib.nullcontext():
            _, total = gc.while_loop(lambda i, t: i < n, body, [gc.constant(np.int64(0)), gc.constant(np.int64(0))])
    return g, n, total


@pytest.mark.parametrize("where", [{"loop": "cpu:1"}, {"body": "cpu:1"}], ids=["loop-on-cpu1", "body-on-cpu1"])
def test_a_while_runs_whole_on_its_device(where):
    g, n, total = _counting_loop(**where)
    s = Session(g, functional="direct", devices=DEVICES)
    assert s.run(total, {n: np.int64(10)}) == sum(range(10))
    p = s.last_partitioning
    loops = [op for op in p.graph.get_operations() if op.type == "While"]
    assert [op.device for op in loops] == ["cpu:1"] and loops[0] in p.ops_of["cpu:1"]
    assert p.sends >= 1 and s.last_messages >= 1  # (n goes from cpu:0, where it is fed, to the loop)
    assert s._engine.last_stats["cpu:1"].nodes > 0
    assert Session(g, functional="lower", devices=DEVICES).run(total, {n: np.int64(10)}) == 45


def test_a_device_the_run_lacks_inside_a_function_is_refused():
    g, n, total = _counting_loop(body="cpu:7")
    with pytest.raises(GraphError) as e:
        Session(g, functional="direct", devices=DEVICES).run(total, {n: np.int64(3)})
    assert "'cpu:7'" in str(e.value) and "test_direct_on_devices.py" in str(e.value), str(e.value)


def test_an_if_on_one_device_reads_and_feeds_the_other():
    """x on cpu:0, the If on cpu:1, its output read back on cpu:0: both cross."""
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        x = gc.placeholder(gc.float64, [], name="x")
        with gc.device("cpu:1"):
            y = gc.cond(x > 0.0, lambda: x * 2.0, lambda: x - 1.0)
        with gc.device("cpu:0"):
            z = y + 1.0
    s = Session(g, functional="direct", devices=DEVICES)
    for v in (3.0, -3.0):
        assert s.run(z, {x: v}) == (v * 2.0 if v > 0 else v - 1.0) + 1.0
    ifs = [op for op in s.last_partitioning.graph.get_operations() if op.type == "If"]
    assert [op.device for op in ifs] == ["cpu:1"] and s.last_partitioning.sends >= 2


def _summing_into_a_variable():
    """A v2 While on cpu:1 whose body adds i to a variable: sum(range(n)) read after it."""
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        v = gc.Variable(np.float64(0.0), name="acc")
        n = gc.placeholder(gc.int64, [], name="n")

        def body(i):
            with gc.control_dependencies([v.assign_add(gc.cast(i, gc.float64))]):
                return i + 1
        with gc.device("cpu:1"):
            done = gc.while_loop(lambda i: i < n, body, [gc.constant(np.int64(0))])
        with gc.control_dependencies([done]):
            total = gc.identity(v)
    return g, v, n, total


def test_a_while_updating_a_variable_runs_on_a_device_in_process():
    from graphcore.eager import Runtime  # noqa: PLC0415

    g, v, n, total = _summing_into_a_variable()
    got = {}
    for functional in ("lower", "direct"):
        s = Session(g, functional=functional, devices=DEVICES, runtime=Runtime())
        s.run(v.initializer)
        got[functional] = s.run(total, {n: np.int64(5)})
    assert got == {"lower": 10.0, "direct": 10.0}


try:
    import ray
except ImportError:  # (the Ray tests are skipped)
    ray = None
_RAY = pytest.mark.skipif(ray is None, reason="the Ray engine is optional: pip install -e '.[distributed]'")


@_RAY
def test_samples_direct_on_ray_actors_as_lowered():
    """The library travels with each device's part to its actor; If/While run there."""
    for sample in available_samples()[:6]:
        for args in sample.examples[:1]:
            lowered = _outcome(_placed(sample.python_function, args, {**LOWERED, "engine": "ray"},
                                       PLACEMENTS["round_robin"]), args)
            g = _placed(sample.python_function, args, {**DIRECT, "engine": "ray"}, PLACEMENTS["round_robin"])
            direct = _outcome(g, args)
            assert direct[1] is None and direct[2] == lowered[2], (sample.name, direct, lowered)
            assert control_flow_modes._same_bits(direct[0], lowered[0]), (sample.name, direct[0], lowered[0])
            assert g.get_concrete_function(*args).session.engine_name == "ray"


@_RAY
def test_a_while_using_a_variable_is_refused_on_ray():
    g, v, n, total = _summing_into_a_variable()
    with pytest.raises(GraphError) as e:
        Session(g, functional="direct", devices=DEVICES, engine="ray").run(total, {n: np.int64(5)})
    assert "uses variables" in str(e.value) and "engine='local'" in str(e.value), str(e.value)


def _damped(x, n):
    """A cond inside a while, whose gradient needs the loop's intermediates."""
    v = x
    i = 0
    while i < n:
        if v > 0.5:
            v = np.tanh(v) * x + 0.25
        else:
            v = v * v - 0.1 * x
        i += 1
    return v


def _gradients(options, args, place=None):
    """[value, d/dx, d2/dx2] of _damped by gc.gradients twice, run with `options`."""
    concrete = autograph.function(_damped, **options).get_concrete_function(*args)
    x = concrete.inputs[0]
    with concrete.graph.as_default():
        d1 = gc.gradients(concrete.structured_outputs, [x])[0]
        d2 = gc.gradients(d1, [x])[0]
    if place is not None:
        place(concrete.graph)
    fetches = [concrete.structured_outputs, d1, d2]
    s = Session(concrete.graph, functional=options.get("functional"), devices=options.get("devices"))
    return s.run(fetches, dict(zip(concrete.inputs, args))), s


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
@pytest.mark.parametrize("x", [0.3, 0.9, -0.7])
def test_gradients_first_and_second_order_direct_on_two_devices(x, placement):
    args = (np.float64(x), np.int64(4))
    direct, s = _gradients({**DIRECT, "devices": DEVICES}, args, PLACEMENTS[placement])
    lowered, _ = _gradients(LOWERED, args)
    v1, _ = _gradients(V1, args)
    assert control_flow_modes._same_bits(direct, lowered), (direct, lowered)
    np.testing.assert_allclose(direct, v1, rtol=1e-12, atol=1e-15)
    h = 1e-5
    fd1 = (_damped(x + h, 4) - _damped(x - h, 4)) / (2 * h)
    fd2 = (direct_at(x + h) - direct_at(x - h)) / (2 * h)
    np.testing.assert_allclose(direct[1], fd1, rtol=1e-6)
    np.testing.assert_allclose(direct[2], fd2, rtol=1e-5, atol=1e-8)
    types = {op.type for op in s.last_partitioning.graph.get_operations()}
    assert "While" in types and not types & _V1_PRIMITIVES


def direct_at(x: float) -> float:
    """d/dx of _damped at x, run directly on the two devices (for the second derivative's
    central difference)."""
    return _gradients({**DIRECT, "devices": DEVICES}, (np.float64(x), np.int64(4)), PLACEMENTS["round_robin"])[0][1]


@pytest.mark.parametrize("sample", available_samples(), ids=lambda s: s.name)
def test_an_undone_trace_leaves_no_function_in_the_library(sample):
    """A loop body traced again (shapes relaxed, a replan: bubble_sort's) takes the functions
    of its first trace out of the library: every function left is called, the names are
    those of one trace, and the partitioner's copy keeps them all."""
    from graphcore.library import reachable_functions  # noqa: PLC0415

    args = sample.examples[0]
    f = autograph.function(sample.python_function, devices=DEVICES, **DIRECT)
    g = f.get_concrete_function(*args).graph
    called = sorted(fn.name for fn in reachable_functions(g))
    assert sorted(g.library) == called
    assert sorted(g.copy().library) == called
