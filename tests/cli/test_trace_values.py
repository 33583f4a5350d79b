"""`autograph trace` shows what each step computed, and `--format html` draws the run as a
timeline; the page is loaded in headless Chromium (where it is installed) to check what the
browser actually drew."""
import json
import re
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from cli.main import app
from samples import find_sample

runner = CliRunner()
FIB = find_sample("fibonacci")


def trace_events(*args) -> list[dict]:
    r = runner.invoke(app, ["trace", *map(str, args), "--format", "json"])
    assert r.exit_code == 0, r.output
    return [json.loads(line) for line in r.output.splitlines()]


def python_fibonacci_states(n: int) -> list[tuple[int, int, int]]:
    """(a, b, i) at each test of the plain loop, as the sample's Python computes them."""
    a, b, i = 1, 1, 1
    states = [(a, b, i)]
    while i < n:
        a, b, i = b, a + b, i + 1
        states.append((a, b, i))
    return states


@pytest.mark.parametrize("n", [2, 7])
def test_each_step_shows_the_value_it_sent(n):
    events = trace_events("fibonacci", n)
    runs = [e for e in events if e["event"] == "run"]
    states = python_fibonacci_states(n)
    feed = next(e for e in runs if e["type"] == "Feed")
    assert feed["value"] == str(n)
    loop_conds = [e["value"] for e in runs if e["type"] == "LoopCond"]
    assert loop_conds == ["True"] * (len(states) - 1) + ["False"]  # one test per state, the last fails
    # the first loop variable (a) as each iteration's Merge received it, then as it left the loop
    merges = [e for e in runs if e["node"] == "while/Merge"]
    assert [int(e["value"]) for e in merges] == [a for a, _, _ in states]
    exits = [e for e in runs if e["type"] == "Exit" and not e["dead"]]
    assert str(states[-1][0]) in [e["value"] for e in exits]
    assert events[-1] == {"event": "result", "value": str(states[-1][0])}
    # a dead token carries no value; no raw output events leak into the JSON
    assert all("value" not in e for e in runs if e["dead"])
    assert not any(e["event"] == "output" for e in events)


def test_switch_shows_its_predicate_and_the_value_it_passed():
    runs = [e for e in trace_events("fibonacci", 3) if e["event"] == "run" and e["node"] == "while/Switch"]
    assert [(e["switch"]["pred"], e["value"]) for e in runs] == [(True, "1"), (True, "1"), (False, "2")]


def test_text_trace_prints_values_after_an_arrow():
    r = runner.invoke(app, ["trace", "fibonacci", "4", "--no-pending", "--op", "while/Add"])
    assert r.exit_code == 0, r.output
    steps = [line for line in r.output.splitlines() if line.startswith("step")]
    added = [line.rsplit("→ ", 1)[1] for line in steps if " live " in line]
    assert added == [str(b) for _, b, _ in python_fibonacci_states(4)[1:]]  # a + b, once per body run
    assert all("→" not in line for line in steps if line.endswith(" dead"))  # the exit test's dead body


def _page(tmp_path, *args) -> tuple[str, str]:
    path = tmp_path / "trace.html"
    r = runner.invoke(app, ["trace", *map(str, args), "--format", "html", "-o", str(path)])
    assert r.exit_code == 0, r.output
    return r.output, path.read_text(encoding="utf-8")


def test_html_page_holds_every_step_with_its_value(tmp_path):
    said, page = _page(tmp_path, "fibonacci", 5)
    steps = [json.loads(line.rstrip(",")) for line in page.splitlines() if line.startswith('{"step"')]
    text_steps = [e for e in trace_events("fibonacci", 5) if e["event"] == "run"]
    assert f"(html, {len(text_steps)} steps)" in said and len(steps) == len(text_steps)
    assert [s["node"] for s in steps] == [e["node"] for e in text_steps]
    assert "→ 5" in next(s["note"] for s in steps if s["type"] == "Exit" and not s["dead"])
    assert page.startswith("<!DOCTYPE html>") and "http" not in page.replace("http://www.w3.org/2000/svg", "")


def test_html_values_cannot_close_the_script(tmp_path):
    from cli.trace_timeline import TimelineWriter

    parts = []
    w = TimelineWriter(parts.append)
    w.begin("t")
    w.step({"step": 1, "node": "a", "type": "Const", "frame": "root", "iteration": 0, "dead": False},
           "→ '</script><b>'")
    w.end("1 step")
    page = "".join(parts)
    assert page.count("</script>") == 1 and "<\\/script>" in page


CHROMIUM = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium to load the page (apt-get install chromium)")
def test_headless_chromium_draws_one_lane_per_frame_and_one_mark_per_step(tmp_path):
    _, _ = _page(tmp_path, "fibonacci", 5)
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          (tmp_path / "trace.html").as_uri()], capture_output=True, text=True, timeout=120).stdout
    runs = [e for e in trace_events("fibonacci", 5) if e["event"] == "run"]
    assert f'data-drawn="{len(runs)}"' in dom  # the script ran to its end
    marks = re.findall(r'<rect [^>]*class="step( dead)?" data-step="(\d+)" data-node="([^"]+)"', dom)
    assert [int(step) for _, step, _ in marks] == [e["step"] for e in runs]
    assert [bool(dead) for dead, _, _ in marks] == [e["dead"] for e in runs]
    lanes = re.findall(r'class="lane" data-frame="([^"]+)"', dom)
    assert lanes == ["root"] + [f"root/while:{k}" for k in range(5)]
    hovers = re.findall(r"<title>(step \d+[^<]*)</title>", dom)
    assert len(hovers) == len(runs) and any("pred=False" in h for h in hovers)
    assert "result: 5" in dom
