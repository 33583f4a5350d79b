"""What a new user meets (issue 28): samples by name, names, exit codes, big pictures, the
trace beside the graph, graph files with signatures, fuzz, warnings, bench, REPL source."""
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()


def invoke(*args, **kwargs):
    return runner.invoke(app, [str(a) for a in args], **kwargs)


# -- 1. samples by name, on their own example -------------------------------------------------

def test_a_sample_named_alone_runs_on_its_first_example():
    r = invoke("run", "collatz")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == "111"
    assert "collatz on 27: the sample's first example" in r.stderr


def test_a_sample_whose_example_cannot_be_typed_runs_on_it():
    r = invoke("run", "matrix_power", "--check")
    assert r.exit_code == 0, r.output
    assert "agrees" in r.stdout


def test_graph_trace_and_grad_take_a_sample_alone():
    assert invoke("graph", "fibonacci").exit_code == 0
    r = invoke("trace", "count_to_ten", "--limit", "3")
    assert r.exit_code == 0 and "result: 10" in r.stdout, r.output
    r = invoke("grad", "power_loop", "--wrt", "x")
    assert r.exit_code == 0 and "value: 7.59375" in r.stdout and "d/dx: 25.3125" in r.stdout, r.output


def test_samples_shows_arguments_one_can_type(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    r = invoke("samples", "--plain")
    assert r.exit_code == 0, r.output
    lines = {line.split()[0]: line for line in r.stdout.splitlines() if line.strip()}
    assert "1071 462" in lines["gcd"]
    assert "'[5.0, 1.0, 4.0, 2.0, 8.0, 0.5]'" in lines["bubble_sort"]
    assert "(runs on its example)" in lines["rnn_adam"]
    assert "<int64" not in r.stdout and "<float64" not in r.stdout  # nothing nobody can type
    # what is shown is what runs: the typed words give the sample's example
    r2 = invoke("run", "bubble_sort", "[5.0, 1.0, 4.0, 2.0, 8.0, 0.5]")
    assert r2.exit_code == 0 and r2.stdout.strip() == invoke("run", "bubble_sort").stdout.strip()


# -- 2. names -----------------------------------------------------------------------------------

def test_a_misspelt_sample_suggests_the_close_one():
    r = invoke("run", "colatz", "27")
    assert r.exit_code == 2
    assert "no such sample or file: colatz; did you mean collatz?" in r.stderr


def test_an_unknown_parameter_lists_the_parameters():
    r = invoke("run", "collatz", "m=27")
    assert r.exit_code == 2
    assert "collatz has no parameter 'm'; its parameters are n" in r.stderr


# -- 3. exit codes and option checks -----------------------------------------------------------

def test_errors_of_the_users_file_exit_1(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(x):\n    return x +\n")
    r = invoke("run", f"{bad}:f", "1")
    assert r.exit_code == 1 and "syntax error" in r.stderr, r.output
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_module_here\n")
    r = invoke("run", f"{broken}:f", "1")
    assert r.exit_code == 1 and "ModuleNotFoundError" in r.stderr, r.output


@pytest.mark.parametrize("args, message", [
    (["run", "collatz", "27", "--engine", "ray"], "--engine ray runs the devices of --devices N"),
    (["run", "collatz", "27", "--engine", "local"], "give --devices too"),
    (["run", "collatz", "27", "--engine", "spark", "--devices", "2"], "--engine spark: use one of local, ray"),
    (["fuzz", "--n", "-3"], "Invalid value for '--n'"),
])
def test_option_mistakes_are_usage_errors(args, message):
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    assert message in r.output


# -- 5. the trace and the graph show the same graph ------------------------------------------------

def test_graph_and_trace_show_the_same_graph_and_say_it_is_optimized():
    g = invoke("graph", "collatz", "27", "--plain")
    t = invoke("trace", "collatz", "27", "--limit", "1")
    assert g.exit_code == 0 and t.exit_code == 0, (g.output, t.output)
    ops = int(re.search(r"(\d+) ops, optimized", g.stderr).group(1))
    assert ops == sum(line.startswith("%") for line in g.stdout.splitlines())
    assert f"collatz(27): {ops} ops, optimized" in t.stdout.splitlines()[0]
    raw = invoke("trace", "collatz", "27", "--limit", "1", "--no-optimize")
    traced = int(re.search(r"(\d+) as traced", g.stderr).group(1))
    assert f"{traced} ops, as traced (not optimized)" in raw.stdout.splitlines()[0]
    assert traced > ops


def test_every_live_switch_step_shows_its_predicate():
    r = invoke("trace", "collatz", "27", "--op", "Switch", "--no-pending", "--no-legend")
    steps = [line for line in r.stdout.splitlines() if line.startswith("step")]
    assert steps and all("pred=" in s for s in steps if " live " in s)


def test_trace_says_when_a_filter_matches_no_step():
    r = invoke("trace", "collatz", "27", "--frame", "nosuch")
    assert r.exit_code == 0
    assert "no step matched --frame nosuch; the run's frames were root, root/while" in r.stderr


def test_trace_html_without_output_writes_trace_html(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("trace", "fibonacci", "2", "-f", "html")
    assert r.exit_code == 0 and "wrote trace.html" in r.stdout, r.output
    assert (tmp_path / "trace.html").read_text().lstrip().lower().startswith("<!doctype html")
    assert "<html" not in r.stdout


# -- 6. graph files record the signature, and run -------------------------------------------------

def test_a_graph_file_records_its_signature_and_runs(tmp_path):
    import json  # noqa: PLC0415

    import graphcore as gc  # noqa: PLC0415

    path = tmp_path / "fib.json"
    assert invoke("graph", "fibonacci", "10", "-f", "json", "-o", path).exit_code == 0
    sig = json.loads(path.read_text())["signature"]
    g = gc.Graph.from_json(path.read_text())
    assert sig["function"] == "fibonacci" and [i["name"] for i in sig["inputs"]] == ["n"]
    assert g.get_tensor_by_name(sig["inputs"][0]["tensor"]).op.type == "Placeholder"
    assert g.get_tensor_by_name(sig["outputs"][0]).op.type == "Exit"  # which of the Exits is the result
    r = invoke("run", path, "50")
    assert r.exit_code == 0 and r.stdout.strip() == "12586269025", r.output
    r = invoke("run", path, "m=3")
    assert r.exit_code == 2 and "fibonacci has no input 'm'; its inputs are n" in r.stderr


def test_a_graph_files_signature_is_checked_as_data(tmp_path):
    import json  # noqa: PLC0415

    path = tmp_path / "fib.json"
    invoke("graph", "fibonacci", "10", "-f", "json", "-o", path)
    doc = json.loads(path.read_text())
    doc["signature"]["inputs"][0]["tensor"] = "while/Exit:0"
    path.write_text(json.dumps(doc))
    r = invoke("run", path, "3")
    assert r.exit_code == 1 and "signature.inputs[0].tensor: 'while/Exit:0' is not a Placeholder" in r.stderr
    doc["signature"]["inputs"][0] = {"name": "__import__('os').system('echo hi')", "tensor": "n:0"}
    path.write_text(json.dumps(doc))
    r = invoke("run", path, "3")
    assert r.exit_code == 1 and "is not a new input name" in r.stderr


# -- 4. big graphs: the default picture fits a screen and says what it collapsed --------------------

def _png_size(path):
    import struct  # noqa: PLC0415

    return struct.unpack(">II", path.read_bytes()[16:24])


@pytest.mark.skipif(__import__("shutil").which("dot") is None, reason="Graphviz `dot` is not installed")
@pytest.mark.needs_graphviz
def test_the_default_picture_of_a_big_graph_fits_a_screen(tmp_path):
    path = tmp_path / "r.png"
    r = invoke("graph", "rnn_adam", "-o", path)
    assert r.exit_code == 0, r.output
    width, height = _png_size(path)
    assert width <= 1920 and height <= 1080, (width, height)
    dot = invoke("graph", "rnn_adam", "-f", "dot").stdout
    assert re.search(r"3 loops \(outermost\) drawn as one node each, \d+ ops inside; --depth 1 opens the next "
                     r"level, --depth all draws every op", dot)
    full = invoke("graph", "fibonacci", "10", "-f", "dot").stdout  # a small graph: every op, no caption
    assert "drawn as one node" not in full and "box3d" not in full
    assert "drawn as one node" not in invoke("graph", "rnn_adam", "--depth", "all", "-f", "dot").stdout
    r = invoke("graph", "rnn_adam", "--depth", "deep", "-f", "dot")
    assert r.exit_code == 2 and "--depth deep: give a number" in r.stderr


def test_a_notebook_picture_collapses_what_does_not_fit():
    from graphcore.dot import SCREEN_NODES, drawn_nodes, fit_depth  # noqa: PLC0415
    from samples import find_sample  # noqa: PLC0415

    def graph(name):  # a fresh trace (the sample's own @function may have run, and optimized its graph)
        import autograph  # noqa: PLC0415

        s = find_sample(name)
        return autograph.function(s.python_function).get_concrete_function(*s.examples[0]).graph

    g = graph("bubble_sort")  # nested loops: the inner ones collapse, the outer one stays open
    d = fit_depth(g)
    assert d is not None and d > 0 and drawn_nodes(g, d) <= SCREEN_NODES < drawn_nodes(g, d + 1)
    g = graph("rnn_adam")  # too big even so: every outermost loop one node (and scaled down)
    assert fit_depth(g) == 0 and drawn_nodes(g, 0) < drawn_nodes(g, None) / 4
    assert fit_depth(graph("fibonacci")) is None


# -- 7. fuzz keeps earlier failures; narrow terminals wrap or stack, never cut ----------------------

def test_fuzz_keeps_the_failure_files_of_earlier_runs(tmp_path):
    earlier = tmp_path / "some-class-abc123" / "seed_7.py"
    earlier.parent.mkdir()
    earlier.write_text("# Differential-test program, seed 7.\n")
    r = invoke("fuzz", "--n", "1", "--seed", "0", "--out", tmp_path, "--jobs", "1", "--no-shrink", "--plain")
    assert r.exit_code in (0, 1) and "1 values programs" in r.stdout, r.output
    assert earlier.exists()


def test_a_narrow_terminal_stacks_the_demo_rows_whole(monkeypatch):
    r = invoke("demo", "--only", "fibonacci", "--plain", env={"COLUMNS": "40"})
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert max(len(line) for line in lines) <= 40
    assert "  result:   12586269025" in lines and "  py ms:" in r.stdout  # every column, every value whole


def test_samples_wraps_descriptions_in_80_columns():
    r = invoke("samples", "--plain", env={"COLUMNS": "80"})
    assert r.exit_code == 0
    text = " ".join(r.stdout.split())
    assert "x ** n by a while loop (and, with `autograph grad`, its derivative)" in text
    assert "..." not in r.stdout and "…" not in r.stdout


# -- 9. bench, --check on errors, convert's line numbers, arrays ----------------------------------

def test_check_says_whether_plain_python_raised_the_same_error(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text("def f(x):\n    if x > 0:\n        raise ValueError('x must not be positive')\n    return x\n\n\n"
                 "def g(x):\n    if x > 0:\n        raise ValueError('x must not be positive')\n"
                 "    return x\n")
    r = invoke("run", f"{f}:f", "3", "--check")
    assert r.exit_code == 1
    assert "plain Python raised the same error: ValueError: x must not be positive  (agrees)" in r.stdout
    assert "error: ValueError: x must not be positive" in r.stderr


def test_run_prints_arrays_with_numpys_repr():
    r = invoke("run", "bubble_sort", "[5.0, 1.0, 4.0, 2.0, 8.0, 0.5]")
    assert r.exit_code == 0
    assert r.stdout.strip() == repr(np.array([0.5, 1.0, 2.0, 4.0, 5.0, 8.0]))


def test_convert_numbers_the_original_as_its_file_and_line_values_agree():
    from samples import find_sample  # noqa: PLC0415

    r = invoke("convert", "collatz", "--width", "100")
    assert r.exit_code == 0
    source = open(find_sample("collatz").path).read().splitlines()
    numbered = {int(m.group(1)): m.group(2).rstrip() for m in re.finditer(r"^ +(\d+) (.*)$", r.stdout, re.M)}
    assert numbered and all(source[n - 1].rstrip() == text for n, text in numbered.items())
    while_line = next(n for n, text in numbered.items() if text.strip().startswith("while n != 1"))
    assert f"line={while_line})" in r.stdout


def test_bench_progress_is_one_line_per_benchmark(monkeypatch):
    import cli.main as main  # noqa: PLC0415

    monkeypatch.setattr(main, "_run_bench", lambda name, quick: print(f"figures of {name}") or {})
    r = invoke("bench", "--quick")
    assert r.exit_code == 0, r.output
    assert [line for line in r.stderr.splitlines() if line.startswith("[")] == [
        "[1/4] bench executor", "[2/4] bench autograph", "[3/4] bench gradients", "[4/4] bench workloads",
        next(line for line in r.stderr.splitlines() if line.startswith("[4/4] done"))]


# -- 10. source typed where Python keeps it (IPython), and where it does not ------------------------

CELL = '''import numpy as np
import autograph

@autograph.function
def total(n):
    s = 0
    while n > 0:
        s += n
        n -= 1
    if s > 100:
        raise ValueError("too big")
    return s
'''


def test_a_function_typed_in_ipython_converts_and_errors_name_the_cell():
    import linecache  # noqa: PLC0415

    import autograph  # noqa: PLC0415

    # what IPython does with each cell (IPython.core.compilerop.CachingCompiler.cache): its
    # lines go into linecache under the cell's name, with no mtime so they are kept
    name = "<ipython-input-3-0123456789ab>"
    linecache.cache[name] = (len(CELL), None, [line + "\n" for line in CELL.splitlines()], name)
    cell: dict = {"__name__": "__main__"}
    exec(compile(CELL, name, "exec"), cell)  # noqa: S102 (the test's own cell, as IPython runs it)
    total = cell["total"]
    assert total(np.int64(10)) == 55
    assert "ag__.while_stmt" in autograph.to_code(total)
    with pytest.raises(ValueError) as raised:
        total(np.int64(20))
    assert f"{name}:11" in " ".join(getattr(raised.value, "__notes__", []) or [str(raised.value)])


def test_ipython_itself_when_installed():
    ipython = pytest.importorskip("IPython")
    shell = ipython.core.interactiveshell.InteractiveShell.instance()
    result = shell.run_cell(CELL + "\nresult = total(np.int64(10))\n")
    assert result.success, result.error_in_exec
    assert shell.user_ns["result"] == 55


def test_python_c_says_where_source_is_kept():
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    code = "import numpy as np, autograph\n@autograph.function\ndef f(n):\n    return n + 1\nf(np.int64(1))\n"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    assert "SourceNotFoundError" in p.stderr and "notebook cells and IPython" in p.stderr
    assert "the plain `python` REPL and `python -c` keep none" in p.stderr


# -- 8. warnings point at the user's line ---------------------------------------------------------

USER_PROGRAM = '''import numpy as np
import autograph


@autograph.function
def square_often(x, n):
    i = 0
    while i < n:
        x = x * x
        i += 1
    return x


@autograph.function
def plus(x, k):
    return x + k


print(square_often(np.float64(3.0), np.int64(80)))
for k in range(6):
    plus(np.float64(1.0), k)
'''


def test_warnings_name_the_users_file_and_line(tmp_path):
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    path = tmp_path / "mine.py"
    path.write_text(USER_PROGRAM)
    p = subprocess.run([sys.executable, "-W", "default", str(path)], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "inf"
    warned = [line for line in p.stderr.splitlines() if "Warning:" in line]
    assert f"{path}:9: RuntimeWarning: overflow encountered in scalar multiply" in warned  # x = x * x
    assert any(line.startswith(f"{path}:21: RetracingWarning: plus was traced") for line in warned)
    assert len(warned) == 2 and "executor/" not in p.stderr and "autograph/function.py" not in p.stderr
    p = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", str(path)], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert p.returncode == 1 and "created at mine.py:9: RuntimeWarning: overflow" in p.stderr
