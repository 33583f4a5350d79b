"""Session.run end to end: loops, nesting, parallel iterations, memory, threads, errors."""
import threading
import tracemalloc

import numpy as np
import pytest

import graphcore as gc
from executor import Session


def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@pytest.fixture(scope="module")
def collatz_graph():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def body(n, steps):
            return gc.cond(gc.equal(n % 2, 0), lambda: n // 2, lambda: 3 * n + 1), steps + 1

        _, steps = gc.while_loop(lambda n, s: n != 1, body, [n, 0])
    return g, n, steps


@pytest.mark.parametrize("threads", [1, 2])
def test_collatz_by_cond_inside_while(collatz_graph, threads):
    g, n, steps = collatz_graph
    s = Session(g, num_threads=threads)
    assert s.run(steps, {n: 27}) == 111
    for v in (1, 2, 3, 6, 97):
        assert s.run(steps, {n: v}) == collatz_steps(v)


def test_double_loop_and_zero_trip_loops():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def outer(i, acc):
            _, acc = gc.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a + i * j), [0, acc])
            return i + 1, acc

        _, total = gc.while_loop(lambda i, a: i < n, outer, [0, 0])
    s = Session(g, num_threads=1)
    for v in (0, 1, 5, 12):
        assert s.run(total, {n: v}) == sum(i * j for i in range(v) for j in range(i))


def test_while_inside_cond_both_ways():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")

        def halve_until_small():
            return gc.while_loop(lambda v: v > 1.0, lambda v: v / 2.0, [x])

        r = gc.cond(x > 0, halve_until_small, lambda: -x)
    s = Session(g, num_threads=1)
    assert s.run(r, {x: 10.0}) == 0.625
    assert s.run(r, {x: 0.5}) == 0.5
    assert s.run(r, {x: -3.0}) == 3.0


def test_maximum_iterations_stops_the_loop_early():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        r = gc.while_loop(lambda i: i < 100, lambda i: i + 1, [0], maximum_iterations=n)
    s = Session(g, num_threads=1)
    assert s.run(r, {n: 7}) == 7
    assert s.run(r, {n: 0}) == 0
    assert s.run(r, {n: 1000}) == 100


def _independent_loop(parallel_iterations):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [64], name="x")
        # each iteration's heavy work depends only on i, not on the previous iteration's result
        i, acc = gc.while_loop(lambda i, acc: i < 20,
                               lambda i, acc: (i + 1, acc + gc.reduce_sum(gc.tanh(x * gc.cast(i, gc.float64)))),
                               [0, 0.0], parallel_iterations=parallel_iterations)
    return g, x, acc


def test_parallel_iterations_are_observed_in_run_stats():
    xv = np.linspace(-1, 1, 64)
    want = sum(np.tanh(xv * i).sum() for i in range(20))
    for p, check in ((10, lambda m: m > 1), (1, lambda m: m == 1)):
        g, x, acc = _independent_loop(p)
        s = Session(g, num_threads=1)
        assert np.isclose(s.run(acc, {x: xv}), want)
        in_flight = s.last_stats.max_iterations_in_flight["while"]
        assert check(in_flight), (p, in_flight)
        assert in_flight <= p


def _counting_loop():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        r = gc.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a + 1.0), [0, 0.0])
    return g, n, r


def test_loop_memory_is_constant_in_the_number_of_iterations():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        r = gc.while_loop(lambda i: i < n, lambda i: i + 1, [0])
    s = Session(g, num_threads=1)
    s.run(r, {n: 10})
    peaks = {}
    for iters in (1_000, 100_000):
        tracemalloc.start()
        out = s.run(r, {n: iters})
        peaks[iters] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert out == iters
    assert peaks[100_000] <= 2 * peaks[1_000], peaks


def test_many_threads_share_one_session():
    g, n, r = _counting_loop()
    s = Session(g)
    errors = []

    def worker(k):
        try:
            for j in range(50):
                v = (k * 7 + j) % 23
                out = s.run(r, {n: v})
                if out != [v, float(v)]:
                    errors.append((k, j, out))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_failing_kernel_names_op_frame_iteration_and_line_and_the_session_still_works():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.int64, [], name="x")
        idx = gc.placeholder(gc.int64, [], name="idx")
        table = gc.constant(np.arange(5))

        def body(i, acc):
            return i + 1, acc + table[idx + i]  # out of bounds once idx + i >= 5

        _, total = gc.while_loop(lambda i, acc: i < x, body, [0, gc.constant(0, dtype=gc.int64)])
    s = Session(g, num_threads=1)
    with pytest.raises(gc.ExecutionError) as ei:
        s.run(total, {x: 4, idx: 3})
    msg = str(ei.value)
    assert "StridedSlice" in msg and "root/while:2" in msg and "iteration 2" in msg
    assert "test_session.py:" in msg and "IndexError" in msg
    assert ei.value.iteration == 2 and ei.value.op.type == "StridedSlice"
    assert s.run(total, {x: 4, idx: 0}) == 0 + 1 + 2 + 3


