"""`Graph.copy()`: the copy the optimizer, the partitioner and the Session rewrite (issue 26).

A copy lists the same ops and computes the same values as its graph (checked against plain
Python, gradients against central finite differences), and is independent of it: rewriting
the copy leaves the graph as it was, for v1 control flow, Control Flow v2 functions (each
function its own copy, calling and called by the copy's ops) and side tables.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import autograph
import graphcore as gc
from executor import Session
from graphcore import passes
from graphcore.side_tables import SideTable
from samples import available_samples
from tests.graphcore.gradcheck import numeric_grad

STEPS = 6


def python_loop(x: float) -> float:
    """What the graphs below compute, in plain Python."""
    i, v = 0, 1.0
    while i < STEPS:
        v = v * x if v > 2.0 else v + x
        i += 1
    return v


def python_slope(x: float) -> float:
    """d python_loop / dx by central finite differences."""
    return float(numeric_grad(lambda a: python_loop(float(a)), np.float64(x)))


def loop_graph(v2: bool):
    with gc.control_flow_v2(v2):
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, shape=[], name="x")
            y = gc.while_loop(lambda i, v: i < STEPS,
                              lambda i, v: (i + 1, gc.cond(v > 2.0, lambda: v * x, lambda: v + x)), [0, 1.0])[1]
            dx = gc.gradients(y, [x])[0]
    return g, x, y, dx


def run(g, x, y, dx, value):
    """y and dy/dx of graph g at x = value, the tensors looked up by name (g may be a copy)."""
    names = [t.name for t in (x, y, dx)]
    tx, ty, tdx = (g.get_tensor_by_name(n) for n in names)
    out = Session(g).run([ty, tdx], feed_dict={tx: np.float64(value)})
    return [float(v) for v in out]


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_a_copy_lists_and_computes_what_its_graph_does(v2):
    g, x, y, dx = loop_graph(v2)
    c = g.copy()
    assert c is not g and str(c) == str(g) and len(c) == len(g)
    c.validate()
    for value in (0.7, 1.3):
        y_g, dx_g = run(g, x, y, dx, value)
        y_c, dx_c = run(c, x, y, dx, value)
        assert y_c == y_g and dx_c == dx_g
        assert y_c == pytest.approx(python_loop(value), rel=1e-12)
        assert dx_c == pytest.approx(python_slope(value), rel=1e-6)


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_a_copy_shares_no_op_tensor_context_or_function_with_its_graph(v2):
    g, *_ = loop_graph(v2)
    c = g.copy()
    originals = {id(o) for o in g.get_operations()} | {id(t) for o in g.get_operations() for t in o.outputs}
    for fn in [c, *c.library.values()]:
        for op in fn.get_operations():
            assert op.graph is fn and id(op) not in originals
            assert all(t.graph is fn for t in op.inputs) and all(r.graph is fn for t in op.outputs for r in t.readers)
            ctx = op.ctx
            while ctx is not None:
                assert ctx.graph is fn
                ctx = ctx.outer
    assert sorted(c.while_contexts) == sorted(g.while_contexts)
    for name, ctx in c.while_contexts.items():
        old = g.while_contexts[name]
        assert ctx is not old and [e.name for e in ctx.enters] == [e.name for e in old.enters]
        assert all(e.graph is c for e in ctx.enters + ctx.exits + ctx.loop_merges + ctx.switches)
    assert list(c.library) == list(g.library)  # the same names, in the same order
    for name, fn in c.library.items():
        old = g.library[name]
        assert fn is not old and str(fn) == str(old) and fn.outer_graph.within(c)
        assert [t.name for t in fn.inputs] == [t.name for t in old.inputs]
        assert all(t.graph is fn for t in fn.inputs + fn.outputs)
        assert all(o.graph is fn.outer_graph and i.graph is fn for o, i in fn.captures)
        if old.caller is not None:
            assert fn.caller is fn.outer_graph.get_operation_by_name(old.caller.name)
    if v2:
        assert g.library and all(op.attrs.get("body") is None or op.attrs["body"] in c.library
                                 for op in c.get_operations())


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_rewriting_a_copy_leaves_its_graph_as_it_was(v2):
    g, x, y, dx = loop_graph(v2)
    listing, before = str(g), run(g, x, y, dx, 1.3)
    c = g.copy()
    report = passes.optimize(c, [c.get_tensor_by_name(y.name), c.get_tensor_by_name(dx.name)],
                             passes=passes.DEFAULT_PASSES + ("lower_functional",) * v2)
    assert report.fetches and str(c) != listing
    with c.as_default():
        gc.identity(c.get_tensor_by_name(x.name), name="only_in_the_copy")
    assert str(g) == listing and "only_in_the_copy" not in {op.name for op in g.get_operations()}
    if v2:  # the copy's functions were inlined and dropped; the graph keeps its own
        assert not c.library and g.library
    assert run(g, x, y, dx, 1.3) == before


def test_side_tables_are_copied_onto_the_copy_or_left_out():
    mapped, foreign, plain = SideTable("test: tensors"), SideTable("test: objects"), SideTable("test: numbers")
    g = gc.Graph()
    with g.as_default():
        a = gc.placeholder(gc.float64, shape=[], name="a")
        b = gc.square(a, name="b")
    mapped[g] = {"b": b, "both": [a, b]}
    foreign[g] = {"b": b, "who": object()}  # an object the copy cannot map: the table is left out
    plain[g] = {(1, "x"): 2.5}
    c = g.copy()
    assert mapped[c]["b"] is c.get_tensor_by_name("b:0")
    assert mapped[c]["both"] == [c.get_tensor_by_name("a:0"), c.get_tensor_by_name("b:0")]
    assert foreign.get(c) is None and plain[c] == {(1, "x"): 2.5} and plain[c] is not plain[g]
    assert mapped[g]["b"] is b and foreign[g]["b"] is b  # the graph's own tables as they were


def test_a_variable_reads_the_copy_handle_and_runs_in_the_copy():
    g = gc.Graph()
    with g.as_default():
        w = gc.Variable(np.float64(3.0), name="w")
        x = gc.placeholder(gc.float64, shape=[], name="x")
        y = gc.multiply(w.value(), x, name="y")
        init = gc.global_variables_initializer()
    c = g.copy()
    assert w.handle(c).graph is c and w.handle(c).name == w.handle(g).name  # no second handle made
    assert len(c) == len(g) and c.variables == g.variables
    s = Session(c)
    s.run(c.get_operation_by_name(init.name))
    assert s.run(c.get_tensor_by_name(y.name), feed_dict={c.get_tensor_by_name(x.name): 2.0}) == 6.0


def test_a_function_graph_alone_is_refused():
    g, *_ = loop_graph(True)
    fn = next(iter(g.library.values()))
    with pytest.raises(gc.GraphError, match=r"cannot copy the function graph .* alone: .* copy that graph"):
        fn.copy()


def test_session_and_partitioner_leave_the_users_graph_as_traced():
    g, x, y, dx = loop_graph(False)
    listing = str(g)
    expected = [python_loop(1.1), python_slope(1.1)]
    for session in (Session(g, optimize=True), Session(g, devices=["cpu:0", "cpu:1"])):
        out = session.run([y, dx], feed_dict={x: np.float64(1.1)})
        assert out[0] == pytest.approx(expected[0], rel=1e-12) and out[1] == pytest.approx(expected[1], rel=1e-6)
    assert str(g) == listing


def test_every_samples_trace_copies_to_the_same_listing_and_graph_file():
    """The copy keeps what the graph file records too (contexts, loop lists, devices, source
    lines), for every sample's trace: it writes the same file."""
    for sample in available_samples():
        with contextlib.redirect_stdout(io.StringIO()):
            g = autograph.function(sample.python_function, optimize=False).get_concrete_function(
                *sample.examples[0]).graph
        c = g.copy()
        c.validate()
        assert str(c) == str(g), sample.name
        if not any(op.type == "PyFunction" for op in g.get_operations()):  # (a graph file refuses those)
            assert c.to_json() == g.to_json(), sample.name
