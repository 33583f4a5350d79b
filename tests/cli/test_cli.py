"""The `autograph` command, through typer's CliRunner, on the samples."""
import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

import autograph
import graphcore as gc
from cli.loading import CliError, parse_args, split_spec
from cli.main import app
from samples import find_sample

runner = CliRunner()
FIB = find_sample("fibonacci").path
COLLATZ = find_sample("collatz").path


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def ok(*args):
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    return r.stdout  # (stderr says which graph is shown, and notes)


# -- convert ------------------------------------------------------------------------

def test_convert_plain_shows_original_and_converted():
    out = ok("convert", f"{COLLATZ}:collatz", "--plain")
    assert "# --- original  collatz.py:" in out and "# --- converted  collatz ---" in out
    assert "while n != 1:" in out
    assert "ag__.while_stmt(" in out and "ag__.if_stmt(" in out
    assert "names=('steps', 'n'), nouts=1, line=10)" in out  # the calls explain their arguments
    assert "\x1b[" not in out


def test_convert_rich_side_by_side_when_wide():
    out = ok("convert", COLLATZ, "--width", "160")
    assert "original" in out and "converted" in out and "ag__.while_stmt" in out


# -- graph -----------------------------------------------------------------------------

def test_graph_text_listing():
    out = ok("graph", f"{FIB}:fibonacci", "2")
    assert "= Enter(" in out and "# frame while" in out and "NextIteration(" in out


