"""`autograph run ... --devices N` and `autograph graph ... --devices N`: the converted
function partitioned across devices, run (agreeing with plain Python) and drawn with
one cluster per device and its _Send/_Recv pairs."""
import pytest
from typer.testing import CliRunner

from cli.main import app
from samples import find_sample

runner = CliRunner()
COLLATZ = find_sample("collatz").path
SEARCH = find_sample("nested_search").path


def ok(*args):
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize("place", ["loops", "round-robin", "depth"])
def test_run_across_two_devices_agrees_with_python(place):
    out = ok("run", f"{COLLATZ}:collatz", 27, "--devices", 2, "--place", place, "--check")
    assert out.splitlines()[0] == "111" and "agrees" in out
    assert "ran across 2 devices" in out and "control loops; engine local" in out


def test_run_nested_loops_across_three_devices():
    out = ok("run", f"{SEARCH}:find_in_grid", "[[1, 2], [3, 4]]", 3, "--devices", 3, "--place", "depth", "--check")
    assert "agrees" in out and "3 devices" in out


def test_graph_across_devices_draws_a_cluster_per_device():
    dot = ok("graph", f"{COLLATZ}:collatz", 27, "--devices", 2, "-f", "dot")
    assert 'label="device cpu:0"' in dot and 'label="device cpu:1"' in dot
    assert "_Send" in dot and "_Recv" in dot and "_cloop/cpu_1/while/Switch" in dot
    assert dot.count("color=\"#0077b6\"") >= 3  # each _Send joined to its _Recv
    text = ok("graph", f"{COLLATZ}:collatz", 27, "--devices", 2)
    assert "send/recv pairs" in text and "device cpu:1" in text


def test_bad_device_options_are_refused():
    r = runner.invoke(app, ["run", f"{COLLATZ}:collatz", "27", "--devices", "2", "--place", "random"])
    assert r.exit_code != 0 and "--place random" in r.output
    r = runner.invoke(app, ["run", f"{COLLATZ}:collatz", "27", "--devices", "2", "--engine", "mpi"])
    assert r.exit_code != 0 and "--engine mpi" in r.output


def test_bench_devices_quick_writes_its_figures_as_json(tmp_path):
    import json  # noqa: PLC0415

    path = tmp_path / "figures.json"
    out = ok("bench", "devices", "--quick", "--json", path)
    assert "messages per iteration (minimum 3" in out and f"wrote {path}" in out
    figures = json.loads(path.read_text())["devices"]["loop_across_devices"]
    assert figures["one device"]["us_per_iteration"] > 0
    assert 3 <= figures["2 devices, in process"]["messages_per_iteration"] < 3.2


def test_numba_from_the_command_line():
    pytest.importorskip("numba")
    out = ok("run", f"{COLLATZ}:collatz", 27, "--numba", "--check")
    assert out.splitlines()[0] == "111" and "agrees" in out
    listing = ok("graph", f"{COLLATZ}:collatz", 27, "--numba", "--plain")
    assert "compiled with numba" in listing and "== -1 else" in listing  # the written-out -1 divisor