@pytest.fixture
def one_blas_thread(monkeypatch):
    """BLAS on one thread, as the executor sees it: matmuls are then what its threads overlap
    (with a multithreaded BLAS they run one at a time, each on every core)."""
    import executor.blas  # noqa: PLC0415

    monkeypatch.setattr(executor.blas, "threads", lambda: 1)


def _two_matmuls():
    g = gc.Graph()
    with g.as_default():
        a, b, x, y = (gc.placeholder(gc.float64, [None, None], name=n) for n in "abxy")
        first = gc.matmul(a, b, name="first")    # ready first: goes to the pool, the other
        second = gc.matmul(x, y, name="second")  # one being ready beside it
    return g, (a, b, x, y), first, second


def test_a_failing_heavy_kernel_on_a_worker_thread_is_reported(one_blas_thread):
    g, (a, b, x, y), first, second = _two_matmuls()
    s = Session(g, num_threads=2)
    big = np.ones((200, 100))
    with pytest.raises(gc.ExecutionError, match="first.*MatMul"):
        s.run([first, second], {a: big, b: big, x: big, y: big.T})
    out = s.run([first, second], {a: big, b: big.T, x: big, y: big.T})
    assert out[0].shape == out[1].shape == (200, 200)
    assert s.last_stats.async_ops == 1


def test_a_lone_heavy_kernel_runs_on_the_calling_thread(one_blas_thread):
    # nothing else is ready beside it: a hop to a worker would only cost time
    g, (a, b, x, y), first, second = _two_matmuls()
    s = Session(g, num_threads=2)
    big = np.ones((200, 200))
    assert s.run(first, {a: big, b: big})[0, 0] == 200.0
    assert s.last_stats.async_ops == 0


def test_feeds_are_checked_and_name_the_placeholder():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        k = gc.placeholder(gc.int64, [], name="k")
        y = x * 2.0 + gc.cast(k, gc.float64)
    s = Session(g, num_threads=1)
    with pytest.raises(gc.ExecutionError, match="'k'.*must be fed"):
        s.run(y, {x: np.ones(3)})
    with pytest.raises(gc.ExecutionError, match="shape.*x:0"):
        s.run(y, {x: np.ones(4), k: 1})
    with pytest.raises(gc.ExecutionError, match="dtype float64 to k:0"):
        s.run(y, {x: np.ones(3), k: 1.5})
    np.testing.assert_array_equal(s.run(y, {x: np.ones(3), k: 1}), [3.0, 3.0, 3.0])


def test_a_feed_may_replace_any_tensor_and_only_needed_ops_run(capfd):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = x * 2.0
        z = y + 1.0
        gc.print("never fetched", x)
    s = Session(g, num_threads=1)
    assert s.run(z, {y: 10.0}) == 11.0
    assert s.run(z, {x: 1.0}) == 3.0
    assert capfd.readouterr().out == ""


def test_fetch_structures_are_preserved():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        out = Session(g, num_threads=1).run({"a": [x, (x * 2.0,)], "b": x + 1.0}, {x: 1.0})
    assert out == {"a": [1.0, (2.0,)], "b": 2.0}


def test_an_interrupted_run_leaves_the_session_usable():
    from graphcore.registry import CHEAP, define_op, get_op_def, registered_ops

    if "TestInterrupt" in registered_ops():
        op = get_op_def("TestInterrupt")
    else:
        def kernel(x):
            if x < 0:
                raise KeyboardInterrupt
            return x

        op = define_op("TestInterrupt", shape=lambda x: (x.dtype, x.shape), kernel=kernel, cost=CHEAP)
        op.not_differentiable("test op")
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        r = gc.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, op(v + x) * 1.0), [0, 0.0])
    s = Session(g)
    with pytest.raises(KeyboardInterrupt):
        s.run(r, {x: -1.0})
    assert s.run(r, {x: 1.0}) == [5, 5.0]


