"""graphcore.passes, one pass at a time on small graphs: what each must rewrite and what
it must leave alone (effects, variables, Switch/Merge dead tokens, frames). Every
optimization here runs with `validate=True` (graph.validate() after every pass) and is
compared with a run of the same graph built again and not optimized."""
import contextlib
import io

import numpy as np
import pytest

import graphcore as gc
from executor import Session
from graphcore.passes import optimize


def run(g, fetches, feeds):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        values = Session(g, num_threads=1).run(fetches, feed_dict=feeds)
    return values, out.getvalue()


def check(build, feeds_of, **kw):
    """Build twice; optimize the second; the runs must agree (values and prints).
    Returns (graph, report). Fusion is left out unless asked for (test_fusion.py tests it;
    the other passes' rewrites are easier to see on plain ops)."""
    g0, f0, p0 = build()
    expected, printed = run(g0, f0, feeds_of(p0))
    g, fetches, p = build()
    if "passes" not in kw:
        kw["skip"] = list(kw.get("skip", ())) + ["fusion"]
    report = optimize(g, fetches, validate=True, **kw)
    got, printed_opt = run(g, report.fetches, feeds_of(p))
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert np.asarray(a).dtype == np.asarray(b).dtype
    assert printed_opt == printed
    return g, report


def types(g):
    return [op.type for op in g.get_operations()]


# -- pruning ---------------------------------------------------------------------------

def test_pruning_drops_what_no_fetch_needs_but_keeps_effects():
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [], name="x")
            unused = gc.exp(x) * 3.0
            p = gc.print("effect", x)
            a = gc.Assert(x > -100.0, [], message="big")
            y = x + 1.0
        return g, [y], x
    g, report = check(build, lambda x: {x: 2.0})
    assert "Exp" not in types(g) and "Print" in types(g) and "Assert" in types(g)
    assert report.passes[0].name == "pruning" and report.passes[0].removed >= 3


def test_pruning_keeps_variable_updates_and_whole_loops():
    v = gc.Variable(np.float64(1.0), name="prune_v")

    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [], name="x")
            upd = v.assign_add(x)
            # a loop with one variable nobody reads: the loop stays whole
            i, unused, w = gc.while_loop(lambda i, u, w: i < 3, lambda i, u, w: (i + 1, u * 2.0, w + x),
                                         [0, 1.0, 0.0])
        return g, [w], x
    g, _ = check(build, lambda x: {x: 1.5})
    assert "AssignAddVariableOp" in types(g)
    assert types(g).count("Exit") == 3 and types(g).count("NextIteration") == 3


# -- constant folding ------------------------------------------------------------------

def test_fold_constants_and_static_shapes_keeping_the_source_line():
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [2, 3], name="x")
            c = gc.constant(2.0) * gc.constant(3.0)
            n = gc.cast(gc.size(x), gc.float64)           # known: 6
            z = gc.zeros_like(x)                           # known shape
            y = x * c + n + z
        return g, [y], x
    g, _ = check(build, lambda x: {x: np.arange(6.0).reshape(2, 3)})
    assert not {"Size", "ZerosLike", "Cast"} & set(types(g))
    mul = next(op for op in g.get_operations() if op.type == "Const" and np.ndim(op.attrs["value"]) == 0
               and op.attrs["value"] == 6.0 and "test_passes.py" in str(op.source))
    assert mul.source is not None


def test_never_fold_placeholders_variables_or_failing_ops():
    v = gc.Variable(np.int64(4), name="fold_v")

    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.int64, [], name="x")
            r = v.value() + 1                               # a variable read is not a constant
            bad = gc.gather(gc.constant(np.array([1, 2], np.int64)), gc.constant(np.int64(0)))
            y = x + r + bad
        return g, [y], x
    g, _ = check(build, lambda x: {x: np.int64(3)})
    assert "ReadVariableOp" in types(g) and "Placeholder" in types(g)


def test_fold_in_a_cond_branch_keeps_the_dead_token():
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [], name="x")
            y = gc.cond(x > 0.0, lambda: gc.constant(2.0) * gc.constant(5.0), lambda: x)
        return g, [y], x
    for v in (1.0, -1.0):
        g, _ = check(build, lambda x: {x: v})
    folded = [op for op in g.get_operations() if op.type == "Const" and op.ctx is not None]
    assert folded and all(op.control_inputs for op in folded)  # hangs on the branch's pivot


def test_a_constant_subgraph_in_a_loop_is_moved_out_and_folded_once():
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [], name="x")
            c = gc.constant(3.0)

            def body(i, v):
                return i + 1, v + gc.exp(c) * 2.0

            _, y = gc.while_loop(lambda i, v: i < 4, body, [0, x])
        return g, [y], x
    g, report = check(build, lambda x: {x: 0.5})
    in_loop = [op.type for op in g.get_operations() if op.ctx is not None]
    assert "Exp" not in in_loop and "Mul" not in in_loop and "Exp" not in types(g)
    assert {p.name: p for p in report.passes}["licm"].rewritten >= 1


