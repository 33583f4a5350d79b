"""The fast call path: Session.make_callable, a reused root frame per plan, runs of cheap
graphs without the pool, and `@function`'s call (positional binding, one walk for the
cache key). Each fast path must give run()'s values and raise run()'s errors, however
many calls took it before."""
import threading

import numpy as np
import pytest

import autograph
import executor
import executor.blas
import graphcore as gc
from autograph import TensorSpec, function
from executor import Session


@pytest.fixture
def one_blas_thread(monkeypatch):
    monkeypatch.setattr(executor.blas, "threads", lambda: 1)


def _graph():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        k = gc.placeholder(gc.int64, [], name="k")
        y = x * 2.0 + gc.cast(k, gc.float64)
        z = gc.reduce_sum(y)
    return g, x, k, y, z


@pytest.mark.parametrize("threads", [1, 2])
def test_a_callable_gives_what_run_gives_in_the_same_structure(threads):
    g, x, k, y, z = _graph()
    s = Session(g, num_threads=threads)
    feeds = (np.arange(3.0), np.int64(2))
    for fetches in (y, [y], [y, z], (z,), {"a": [y, (z,)], "b": z}, [z, y.op], "Sum:0"):
        run = s.make_callable(fetches, [x, k])
        for _ in range(3):
            got, want = run(*feeds), s.run(fetches, dict(zip([x, k], feeds)))
            assert type(got) is type(want)
            np.testing.assert_equal(got, want)
    assert s.make_callable([y, z], ["x:0", "k:0"])(*feeds)[1] == 12.0


