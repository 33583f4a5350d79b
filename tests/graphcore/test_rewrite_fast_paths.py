"""The cheaper ways the rewrite methods of Graph take (graphcore/graph.py) leave the graph
as the plain ways did: erasing a few ops (found by place) or many (one walk), rewiring an
op that reads the replaced tensor twice, and insertion blocks (one context-manager object)
that restore everything they change, even when the block raises."""
import pytest

import graphcore as gc
from graphcore.errors import GraphError


def _chain(n):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        ts = [x]
        for _ in range(n):
            ts.append(gc.tanh(ts[-1]))
    return g, ts


@pytest.mark.parametrize("n", [3, 20])  # a few ops (by place), many (one walk)
def test_erase_ops_keeps_the_order_of_the_rest_and_returns_the_erased_in_graph_order(n):
    g, ts = _chain(n + 2)
    with g.as_default():
        side = gc.sin(ts[1])  # an op after the erased ones that stays
    doomed = [t.op for t in ts[2:]]
    before = [op.name for op in g.get_operations()]
    removed = g.erase_ops(list(reversed(doomed)))  # any order in, graph order out
    assert [op.name for op in removed] == [op.name for op in doomed]
    assert [op.name for op in g.get_operations()] == [m for m in before if m not in {op.name for op in doomed}]
    assert ts[1]._consumers == [side.op]
    g.validate()


@pytest.mark.parametrize("n", [3, 20])
def test_erase_ops_refuses_an_op_used_outside_with_the_same_message(n):
    g, ts = _chain(n + 2)
    with pytest.raises(GraphError, match=r"cannot erase .*still used by Tanh_\d+, which is not erased"):
        g.erase_ops([t.op for t in ts[1:-1]])
    assert len(g) == n + 3  # nothing erased
    with pytest.raises(GraphError, match="erase_ops takes an Operation"):
        g.erase_ops([ts[1]])


def test_replacing_a_tensor_an_op_reads_twice_rewires_both_inputs():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        a, b = gc.tanh(x), gc.sin(x)
        y = a * a
    version = g.version
    assert g.replace_all_uses_with(a, b) == [y.op]
    assert y.op.inputs == (b, b)
    assert a.consumers() == [] and b.consumers() == [y.op, y.op]
    assert g.version == version + 2  # one change per input, as update_input counts them
    g.validate()


def test_an_insertion_block_restores_what_it_changed_even_when_it_raises():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        with gc.name_scope("layer"):
            y = gc.tanh(x)
    dep = x.op
    with g.as_default(), g.control_dependencies([dep]), g.device("cpu:1"):
        state = (g._scope, g._device, g._ctx, g.active_control_dependencies, g._insert_before, g._source)
        with pytest.raises(RuntimeError):
            with g.inserting_before(y.op) as inner:
                assert inner is g and gc.graph.get_default_graph() is g
                c = gc.constant(1.0)
                raise RuntimeError("in the block")
        assert (g._scope, g._device, g._ctx, g.active_control_dependencies, g._insert_before, g._source) == state
    assert gc.graph.get_default_graph() is None
    names = [op.name for op in g.get_operations()]
    assert names.index(c.op.name) == names.index(y.op.name) - 1 and c.op.name.startswith("layer/")
    assert c.op.control_inputs == () and c.op.device == ""


def test_inserting_after_the_last_op_appends_and_checks_its_op_when_entered():
    g, ts = _chain(2)
    with g.inserting_after(ts[-1].op):
        with g.as_default():
            c = gc.constant(2.0)
    assert g.get_operations()[-1] is c.op
    other, _ = _chain(1)
    block = g.inserting_before(other.get_operations()[-1])  # refused on entering, as before
    with pytest.raises(GraphError, match="inserting_before: .* is not an op of this graph"):
        with block:
            pass
