"""`autograph run F ARGS --v2 [--direct]`: Control Flow v2, lowered or run as ops, gives
what v1 and plain Python give."""
from typer.testing import CliRunner

from cli.main import app
from executor import functional_direct
from executor.session import Session

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def _counting(monkeypatch, cls, name):
    calls = []
    original = getattr(cls, name)

    def counted(self, *a, **k):
        calls.append(self)
        return original(self, *a, **k)
    monkeypatch.setattr(cls, name, counted)
    return calls


def test_run_v2_direct_runs_if_and_while_as_ops(monkeypatch):
    direct = _counting(monkeypatch, functional_direct.DirectRun, "run")
    lowered = _counting(monkeypatch, Session, "_lowered_copy")
    r = invoke("run", "collatz", 27, "--v2", "--direct", "--check")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == "111" and "agree" in r.output
    assert direct and not lowered


def test_run_v2_lowers_and_agrees_with_v1():
    v1 = invoke("run", "nested_search", "--check")
    v2 = invoke("run", "nested_search", "--v2", "--check")
    assert v1.exit_code == 0 and v2.exit_code == 0, v2.output
    assert v2.output.splitlines()[0] == v1.output.splitlines()[0] and "agree" in v2.output


def test_run_v2_with_jit_and_two_devices_keeps_every_option():
    r = invoke("run", "collatz", 27, "--v2", "--jit", "--devices", 2)
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == "111" and "ran across 2 devices" in r.output


def test_direct_without_v2_is_refused_saying_what_to_add():
    r = invoke("run", "collatz", 27, "--direct")
    assert r.exit_code != 0 and "give --v2 too" in r.output