def test_a_wrong_feed_after_many_fast_calls_raises_runs_error():
    g, x, k, y, _ = _graph()
    s = Session(g, num_threads=1)
    run = s.make_callable(y, [x, k])
    for i in range(200):
        np.testing.assert_array_equal(run(np.ones(3), np.int64(i)), 2.0 + i)
    with pytest.raises(gc.ExecutionError, match=r"cannot feed a value of dtype float64 to k:0 .*pass a int64 value"):
        run(np.ones(3), np.float64(1.5))
    with pytest.raises(gc.ExecutionError, match=r"cannot feed a value of shape \[4\] to x:0"):
        run(np.ones(4), np.int64(1))
    with pytest.raises(gc.ExecutionError, match="cannot feed a value of dtype bool"):
        run(np.ones(3, dtype=bool), np.int64(1))
    # values of another dtype of the same kind, or Python numbers, are converted as run() does
    np.testing.assert_array_equal(run(np.ones(3, np.float32), 1), [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(run([1, 2, 3], np.int32(1)), [3.0, 5.0, 7.0])
    with pytest.raises(TypeError, match="takes 2 feed values"):
        run(np.ones(3))
    np.testing.assert_array_equal(run(np.ones(3), np.int64(0)), 2.0)


def test_a_fed_zero_d_array_comes_back_as_a_scalar_and_an_unfed_placeholder_is_named():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        u = gc.placeholder(gc.float64, [], name="u")
        y = x + 1.0
    s = Session(g, num_threads=1)
    run = s.make_callable([y, x], [x])
    out = run(np.array(2.0))
    assert out == [3.0, 2.0] and all(type(v) is np.float64 for v in out)
    with pytest.raises(gc.ExecutionError, match="'u'.*must be fed"):
        s.make_callable(y + u, [x])(np.float64(1.0))


def test_a_callable_follows_changes_of_the_graph():
    g, x, k, y, _ = _graph()
    s = Session(g, num_threads=1)
    with pytest.raises(gc.GraphError, match="no op named 'nothing'"):
        s.make_callable("nothing:0", [x])
    with g.as_default():
        gc.identity(x * 3.0, name="out")
    run = s.make_callable("out:0", [x])
    np.testing.assert_array_equal(run(np.ones(3)), 3.0)
    with g.as_default():
        gc.identity(x, name="other")  # a new version of the graph: the plan is made again
    np.testing.assert_array_equal(run(np.ones(3)), 3.0)
    with pytest.raises(gc.GraphError, match="feed_dict keys must be tensors"):
        s.make_callable(y, [y.op])


def test_a_callable_obeys_the_deadline_scope():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        out = gc.while_loop(lambda i: i < n, lambda i: i + 0 * n, [np.int64(0)])
    run = Session(g, num_threads=1).make_callable(out, [n])
    assert run(np.int64(0)) == 0
    with executor.deadline(0.2), pytest.raises(gc.DeadlineExceededError):
        run(np.int64(1))


def test_root_frames_are_reused_only_after_a_run_that_finished():
    g = gc.Graph()
    with g.as_default():
        p = gc.placeholder(gc.bool, [], name="p")
        x = gc.placeholder(gc.float64, [], name="x")
        def otherwise():
            with gc.control_dependencies([gc.Assert(x < 100.0, message="too big")]):
                return x - 1.0
        y = gc.cond(p, lambda: x * 2.0, otherwise)
        z = 1.0 / gc.sqrt(x)
    s = Session(g, num_threads=1)
    run = s.make_callable(y, [p, x])
    for i in range(50):  # branches taken and not taken (dead tokens) in turn, on one frame
        assert run(np.bool_(i % 2 == 0), np.float64(i)) == (2.0 * i if i % 2 == 0 else i - 1.0)
    plan = run._plan
    assert len(plan.free_roots) == 1
    with pytest.raises(gc.ExecutionError):
        run(np.bool_(False), np.float64(1000.0))  # fails in the branch taken
    assert len(plan.free_roots) == 0  # (the failed run's frame is not kept)
    assert run(np.bool_(False), np.float64(4.0)) == 3.0
    assert len(plan.free_roots) == 1
    # a fetch dead on the path taken: the error names the Switch, as on a new frame
    with pytest.raises(gc.ExecutionError, match="dead on the path taken"):
        s.run(g.get_tensor_by_name("cond/Switch_1:1"), {p: False, x: 1.0})
    assert s.run(z, {x: 4.0}) == 0.5


def test_runs_of_one_plan_on_many_threads_keep_their_values_apart():
    g, x, k, y, z = _graph()
    s = Session(g)
    run = s.make_callable(z, [x, k])
    errors = []

    def work(j):
        try:
            for i in range(300):
                assert run(np.full(3, float(j)), np.int64(i)) == 6.0 * j + 3 * i
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(j,)) for j in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(run._plan.free_roots) <= 4


def test_only_plans_with_heavy_ops_use_the_pool(one_blas_thread):
    g = gc.Graph()
    with g.as_default():
        a = gc.placeholder(gc.float64, [None, None], name="a")
        cheap = a + 1.0
        heavy = gc.matmul(a, a)
        other = gc.matmul(a, a + 1.0)
    s = Session(g, num_threads=2)
    assert s.run(cheap, {a: np.ones((2, 2))})[0, 0] == 2.0
    assert not s._plan([cheap], [], [a]).needs_pool
    assert s.run([heavy, other], {a: np.ones((2, 2))})[1][0, 0] == 4.0
    assert s._plan([heavy, other], [], [a]).needs_pool  # two that may run side by side
    assert s.run(heavy, {a: np.ones((2, 2))})[0, 0] == 2.0
    assert not s._plan([heavy], [], [a]).needs_pool  # one alone: nothing to overlap it with


# -- @function's call ---------------------------------------------------------------------

@function
def _add(x, y=1.0):
    return x + y


def test_function_calls_bind_positionally_keywords_and_defaults_alike():
    before = _add.trace_count
    x = np.float64(1.5)
    assert _add(x) == 2.5                   # a default: Signature.bind
    assert _add(x, 2.0) == 3.5              # all positional: the fast binding
    assert _add(x, y=2.0) == 3.5            # a keyword: Signature.bind, the same trace
    assert _add(y=2.0, x=x) == 3.5
    assert _add.trace_count == before + 2   # (y=1.0 and y=2.0 are Python values: two traces)
    with pytest.raises(TypeError):
        _add(x, 1.0, 2.0)
    with pytest.raises(TypeError):
        _add()


def test_a_changed_dtype_or_shape_retraces_after_many_fast_calls():
    @function
    def f(x):
        return x * 2

    for i in range(100):
        assert f(np.float64(i)) == 2.0 * i
    assert f.trace_count == 1
    assert f(np.int64(3)) == 6 and type(f(np.int64(3))) is np.int64
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(f(np.ones((2, 1))), [[2.0], [2.0]])
    assert f(np.float32(1.5)).dtype == np.float32
    assert f.trace_count == 5
    assert f(np.float64(4.0)) == 8.0 and f.trace_count == 5
    # the same values in a list: the key and the graph inputs walk nested structures
    g = function(lambda xs: xs[0] + xs[1], autograph=False)
    assert g([np.float64(1.0), np.float64(2.0)]) == 3.0
    assert g((np.float64(1.0), np.int64(2))) == 3.0 and g.trace_count == 2


def test_a_concrete_function_checks_its_inputs_after_many_fast_calls():
    @function
    def f(n):
        return n + 1

    c = f.get_concrete_function(np.int64(1))
    for i in range(100):
        assert f(np.int64(i)) == i + 1
    with pytest.raises(gc.ExecutionError, match="cannot feed a value of dtype float64 to n:0"):
        c(np.float64(1.5))
    assert c(np.int32(4)) == 5  # same kind: converted
    with pytest.raises(gc.ExecutionError, match="'n'.*must be fed"):
        c()  # (no value: run()'s message)
    assert f(np.int64(41)) == 42


def test_input_signature_is_checked_on_every_call():
    @function(input_signature=[TensorSpec([], gc.float64)])
    def f(x):
        return x + 1.0

    for i in range(100):
        assert f(np.float64(i)) == i + 1.0
    with pytest.raises(TypeError, match="does not match its input_signature"):
        f(np.ones(2))
    assert f(np.float64(1.0)) == 2.0


class _Counter:
    def __init__(self, k):
        self.k = k

    @function
    def add(self, x):
        return x + self.k


def test_methods_bind_self_on_the_fast_path():
    a, b = _Counter(1.0), _Counter(10.0)
    for i in range(20):
        assert a.add(np.float64(i)) == i + 1.0
        assert b.add(np.float64(i)) == i + 10.0
    assert a.add(x=np.float64(1.0)) == 2.0


_scale = 2.0


def test_the_fast_lookup_of_numpy_arguments_keeps_guards_keys_and_retrace_warnings():
    global _scale

    @function
    def f(x, n):
        return x * _scale + n

    x, n = np.float64(1.0), np.int64(1)
    for _ in range(5):
        assert f(x, n) == 3.0
    assert f(np.array(1.0), n) == 3.0 and f.trace_count == 1  # a 0-d array: the scalar's key
    assert f(np.True_, n) == 3 and f.trace_count == 2         # a bool is its own signature
    _scale = 3.0
    try:
        assert f(x, n) == 4.0 and f.trace_count == 3           # the global changed: retraced
        _scale = 2.0
        assert f(x, n) == 3.0 and f.trace_count == 3           # the older trace holds again
        with pytest.warns(autograph.RetracingWarning, match="_scale"):
            for i in range(8):
                _scale = float(i + 10)
                assert f(x, n) == i + 11.0
    finally:
        _scale = 2.0
