"""DOT and JSON export: DOT parses with Graphviz; JSON round-trips to an equal listing and
equal results; malformed files give GraphFileError naming the first problem."""
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import graphcore as gc
from executor import Session
from graphcore.errors import GraphFileError


def _graph():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = gc.placeholder(gc.float64, [3], name="y")
        r = gc.cond(x < 2.0, lambda: x + 1.0, lambda: x * x)
        i, v = gc.while_loop(lambda i, v: i < 10, lambda i, v: (i + 1, v * x), [0, 1.0], maximum_iterations=7)
        z = y[1:] + np.arange(2.0)
        p = gc.print("i =", i)
        with g.control_dependencies([z, p]):
            w = gc.identity(y, name="w")
        nested = gc.while_loop(lambda k: k < 3,
                               lambda k: gc.while_loop(lambda j: j < k + 2, lambda j: j + 1, [k]) + 1, [0])
        m = gc.constant(np.array([[np.nan, np.inf], [-np.inf, 0.5]], np.float32)) * 1.0
    return g, ["x:0", "y:0"], [t.name for t in (r, i, v, z, w, nested, m)]


def _run(g, fetches, feeds=None):
    feeds = feeds or {"x:0": 1.5, "y:0": np.arange(3.0)}
    return Session(g, num_threads=1).run(fetches, {g.get_tensor_by_name(k): v for k, v in feeds.items()})


def test_json_round_trip_gives_equal_listing_and_results(capsys):
    g, _, fetches = _graph()
    text = g.to_json()
    g2 = gc.Graph.from_json(text)
    assert str(g2) == str(g)
    assert g2.to_json() == text
    a, b = _run(g, fetches), _run(g2, fetches)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert capsys.readouterr().out == "i = 7\ni = 7\n"
    g2.validate()


def test_json_keeps_attr_types():
    g, _, _ = _graph()
    g2 = gc.Graph.from_json(g.to_json())
    for op, op2 in zip(g.get_operations(), g2.get_operations()):
        assert op.attrs.keys() == op2.attrs.keys()
        for k in op.attrs:
            a, b = op.attrs[k], op2.attrs[k]
            assert type(a) is type(b), (op.name, k)
            if isinstance(a, np.ndarray):
                assert a.dtype == b.dtype and a.shape == b.shape
                np.testing.assert_array_equal(a, b)
            else:
                assert a == b or (a != a and b != b), (op.name, k)
        assert op.device == op2.device and op.source == op2.source
        assert [c.name for c in op.control_inputs] == [c.name for c in op2.control_inputs]
    ss = next(op for op in g2.get_operations() if op.type == "StridedSlice")
    assert ss.attrs["spec"] == (("slice", ("c", 1), None, None),)
    pr = next(op for op in g2.get_operations() if op.type == "Print")
    assert pr.attrs["template"] == ("i =", " ", None)


def test_json_restores_while_contexts():
    g, _, _ = _graph()
    g2 = gc.Graph.from_json(g.to_json())
    assert sorted(g2.while_contexts) == sorted(g.while_contexts)
    for name, c in g.while_contexts.items():
        c2 = g2.while_contexts[name]
        assert [o.name for o in c2.enters] == sorted((o.name for o in c.enters), key=[o.name for o in c2.enters].index)
        assert [o.name for o in c2.exits] == [o.name for o in c.exits]
        assert [o.name for o in c2.next_iterations] == [o.name for o in c.next_iterations]
        assert c2.loop_cond.name == c.loop_cond.name
        assert c2.parallel_iterations == c.parallel_iterations


@pytest.mark.needs_graphviz
def test_dot_has_clusters_shapes_and_dashed_control_edges():
    g, _, _ = _graph()
    dot = g.to_dot()
    assert dot.startswith("digraph G {")
    assert re.search(r'label="while loop \(test_export.py:\d+\)"', dot)
    assert re.search(r'label="if \(test_export.py:\d+\): true branch"', dot)
    assert re.search(r'label="if \(test_export.py:\d+\): false branch"', dot)
    assert "shape=diamond" in dot and "shape=invtriangle" in dot and "shape=house" in dot
    assert "shape=invhouse" in dot and "shape=doubleoctagon" in dot
    assert re.search(r'Add -> w \[.*style=dashed', dot)
    assert re.search(r'"while/NextIteration" -> "while/Merge" \[.*style=bold', dot)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed (apt-get install graphviz)")
