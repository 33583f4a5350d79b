"""`autograph graph --optimize / --passes` and `autograph run --no-optimize`; Session(optimize=True)."""
import os
import re

import numpy as np
from typer.testing import CliRunner

import graphcore as gc
from cli.main import app
from executor import Session

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_graph_optimize_prints_the_graph_and_a_per_pass_table():
    r = invoke("graph", "collatz", 27, "--optimize", "--plain")
    assert r.exit_code == 0, r.output
    assert "Switch(" in r.output and "pass" in r.output and "constant_folding" in r.output
    before, after = map(int, re.search(r"ops (\d+) -> (\d+)", r.output).groups())
    traced = invoke("graph", "collatz", 27, "--no-optimize", "--plain").output
    assert before == sum(line.startswith("%") for line in traced.splitlines()) and after < before


def test_graph_passes_runs_only_those_and_refuses_unknown_ones():
    r = invoke("graph", "fibonacci", 10, "--passes", "pruning,cse", "--plain")
    assert r.exit_code == 0, r.output
    assert "cse" in r.output and "licm" not in r.output
    r = invoke("graph", "fibonacci", 10, "--passes", "folding")
    assert r.exit_code != 0 and "unknown pass folding" in r.output


def test_run_no_optimize_gives_the_same_result():
    before = os.environ.get("AUTOGRAPH_OPTIMIZE")
    try:
        on = invoke("run", "collatz", 27, "--check")
        off = invoke("run", "collatz", 27, "--no-optimize", "--check")
    finally:
        if before is None:
            os.environ.pop("AUTOGRAPH_OPTIMIZE", None)
        else:
            os.environ["AUTOGRAPH_OPTIMIZE"] = before
    assert on.exit_code == 0 and off.exit_code == 0, (on.output, off.output)
    assert on.output.splitlines()[0] == off.output.splitlines()[0] == "111"


def test_session_optimize_runs_an_optimized_copy():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [2], name="x")
        y = gc.tanh(x) + gc.tanh(x) * 1.0 + gc.cast(gc.size(x), gc.float64)
        unused = gc.exp(x)
    n = len(g)
    s = Session(g, optimize=True, num_threads=1)
    got = s.run(y, feed_dict={x: np.array([0.5, -1.0])})
    np.testing.assert_array_equal(got, Session(g).run(y, feed_dict={x: np.array([0.5, -1.0])}))
    assert len(g) == n and unused.op in g          # the user's graph is not changed
    report = s.last_optimize_report
    assert report.ops_after < report.ops_before
