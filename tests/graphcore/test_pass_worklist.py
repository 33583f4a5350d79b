"""The pass manager's worklist (graphcore/passes/state.py): a pass that runs again looks only
at the ops a rewrite touched since its last run began, still finds the rewrites an earlier
pass's change enabled, looks again at what it left for later (`state.later`), and ends with
the same graph as when every run looks at every op (AUTOGRAPH_OPTIMIZE_WORKLIST=0)."""
import linecache
import re

import numpy as np
import pytest

import autograph
import graphcore as gc
from autograph.testing import differential as diff
from autograph.testing.random_programs import generate
from tests import scale
from executor import Session
from graphcore.passes import manager, optimize
from samples import available_samples


@pytest.fixture
def visits(monkeypatch):
    """name -> [for each run of that pass: the ids it was asked to look at (None: all), and
    the ids of the ops it did look at]."""
    seen: dict[str, list] = {}

    def recording(name, run):
        def wrapped(graph, state):
            looked: list[int] = []
            walk, walk_types = state.walk, state.walk_types

            def walk_and_record(ops=None):
                for op in walk(ops):
                    looked.append(id(op))
                    yield op

            def walk_types_and_record(*args, **kwargs):
                for op in walk_types(*args, **kwargs):
                    looked.append(id(op))
                    yield op
            state.walk, state.walk_types = walk_and_record, walk_types_and_record
            try:
                asked = None if state.visit is None else set(map(id, state.visit))
                return run(graph, state)
            finally:
                del state.walk, state.walk_types
                seen.setdefault(name, []).append((asked, looked))
        return wrapped

    for name, run in list(manager.PASSES.items()):
        monkeypatch.setitem(manager.PASSES, name, recording(name, run))
    return seen


def _identity_hides_a_constant():
    """`tanh` chains nobody touches, and `identity(2) * 3 + x`: constant folding cannot fold
    the product in the first round (an Identity is never folded), control-flow simplification
    then removes the Identity, and the second round of folding folds `2 * 3`."""
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        chain = x
        for _ in range(20):
            chain = gc.tanh(chain) + x
        two = gc.identity(gc.constant(2.0))
        y = two * gc.constant(3.0) + x + chain
    untouched = [op for op in g.get_operations() if op.type == "Tanh"]
    return g, [y], untouched


def test_a_later_run_looks_only_at_changed_ops_and_still_folds_what_a_change_enabled(visits):
    g, fetches, untouched = _identity_hides_a_constant()
    report = optimize(g, fetches, skip=["fusion"], validate=True)
    runs = visits["constant_folding"]
    assert len(runs) == 2
    assert runs[0][0] is None and len(runs[0][1]) >= 40  # the first run looks at every op
    asked, looked = runs[1]
    assert asked is not None and len(looked) <= 6  # the second only at the ops control flow touched
    assert not {id(op) for op in untouched} & set(looked)
    assert report.passes[[p.name for p in report.passes].index("constant_folding")].rewritten == 1
    consts = [op.attrs["value"] for op in g.get_operations() if op.type == "Const"]
    assert any(np.ndim(v) == 0 and v == 6.0 for v in consts)
    assert "Identity" not in [op.type for op in g.get_operations()]
    values = Session(g, num_threads=1).run(report.fetches, feed_dict={g.get_tensor_by_name("x:0"): 0.5})
    np.testing.assert_allclose(values[0], 6.5 + _chain(0.5))


def _chain(x):
    c = x
    for _ in range(20):
        c = np.tanh(c) + x
    return c


def test_arithmetic_looks_at_the_readers_of_what_changed(visits):
    """a*b + identity(a)*c: removing the Identity rewires the second product; the sum, its
    reader, must be looked at again to take the common factor out (a pattern two ops deep)."""
    g = gc.Graph()
    with g.as_default():
        a, b, c = (gc.placeholder(gc.int64, [], name=n) for n in "abc")
        y = a * b + gc.identity(a) * c
    report = optimize(g, [y], skip=["fusion"], validate=True)
    asked, looked = visits["arithmetic"][1]
    assert asked is not None and report.passes[[p.name for p in report.passes].index("arithmetic")].rewritten == 1
    out = report.fetches[0].op
    assert out.type == "Mul" and out.inputs[0].op.name == "a" and out.inputs[1].op.type == "Add"
    feeds = {g.get_tensor_by_name(n + ":0"): np.int64(v) for n, v in zip("abc", (3, 4, 5))}
    assert Session(g, num_threads=1).run(report.fetches, feed_dict=feeds)[0] == 27