# -- arithmetic --------------------------------------------------------------------------

def test_arithmetic_identities_that_hold_exactly():
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [3], name="x")
            i = gc.placeholder(gc.int64, [3], name="i")
            p = gc.placeholder(gc.bool, [], name="p")
            a = (x * 1.0) / 1.0 - 0.0
            b = -(-x)  # noqa: B002 (a double negation the pass removes)
            k = i * 0 + i * 1 + (i - i)
            q = gc.logical_not(gc.logical_not(p))
        return g, [a, b, k, q], (x, i, p)
    g, _ = check(build, lambda t: {t[0]: np.array([np.nan, -0.0, 2.0]), t[1]: np.array([1, 2, 3]), t[2]: True})
    assert "Neg" not in types(g) and "LogicalNot" not in types(g) and "RealDiv" not in types(g)


def test_arithmetic_leaves_float_zero_products_sums_and_broadcasts():
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [3], name="x")
            s = gc.placeholder(gc.float64, [], name="s")
            a = x * 0.0            # nan * 0 is nan, not 0
            b = x + 0.0            # -0.0 + 0.0 is 0.0
            c = s * gc.constant(np.ones(3))  # the scalar broadcasts: the shape changes
            d = x - x              # inf - inf is nan
        return g, [a, b, c, d], (x, s)
    g, _ = check(build, lambda t: {t[0]: np.array([np.inf, -0.0, 1.0]), t[1]: 2.0})
    assert types(g).count("Mul") == 2 and "Add" in types(g) and "Sub" in types(g)


# -- CSE ---------------------------------------------------------------------------------

def test_cse_merges_equal_pure_ops_only():
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [], name="x")
            a, b = gc.tanh(x), gc.tanh(x)
            p1 = gc.print("once", x)
            p2 = gc.print("once", x)        # two prints print twice
            with g.control_dependencies([p1]):
                c = gc.exp(x)
            d = gc.exp(x)                   # another control input: not the same op
            y = a + b + c + d
        return g, [y], x
    g, report = check(build, lambda x: {x: 0.5})
    assert types(g).count("Tanh") == 1 and types(g).count("Print") == 2 and types(g).count("Exp") == 2


def test_cse_does_not_merge_across_branches():
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [], name="x")
            y = gc.cond(x > 0.0, lambda: gc.exp(x), lambda: gc.exp(x) + 1.0)
        return g, [y], x
    for v in (1.0, -1.0):
        g, _ = check(build, lambda x: {x: v})
    assert types(g).count("Exp") == 2


# -- control flow ------------------------------------------------------------------------

def test_a_switch_on_a_constant_becomes_the_taken_branch():
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [], name="x")
            flag = gc.constant(2) > gc.constant(1)    # folds to True

            def untaken():
                p = gc.print("never", x)
                with g.control_dependencies([p]):
                    return gc.exp(x)

            y = gc.cond(flag, lambda: x * 3.0, untaken)
        return g, [y], x
    g, _ = check(build, lambda x: {x: 0.5})
    assert "Merge" not in types(g) and "Print" not in types(g) and "Exp" not in types(g)


def test_switch_and_merge_on_a_placeholder_stay():
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [], name="x")
            y = gc.cond(x > 0.0, lambda: gc.identity(x * 3.0), lambda: x)
        return g, [y], x
    for v in (1.0, -1.0):
        g, _ = check(build, lambda x: {x: v})
    assert "Merge" in types(g) and "Switch" in types(g)


def test_identities_without_control_meaning_go_pivots_and_chains_stay():
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [], name="x")
            a = gc.identity(gc.identity(x * 2.0))
            p = gc.print("tick")
            with g.control_dependencies([p]):
                token = gc.identity(gc.constant(0))      # an effects chain link
            y = gc.cond(x > 0.0, lambda: gc.constant(1.0), lambda: gc.constant(2.0))  # pivots
        return g, [a, token, y], x
    for v in (1.0, -1.0):
        g, _ = check(build, lambda x: {x: v})
    names = [op.name for op in g.get_operations() if op.type == "Identity"]
    assert any(n.endswith("switch_t") for n in names) and any(n.endswith("switch_f") for n in names)
    assert len(names) == 3  # the two pivots and the chain link


def test_loops_keep_working_with_every_pass():
    def build():
        g = gc.Graph()
        with g.as_default():
            n = gc.placeholder(gc.int64, [], name="n")
            w = gc.placeholder(gc.float64, [2], name="w")

            def body(i, v):
                v = gc.cond(i % 2 == 0, lambda: v * 1.0 + gc.tanh(w), lambda: v - gc.tanh(w))
                return i + 1, v

            _, y = gc.while_loop(lambda i, v: i < n, body, [gc.constant(np.int64(0)), w])
            dy = gc.gradients(gc.reduce_sum(y), [w])[0]
        return g, [y, dy], (n, w)
    for k in (0, 1, 4):
        check(build, lambda t: {t[0]: np.int64(k), t[1]: np.array([0.5, -1.0])})