@pytest.mark.needs_graphviz
def test_graph_dot_and_json(tmp_path):
    out = ok("graph", FIB, "2", "--format", "dot")
    assert out.startswith("digraph G {") and "while loop (fibonacci.py:" in out
    path = tmp_path / "fib.json"
    ok("graph", FIB, "10", "--format", "json", "-o", path, "--no-optimize")
    g = gc.Graph.from_json(path.read_text())
    # a fresh trace: the sample's shared @function may have had its graph placed on devices by another test
    expected = autograph.function(find_sample("fibonacci").python_function).get_concrete_function(np.int64(10)).graph

    def ops_only(graph):  # the comments hold source lines, which depend on who traced first
        return [line.split("  # ")[0] for line in str(graph).splitlines()]

    assert ops_only(g) == ops_only(expected)
    assert json.loads(path.read_text())["format"] == "autograph-graph"


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed (apt-get install graphviz)")
@pytest.mark.needs_graphviz
def test_graph_svg_and_png(tmp_path):
    out = ok("graph", FIB, "2", "-f", "svg")
    assert "<svg" in out
    png = tmp_path / "g.png"
    ok("graph", FIB, "2", "-f", "png", "-o", png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed (apt-get install graphviz)")
@pytest.mark.parametrize("name, start", [("fib.png", b"\x89PNG\r\n\x1a\n"), ("fib.svg", b"<?xml"),
                                         ("fib.dot", b"digraph"), ("fib.gv", b"digraph"), ("fib.json", b"{"),
                                         ("fib.txt", b"%"), ("fib", b"%")])
@pytest.mark.needs_graphviz
def test_graph_format_from_the_output_suffix(tmp_path, name, start):
    path = tmp_path / name
    assert ok("graph", FIB, "2", "-o", path).startswith(f"wrote {path}")
    assert path.read_bytes().startswith(start)


def test_graph_unknown_suffix_asks_for_a_format(tmp_path):
    r = invoke("graph", FIB, "2", "-o", tmp_path / "fib.gif")
    assert r.exit_code == 2 and "cannot tell the format from '.gif'" in r.output
    assert not (tmp_path / "fib.gif").exists()


@pytest.mark.needs_graphviz
def test_graph_svg_without_dot_says_how_to_install(monkeypatch):
    import cli.main

    monkeypatch.setattr(cli.main.shutil, "which", lambda name: None)
    r = invoke("graph", FIB, "2", "-f", "svg")
    assert r.exit_code == 2
    assert "apt-get install graphviz" in r.output and "--format dot" in r.output
    assert ok("graph", FIB, "2", "-f", "dot").startswith("digraph")


def test_graph_bad_format():
    r = invoke("graph", FIB, "2", "-f", "gif")
    assert r.exit_code == 2 and "use one of text, dot, svg, png, json" in r.output


# -- run ----------------------------------------------------------------------------------

def test_run_and_check():
    assert ok("run", f"{COLLATZ}:collatz", "27").strip() == "111"
    out = ok("run", "collatz", "27", "--check")
    assert out.startswith("111\nplain Python: 111  (agrees;")


def test_run_arrays_dtype_and_static():
    out = ok("run", "bubble_sort", "[3, 1, 2]")
    assert out.strip() == "array([1, 2, 3])"  # numpy's repr
    out = ok("run", "newton_sqrt", "2", "--dtype", "float64", "--check")
    assert "agrees" in out
    out = ok("run", "newton_sqrt", "x=4.0", "tolerance=1e-6", "--static", "tolerance")
    assert float(out) == pytest.approx(2.0)


def test_run_timeout_ends_a_loop_that_never_ends():
    r = invoke("run", "collatz", "0", "--timeout", "0.3")  # 0 // 2 == 0: collatz(0) never reaches 1
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.output.startswith("error: DeadlineExceededError: the run exceeded its deadline of 0.3 s after ")
    assert ok("run", "collatz", "27", "--timeout", "30").strip() == "111"


def test_run_prints_inside_loop():
    out = ok("run", "print_loop", "3", "2")
    assert out == "step 0 value 3\nstep 1 value 6\n12\n"


@pytest.mark.parametrize("args, message", [
    (["run", "no/such/file.py:f", "1"], "error: no such file: no/such/file.py"),
    (["run", f"{COLLATZ}:nope", "1"], "has no function named 'nope'; it defines collatz"),
    (["run", "collatz", "[1,"], "error: argument n: cannot read '[1,' as a Python literal"),
    (["run", "collatz", "1", "2"], "collatz takes 1 argument(s) (n), got 2"),
    (["run", "gcd", "1"], "gcd needs 2 argument(s) (a, b), got 1"),
    (["run", "collatz", "1", "--dtype", "complex"], "unknown dtype 'complex'"),
    (["run", "collatz", "1", "--static", "m"], "collatz has no parameter 'm'"),
    (["run", "collatz", "1", "--timeout", "0"], "--timeout 0: give a positive number of seconds"),
])
def test_bad_input_is_one_line_without_traceback(args, message):
    r = invoke(*args)
    assert r.exit_code != 0
    assert message in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1


def test_an_error_of_the_users_program_keeps_its_line_and_exits_1(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text("import autograph\n\n\n@autograph.function\ndef f(x):\n    if x > 0:\n"
                 "        raise ValueError('x must not be positive')\n    return x\n")
    r = invoke("run", f"{f}:f", "3")
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.output.strip() == "error: ValueError: x must not be positive (raised by the graph at bad.py:7)"
    assert ok("run", f"{f}:f", "-3").strip() == "-3"
    usage = invoke("run", f"{f}:f")  # a usage error: 2, as click's own
    assert usage.exit_code == 2 and "needs 1 argument(s)" in usage.output


def test_file_without_a_single_function(tmp_path):
    f = tmp_path / "two.py"
    f.write_text("import autograph\n\n@autograph.function\ndef a(x):\n    return x\n\n"
                 "@autograph.function\ndef b(x):\n    return x\n")
    r = invoke("run", f, "1")
    assert r.exit_code == 2 and "several functions (a, b)" in r.output
    assert ok("run", f"{f}:b", "5").strip() == "5"
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n")
    r = invoke("run", f"{bad}:f", "1")
    assert r.exit_code == 1 and "syntax error" in r.output  # the program's error, not the command line's


def test_plain_function_is_converted(tmp_path):
    f = tmp_path / "plain.py"
    f.write_text("def halve_until_odd(n):\n    while n % 2 == 0:\n        n = n // 2\n    return n\n")
    assert ok("run", f"{f}:halve_until_odd", "48", "--check").startswith("3\nplain Python: 3  (agrees")


# -- trace ----------------------------------------------------------------------------------

def test_trace_of_the_fibonacci_loop():
    out = ok("trace", "fibonacci", "2")
    lines = out.splitlines()
    assert lines[0].startswith("trace of fibonacci(2):") and "num_threads=1" in lines[0]
    assert "+ frame root/while created" in out
    assert any("while/Merge" in l and "root/while:0" in l and "iter 0" in l and "live" in l for l in lines)
    assert "+ iteration 1 of root/while created" in out
    assert any("NextIteration" in l and "root/while:1" in l and l.endswith("dead") for l in lines)
    assert "- iteration 0 of root/while done: freed" in out
    assert "- frame root/while done: freed" in out
    assert any(l.strip().startswith("pending  while/") and "->" in l for l in lines)
    assert lines[-1] == "result: 1"
    # reproducible: one thread, same trace every time
    assert ok("trace", "fibonacci", "2") == out


def test_trace_without_pending_counts():
    out = ok("trace", "count_to_ten", "8", "--no-pending")
    assert not any(l.startswith(" " * 9 + "pending  ") for l in out.splitlines())
    assert "+ iteration 2 of root/while created" in out


def _steps(out: str) -> list[str]:
    return [l for l in out.splitlines() if l.startswith("step ")]


def test_trace_starts_with_a_legend():
    lines = ok("trace", "fibonacci", "2").splitlines()
    assert lines[1].startswith("legend: ") and any("pred=True → :1 live, :0 dead" in l for l in lines[1:6])
    assert "legend" not in ok("trace", "fibonacci", "2", "--no-legend")


def test_trace_says_what_switch_merge_and_feeds_did():
    steps = _steps(ok("trace", "fibonacci", "2"))

    def step(node, it):
        (line,) = [l for l in steps if l.split()[2] == node and f"iter {it} " in l]
        return line

    assert step("while/Switch", 0).endswith("live  pred=True → :1 live, :0 dead; → 1")  # 1 < 2: the body runs
    assert step("while/Switch", 1).endswith("live  pred=False → :0 live, :1 dead; → 1")  # 2 < 2 is false: exit
    assert step("while/Merge", 0).endswith("input 0 (while/Enter) arrived; → 1")
    assert step("while/Merge", 1).endswith("input 1 (while/NextIteration) arrived; → 1")
    assert step("feed:n:0", 0).endswith("live  → 2")
    assert step("Const", 0).endswith("live  → 1")


def test_trace_filters():
    out = ok("trace", "collatz", "27", "--limit", "5")
    assert len(_steps(out)) == 5 and "more step(s) not shown (--limit 5)" in out
    assert out.splitlines()[-1] == "result: 111"
    out = ok("trace", "collatz", "6", "--op", "Switch", "--no-pending")
    assert _steps(out) and all(l.split()[3] == "Switch" for l in _steps(out))
    out = ok("trace", "collatz", "6", "--op", "while/cond/*")
    assert _steps(out) and all(l.split()[2].startswith("while/cond/") for l in _steps(out))
    out = ok("trace", "collatz", "6", "--frame", "root/while:2")
    assert _steps(out) and all(" root/while:2 " in l for l in _steps(out))
    out = ok("trace", "collatz", "6", "--frame", "root")
    assert _steps(out) and all(l.split()[4] == "root" for l in _steps(out))
    everything = _steps(ok("trace", "collatz", "6"))
    in_loop = _steps(ok("trace", "collatz", "6", "--frame", "while"))
    assert len(in_loop) + len(_steps(out)) == len(everything)


def test_trace_json_is_one_event_per_line():
    out = ok("trace", "fibonacci", "2", "--format", "json")
    events = [json.loads(line) for line in out.splitlines()]
    assert events[-1] == {"event": "result", "value": "1"}
    assert events[-2]["event"] == "summary" and events[-2]["steps"] == sum(e["event"] == "run" for e in events)
    switches = [e for e in events if e.get("type") == "Switch" and e["node"] == "while/Switch"]
    assert [e["switch"] for e in switches] == [{"live": 1, "pred": True}, {"live": 0, "pred": False}]
    assert any(e.get("merge") == {"input": 1, "from": "while/NextIteration"} for e in events)
    assert {"step", "node", "type", "frame", "iteration", "dead"} <= set(switches[0])
    limited = [json.loads(l) for l in ok("trace", "fibonacci", "2", "-f", "json", "--limit", "3").splitlines()]
    assert sum(e["event"] == "run" for e in limited) == 3
    bad = invoke("trace", "fibonacci", "2", "-f", "xml")
    assert bad.exit_code == 2 and "use text, json or html" in bad.output


def test_trace_streams_each_step_as_the_next_begins():
    from cli.trace_format import TraceWriter

    written = []
    w = TraceWriter(written.append)
    run = {"event": "run", "step": 1, "node": "a", "type": "Const", "frame": "root", "iteration": 0, "dead": False}
    w.append(run)
    w.append({"event": "pending", "node": "b", "source": "a", "frame": "root", "iteration": 0, "pending": (1, 0)})
    assert written == []  # the step may still get events
    w.append(dict(run, step=2, node="b"))
    assert len(written) == 2 and written[0].startswith("step 1") and len(w.step) == 1  # only the open step is kept
    w.close()
    assert written[-1].startswith("2 steps")


def test_broken_pipe_exits_quietly():
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", "from cli.main import app; app()", "trace", "collatz", "27"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline().startswith(b"trace of collatz(27)")
    p.stdout.close()  # as `| head -1` does
    err = p.stderr.read()
    assert p.wait(timeout=60) == 0 and err == b""


# -- grad ---------------------------------------------------------------------------------------

@pytest.mark.skipif(not hasattr(autograph, "value_and_grad"), reason="autograph.value_and_grad not written yet")
def test_grad(tmp_path):
    f = tmp_path / "cube.py"
    f.write_text("import autograph\n\n@autograph.function\ndef cube(x):\n    return x * x * x\n")
    out = ok("grad", f, "2.0", "--wrt", "x")
    assert "value: 8.0" in out and "d/dx: 12.0" in out


def _grad_output(*args) -> dict:
    """`autograph grad ...` output as {"value": float, "d/dx": float, ...}."""
    out = ok("grad", *args)
    return {k: float(v) for k, v in (line.split(": ") for line in out.strip().splitlines())}


@pytest.mark.parametrize("x, n", [(1.5, 5), (-0.5, 3), (2.0, 1)])
def test_grad_through_a_while_loop_is_the_closed_form(x, n):
    out = _grad_output("power_loop", f"x={x}", f"n={n}", "--wrt", "x")  # x=-0.5: not an option
    assert set(out) == {"value", "d/dx"}  # n stays an integer loop count
    assert out["value"] == pytest.approx(x ** n, rel=1e-12)
    assert out["d/dx"] == pytest.approx(n * x ** (n - 1), rel=1e-12)
    f = find_sample("power_loop").python_function
    h = 1e-6
    assert out["d/dx"] == pytest.approx((f(x + h, n) - f(x - h, n)) / (2 * h), rel=1e-6)


def test_grad_of_newton_sqrt_matches_finite_difference():
    out = _grad_output("newton_sqrt", "2.0", "--wrt", "x")
    assert out["value"] == pytest.approx(np.sqrt(2.0), rel=1e-12)
    f = find_sample("newton_sqrt").python_function
    h = 1e-5
    assert out["d/dx"] == pytest.approx((f(2.0 + h) - f(2.0 - h)) / (2 * h), rel=1e-6)
    assert out["d/dx"] == pytest.approx(1 / (2 * np.sqrt(2.0)), rel=1e-6)


def test_grad_with_respect_to_two_arguments(tmp_path):
    f = tmp_path / "area.py"
    f.write_text("import autograph\n\n@autograph.function\ndef area(w, h):\n    return w * h * h\n")
    out = _grad_output(f"{f}:area", "3", "2", "--wrt", "w", "--wrt", "h")
    assert out == {"value": 12.0, "d/dw": 4.0, "d/dh": 12.0}


def test_grad_reports_unknown_wrt_or_missing_feature(tmp_path):
    r = invoke("grad", "newton_sqrt", "2.0", "--wrt", "y")
    assert r.exit_code == 2
    assert "value_and_grad is not available" in r.output or "has no parameter 'y'" in r.output


# -- demo ---------------------------------------------------------------------------------------

def test_demo_table():
    r = invoke("demo", "--plain", "--only", "collatz", "--only", "print_loop")
    assert r.exit_code == 0, r.output
    assert "sample" in r.output and " ok " in r.output and "graph ms" in r.output
    rows = [l for l in r.output.splitlines() if l.startswith(("collatz ", "print_loop "))]
    assert len(rows) == 5 and all(" yes " in l for l in rows)
    assert "5 of 5 runs agree" in r.output
    assert "step 0 value" not in r.output  # the samples' prints are captured, not shown


def _demo_lines(*extra):
    r = invoke("demo", "--only", "fibonacci", "--only", "newton_sqrt", "--only", "rnn_adam",
               "--only", "binary_search", *extra)
    assert r.exit_code == 0, r.output
    return r.output.splitlines()


@pytest.mark.parametrize("extra", [(), ("--plain",)])
def test_demo_fits_80_columns_wrapping_long_values_not_cutting_them(extra):
    lines = _demo_lines(*extra)  # CliRunner's output is not a terminal: 80 columns, as in a pipe
    assert max(len(l) for l in lines) <= 80, "\n".join(lines)
    lines = [l.strip() for l in lines]
    fib50 = [l for l in lines if l.split()[:2] == ["fibonacci", "50"]]
    assert len(fib50) == 1 and "12586269025" in fib50[0]  # one line, the number whole
    assert any("1.41421" in l for l in lines if l.startswith("newton_sqrt"))
    assert not any("…" in l or "..." in l for l in lines)  # a long value wraps onto more lines, whole
    # one row per example (a wrapped row's further lines start blank)
    assert len([l for l in lines if l.split() and l.split()[0] in
                ("fibonacci", "newton_sqrt", "rnn_adam", "binary_search")]) == 3 + 3 + 1 + 4


def test_demo_numbers_are_right_aligned():
    lines = _demo_lines("--plain")
    header = next(l for l in lines if l.startswith("sample"))
    end = header.index("graph ms") + len("graph ms")
    rows = [l for l in lines if l.startswith("fibonacci")]
    assert all(l[end - 1] != " " and l[end] == " " for l in rows)  # numbers end under the header's end


def test_demo_unknown_sample():
    r = invoke("demo", "--only", "nope")
    assert r.exit_code == 2 and "no sample named nope" in r.output


# -- manners ----------------------------------------------------------------------------------

def test_help_version_and_samples():
    assert "Usage: " in ok("-h") and "Commands" in ok("-h") and " run [OPTIONS]" in ok("run", "-h")
    assert ok("--version").startswith("autograph 0.")
    lines = ok("samples", "--plain").splitlines()
    assert max(len(l) for l in lines) <= 80
    assert any(l.startswith("collatz ") and "27" in l for l in lines)
    assert any(l.startswith("fibonacci ") for l in lines)


def test_negative_numbers_are_arguments_and_unknown_options_are_refused():
    out = _grad_output("power_loop", "-0.5", "3", "--wrt", "x")
    assert out == {"value": -0.125, "d/dx": pytest.approx(0.75)}
    assert ok("run", "gcd", "-12", "8").strip() in ("4", "-4")
    r = invoke("run", "collatz", "--bogus", "3")
    assert r.exit_code != 0 and "no such option: --bogus" in r.output


@pytest.mark.parametrize("args, message", [
    (["run", "collatz", "1.5", "--dtype", "int32"], "argument n: 1.5 is not a whole number; int32 would truncate"),
    (["run", "collatz", "99999999999", "--dtype", "int32"], "argument n: 99999999999 does not fit in int32"),
    (["run", "bubble_sort", "[1.5, 2]", "--dtype", "int64"], "argument values: 1.5 is not a whole number"),
    (["run", "newton_sqrt", "1e39", "--dtype", "float32"], "argument x: 1e+39 does not fit in float32"),
])
def test_a_value_the_dtype_cannot_hold_is_refused(args, message):
    r = invoke(*args)
    assert r.exit_code == 2 and message in r.output
    assert ok("run", "collatz", "6.0", "--dtype", "int64").strip() == "8"  # a whole float is fine


def test_no_color_is_honoured(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    coloured = ok("convert", COLLATZ)
    assert "\x1b[" in coloured
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[3" not in ok("convert", COLLATZ)  # no colour codes (bold and the like may stay)


# -- loading helpers ----------------------------------------------------------------------------

def test_split_spec_and_parse_args():
    assert split_spec("a/b.py:f") == ("a/b.py", "f")
    assert split_spec("a/b.py") == ("a/b.py", None)

    def f(x, y=2, flag=True):
        return x

    vals = parse_args(f, ["[1, 2]", "3.5", "False"])
    assert isinstance(vals[0], np.ndarray) and vals[0].dtype == np.int64
    assert vals[1] == 3.5 and isinstance(vals[1], np.float64) and isinstance(vals[2], np.bool_)
    vals = parse_args(f, ["1", "flag=True"], dtype=["x=float32"], static=["flag"])
    assert vals[0].dtype == np.float32 and vals[1] == 2 and vals[2] is True
    with pytest.raises(CliError, match="given twice"):
        parse_args(f, ["1", "x=2"])
    with pytest.raises(CliError, match="after a NAME=VALUE"):
        parse_args(f, ["y=1", "2"])


def test_the_readme_demo_agrees_on_every_row():
    """`autograph demo` is the README's first command: every sample, every example."""
    from samples import SAMPLES

    total = sum(len(s.examples) for s in SAMPLES)
    r = invoke("demo", "--plain")
    assert r.exit_code == 0, r.output
    assert f"{total} of {total} runs agree" in r.output


def test_bench_quick_prints_each_figure():
    r = invoke("bench", "--quick")
    assert r.exit_code == 0, r.output
    assert "us/iteration" in r.output and "x plain Python" in r.output
    assert "steady-state call" in r.output
    assert "forward + gradient" in r.output and "ratio" in r.output
    bad = invoke("bench", "nope")
    assert bad.exit_code == 2 and "no benchmark named nope" in bad.output