def test_an_op_left_for_later_is_looked_at_again(monkeypatch, visits):
    """`state.later(op)`: the pass's next run looks at `op` though nothing touched it."""
    g, fetches, untouched = _identity_hides_a_constant()
    run = manager.PASSES["constant_folding"]

    def folding_that_leaves_a_tanh(graph, state):
        if state.visit is None:
            state.later(untouched[5])
        return run(graph, state)
    monkeypatch.setitem(manager.PASSES, "constant_folding", folding_that_leaves_a_tanh)
    optimize(g, fetches, skip=["fusion"], validate=True)
    asked, looked = visits["constant_folding"][1]
    assert id(untouched[5]) in asked and id(untouched[5]) in looked
    assert id(untouched[4]) not in looked


def test_worklists_can_be_switched_off(monkeypatch, visits):
    monkeypatch.setenv("AUTOGRAPH_OPTIMIZE_WORKLIST", "0")
    g, fetches, _ = _identity_hides_a_constant()
    optimize(g, fetches, skip=["fusion"])
    assert all(asked is None for asked, _ in visits["constant_folding"])


def _optimized_listing(fn, args, worklist: bool, monkeypatch) -> str:
    """The optimized graph's listing; a PyFunction's `key` (the number under which each trace
    registers its Python function, counted over the process) is written as `key=K`, so two
    traces of one program compare equal."""
    monkeypatch.setenv("AUTOGRAPH_OPTIMIZE_WORKLIST", "1" if worklist else "0")
    concrete = autograph.function(fn).get_concrete_function(*args)
    concrete.optimize()
    return re.sub(r"\bkey=\d+", "key=K", str(concrete.graph))


def test_samples_optimize_to_the_same_graph_with_and_without_worklists(monkeypatch):
    for sample in available_samples():
        for args in sample.examples:
            assert _optimized_listing(sample.python_function, args, True, monkeypatch) == \
                _optimized_listing(sample.python_function, args, False, monkeypatch), sample.name


def test_random_programs_optimize_to_the_same_graph_with_and_without_worklists(monkeypatch):
    different = []
    for seed in scale.seeds(2000, 60, 600):
        program = generate(seed)
        fn, filename = diff.load_function(program)
        try:
            try:
                full = _optimized_listing(fn, program.args, False, monkeypatch)
            except Exception:  # noqa: BLE001 (a program that fails to trace is not ours to compare)
                continue
            if _optimized_listing(fn, program.args, True, monkeypatch) != full:
                different.append(seed)
        finally:
            linecache.cache.pop(filename, None)
    assert not different


def _cse_runs(visits):
    return [asked for asked, _ in visits["cse"]]


def _tanh_behind_an_identity():
    """tanh(identity(x)) + tanh(x): the two tanh differ until control-flow simplification (after
    CSE) removes the Identity; CSE's second run looks at the first tanh only (it was rewired),
    and must merge the second, untouched one into it (a reader of x with the same keys)."""
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = gc.tanh(gc.identity(x)) + gc.tanh(x)
    return g, [y], x


def _constant_folded_late():
    """identity(2) * 3 + x, and x * 6: the first product folds to a 6 only in the second round
    (after the Identity goes), and that new constant stands before the 6 the trace made; CSE's
    second run looks at the new one (and its table of constants) and must merge the old 6, which
    comes after it and was not touched, into it."""
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = gc.identity(gc.constant(2.0)) * gc.constant(3.0) + x
        z = x * gc.constant(6.0)
    return g, [y + z], x


@pytest.mark.parametrize("build, expect", [(_tanh_behind_an_identity, 2 * np.tanh(0.5)),
                                           (_constant_folded_late, 6.0 + 0.5 + 0.5 * 6.0)])
