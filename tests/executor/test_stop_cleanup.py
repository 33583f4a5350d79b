"""A compiled Python loop stopped from another thread (deadline, cancellation) leaves
nothing behind in its thread: no stray KernelStopped raised later in unrelated code, the
counts back to zero, and the interpreter's "async exception pending" flag not left set
(PyThreadState_SetAsyncExc(id, NULL), once used to clear a stop, left it set for good and
made every thread of the process run slower: a test suite stalled on it)."""
import threading
import time

import pytest

from executor import interrupt


@pytest.fixture
def no_null_clears(monkeypatch):
    calls = []
    real = interrupt._set_async_exc

    def recording(tid, exc):
        calls.append(exc)
        return real(tid, exc)
    monkeypatch.setattr(interrupt, "_set_async_exc", recording)
    yield calls
    assert None not in calls, "a stop was cleared with PyThreadState_SetAsyncExc(id, NULL)"


@pytest.mark.parametrize("returns", [False, True], ids=["stopped in C code", "stopped in Python code"])
def test_a_stop_sent_while_the_loop_ends_is_not_raised_later(no_null_clears, returns):
    for _ in range(3):
        stop = interrupt.RunStop()
        threading.Timer(0.05, stop.stop, ("cancelled",)).start()

        def loop():
            if returns:
                end = time.monotonic() + 0.2
                while time.monotonic() < end:
                    pass
                return 1
            time.sleep(0.2)  # the stop comes while the thread is in C: it is raised as it returns
            return 1
        try:
            stop.run_python(loop, (), "op")
        except interrupt.KernelStopped as e:
            assert e.args == ("cancelled", "op")
        total = 0
        for i in range(100_000):  # unrelated code after the run: nothing raised in it
            total += i
        assert total == 4_999_950_000
        assert interrupt.active_kernels() == 0 and not any(stop.threads.values())
    assert no_null_clears and set(no_null_clears) == {interrupt.KernelStopped}


def test_a_stop_dropped_by_code_the_loop_happened_to_run_is_sent_again(no_null_clears):
    # CPython raises the stop in whatever Python code the thread runs next: a finalizer or
    # weakref callback the garbage collector calls mid-loop prints it and drops it (numba's
    # did, and a deadline was missed: the loop ran to its end). The stop is sent again.
    stop = interrupt.RunStop()
    dropped = []

    def loop():
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                for _ in range(1000):
                    pass
            except interrupt.KernelStopped:
                if dropped:
                    raise
                dropped.append(time.monotonic())  # as the finalizer's caller would
        return "ran to its end"

    threading.Timer(0.05, stop.stop, ("deadline",)).start()
    t0 = time.monotonic()
    with pytest.raises(interrupt.KernelStopped) as e:
        stop.run_python(loop, (), "op")
    assert e.value.args == ("deadline", "op") and len(dropped) == 1
    assert time.monotonic() - t0 < 5  # sent again within RESEND_S, not at the loop's end
    total = sum(range(100_000))  # nothing left pending for the code after the run
    assert total == 4_999_950_000 and interrupt.active_kernels() == 0
