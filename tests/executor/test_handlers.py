"""The generated handler of each node of a loop (executor/handlers.py): the same values,
nodes run, dead tokens and errors as the generic handlers (which a traced run uses), and
where ops run when a run has a worker pool."""
import threading

import numpy as np
import pytest

import executor.handlers
import executor.kernel_contract
import executor.loop_runner
import executor.plan
import graphcore as gc
from executor import Session
from graphcore.registry import define_op, get_op_def, registered_ops


@pytest.fixture(autouse=True)
def no_loop_runners(monkeypatch):
    """These tests are of the handlers, which run a loop node by node: no loop gets a runner
    (executor/loop_runner.py, tests/executor/test_loop_runner.py) that would run it whole."""
    monkeypatch.setattr(executor.loop_runner, "RUNNER_AFTER", 10**18)


@pytest.fixture
def handlers_at_once(monkeypatch):
    """Every node of a loop gets its own handler after its first run (not its thousandth)."""
    monkeypatch.setattr(executor.handlers, "COMPILE_AFTER", 1)


@pytest.fixture(params=["quick", "generated"])
def each_tier(request, monkeypatch):
    """Every node of a loop gets the handler of one tier after its first run: its quick handler
    (and never a generated one), or its generated one. Gives the tier's name."""
    if request.param == "quick":
        monkeypatch.setattr(executor.handlers, "QUICK_AFTER", 1)
        monkeypatch.setattr(executor.handlers, "COMPILE_AFTER", 10**9)
    else:
        monkeypatch.setattr(executor.handlers, "COMPILE_AFTER", 1)
    return request.param


def _types(result):
    return [type(x) for x in result] if isinstance(result, (list, tuple)) else [type(result)]


def _loop_tiers(s):
    """The tiers of the handlers of the loop nodes of the session's plan."""
    plan = next(iter(s._plans.values()))
    return {getattr(it.fast, "tier", None) for it in plan.items if it.frame is not plan.root}


def _fib(parallel_iterations=10):
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        r = gc.while_loop(lambda a, b, i: i < n, lambda a, b, i: (b, a + b, i + 1), [1, 1, 1],
                          parallel_iterations=parallel_iterations)
    return g, n, r


def _collatz():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def body(n, steps):
            return gc.cond(gc.equal(n % 2, 0), lambda: n // 2, lambda: 3 * n + 1), steps + 1

        r = gc.while_loop(lambda n, s: n != 1, body, [n, 0])[1]
    return g, n, r


def _nested():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def outer(i, acc):
            _, acc = gc.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a + i * j), [0, acc])
            return i + 1, acc

        r = gc.while_loop(lambda i, a: i < n, outer, [0, 0])[1]
    return g, n, r


def _with_controls():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def body(i, a):
            x = gc.identity(a * 2)
            with g.control_dependencies([x.op]):
                j = i + 1
            return j, gc.cond(i > 2, lambda: x - a, lambda: x + 1)

        r = gc.while_loop(lambda i, a: i < n, body, [0, 1])
    return g, n, r


@pytest.mark.parametrize("build, value", [(_fib, 40), (lambda: _fib(1), 25), (lambda: _fib(3), 25),
                                          (_collatz, 27), (_nested, 9), (_with_controls, 12)])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("checked", [True, False])  # (unchecked: scalar operators written out in the handlers)
def test_each_tier_computes_and_runs_what_the_generic_handlers_do(each_tier, build, value, threads, checked,
                                                                  monkeypatch):
    monkeypatch.setattr(executor.kernel_contract, "_enabled", checked)
    g, n, r = build()
    s = Session(g, num_threads=threads)
    trace = []
    want = s.run(r, {n: value}, trace=trace)  # a traced run: the generic handlers
    traced = s.last_stats
    for _ in range(3):  # the first run makes the handlers; the next ones only use them
        got = s.run(r, {n: value})
        assert got == want and _types(got) == _types(want)
        assert s.last_stats.nodes == traced.nodes == sum(1 for e in trace if e["event"] == "run")
        assert s.last_stats.frames == traced.frames
    assert each_tier in _loop_tiers(s) and {"quick", "generated"} - {each_tier} - _loop_tiers(s)
    assert s.run(r, {n: 2}) == Session(g, num_threads=1).run(r, {n: 2}, trace=[])  # and a short loop after