def test_a_later_cse_run_merges_untouched_ops_into_touched_ones(monkeypatch, visits, build, expect):
    g, fetches, x = build()
    report = optimize(g, fetches, skip=["fusion"], validate=True)
    asked = _cse_runs(visits)
    assert len(asked) == 2 and asked[0] is None and asked[1] is not None and len(asked[1]) <= 6
    listing = str(g)
    monkeypatch.setenv("AUTOGRAPH_OPTIMIZE_WORKLIST", "0")
    g2, fetches2, x2 = build()
    report2 = optimize(g2, fetches2, skip=["fusion"], validate=True)
    assert listing == str(g2)  # the same graph as when every run looks at every op
    types = [op.type for op in g.get_operations()]
    assert types.count("Tanh") <= 1 and [op.attrs["value"] for op in g.get_operations()
                                          if op.type == "Const"].count(6.0) <= 1
    value = Session(g, num_threads=1).run(report.fetches, feed_dict={x: 0.5})[0]
    np.testing.assert_allclose(value, expect)
    assert report.passes[[p.name for p in report.passes].index("cse")].rewritten >= 1


def _loop_with_an_invariant_product():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        w = gc.placeholder(gc.float64, [], name="w")

        def body(i, v):
            return i + 1, v + gc.tanh(w) * 2.0

        _, y = gc.while_loop(lambda i, v: i < 4, body, [0, x])
    return g, [y], (x, w)


@pytest.mark.parametrize("skip", [["fusion"], ["fusion", "pruning"], ["pruning"]])
def test_ops_moved_out_of_a_loop_are_erased_once_and_counted_as_moved(skip):
    """Loop-invariant motion leaves the ops it moved for pruning's erase (state.erase_later),
    or the manager's when pruning is skipped: none stays in the loop, and the report counts
    them as the motion's."""
    g, fetches, (x, w) = _loop_with_an_invariant_product()
    erases = []
    erase_ops = g.erase_ops
    g.erase_ops = lambda ops, **kw: erases.append(list(ops)) or erase_ops(erases[-1], **kw)
    report = optimize(g, fetches, skip=skip, validate=True)
    stats = {p.name: p for p in report.passes}
    assert stats["licm"].rewritten == 2 and stats["licm"].removed == 2  # tanh(w) and its product
    in_loop = [op.type for op in g.get_operations() if op.ctx is not None]
    assert "Tanh" not in in_loop and "Mul" not in in_loop
    assert len([e for e in erases if e]) <= 1 + ("fusion" not in skip)  # one erase before fusion
    if "pruning" not in skip:
        assert stats["pruning"].removed == 0
    values = Session(g, num_threads=1).run(report.fetches, feed_dict={x: 0.5, w: 0.25})
    np.testing.assert_allclose(values[0], 0.5 + 4 * np.tanh(0.25) * 2.0)


def test_may_be_dead_per_op_agrees_with_the_sweep():
    """PassState.may_be_dead(op) works deadness out for op's ancestors only; it must say what
    the sweep over the whole graph (state.may_be_dead(graph)) says, for every op: on the
    samples' graphs (loops, conds, loops in conds) and on a bare Switch."""
    from graphcore.ops.control_flow_ops import merge_op, switch_op
    from graphcore.passes.state import PassState, may_be_dead
    graphs = []
    for sample in available_samples():
        concrete = autograph.function(sample.python_function).get_concrete_function(*sample.examples[0])
        graphs.append((concrete.graph, concrete._all_fetches()))
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        p = gc.placeholder(gc.bool, [], name="p")
        _, t = switch_op(x, p)  # a bare Switch: what reads it may be dead, and so may a Merge of it
        y = t * gc.constant(2.0) + gc.constant(1.0)
        m = merge_op(y, x * 3.0)[0] + 1.0
    graphs.append((g, [m]))
    for graph, fetches in graphs:
        dead = may_be_dead(graph)
        state = PassState(graph, fetches)
        state.begin_run()
        assert [state.may_be_dead(op) for op in graph.get_operations()] == \
            [id(op) in dead for op in graph.get_operations()]
