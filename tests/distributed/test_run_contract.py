"""One run contract, every engine (issue 24): a deadline and Ctrl-C end a loop that never
ends, a failing kernel and a staged assert give the same error and message, a failure on
one device cancels the others, nothing is left running, and the session runs again.

Engines: the frame executor (optimized and not), compiled loops in Python and in numba,
two devices in this process (interpreted and compiled) and two Ray actors (interpreted
and numba). Bounds on time are generous: they tell "ends" from "never ends"."""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import numpy as np
import pytest

import executor
import graphcore as gc
from autograph import function
from executor import Session, interrupt
from executor.numba_loop import numba_available
from graphcore.errors import CancelledError, DeadlineExceededError, ExecutionError
from placements import DEVICES, PLACEMENTS

try:
    import ray
except ImportError:  # (the Ray engines are skipped)
    ray = None

_RAY = pytest.mark.skipif(ray is None, reason="the Ray engine is optional: pip install -e '.[distributed]'")
_NUMBA = pytest.mark.skipif(not numba_available(), reason="numba is optional: pip install -e '.[jit]'")

ENGINES = {
    "frame": dict(optimize=True),
    "unoptimized": dict(optimize=False),
    "jit": dict(jit_compile=True),
    "numba": dict(jit_compile="numba"),
    "devices": dict(devices=DEVICES),
    "devices_jit": dict(devices=DEVICES, jit_compile=True),
    "ray": dict(devices=DEVICES, engine="ray"),
    "ray_numba": dict(devices=DEVICES, engine="ray", jit_compile="numba"),
}
MARKS = {"numba": [_NUMBA], "ray": [_RAY], "ray_numba": [_RAY, _NUMBA]}
ALL = [pytest.param(name, marks=MARKS.get(name, ())) for name in ENGINES]
SEVERAL_DEVICES = [pytest.param(name, marks=MARKS.get(name, ())) for name in ENGINES if "devices" in ENGINES[name]]
ENDS = 30.0  # seconds: "it ended" (a never-ending loop would not)
FOREVER = np.int64(2 ** 62)


@pytest.fixture(scope="module", autouse=True)
def local_cluster():
    yield
    if ray is not None and ray.is_initialized():
        from executor.distributed.ray_engine import shutdown_actors  # noqa: PLC0415

        shutdown_actors()


def _device(name: str, device: str):
    return gc.device(device) if "devices" in ENGINES[name] else contextlib.nullcontext()


def counting_loop(engine: str):
    """sum(range(n)) by a while loop whose body is on cpu:1 (where there are devices)."""
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def body(i, total):
            with _device(engine, "cpu:1"):
                return i + 1, total + i
        _, total = gc.while_loop(lambda i, t: i < n, body, [gc.constant(np.int64(0)), gc.constant(np.int64(0))])
    return g, n, total


def _session(engine: str, g) -> Session:
    return Session(g, **ENGINES[engine])


def _nothing_left_running(session: Session, threads_before: int) -> None:
    """No compiled loop still runs here, no actor still runs a part, no thread the run
    started is alive (waited for: a stopped kernel may take a moment to return)."""
    end = time.monotonic() + ENDS
    while True:
        busy = interrupt.active_kernels()
        if session.engine_name == "ray" and session._engine is not None:
            busy += sum(ray.get([a.busy.remote() for a in session._engine.actors.values()]))
        extra = threading.active_count() - threads_before
        if not busy and extra <= 0:
            return
        assert time.monotonic() < end, f"still running after {ENDS} s: {busy} kernels or parts, {extra} threads"
        time.sleep(0.05)


def _warm(engine: str):
    """The loop's graph and a session that ran it once (compiled, actors started)."""
    g, n, total = counting_loop(engine)
    s = _session(engine, g)
    assert s.run(total, {n: np.int64(10)}, timeout=120) == 45
    return g, n, total, s


def _threads() -> int:
    return threading.active_count()


@pytest.mark.parametrize("engine", ALL)
def test_a_deadline_ends_a_loop_that_never_ends(engine):
    _, n, total, s = _warm(engine)
    before = _threads()
    for bounded in (lambda: s.run(total, {n: FOREVER}, timeout=0.5), lambda: _in_scope(s, total, n)):
        t0 = time.monotonic()
        with pytest.raises(DeadlineExceededError) as e:
            bounded()
        assert time.monotonic() - t0 < ENDS
        assert "deadline of 0.5 s" in str(e.value)
        if ENGINES[engine].get("jit_compile"):  # the loop that was running, at the user's line
            assert "in the compiled loop" in str(e.value) and "test_run_contract.py" in str(e.value), str(e.value)
        _nothing_left_running(s, before)
        assert s.run(total, {n: np.int64(100)}) == 4950  # the session runs again
    s.close()


def _in_scope(s, total, n):
    with executor.deadline(0.5):
        s.run(total, {n: FOREVER})


@pytest.mark.parametrize("engine", ALL)
def test_ctrl_c_ends_a_loop_that_never_ends(engine):
    _, n, total, s = _warm(engine)
    before = _threads()
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            s.run(total, {n: FOREVER})
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < ENDS
    _nothing_left_running(s, before)
    assert s.run(total, {n: np.int64(100)}) == 4950
    s.close()