def test_loop_variables_computed_from_invariants_alone_let_the_loop_end(capfd):
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        x = gc.placeholder(gc.float64, [], name="x")

        def body(i, a, b, c):
            p = gc.print("invariant", x)  # must print once per iteration that runs the body
            with g.control_dependencies([p]):
                return i + 1, x, x * 2.0, 5

        r = gc.while_loop(lambda i, a, b, c: i < n, body, [0, 0.0, 0.0, 0])
    s = Session(g, num_threads=1)
    assert s.run(r, {n: 3, x: 1.5}) == [3, 1.5, 3.0, 5]
    assert s.run(r, {n: 0, x: 1.5}) == [0, 0.0, 0.0, 0]
    assert capfd.readouterr().out == "invariant 1.5\n" * 3


def test_sessions_share_one_worker_pool(one_blas_thread):
    import threading as _threading

    g, (a, b, x, y), first, second = _two_matmuls()
    big = np.ones((150, 150))
    before = _threading.active_count()
    for _ in range(5):
        s = Session(g, num_threads=2)
        assert s.run(first + second, {a: big, b: big, x: big, y: big})[0, 0] == 300.0
        assert s.last_stats.async_ops == 1
    assert _threading.active_count() <= max(before, 1) + 2


def _two_chains(depth):
    g = gc.Graph()
    with g.as_default():
        a, b = (gc.placeholder(gc.float64, [None, None], name=n) for n in "ab")
        x, y = a, b
        for _ in range(depth):
            x, y = gc.matmul(x, a), gc.matmul(y, b)
        out = gc.reduce_sum(x) + gc.reduce_sum(y)
    return g, a, b, out


def test_a_worker_runs_what_its_kernel_makes_ready(one_blas_thread):
    # two independent chains: one goes to a worker, which goes on along it itself
    g, a, b, out = _two_chains(4)
    m = np.eye(150) * 0.5
    s = Session(g, num_threads=2)
    assert s.run(out, {a: m, b: m}) == 2 * 150 * 0.5 ** 5
    st = s.last_stats
    assert st.async_ops >= 1 and st.pool_nodes >= st.async_ops + 3, st
    assert Session(g, num_threads=1).run(out, {a: m, b: m}) == 2 * 150 * 0.5 ** 5


def test_a_kernel_failing_on_one_thread_ends_the_run_while_another_computes(one_blas_thread):
    g, a, b, out = _two_chains(3)
    s = Session(g, num_threads=2)
    for bad in ({a: np.ones((150, 100)), b: np.eye(150)}, {a: np.eye(150), b: np.ones((150, 100))}):
        with pytest.raises(gc.ExecutionError, match="MatMul"):
            s.run(out, bad)
    assert s.run(out, {a: np.eye(150), b: np.eye(150)}) == 300.0


def test_with_a_multithreaded_blas_matmuls_run_one_at_a_time(monkeypatch):
    import executor.blas  # noqa: PLC0415

    monkeypatch.setattr(executor.blas, "threads", lambda: 2)
    g, (a, b, x, y), first, second = _two_matmuls()
    s = Session(g, num_threads=2)
    big = np.ones((150, 150))
    assert s.run(first + second, {a: big, b: big, x: big, y: big})[0, 0] == 300.0
    assert s.last_stats.async_ops == 0


def test_ctrl_c_while_the_pool_computes_leaves_the_session_usable():
    import _thread
    import time as _time

    from graphcore.registry import define_op, get_op_def, registered_ops

    if "TestInterruptMain" in registered_ops():
        op = get_op_def("TestInterruptMain")
    else:
        def kernel(x):
            if x.flat[0] < 0:
                _thread.interrupt_main()  # Ctrl-C, wherever the calling thread is now
                _time.sleep(0.05)
            return x

        op = define_op("TestInterruptMain", shape=lambda x: (x.dtype, x.shape), kernel=kernel)  # heavy
        op.not_differentiable("test op")
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [None], name="x")
        y = gc.placeholder(gc.float64, [None], name="y")
        out = gc.reduce_sum(op(x)) + gc.reduce_sum(op(y))
    s = Session(g, num_threads=2)
    big, bad = np.ones(200_000), -np.ones(200_000)
    for feeds in ({x: big, y: bad}, {x: bad, y: big}):
        with pytest.raises(KeyboardInterrupt):
            s.run(out, feeds)
        assert s.run(out, {x: big, y: big}) == 400_000.0
        assert s.last_stats.async_ops == 1  # one of the two ran on the pool
