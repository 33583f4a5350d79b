"""`autograph run F ARGS --v2 --direct --devices 2`: the If/While ops run as ops on the
devices (the run says how it was partitioned), with the value plain Python gives."""
from typer.testing import CliRunner

from cli.main import app
from executor import functional_direct
from executor.session import Session

runner = CliRunner()


def test_run_v2_direct_on_two_devices_partitions_the_functional_graph(monkeypatch):
    partitioned, on_one_thread = [], []
    on_devices, direct = Session._run_on_devices, functional_direct.DirectRun.run

    def spy(self, graph, *rest):
        out = on_devices(self, graph, *rest)
        partitioned.append({op.type for op in self.last_partitioning.graph.get_operations()})
        return out
    monkeypatch.setattr(Session, "_run_on_devices", spy)
    monkeypatch.setattr(functional_direct.DirectRun, "run", lambda *a, **k: on_one_thread.append(1) or direct(*a, **k))
    r = runner.invoke(app, ["run", "collatz", "27", "--v2", "--direct", "--devices", "2", "--place", "round-robin",
                            "--check"])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == "111" and "agree" in r.output, r.output
    assert "ran across 2 devices" in r.output and "cpu:1: 0 ops" not in r.output, r.output
    assert partitioned and "While" in partitioned[-1] and not on_one_thread
