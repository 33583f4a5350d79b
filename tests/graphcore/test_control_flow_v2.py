"""Control Flow v2, building: function graphs (captures nested to any depth, the library,
listing, validate, graph files and their load-time checks) and the If / While ops that
gc.cond / gc.while_loop build under gc.control_flow_v2()."""
import json

import numpy as np
import pytest

import graphcore as gc
from graphcore.function_graph import FuncGraph
from graphcore.library import reachable_functions

PRIMITIVES = {"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"}


def _nested_graph():
    """x captured three functions deep: while body -> cond branch -> while body."""
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        x = gc.placeholder(gc.float64, shape=[], name="x")
        y = gc.cond(x > 0, lambda: x * 2.0, lambda: -x)

        def body(i, v):
            def inner(j, w):
                return j + 1, w + x
            grown = gc.cond(v > 100.0, lambda: v, lambda: gc.while_loop(lambda j, w: j < 2, inner, [0, v])[1])
            return i + 1, grown

        _, v = gc.while_loop(lambda i, v: i < 10, body, [0, 1.0])
    return g, x, y, v


def test_v2_builds_if_and_while_with_functions_and_no_primitives():
    g, x, y, v = _nested_graph()
    assert set(g.op_types()) & PRIMITIVES == set()
    assert y.op.type == "If" and v.op.type == "While"
    assert sorted(g.library) == ["cond_false", "cond_false_1", "cond_true", "cond_true_1", "while_body",
                                 "while_body_1", "while_cond", "while_cond_1"]
    for fn in g.library.values():
        assert set(fn.op_types()) & PRIMITIVES == set()
    # x reaches the innermost body as an explicit input of every function in between
    outer_body = g.get_function(v.op.attrs["body"])
    nested_if = next(op for op in outer_body.get_operations() if op.type == "If")
    else_fn = g.get_function(nested_if.attrs["else_branch"])
    inner_while = next(op for op in else_fn.get_operations() if op.type == "While")
    inner_body = g.get_function(inner_while.attrs["body"])
    assert [outer.graph for outer, _ in inner_body.captures] == [else_fn]
    assert [outer.graph for outer, _ in else_fn.captures] == [outer_body, outer_body]
    assert [outer for outer, _ in outer_body.captures] == [x]
    assert v.op.inputs[-1] is x  # the top-level While passes x in
    g.validate()


def test_v1_stays_the_default_and_v2_can_be_switched_off_inside(monkeypatch):
    monkeypatch.delenv("AUTOGRAPH_CONTROL_FLOW", raising=False)
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, shape=[], name="x")
        gc.cond(x > 0, lambda: x, lambda: -x)
        with gc.control_flow_v2(), gc.control_flow_v2(False):
            gc.while_loop(lambda i: i < 3, lambda i: i + 1, [0])
    assert "If" not in g.op_types() and "While" not in g.op_types() and not g.library
    monkeypatch.setenv("AUTOGRAPH_CONTROL_FLOW", "v2")
    g2 = gc.Graph()
    with g2.as_default():
        x = gc.placeholder(gc.float64, shape=[], name="x")
        gc.cond(x > 0, lambda: x, lambda: -x)
    assert "If" in g2.op_types()


def test_case_switch_case_and_map_fn_scan_foldl_build_v2_ops():
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        x = gc.placeholder(gc.float64, shape=[4], name="x")
        k = gc.placeholder(gc.int64, shape=[], name="k")
        gc.switch_case(k, [lambda: x[0], lambda: x[1], lambda: x[2]])
        gc.case([(k < 1, lambda: x[0])], default=lambda: x[3])
        gc.map_fn(lambda e: e * 2.0, x)
        gc.scan(lambda a, e: a + e, x, initializer=np.float64(0.0))
        gc.foldl(lambda a, e: a + e, x, initializer=np.float64(0.0))
    types = g.op_types()
    assert types.count("If") == 2 and types.count("While") == 3
    assert set(types) & PRIMITIVES == set()
    g.validate()


def test_branch_outputs_python_values_and_signatures():
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        x = gc.placeholder(gc.float64, shape=[], name="x")
        a, b, s = gc.cond(x > 0, lambda: (1, x, "same"), lambda: (2, 3.0, "same"))
        assert s == "same" and a.dtype == gc.int64 and b.dtype == gc.float64
        with pytest.raises(gc.StagingError, match="true branch returns"):
            gc.cond(x > 0, lambda: (x, x), lambda: x)
        with pytest.raises(gc.StagingError, match="float64 in the true branch but bool"):
            gc.cond(x > 0, lambda: x, lambda: x > 1.0)
    t, e = g.get_function("cond_true"), g.get_function("cond_false")
    assert len(t.inputs) == len(e.inputs)  # padded to one signature
    assert [p.dtype for p in t.inputs] == [p.dtype for p in e.inputs]


def test_while_relaxes_shapes_and_counts_iterations():
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        z = gc.zeros([0], dtype=gc.float64)
        out = gc.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, gc.concat([a, [1.0]], 0)), [0, z])
    w = out[1].op
    assert w.type == "While" and out[1].shape.as_list() == [None]
    assert w.outputs[0].dtype == gc.int64  # the iteration counter, loop variable 0
    body = g.get_function(w.attrs["body"])
    assert body.inputs[2].shape.as_list() == [None]


def test_effects_in_bodies_keep_program_order():
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        x = gc.placeholder(gc.int64, shape=[], name="x")

        def body(i):
            a = gc.print("a", i)
            with gc.control_dependencies([a]):
                b = gc.print("b", i)
            with gc.control_dependencies([b]):
                return i + 1
        gc.while_loop(lambda i: i < x, body, [np.int64(0)])
    fn = g.get_function("while_body")
    pa, pb = [op for op in fn.get_operations() if op.type == "Print"]
    assert pb.control_inputs == (pa,)


