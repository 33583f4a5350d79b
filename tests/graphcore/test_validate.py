"""Graph.validate(): one test per invariant; each message names the op and the fix."""
import numpy as np
import pytest

import graphcore as gc
from graphcore.control_flow import WhileContext
from graphcore.errors import GraphError
from graphcore.validate import find_problems

F32 = [(gc.float32, [])]


def _problem(g) -> str:
    with pytest.raises(GraphError) as e:
        g.validate()
    return str(e.value)


def _xy():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float32, [], name="x")
        y = gc.placeholder(gc.float32, [], name="y")
    return g, x, y


def test_graphs_built_by_the_builders_are_valid():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        r = gc.cond(x < 2.0, lambda: x + 1.0, lambda: x * x)
        n = gc.while_loop(lambda i, v: i < 10, lambda i, v: (i + 1, gc.cond(v > 3.0, lambda: v, lambda: v * r)),
                          [0, 1.0])
        gc.while_loop(lambda i: i < 3, lambda i: gc.while_loop(lambda j: j < i, lambda j: j + 1, [i]) + 1, [0])
        with g.control_dependencies([n[1]]):
            gc.print(x)
    g.validate()
    assert find_problems(g) == []


def test_inputs_from_another_graph():
    g, x, y = _xy()
    other, ox, _ = _xy()
    with g.as_default():
        op = g.create_op("Add", [x, y])
    op.inputs = (x, ox)
    msg = _problem(g)
    assert "op 'Add' (Add)" in msg and "input 1 (x:0) belongs to another graph" in msg


def test_duplicate_names():
    g, x, y = _xy()
    y.op.name = "x"
    msg = _problem(g)
    assert "the name 'x' is used by two ops" in msg


def test_input_arity():
    g, x, y = _xy()
    with g.as_default():
        g.create_op("Add", [x], output_specs=F32, name="half_add")
    msg = _problem(g)
    assert "op 'half_add' (Add)" in msg and "1 input(s)" in msg and "do not fit the Add op" in msg


def test_dtype_disagrees_with_shape_rule():
    g, x, y = _xy()
    with g.as_default():
        g.create_op("Add", [x, y], output_specs=[(gc.int64, [])], name="bad")
    msg = _problem(g)
    assert "op 'bad' (Add)" in msg and "output 0 is recorded as int64 but its inputs make it float32" in msg


def test_shape_disagrees_with_shape_rule():
    g, x, y = _xy()
    with g.as_default():
        g.create_op("Add", [x, y], output_specs=[(gc.float32, [3])], name="bad")
    assert "recorded with shape [3] but its inputs give []" in _problem(g)


def test_merge_inputs_have_one_dtype():
    g, x, _ = _xy()
    with g.as_default():
        i = gc.placeholder(gc.int64, [], name="i")
        g.create_op("Merge", [x, i], output_specs=[(gc.float32, []), (gc.int32, [])], name="m")
    msg = _problem(g)
    assert "op 'm' (Merge)" in msg and "different dtypes (float32, int64)" in msg and "cast" in msg


def test_switch_predicate_is_bool():
    g, x, y = _xy()
    with g.as_default():
        g.create_op("Switch", [x, y], output_specs=F32 * 2, name="sw")
    msg = _problem(g)
    assert "op 'sw' (Switch)" in msg and "predicate y:0 is float32[], not a scalar bool" in msg


def test_enter_needs_a_frame_name():
    g, x, _ = _xy()
    with g.as_default():
        g.create_op("Enter", [x], {"frame_name": ""}, output_specs=F32, name="e")
    msg = _problem(g)
    assert "op 'e' (Enter)" in msg and "has no frame_name" in msg


@pytest.mark.parametrize("attrs, message", [
    ({"frame_name": np.array(["a", "b"])}, "has no frame_name (a non-empty str; got array(['a', 'b']"),
    ({"frame_name": "loop", "is_constant": np.array([True])}, "is_constant must be True or False"),
    ({"frame_name": "loop", "parallel_iterations": "10"}, "parallel_iterations must be an int >= 1"),
])
def test_enter_attrs_of_the_wrong_type_are_problems_not_crashes(attrs, message):
    # the frame checks read these attrs, so they run only once every op is well formed
    g, x, _ = _xy()
    with g.as_default():
        g.create_op("Enter", [x], attrs, output_specs=F32, name="e")
    msg = _problem(g)
    assert "op 'e' (Enter)" in msg and message in msg