def test_a_loop_node_goes_from_the_generic_handler_to_its_quick_one_then_its_generated_one(monkeypatch):
    monkeypatch.setattr(executor.handlers, "QUICK_AFTER", 10)
    monkeypatch.setattr(executor.handlers, "COMPILE_AFTER", 40)
    g, n, r = _collatz()
    s = Session(g, num_threads=1)
    want = s.run(r, {n: 27}, trace=[])
    assert want == 111
    plan = next(iter(s._plans.values()))
    loop = [it for it in plan.items if it.frame is not plan.root and it.kind != 3]  # (3: Enter, runs once)
    s2 = Session(g, num_threads=1)
    assert s2.run(r, {n: 3}) == 7 and _loop_tiers(s2) == {None}  # (first_runs: no node ran 10 times)
    assert s2.run(r, {n: 7}) == 16
    assert "quick" in _loop_tiers(s2) and "generated" not in _loop_tiers(s2)
    quick = {it.name: it.fast for it in next(iter(s2._plans.values())).items if getattr(it.fast, "tier", "") == "quick"}
    assert all(h.source is None for h in quick.values())  # (made of closures: no source of its own)
    assert s2.run(r, {n: 27}) == want
    assert "generated" in _loop_tiers(s2)
    # a node generated from its quick handler got there by running: its runs counted on
    items = {it.name: it for it in next(iter(s2._plans.values())).items}
    assert any(items[name].fast.tier == "generated" and items[name].runs >= 40 for name in quick)
    assert s2.run(r, {n: 27}) == want and s2.run(r, {n: 1}) == 0
    assert len(loop) > 5


@pytest.mark.parametrize("build, value", [(_fib, 300), (_collatz, 27), (_nested, 25)])
def test_only_nodes_still_run_from_the_queue_get_generated_handlers(monkeypatch, build, value):
    """Past COMPILE_AFTER runs one node per iteration of a frame gets its generated handler
    (handlers.promote): a node that handler runs inside it is no longer run from the queue, so
    it keeps its quick handler (or has none yet: the quick handlers ran it inside them) and
    is never compiled."""
    monkeypatch.setattr(executor.handlers, "QUICK_AFTER", 1)
    monkeypatch.setattr(executor.handlers, "COMPILE_AFTER", 20)
    g, n, r = build()
    s = Session(g, num_threads=1)
    want = s.run(r, {n: value}, trace=[])
    for _ in range(3):
        assert s.run(r, {n: value}) == want
    plan = next(iter(s._plans.values()))
    loop = [it for it in plan.items if it.frame is not plan.root and it.kind in (0, 1, 2, 5)]  # (the kinds compiled)
    quick = [it for it in loop if it.fast.tier != "generated"]
    generated = [it for it in loop if it.fast.tier == "generated"]
    assert quick and generated
    calls = []
    for item in quick:
        def counting(state, node, own=item.fast):
            calls.append(node.item.name)
            return own(state, node)
        item.fast = counting
    assert s.run(r, {n: value}) == want
    # most ran inside generated handlers only (the nodes run are the same); a few from the queue,
    # where their producer's handler stops inlining (its depth or length)
    assert len(set(calls)) < len(quick)
    trace = []
    s.run(r, {n: value}, trace=trace)
    assert s.last_stats.nodes == sum(1 for e in trace if e["event"] == "run")


def test_only_loop_nodes_get_handlers_and_only_after_their_first_runs(monkeypatch):
    monkeypatch.setattr(executor.handlers, "COMPILE_AFTER", 50)
    g, n, r = _fib()
    s = Session(g, num_threads=1)
    assert s.run(r, {n: 20}) == [6765, 10946, 20]
    plan = next(iter(s._plans.values()))
    loop_items = [it for it in plan.items if it.frame is not plan.root]
    assert not any(getattr(it.fast, "source", None) for it in plan.items)  # 19 iterations: too few
    assert s.run(r, {n: 60})[2] == 60
    generated = [it for it in loop_items if getattr(it.fast, "source", None)]
    assert generated and all(it.fast.source.startswith("def handler(state, node):") for it in generated)
    assert not any(getattr(it.fast, "source", None) for it in plan.root.nodes)


