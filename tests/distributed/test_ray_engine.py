"""The Ray engine: each device a Ray actor on a local cluster (ray.init(num_cpus=2)).
A subset of the samples and of the conformance programs, placed across two devices,
give the results of one device; a kernel failing on one actor and an actor killed
mid-run end the run with an error naming the device, and the session runs again."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the Ray engine is optional: pip install -e '.[distributed]'")

from executor import Session  # noqa: E402
from graphcore.errors import ExecutionError  # noqa: E402
from placements import DEVICES, PLACEMENTS  # noqa: E402
from samples import available_samples  # noqa: E402
from test_conformance import CASES  # noqa: E402
from test_device_failures import indexing_loop  # noqa: E402
from test_partitioned_programs import across_devices  # noqa: E402

SAMPLES = ("fibonacci", "collatz", "nested_search", "binary_search", "seed_cond")


@pytest.fixture(scope="module", autouse=True)
def local_cluster():
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, configure_logging=False, log_to_driver=False)
    yield


@pytest.mark.parametrize("name", SAMPLES)
def test_samples_on_ray(name):
    sample = next(s for s in available_samples() if s.name == name)
    for args in sample.examples[:2]:
        across_devices(sample.python_function, args, PLACEMENTS["loop_bodies_elsewhere"], engine="ray")


def test_conformance_programs_on_ray():
    for f, args in CASES[:12]:
        across_devices(f, args, PLACEMENTS["round_robin"], engine="ray")


def test_a_kernel_failing_on_an_actor_ends_the_run_and_names_it():
    g, xs, n, total = indexing_loop()
    s = Session(g, devices=DEVICES, engine="ray")
    values = np.arange(5.0)
    with pytest.raises(ExecutionError) as e:
        s.run(total, {xs: values, n: 8}, timeout=60)
    assert isinstance(e.value, IndexError)
    assert str(e.value).startswith("on device cpu:1:") and "test_device_failures.py" in str(e.value)
    assert e.value.op is not None and e.value.op.graph is g
    assert s.run(total, {xs: values, n: 5}, timeout=60) == values.sum()
    s.close()


def test_an_actor_killed_mid_run_ends_the_run_and_the_session_goes_on():
    g, xs, n, total = indexing_loop()
    s = Session(g, devices=DEVICES, engine="ray")
    values = np.ones(100_000)
    assert s.run(total, {xs: values[:3], n: 3}) == 3.0  # the actors exist now
    victim = s._engine.actors["cpu:1"]
    killer = threading.Timer(1.0, lambda: ray.kill(victim))
    killer.start()
    started = time.monotonic()
    with pytest.raises(ExecutionError, match="on device cpu:1: the Ray actor running it died"):
        s.run(total, {xs: values, n: 100_000}, timeout=120)
    assert time.monotonic() - started < 60  # nobody kept waiting for the dead actor
    killer.join()
    assert s.run(total, {xs: values[:4], n: 4}, timeout=60) == 4.0  # a new actor for cpu:1
    s.close()


def test_cli_run_on_ray():
    from typer.testing import CliRunner  # noqa: PLC0415

    from cli.main import app  # noqa: PLC0415
    collatz = next(s for s in available_samples() if s.name == "collatz").path
    r = CliRunner().invoke(app, ["run", f"{collatz}:collatz", "27", "--devices", "2", "--engine", "ray", "--check"])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == "111" and "agrees" in r.output and "engine ray" in r.output


def unused_argument(x, unused, n):
    i = 0
    while i < n:
        x = x * 2
        i += 1
    return x


def test_an_argument_the_graph_does_not_use_is_fed_all_the_same():
    """Its placeholder stays in the partitioned graph (random programs found it on Ray)."""
    across_devices(unused_argument, (np.int64(3), np.float64(1.5), np.int64(4)), PLACEMENTS["round_robin"],
                   engine="ray")