def test_next_iteration_must_feed_a_merge_of_its_frame():
    g, x, _ = _xy()
    with g.as_default():
        e = g.create_op("Enter", [x], {"frame_name": "loop"}, name="e")
        g.create_op("NextIteration", [e.outputs[0]], name="nx")
    msg = _problem(g)
    assert "op 'nx' (NextIteration)" in msg and "feeds no Merge" in msg


def test_next_iteration_outside_any_frame():
    g, x, _ = _xy()
    with g.as_default():
        nx = g.create_op("NextIteration", [x], name="nx")
        g.create_op("Merge", [x, nx.outputs[0]], name="m")
    assert "is not inside any while frame" in _problem(g)


def test_exit_in_root_frame():
    g, x, _ = _xy()
    with g.as_default():
        g.create_op("Exit", [x], name="ex")
    assert "op 'ex' (Exit)" in _problem(g) and "there is no loop to exit" in _problem(g)


def test_cycles_only_through_next_iteration():
    g, x, _ = _xy()
    with g.as_default():
        a = gc.identity(x, name="a")
        b = gc.identity(a, name="b")
    g.update_input(a.op, 0, b)
    msg = _problem(g)
    assert "is on a cycle (" in msg and ("a -> b" in msg or "b -> a" in msg)
    assert "NextIteration into a Merge" in msg


def test_op_in_while_frame_must_be_reached_from_an_enter():
    g, x, y = _xy()
    ctx = WhileContext(g, None, "loop", 10)
    with g.as_default(), g.in_control_flow_context(ctx):
        g.create_op("Add", [x, y], name="stray", capture=False)
    msg = _problem(g)
    assert "op 'stray' (Add)" in msg and "built in while frame 'loop' but no Enter of that loop leads to it" in msg


def test_op_reading_from_two_frames():
    g, x, y = _xy()
    with g.as_default():
        e = g.create_op("Enter", [x], {"frame_name": "loop"}, name="e")
        g.create_op("Add", [e.outputs[0], y], name="mixed")
    msg = _problem(g)
    assert "op 'mixed' (Add)" in msg and "reads from more than one frame" in msg and "Enter" in msg


def test_enters_of_one_frame_come_from_one_parent():
    g, x, y = _xy()
    with g.as_default():
        e = g.create_op("Enter", [x], {"frame_name": "outer"}, name="e")
        g.create_op("Enter", [e.outputs[0]], {"frame_name": "inner"}, name="e2")
        g.create_op("Enter", [y], {"frame_name": "inner"}, name="e3")
    assert "op 'e3' (Enter)" in _problem(g) and "all Enters of one loop must come from the same frame" in _problem(g)


def test_messages_name_the_source_line():
    g, x, y = _xy()
    with g.as_default():
        g.create_op("Add", [x, y], output_specs=[(gc.int64, [])], name="bad")
    assert "op 'bad' (Add) at test_validate.py:" in _problem(g)


def test_all_problems_are_collected():
    g, x, y = _xy()
    with g.as_default():
        g.create_op("Add", [x, y], output_specs=[(gc.int64, [])], name="bad1")
        g.create_op("Mul", [x, y], output_specs=[(gc.int64, [])], name="bad2")
    assert len(find_problems(g)) == 2
    with pytest.raises(GraphError) as e:
        g.validate()
    assert len(e.value.problems) == 2
    assert str(e.value).splitlines()[0].startswith("op 'bad1'")


def test_constant_array_graph_is_valid():
    g = gc.Graph()
    with g.as_default():
        gc.reduce_sum(gc.constant(np.ones((2, 3))) * 2.0)
    g.validate()


def test_an_exit_must_read_the_false_output_of_a_switch():
    g = gc.Graph()
    with g.as_default():
        r = gc.while_loop(lambda i: i < 3, lambda i: i + 1, [0])
        merge = next(op for op in g.operations if op.type == "Merge")
        g.update_input(r.op, 0, merge.outputs[0])
    with pytest.raises(gc.GraphError, match="not the false output of a Switch"):
        g.validate()