def test_a_consumer_with_one_input_runs_inside_its_producers_handler(handlers_at_once):
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        r = gc.while_loop(lambda i: i < n, lambda i: gc.negative(gc.negative(i, name="neg1"), name="neg2") + 1, [0])
    s = Session(g, num_threads=1)
    s.run(r, {n: 5})
    plan = next(iter(s._plans.values()))
    negs = [it for it in plan.items if it.name in ("while/neg1", "while/neg2")]
    calls = []
    for item in negs:
        def counting(state, node, own=item.fast):
            if not node.is_dead:  # (dead, as at the loop's end, it is queued: that is rare)
                calls.append(node)
            return own(state, node)
        item.fast = counting
    assert s.run(r, {n: 30}) == 30
    # each Neg, the only consumer of what comes before it, ran live in the handler of the
    # node that made it ready (the Switch's): never from the queue
    assert len(negs) == 2 and calls == []
    nodes = s.last_stats.nodes
    trace = []
    s.run(r, {n: 30}, trace=trace)  # and they are counted as nodes run all the same
    assert nodes == s.last_stats.nodes == sum(1 for e in trace if e["event"] == "run")


def _failing_op():
    if "TestFailsAtThree" in registered_ops():
        return get_op_def("TestFailsAtThree")
    from graphcore.registry import CHEAP  # noqa: PLC0415

    def kernel(x):
        if x == 3:
            raise ValueError("three")
        return x

    op = define_op("TestFailsAtThree", shape=lambda x: (x.dtype, x.shape), kernel=kernel, cost=CHEAP)
    op.not_differentiable("test op")
    return op


@pytest.mark.parametrize("threads", [1, 2])
def test_an_error_in_an_inlined_op_names_it_its_frame_and_iteration(each_tier, threads):
    op = _failing_op()
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        r = gc.while_loop(lambda i: i < n, lambda i: op(i + 1, name="fails") * 1, [0])
    s = Session(g, num_threads=threads)
    assert s.run(r, {n: 2}) == 2
    assert each_tier in _loop_tiers(s)
    with pytest.raises(gc.ExecutionError, match=r"fails \(TestFailsAtThree\) in frame root/while:2 \(iteration 2\)") as e:
        s.run(r, {n: 10})
    with pytest.raises(gc.ExecutionError) as generic:  # the same message as the generic handlers give
        s.run(r, {n: 10}, trace=[])
    assert str(e.value) == str(generic.value) and "test_handlers.py" in str(e.value)  # (the op's line)
    assert isinstance(e.value, ValueError) and e.value.iteration == 2
    assert s.run(r, {n: 2}) == 2  # the session is still usable


def test_a_deadline_ends_a_loop_running_generated_handlers(each_tier):
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        r = gc.while_loop(lambda i: i < n, lambda i: i * 1, [0])  # never ends for n > 0
    s = Session(g, num_threads=1)
    with pytest.raises(gc.DeadlineExceededError, match="while"):
        s.run(r, {n: 1}, timeout=0.2)
    assert each_tier in _loop_tiers(s)
    assert s.run(r, {n: 0}) == 0 and s.run(r, {n: -3}) == 0


# -- where ops run, with a worker pool ----------------------------------------------------

@pytest.fixture
def one_blas_thread(monkeypatch):
    import executor.blas  # noqa: PLC0415

    monkeypatch.setattr(executor.blas, "threads", lambda: 1)


def test_small_heavy_ops_ready_together_run_inline_on_the_calling_thread(one_blas_thread):
    # two matmuls ready side by side, each cheaper than a few hops to a worker: both run here
    g = gc.Graph()
    with g.as_default():
        a, b = (gc.placeholder(gc.float64, [None, None], name=x) for x in "ab")
        out = gc.matmul(a, a) + gc.matmul(b, b)
    s = Session(g, num_threads=2)
    m = np.eye(8)
    np.testing.assert_array_equal(s.run(out, {a: m, b: m}), 2 * m)
    assert s.last_stats.async_ops == 0 and s.last_stats.pool_nodes == 0


def _recording_op():
    """A heavy op (not CHEAP: it may go to the pool) that notes the thread it ran on."""
    if "TestRecordsThread" in registered_ops():
        return get_op_def("TestRecordsThread")

    def kernel(x):
        _recording_op.threads.add(threading.get_ident())
        return x * 1.0

    op = define_op("TestRecordsThread", shape=lambda x: (x.dtype, x.shape), kernel=kernel)
    op.not_differentiable("test op")
    return op


_recording_op.threads = set()