def indexing_loop(engine: str):
    """sum(xs[i] for i < n): xs[i] fails past the end (its line named in the error)."""
    g = gc.Graph()
    with g.as_default():
        xs = gc.placeholder(gc.float64, [None], name="xs")
        n = gc.placeholder(gc.int64, [], name="n")

        def body(i, total):
            with _device(engine, "cpu:1"):
                x = xs[i]  # the failing line
            return i + 1, total + x
        _, total = gc.while_loop(lambda i, t: i < n, body, [gc.constant(np.int64(0)), gc.constant(0.0)])
    return g, xs, n, total


@pytest.mark.parametrize("engine", ALL)
def test_a_failing_kernel_gives_the_same_error_on_every_engine(engine):
    g, xs, n, total = indexing_loop(engine)
    s = _session(engine, g)
    before = None
    values = np.arange(5.0)
    with pytest.raises(ExecutionError) as e:
        s.run(total, {xs: values, n: np.int64(8)}, timeout=120)
    assert isinstance(e.value, IndexError)
    message = str(e.value)
    assert "test_run_contract.py" in message and "index 5 is out of bounds" in message, message
    before = _threads()
    assert s.run(total, {xs: values, n: np.int64(5)}, timeout=120) == 10.0
    _nothing_left_running(s, before)
    s.close()


def _staged(x):
    while x < 100.0:
        x = x + 3.0
        assert x < 12.0, f"x reached {x}"
    return x


@pytest.mark.parametrize("engine", ALL)
def test_a_staged_assert_shows_the_values_on_every_engine(engine):
    kwargs = dict(ENGINES[engine])
    f = function(_staged, **kwargs)
    if "devices" in kwargs:
        PLACEMENTS["loop_bodies_elsewhere"](f.get_concrete_function(np.float64(0.0)).graph)
    with pytest.raises(AssertionError) as e:
        f(np.float64(0.0))
    assert str(e.value) == "x reached 12.0"
    assert f(np.float64(200.0)) == 200.0


def two_devices_one_failing(engine: str):
    """cpu:0 fails (an index past the end, after two matmuls: a heavy part, so each device
    runs on a thread of its own in process) while cpu:1 runs a loop that never ends."""
    g = gc.Graph()
    with g.as_default():
        m = gc.placeholder(gc.float64, [None, None], name="m")
        k = gc.placeholder(gc.int64, [], name="k")
        n = gc.placeholder(gc.int64, [], name="n")
        with gc.device("cpu:0"):
            row = gc.matmul(m, m)[k]  # the failing line
            other = gc.matmul(m, m + 1.0)
        with gc.device("cpu:1"):
            _, total = gc.while_loop(lambda i, t: i < n, lambda i, t: (i + 1, t + i),
                                     [gc.constant(np.int64(0)), gc.constant(np.int64(0))])
    return g, m, k, n, [row, total, other]


@pytest.mark.parametrize("engine", SEVERAL_DEVICES)
def test_a_failure_on_one_device_cancels_the_others(engine):
    g, m, k, n, fetches = two_devices_one_failing(engine)
    s = _session(engine, g)
    ones = np.ones((4, 4))
    out = s.run(fetches, {m: ones, k: np.int64(1), n: np.int64(10)}, timeout=120)
    assert out[1] == 45
    if s.engine_name == "local":
        assert any(part.heavy for part in s._partitions[next(iter(s._partitions))][1])  # (threads)
    before = _threads()
    t0 = time.monotonic()
    with pytest.raises(ExecutionError) as e:
        s.run(fetches, {m: ones, k: np.int64(9), n: FOREVER})
    assert time.monotonic() - t0 < ENDS
    assert isinstance(e.value, IndexError) and not isinstance(e.value, CancelledError)
    assert str(e.value).startswith("on device cpu:0:") and "test_run_contract.py" in str(e.value)
    _nothing_left_running(s, before)
    assert s.run(fetches, {m: ones, k: np.int64(0), n: np.int64(100)}, timeout=120)[1] == 4950
    s.close()


@pytest.mark.parametrize("engine", SEVERAL_DEVICES)
def test_ctrl_c_while_another_device_runs_a_loop_stops_that_device_too(engine):
    """cpu:0's part ends at once; Ctrl-C comes while cpu:1's loop runs (on its own thread
    in process, in its actor on Ray): the run raises KeyboardInterrupt and cpu:1 stops."""
    g, m, k, n, fetches = two_devices_one_failing(engine)
    s = _session(engine, g)
    ones = np.ones((4, 4))
    assert s.run(fetches, {m: ones, k: np.int64(1), n: np.int64(10)}, timeout=120)[1] == 45
    before = _threads()
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            s.run(fetches, {m: ones, k: np.int64(1), n: FOREVER})
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < ENDS
    _nothing_left_running(s, before)
    assert s.run(fetches, {m: ones, k: np.int64(0), n: np.int64(100)}, timeout=120)[1] == 4950
    s.close()
