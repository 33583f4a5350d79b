"""Pictures of graphs (graphcore/dot.py), checked in the SVG that Graphviz's `dot` renders:
loop variables named, clusters titled with the user's line, results marked, the effects
token hidden, a legend, --depth collapsing, tooltips."""
import re
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from typer.testing import CliRunner

import graphcore as gc
from cli.main import app
from samples import find_sample

pytestmark = [pytest.mark.needs_graphviz,
              pytest.mark.skipif(shutil.which("dot") is None,
                                 reason="Graphviz `dot` is not installed (apt-get install graphviz)")]

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"


class Picture:
    """The nodes, edges and clusters of a rendered SVG, by their titles."""

    def __init__(self, svg: bytes | str):
        root = ET.fromstring(svg)
        self.root = root
        self.nodes, self.edges, self.clusters = {}, set(), {}
        for g in root.iter(f"{SVG}g"):
            title = g.find(f"{SVG}title")
            if title is None:
                continue
            texts = [t.text or "" for t in g.iter(f"{SVG}text")]
            link = next(g.iter(f"{SVG}a"), None)
            info = {"text": texts, "tooltip": link.get(f"{XLINK}title") if link is not None else None}
            kind = g.get("class")
            if kind == "node":
                self.nodes[title.text] = info
            elif kind == "edge":
                tail, head = title.text.split("->")
                self.edges.add((tail, head))
            elif kind == "cluster":
                self.clusters[title.text] = info

    def label(self, node: str) -> str:
        return " / ".join(self.nodes[node]["text"])

    @property
    def size_pt(self) -> tuple[float, float]:
        return tuple(float(self.root.get(k).rstrip("pt")) for k in ("width", "height"))


def picture(sample: str, *args, **options) -> Picture:
    s = find_sample(sample)
    cf = s.fn.get_concrete_function(*args)
    return Picture(gc.dot.build_digraph(cf.graph, fetches=cf.outputs, **options).pipe(format="svg"))


@pytest.fixture(scope="module")
def fib():
    return picture("fibonacci", np.int64(10))


def test_loop_ops_carry_the_python_variable_names(fib):
    for var in "abi":
        for kind in ("Merge", "Switch", "NextIteration", "Exit", "Enter"):
            assert any(t[0] == f"{kind} {var}" for t in (n["text"] for n in fib.nodes.values())), (kind, var)
    assert fib.label("while/Merge").startswith("Merge a")
    assert fib.label("while/Enter_3").startswith("Enter n")  # the invariant n, named after the placeholder


def test_clusters_are_titled_with_the_user_line(fib):
    line = next(i for i, text in enumerate(open(find_sample("fibonacci").path), 1) if "while i < n" in text)
    titles = [c["text"][0] for c in fib.clusters.values() if c["text"]]
    assert f"while loop (fibonacci.py:{line})" in titles


def test_fetched_output_is_marked(fib):
    assert fib.label("result_0") == "result"
    assert ("while/Exit", "result_0") in fib.edges  # a is the result


def test_switch_outputs_are_labelled_t_and_f():
    p = picture("collatz", np.int64(27))
    svg_text = ET.tostring(p.root, encoding="unicode")
    assert re.search(r"<ns0:text[^>]*fill=\"#2a9d8f\"[^>]*>T</ns0:text>", svg_text)
    assert re.search(r"<ns0:text[^>]*fill=\"#e76f51\"[^>]*>F</ns0:text>", svg_text)


def test_the_legend_shows_the_primitives(fib):
    assert "cluster_legend" in fib.clusters
    legend = {n: fib.nodes[n] for n in fib.nodes if n.startswith("legend_")}
    assert set(legend) == {f"legend_{k}" for k in ("Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond")}
    assert "first live input" in legend["legend_Merge"]["tooltip"]
    s = find_sample("fibonacci")
    g = s.fn.get_concrete_function(np.int64(3)).graph
    bare = Picture(gc.dot.build_digraph(g, legend=False).pipe(format="svg"))
    assert "cluster_legend" not in bare.clusters


def test_the_effects_token_is_hidden_unless_asked():
    hidden = picture("print_loop", np.int64(3), np.int64(2))
    shown = picture("print_loop", np.int64(3), np.int64(2), show_effects=True)
    assert "effects" not in hidden.nodes and "effects" in shown.nodes
    assert len(shown.nodes) - len(hidden.nodes) >= 6  # Const, Enter, Merge, Switch, Identity, NextIteration, Exit
    assert "while/Print" in hidden.nodes  # the print itself stays


def test_depth_collapses_nested_loops_into_one_node_each():
    full = picture("nested_search", *find_sample("nested_search").examples[0])
    top = picture("nested_search", *find_sample("nested_search").examples[0], depth=0)
    one = picture("nested_search", *find_sample("nested_search").examples[0], depth=1)
    collapsed = [n for n in top.nodes if n.startswith("collapsed_")]
    assert set(top.clusters) == {"cluster_legend"}  # no cluster left: each is one node
    labels = sorted(top.label(n) for n in collapsed)
    assert re.fullmatch(r"while loop \(nested_search.py:\d+\) / \d+ ops", labels[-1]), labels
    assert all(re.fullmatch(r"(while loop|if) \(nested_search.py:\d+\)(: \w+ branch)? / \d+ ops", l) for l in labels)
    assert len(top.nodes) < len(full.nodes) / 3
    assert top.size_pt[0] * top.size_pt[1] < full.size_pt[0] * full.size_pt[1] / 4
    # depth 1: the outer loop is drawn, what is nested in it is one node per loop or branch
    drawn = [c["text"][0] for k, c in one.clusters.items() if k != "cluster_legend"]
    assert any(t.startswith("while loop (nested_search.py:") for t in drawn)
    assert len(drawn) == len(collapsed)  # what depth 0 collapsed, depth 1 draws as clusters
    assert any(n.startswith("collapsed_") for n in one.nodes)
    assert len(top.nodes) < len(one.nodes) < len(full.nodes)


def test_tooltips_give_attrs_types_and_source_line(fib):
    tip = fib.nodes["while/Enter"]["tooltip"]
    assert tip.startswith("while/Enter = Enter")
    assert "frame_name = 'while'" in tip and "output 0: int64[]" in tip
    assert re.search(r"line fibonacci.py:\d+", tip) and "in while loop (fibonacci.py:" in tip


def test_to_dot_takes_the_same_options():
    s = find_sample("print_loop")
    cf = s.fn.get_concrete_function(np.int64(3), np.int64(2))
    text = cf.graph.to_dot(fetches=cf.outputs, depth=0, legend=False)
    assert "result_0" in text and "legend" not in text and "box3d" in text


def test_cli_picture_options(tmp_path):
    runner = CliRunner()
    path = tmp_path / "ns.svg"
    r = runner.invoke(app, ["graph", "nested_search", "[[1, 2], [3, 4]]", "3", "--depth", "0", "--no-legend",
                            "-o", str(path)])
    assert r.exit_code == 0, r.output
    p = Picture(path.read_bytes())
    assert "cluster_legend" not in p.clusters and any(n.startswith("collapsed_") for n in p.nodes)
    r = runner.invoke(app, ["graph", "print_loop", "3", "2", "-f", "svg", "--effects"])
    assert r.exit_code == 0 and "effects" in Picture(r.stdout).nodes  # (stderr says which graph)