def test_two_branches_of_heavy_ops_run_on_two_threads(one_blas_thread):
    op = _recording_op()
    g = gc.Graph()
    with g.as_default():
        a, b = (gc.placeholder(gc.float64, [None], name=x) for x in "ab")
        x, y = a, b
        for _ in range(4):
            x, y = op(x), op(y)
        out = gc.reduce_sum(x) + gc.reduce_sum(y)
    s = Session(g, num_threads=2)
    big = np.ones(200_000)  # worth several hops: one branch goes to a worker, which goes on along it
    _recording_op.threads.clear()
    assert s.run(out, {a: big, b: big}) == 400_000.0
    assert len(_recording_op.threads) == 2 and threading.get_ident() in _recording_op.threads
    assert s.last_stats.async_ops >= 1 and s.last_stats.pool_nodes > s.last_stats.async_ops


def test_heavy_ops_in_a_loop_with_generated_handlers_still_use_the_pool(one_blas_thread, each_tier):
    op = _recording_op()
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        a, b = (gc.placeholder(gc.float64, [None], name=x) for x in "ab")
        r = gc.while_loop(lambda i, x, y: i < n, lambda i, x, y: (i + 1, op(x), op(y)), [0, a, b])
    s = Session(g, num_threads=2)
    big = np.ones(200_000)
    s.run(r, {n: 2, a: big, b: big})
    _recording_op.threads.clear()
    i, x, y = s.run(r, {n: 6, a: big, b: big})
    assert i == 6 and x.sum() == y.sum() == 200_000.0
    assert len(_recording_op.threads) == 2 and s.last_stats.async_ops >= 1


@pytest.fixture
def raw_kernels(monkeypatch):
    """Kernels as the plan gives them, not wrapped by the suite's kernel contract check (which
    generated code calls as it is, without writing the operator out)."""
    monkeypatch.setattr(executor.kernel_contract, "_enabled", False)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
@pytest.mark.parametrize("start, step", [  # (of the dtype's iinfo)
    (lambda i: 0, lambda i: 1), (lambda i: i.max - 3, lambda i: 1), (lambda i: i.min + 3, lambda i: -1),
    (lambda i: i.max // 2, lambda i: i.max // 3), (lambda i: i.min // 2, lambda i: i.max // 3),
    (lambda i: i.max, lambda i: i.min)])
def test_integer_sums_in_generated_handlers_wrap_around_as_numpy_does(handlers_at_once, raw_kernels, dtype, start,
                                                                      step):
    """a + b and a - b of integer scalars as Python operators in generated code: exactly numpy's
    ufunc (wrapped around on overflow, its dtype), with no overflow warning."""
    info = np.iinfo(dtype)
    a0, d = dtype(start(info)), dtype(step(info))
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        a = gc.placeholder(gc.as_dtype(dtype), [], name="a")
        s_ = gc.placeholder(gc.as_dtype(dtype), [], name="d")
        r = gc.while_loop(lambda i, x, y: i < n, lambda i, x, y: (i + 1, x + s_, y - s_), [np.int64(0), a, a])
    want_x, want_y = a0, a0
    for _ in range(12):
        want_x, want_y = np.add(want_x, d), np.subtract(want_y, d)
    s = Session(g, num_threads=1)
    traced = s.run(r, {n: 12, a: a0, s_: d}, trace=[])
    with np.errstate(all="raise"):
        for _ in range(3):  # (the first run generates the handlers)
            got = s.run(r, {n: 12, a: a0, s_: d})
    assert got[1] == want_x == traced[1] and got[2] == want_y == traced[2]
    assert type(got[1]) is type(got[2]) is dtype
    plan = next(iter(s._plans.values()))
    assert any("wrapped" in (getattr(it.fast, "source", None) or "") for it in plan.items)


def test_integer_sums_of_arrays_in_generated_handlers_use_the_ops_kernel(handlers_at_once, raw_kernels):
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        v = gc.placeholder(gc.int64, [None], name="v")
        r = gc.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x - i + np.int64(2) ** 62), [np.int64(0), v])
    s = Session(g, num_threads=1)
    start = np.array([np.iinfo(np.int64).max, 0, -5])
    want = s.run(r, {n: 9, v: start}, trace=[])
    for _ in range(3):  # (the first run generates the handlers): arrays go to the op's kernel (np.add)
        got = s.run(r, {n: 9, v: start})
        assert got[0] == want[0] == 9
        np.testing.assert_array_equal(got[1], want[1])
    assert got[1][0] == (np.iinfo(np.int64).max + 9 * 2 ** 62 - 36 + 2 ** 63) % 2 ** 64 - 2 ** 63  # wrapped