# -- the manager -------------------------------------------------------------------------

def test_manager_reports_skips_and_refuses_unknown_passes():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = gc.tanh(x) + gc.tanh(x)
    report = optimize(g, [y], skip=["cse", "fusion"])
    assert [p.name for p in report.passes] == ["pruning", "licm", "constant_folding", "arithmetic", "control_flow",
                                              "identical_branches"]
    assert types(g).count("Tanh") == 2
    assert "pass" in report.table() and f"-> {len(g)}" in report.table()
    with pytest.raises(gc.GraphError, match="unknown graph pass"):
        optimize(g, [y], passes=["folding"])


def test_add_chains_become_one_addn_adding_left_to_right():
    def build():
        g = gc.Graph()
        with g.as_default():
            a = gc.placeholder(gc.float64, [3], name="a")
            b = gc.placeholder(gc.float64, [3], name="b")
            c = gc.placeholder(gc.float64, [], name="c")
            left = a + b + c + a                  # ((a + b) + c) + a: one AddN
            kept = a + b
            right = c + kept + (kept * 2.0)       # AddN(c, kept, kept * 2): kept itself stays
        return g, [left, right, kept], (a, b, c)
    feeds = lambda t: {t[0]: np.array([1e16, 1.0, -0.5]), t[1]: np.array([1.0, 1e-16, 3.0]),  # noqa: E731
                       t[2]: -1e16}
    g, _ = check(build, feeds)
    addn = [op for op in g.get_operations() if op.type == "AddN"]
    assert sorted(len(op.inputs) for op in addn) == [3, 4]
    assert types(g).count("Add") == 1  # kept: fetched and read twice


def test_common_factors_of_integers_are_taken_out_and_floats_left_alone():
    def build(dtype):
        def b():
            g = gc.Graph()
            with g.as_default():
                a, x, y = (gc.placeholder(dtype, [3], name=n) for n in "axy")
                out = a * x + y * a
            return g, [out], (a, x, y)
        return b

    big = np.array([2 ** 62, -3, 7], dtype=np.int64)  # wraps around: still equal
    g, report = check(build(gc.int64), lambda p: dict(zip(p, (big, big, np.array([5, 6, -2])))))
    assert types(g).count("Mul") == 1 and types(g).count("Add") == 1
    g, _ = check(build(gc.float64), lambda p: dict(zip(p, (np.full(3, 0.1), np.full(3, 0.2), np.full(3, 0.7)))))
    assert types(g).count("Mul") == 2


def test_comparing_an_integer_with_itself_is_a_constant_floats_are_not():
    def build():
        g = gc.Graph()
        with g.as_default():
            n = gc.placeholder(gc.int64, [2], name="n")
            f = gc.placeholder(gc.float64, [2], name="f")
            outs = [n == n, n < n, n >= n, f == f]  # f == f is False where f is nan
        return g, outs, (n, f)

    g, report = check(build, lambda p: {p[0]: np.array([1, -1]), p[1]: np.array([np.nan, 1.0])})
    kinds = types(g)
    assert "Less" not in kinds and "GreaterEqual" not in kinds and kinds.count("Equal") == 1


def test_a_cond_whose_branches_compute_the_same_becomes_that_computation():
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [], name="x")
            q = gc.placeholder(gc.float64, [], name="q")
            p = q > 0.0
            same = gc.cond(p, lambda: gc.tanh(x) * 2.0 + 1.0, lambda: gc.tanh(x) * 2.0 + 1.0)
            other = gc.cond(p, lambda: gc.tanh(x) * 2.0, lambda: gc.tanh(x) * 3.0)
            passed = gc.cond(p, lambda: x, lambda: x)
        return g, [same, other, passed], (x, q)

    for qv in (1.0, -1.0):
        g, report = check(build, lambda v, qv=qv: {v[0]: np.float64(0.4), v[1]: np.float64(qv)})
        merges = [op for op in g.get_operations() if op.type == "Merge"]
        assert len(merges) == 1  # `other` stays a cond; `same` and `passed` need none
        assert types(g).count("Tanh") == 3  # one for `same`, two in `other`'s branches


def test_identical_branches_with_a_print_stay():
    def branch(g, x):
        with g.control_dependencies([gc.print(x)]):
            return x * 2.0

    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [], name="x")
            y = gc.cond(x > 0.0, lambda: branch(g, x), lambda: branch(g, x))
        return g, [y], x

    for v in (1.0, -1.0):
        g, _ = check(build, lambda x, v=v: {x: np.float64(v)})  # (check compares the printed lines too)
        assert any(op.type == "Merge" for op in g.get_operations())
