"""graphcore.frames: the one rule that places every op in a frame (validate and the
executor's plan use it), checked against the frames the executor's plan assigns."""
import pytest

import graphcore as gc
from executor.plan import ExecutionPlan
from graphcore.frames import assign_frames, find_cycle, topological_order
from samples import available_samples


def _nested_loops_graph():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")

        def outer_body(i, v):
            _, w = gc.while_loop(lambda j, w: j < i, lambda j, w: (j + 1, w + v), [0, v], name="inner",
                                 parallel_iterations=3)
            return i + 1, gc.cond(w > 10.0, lambda: w * 0.5, lambda: w)

        _, y = gc.while_loop(lambda i, v: i < 4, outer_body, [0, x], name="outer")
        dx, = gc.gradients(y, [x])
    return g, x, [y, dx]


def test_frames_of_nested_loops_and_their_gradient():
    g, x, fetches = _nested_loops_graph()
    frames = assign_frames(g.get_operations())
    assert frames.problems == () and frames.cycle is None
    assert frames.parent["outer"] == "" and frames.parent["outer/inner"] == "outer"
    assert frames.parallel_iterations["outer/inner"] == 3
    assert list(frames.parent).index("outer") < list(frames.parent).index("outer/inner")  # outer frames first
    for op in g.get_operations():
        if op.type == "Enter":
            assert frames.output_frame_of[id(op)] == op.attrs["frame_name"]
            assert frames.frame_of[id(op)] == frames.parent[op.attrs["frame_name"]]
        elif op.type == "Exit":
            assert frames.output_frame_of[id(op)] == frames.parent[frames.frame_of[id(op)]]
        else:
            assert frames.output_frame_of[id(op)] == frames.frame_of[id(op)]


def _plan_frames(g, fetches, feeds):
    plan = ExecutionPlan(g, fetches, [], feeds)
    return {id(it.op): ("" if it.frame is plan.root else it.frame.name) for it in plan.items if it.op is not None}, plan


@pytest.mark.parametrize("sample", available_samples(), ids=lambda s: s.name)
def test_the_rule_places_every_op_of_every_sample_where_the_executor_does(sample):
    cf = sample.fn.get_concrete_function(*sample.examples[0])
    g = cf.graph
    fetches = [t for t in cf._fetches if isinstance(t, gc.Tensor)]
    placed, plan = _plan_frames(g, fetches, cf.inputs)
    needed = [op for op in g.get_operations() if id(op) in placed]
    frames = assign_frames(needed, fed=cf.inputs)
    assert frames.problems == ()
    assert {k: frames.frame_of[k] for k in placed} == placed
    for name, info in plan.frames.items():
        if name:
            assert frames.parent[name] == ("" if info.parent is plan.root else info.parent.name)
            assert frames.parallel_iterations[name] == info.parallel_iterations


def test_fed_tensors_come_from_the_root_frame():
    g, x, fetches = _nested_loops_graph()
    # feed a tensor computed inside the outer loop: its consumer then reads from two frames
    inner_value = next(op for op in g.get_operations() if op.type == "Mul" and op.frame_name == "outer").outputs[0]
    consumer = inner_value.consumers()[0]
    frames = assign_frames(g.get_operations(), fed=[inner_value])
    assert any(f"op {consumer.name!r}" in p and "fed " in p and "more than one frame" in p for p in frames.problems)


def test_a_cycle_off_the_back_edges_is_reported_alone():
    g = gc.Graph()
    with g.as_default():
        a = gc.placeholder(gc.float64, [], name="a")
        b = gc.identity(a, name="b")
        c = gc.identity(b, name="c")
    g.update_input(b.op, 0, c)
    assert [op.name for op in find_cycle(g.get_operations())] == ["c", "b", "c"]  # b reads c, c reads b
    frames = assign_frames(g.get_operations())
    assert frames.cycle and len(frames.problems) == 1 and "can never run" in frames.problems[0]
    order = [op.name for op in topological_order(g.get_operations())]
    assert sorted(order) == ["a", "b", "c"]


def test_a_back_edge_that_leaves_its_loop_and_a_stray_next_iteration():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float32, [], name="x")
        nx = g.create_op("NextIteration", [x], name="nx")
        g.create_op("Merge", [x, nx.outputs[0]], name="m")
    problems = assign_frames(g.get_operations()).problems
    assert any("'nx'" in p and "not inside any while frame" in p for p in problems)
    with g.as_default():
        e = g.create_op("Enter", [x], {"frame_name": "loop"}, name="e")
        nx2 = g.create_op("NextIteration", [e.outputs[0]], name="nx2")
        g.create_op("Merge", [x, nx2.outputs[0]], name="m2")
    problems = assign_frames(g.get_operations()).problems
    assert any("'nx2'" in p and "feeds m2 in the root frame but runs in frame 'loop'" in p for p in problems)