@pytest.mark.parametrize("limit", [10_000, 150, 60, 5])
def test_a_handler_too_long_inlines_less_or_none_or_is_generic(handlers_at_once, monkeypatch, limit):
    """MAX_HANDLER_LINES: past it a handler is made again inlining up to SHORT_MAX_LINES lines,
    then inlining nothing, then the generic one; each computes the same."""
    monkeypatch.setattr(executor.handlers, "MAX_HANDLER_LINES", limit)
    g, n, r = _collatz()
    s = Session(g, num_threads=1)
    trace = []
    want = s.run(r, {n: 27}, trace=trace)
    for _ in range(3):
        assert s.run(r, {n: 27}) == want == 111
        assert s.last_stats.nodes == sum(1 for e in trace if e["event"] == "run")
    plan = next(iter(s._plans.values()))
    sizes = [it.fast.source.count("\n") for it in plan.items if getattr(it.fast, "source", None)]
    assert all(size <= limit for size in sizes)
    assert bool(sizes) == (limit > 5)


# -- the quick tier: consumers run inside the handlers (runners) -------------------------------

@pytest.fixture
def quick_only(monkeypatch):
    """Every node of a loop gets its quick handler after its first run, and never a generated one."""
    monkeypatch.setattr(executor.handlers, "QUICK_AFTER", 1)
    monkeypatch.setattr(executor.handlers, "COMPILE_AFTER", 10**9)


def _counting_pops(s):
    """Wrap the handler of every loop node of the session's plan so that its live runs from the
    queue are counted (by node name) in the dict returned (dead, as at a loop's end, a node
    is always queued)."""
    plan = next(iter(s._plans.values()))
    pops = {}
    for item in plan.items:
        if item.frame is not plan.root:
            def counting(state, node, own=item.fast):
                if not node.is_dead:
                    pops[node.item.name] = pops.get(node.item.name, 0) + 1
                return own(state, node)
            item.fast = counting
    return pops


@pytest.mark.parametrize("build, value, iterations", [(_fib, 60, 59), (_collatz, 27, 111), (_nested, 12, 12)])
def test_quick_handlers_run_the_consumers_they_fire_inside_them(quick_only, build, value, iterations):
    g, n, r = build()
    s = Session(g, num_threads=1)
    trace = []
    want = s.run(r, {n: value}, trace=trace)
    # (Enter, Exit: generic; "inlined": no handler of its own yet, run inside the others')
    assert s.run(r, {n: value}) == want and _loop_tiers(s) == {"quick", "generic", "inlined"}
    pops = _counting_pops(s)
    assert s.run(r, {n: value}) == want
    assert s.last_stats.nodes == sum(1 for e in trace if e["event"] == "run")  # the same nodes run
    plan = next(iter(s._plans.values()))
    # each iteration of the outermost loop starts from its Merges (runners stay in their
    # iteration); the rest of it ran inside their handlers, except what a dead token or an
    # inner loop's Enter and Exit queue
    loop_merges = {it.name for it in plan.items if it.kind == 2 and it.merge_back and it.frame.parent is plan.root}
    assert loop_merges and all(pops[name] >= iterations for name in loop_merges)
    assert sum(pops.values()) < s.last_stats.nodes / 2


def test_runners_nest_at_most_quick_block_deep(quick_only):
    """A chain longer than QUICK_BLOCK runs in pieces: a consumer in the next block of levels
    (handlers.frame_levels) is queued."""
    block = executor.handlers.QUICK_BLOCK
    chain = 3 * block + 2
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def body(i):
            x = i
            for k in range(chain):
                x = gc.negative(x, name=f"neg{k}")
            return x + 1
        r = gc.while_loop(lambda i: i < n, body, [0])
    s = Session(g, num_threads=1)
    trace = []
    assert s.run(r, {n: 20}, trace=trace) == 20 and s.run(r, {n: 20}) == 20
    pops = _counting_pops(s)
    assert s.run(r, {n: 20}) == 20 and s.last_stats.nodes == sum(1 for e in trace if e["event"] == "run")
    plan = next(iter(s._plans.values()))
    levels = executor.handlers.frame_levels(executor.plan, next(it.frame for it in plan.items if it.frame.parent))
    popped = {name for name in pops if name.startswith("while/neg")}
    # the first neg of each block but the Merge's, every iteration; the others inside runners
    items = {it.name: it for it in plan.items}
    assert popped == {name for name, it in items.items() if name.startswith("while/neg")
                      and levels[it.local_id] % block == 0}
    assert len(popped) == 3 and all(pops[name] == 20 for name in popped)