def test_control_inputs_from_outside_are_lifted_onto_the_calling_op():
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        x = gc.placeholder(gc.float64, shape=[], name="x")
        p = gc.print("before")

        def branch():
            with gc.control_dependencies([p]):
                return gc.identity(x)
        y = gc.cond(x > 0, branch, lambda: x)
    assert p in y.op.control_inputs
    for fn in g.library.values():
        for op in fn.get_operations():
            assert all(c.graph is fn for c in op.control_inputs)
    g.validate()


def test_listing_shows_the_library():
    g, *_ = _nested_graph()
    text = str(g)
    assert "If(%Greater, %x, then_branch='cond_true', else_branch='cond_false')" in text
    assert "\nfunction cond_true(%capture: float64[]) -> (%Mul):\n  %Const: float64[] = Const(value=2.0)" in text
    assert text.count("\nfunction ") == 8
    order = [f.name for f in reachable_functions(g)]
    assert order[-1] == "while_body_1" and order.index("while_body") < order.index("cond_false_1")


def test_graph_file_round_trips_the_library():
    g, *_ = _nested_graph()
    text = g.to_json()
    g2 = gc.Graph.from_json(text)
    assert str(g2) == str(g)
    assert g2.to_json() == text
    assert isinstance(g2.get_function("while_body_1"), FuncGraph)


def _tampered(text, change):
    doc = json.loads(text)
    change(doc)
    with pytest.raises(gc.GraphFileError) as e:
        gc.Graph.from_json(json.dumps(doc))
    return str(e.value)


def test_graph_file_checks_function_references_and_bodies():
    g, *_ = _nested_graph()
    text = g.to_json()
    ops = {op["name"]: i for i, op in enumerate(json.loads(text)["ops"])}
    i = ops["cond/If"]
    msg = _tampered(text, lambda d: d["ops"][i]["attrs"].update(then_branch="nope"))
    assert msg.startswith(f"ops[{i}].attrs.then_branch: no function named 'nope'")
    msg = _tampered(text, lambda d: d["ops"][i]["attrs"].update(then_branch=7))
    assert msg.startswith(f"ops[{i}].attrs.then_branch: expected a name")
    msg = _tampered(text, lambda d: d["ops"][i]["attrs"].update(body="cond_true"))
    assert "has no attribute 'body'" in msg
    # a body is checked like top-level ops: a bad attribute, a missing input, an unknown op
    msg = _tampered(text, lambda d: d["functions"][0]["ops"][1]["attrs"].update(value="x"))
    assert msg.startswith("functions[0].ops[1].attrs.value")
    msg = _tampered(text, lambda d: d["functions"][0]["ops"][-1].update(inputs=["nothing:0"]))
    assert msg.startswith("functions[0].ops[") and "no tensor named 'nothing:0'" in msg
    msg = _tampered(text, lambda d: d["functions"][0].update(inputs=["Const:0"]))
    assert "is not a Placeholder's output" in msg
    # signatures must fit the call
    msg = _tampered(text, lambda d: d["functions"][0].update(outputs=[]))
    assert "return 0 and 1 values" in msg
    # a function calling itself is refused (lowering would never end)
    doc = json.loads(text)
    body = next(f for f in doc["functions"] if f["name"] == "while_body_1")
    nested_if = next(op for op in body["ops"] if op["type"] == "If")
    nested_if["attrs"]["else_branch"] = "while_body_1"
    with pytest.raises(gc.GraphFileError):
        gc.Graph.from_json(json.dumps(doc))
    msg = _tampered(text, lambda d: d["functions"].append(dict(d["functions"][0])))
    assert "is already functions[0]" in msg


def test_validate_names_the_function_and_op():
    g, *_ = _nested_graph()
    fn = g.get_function("cond_true")
    fn.outputs = [g.get_operation_by_name("x").outputs[0]]
    with pytest.raises(gc.GraphError, match="in function 'cond_true': output 0 .x:0. is not a tensor of the function"):
        g.validate()


def test_a_tensor_of_an_unrelated_graph_is_refused():
    other = gc.Graph()
    with other.as_default():
        y = gc.constant(1.0)
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        x = gc.placeholder(gc.float64, shape=[], name="x")
        with pytest.raises(gc.GraphError):
            gc.cond(x > 0, lambda: x + y, lambda: x)


def test_pictures_draw_if_and_while_as_one_node_with_their_functions_as_clusters():
    g, x, y, v = _nested_graph()
    n = len(g)
    text = g.to_dot(fetches=[y, v])
    assert text.count("subgraph cluster_fn_") == 8  # every function, nested ones inside their caller's
    assert '"cond/If" -> "fn cond_true/' in text and 'label=then' in text and 'label=body' in text
    assert "Switch" not in text and "Merge" not in text
    assert g.to_dot(depth=0).count("subgraph cluster_fn_") == 0  # the ops alone
    assert g.to_dot(depth=1).count("subgraph cluster_fn_") == 4  # the top-level ops' functions
    assert len(g) == n  # drawing built nothing
    from graphcore.dot import build_digraph
    try:
        svg = build_digraph(g, fetches=[y, v]).pipe(format="svg").decode()
    except Exception as e:  # noqa: BLE001 (Graphviz's `dot` program may be missing)
        pytest.skip(f"cannot render: {e}")
    assert "body of while/While" in svg