@pytest.mark.needs_graphviz
def test_dot_parses_with_graphviz():
    g, _, _ = _graph()
    res = subprocess.run(["dot", "-Tsvg"], input=g.to_dot(), capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    assert "<svg" in res.stdout


# -- malformed files ------------------------------------------------------------------

def _doc():
    g, _, _ = _graph()
    return json.loads(g.to_json())


def _load_error(doc_or_text) -> str:
    text = doc_or_text if isinstance(doc_or_text, str) else json.dumps(doc_or_text)
    with pytest.raises(GraphFileError) as e:
        gc.Graph.from_json(text)
    return str(e.value)


def test_not_json():
    assert _load_error('{"format": ') .startswith("line 1 column 12: not valid JSON")


def test_wrong_format_and_version():
    d = _doc()
    d["format"] = "something-else"
    assert _load_error(d).startswith("format: expected 'autograph-graph'")
    d = _doc()
    d["version"] = 99
    assert _load_error(d).startswith("version: version 99 is not supported")
    assert _load_error("[]") == "<top>: expected an object, got a list"


def test_unknown_input_tensor():
    d = _doc()
    d["ops"][3]["inputs"][1] = "foo:0"
    assert _load_error(d) == "ops[3].inputs[1]: no tensor named 'foo:0'"
    d = _doc()
    d["ops"][3]["inputs"][0] = "x:5"
    assert _load_error(d) == "ops[3].inputs[0]: no tensor named 'x:5'"


def test_unknown_op_type_and_missing_keys():
    d = _doc()
    d["ops"][2]["type"] = "Frobnicate"
    assert _load_error(d) == "ops[2].type: no op type 'Frobnicate' is registered"
    d = _doc()
    del d["ops"][4]["name"]
    assert _load_error(d) == "ops[4]: missing key 'name'"
    d = _doc()
    d["ops"][4]["inputs"] = "x:0"
    assert _load_error(d) == "ops[4].inputs: expected a list, got a string"


def test_duplicate_name():
    d = _doc()
    d["ops"][1]["name"] = "x"
    assert _load_error(d) == "ops[1].name: the name 'x' is already used by ops[0]; op names must be unique"


def test_bad_attr_values():
    d = _doc()
    d["ops"][0]["attrs"]["dtype"] = {"dtype": "complex7"}
    assert _load_error(d).startswith("ops[0].attrs.dtype.dtype: unknown dtype 'complex7'")
    d = _doc()
    const = next(i for i, o in enumerate(d["ops"]) if o["type"] == "Const" and "ndarray" in o["attrs"]["value"]
                 and o["attrs"]["value"]["ndarray"]["shape"] == [2])
    d["ops"][const]["attrs"]["value"]["ndarray"]["data"].append(1.0)
    assert _load_error(d).startswith(f"ops[{const}].attrs.value.ndarray.data: has 3 values but the shape [2] needs 2")
    d = _doc()
    d["ops"][0]["attrs"]["dtype"] = {"__reduce__": "os.system"}
    assert _load_error(d) == "ops[0].attrs.dtype: unknown attribute tag '__reduce__'"


def test_dtype_that_disagrees_with_the_op_is_reported_by_validation():
    d = _doc()
    add = next(i for i, o in enumerate(d["ops"]) if o["type"] == "Add")
    d["ops"][add]["outputs"][0]["dtype"] = "int32"
    msg = _load_error(d)
    assert msg.startswith("the graph in the file is not valid: op ") and "recorded as int32" in msg


def test_control_input_must_exist_and_come_first():
    d = _doc()
    d["ops"][0]["control_inputs"] = ["nope"]
    assert _load_error(d) == "ops[0].control_inputs[0]: no op named 'nope'"
    d = _doc()
    d["ops"][0]["control_inputs"] = ["y"]
    assert _load_error(d).startswith("ops[0].control_inputs[0]: 'y' is defined later in the file (ops[1])")


def test_bad_context_reference():
    d = _doc()
    d["ops"][0]["context"] = 42
    assert _load_error(d).startswith("ops[0].context: 42 is not the index of a context")
    d = _doc()
    d["contexts"][0]["kind"] = "loop"
    assert _load_error(d) == "contexts[0].kind: expected 'while' or 'cond', got 'loop'"


def test_without_the_graphviz_package_pictures_say_so_and_the_rest_works(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # as if it were not installed
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, shape=[], name="x")
        y = x * 2.0
    with pytest.raises(gc.GraphError, match="pip install graphviz"):
        g.to_dot()
    bundle = g._repr_mimebundle_()
    assert "image/svg+xml" not in bundle and "Mul" in bundle["text/plain"]
    assert Session(g).run(y, feed_dict={x: 1.5}) == 3.0


def test_json_of_a_rewritten_graph_that_lists_an_op_before_its_inputs():
    """A rewrite may put an op before what it reads (inserting_before an earlier op); the
    file then lists ops in an order the loader can build (found by copying random
    optimized programs to partition them across devices)."""
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        first = gc.constant(1.0, name="one")
        y = x * 3.0
    with g.inserting_before(first.op):
        z = gc.add(y, y, name="late")  # reads y, which stands after it
    names = [op.name for op in g.get_operations()]
    assert names.index("late") < names.index(y.op.name)
    loaded = gc.Graph.from_json(g.to_json())
    assert Session(loaded).run(loaded.get_tensor_by_name(z.name), {loaded.get_tensor_by_name("x:0"): 2.0}) == 12.0