def test_nodes_run_inside_quick_handlers_count_their_runs_and_get_generated_handlers_when_queued(monkeypatch):
    """A node the quick handlers run inside them counts those runs: when another node's generated
    handler leaves it to the queue, it gets its own generated handler as soon as it is popped
    past COMPILE_AFTER runs, not a thousand pops later."""
    monkeypatch.setattr(executor.handlers, "QUICK_AFTER", 1)
    monkeypatch.setattr(executor.handlers, "COMPILE_AFTER", 10**9)
    g, n, r = _fib()
    s = Session(g, num_threads=1)
    assert s.run(r, {n: 200}) == s.run(r, {n: 200}, trace=[])
    plan = next(iter(s._plans.values()))
    loop = [it for it in plan.items if it.frame is not plan.root and it.kind in (0, 1, 2, 5)]
    assert all(it.runs >= 199 for it in loop)  # (Merges popped, the rest run inside their handlers)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_scalar_operators_in_quick_handlers_give_numpys_values(quick_only, raw_kernels, dtype):
    """a + b, a - b and a < b of integer scalars in runners (scalar_kernels' operators): numpy's
    values and dtypes, wrapped around on overflow as numpy's ufunc does (by the op's kernel)."""
    info = np.iinfo(dtype)
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        a = gc.placeholder(gc.as_dtype(dtype), [], name="a")
        d = gc.placeholder(gc.as_dtype(dtype), [], name="d")
        r = gc.while_loop(lambda i, x, y: i < n, lambda i, x, y: (i + 1, x + d, y - d), [np.int64(0), a, a])
    s = Session(g, num_threads=1)
    for a0, d0 in [(dtype(0), dtype(1)), (dtype(info.max - 3), dtype(1)), (dtype(info.min // 2), dtype(info.max // 3))]:
        want = s.run(r, {n: 12, a: a0, d: d0}, trace=[])
        with np.errstate(all="raise"):
            got = s.run(r, {n: 12, a: a0, d: d0})
        assert got == want and _types(got) == _types(want) and type(got[1]) is dtype
    assert "quick" in _loop_tiers(s)


def test_quick_handlers_share_their_code_across_plans_of_the_same_shape(quick_only):
    g, n, r = _fib()
    Session(g, num_threads=1).run(r, {n: 30})
    shapes = len(executor.handlers._QUICK_CODE)
    g2, n2, r2 = _fib()
    assert Session(g2, num_threads=1).run(r2, {n2: 30}) == [832040, 1346269, 30]
    assert len(executor.handlers._QUICK_CODE) == shapes  # (compiled once per shape in a process)


def test_quick_runners_let_go_of_arrays_a_step_no_longer_needs(quick_only):
    """A runner lets go of its inputs once its kernel ran, and of its output once it is in its
    last consumer's slot: an RNN step holds about as many arrays at once as plain numpy (4
    here), not every intermediate down the chain of runners."""
    import tracemalloc  # noqa: PLC0415

    H, B, T = 64, 32, 6
    g = gc.Graph()
    with g.as_default():
        W = gc.placeholder(gc.float32, [H, H], name="W")
        xs = gc.placeholder(gc.float32, [T, B, H], name="xs")
        h0 = gc.placeholder(gc.float32, [B, H], name="h0")
        _, h = gc.while_loop(lambda t, h: t < T, lambda t, h: (t + 1, gc.tanh(gc.matmul(h, W) + gc.matmul(xs[t], W))),
                             [gc.constant(np.int64(0)), h0])
    rng = np.random.default_rng(0)
    feeds = {W: rng.normal(size=(H, H)).astype(np.float32), xs: rng.normal(size=(T, B, H)).astype(np.float32),
             h0: rng.normal(size=(B, H)).astype(np.float32)}
    s = Session(g, num_threads=1)
    for _ in range(3):
        s.run(h, feeds)
    assert "quick" in _loop_tiers(s)
    tracemalloc.start()
    try:
        s.run(h, feeds)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4.5 * B * H * 4
