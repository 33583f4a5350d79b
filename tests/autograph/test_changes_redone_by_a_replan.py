"""A change to an object from outside the function (a closure's list) inside a loop or `if` on
a tensor that is traced again (a replan for a print or a type, a loop body's dry run), under
Control Flow v1, v2 lowered, v2 direct and jit_compile=True. Nothing undoes the change when the
trace is undone, so it was made twice in one call (`log` held [1, 1] where Python appends once):
now refused naming the file, line and change. The rewrite the refusal gives (a local list,
extended after the call) gives Python's values."""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

from autograph import function
from autograph.errors import StagingError

ENGINES = [
    pytest.param({"control_flow": "v1"}, id="v1"),
    pytest.param({"control_flow": "v2", "functional": "lower"}, id="v2-lowered"),
    pytest.param({"control_flow": "v2", "functional": "direct"}, id="v2-direct"),
    pytest.param({"jit_compile": True}, id="compiled"),
]


def programs():
    """Fresh functions over a fresh closure list `log` (each call of `programs` its own)."""
    log = []

    def in_an_if_traced_again(x):  # the print makes the branch be traced again
        if x > 0:
            log.append(1)
            print("appended")
            r = 1
        else:
            r = 2.5
        return r

    def in_a_loop_traced_again(x, n):
        i = 0
        while i < n:
            log.append(1)
            print(i)
            i += 1
        return i

    def in_a_loop_planned_by_a_dry_run(x, n):
        acc = [x, x]
        i = 0
        while i < n:
            log.append(1)
            acc = [acc[0] + 1.0, acc[1] * 2.0]
            i += 1
        return acc[0]

    return log, [(in_an_if_traced_again, (np.float64(1.0),)), (in_a_loop_traced_again, (np.float64(1.0), np.int64(3))),
                 (in_a_loop_planned_by_a_dry_run, (np.float64(1.0), np.int64(3)))]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("index", [0, 1, 2], ids=["if", "loop", "dry-run"])
def test_a_change_a_second_trace_would_redo_is_refused(index, engine):
    _, fns = programs()
    fn, args = fns[index]
    lines, first = inspect.getsourcelines(fn)
    line = first + next(i for i, s in enumerate(lines) if "log.append(1)" in s)
    with warnings.catch_warnings(), pytest.raises(StagingError) as info:
        warnings.simplefilter("ignore")
        function(fn, **engine)(*args)
    message = str(info.value)
    assert f"test_changes_redone_by_a_replan.py:{line}: 'log.append(...)'" in message, message
    assert "would be made twice" in message and "log.extend(new_items)" in message, message


def rewritten(log):
    def collects_in_a_local(x):  # what the refusal says to write
        new_items = []
        if x > 0:
            new_items.append(1.0)
            print("appended")
        return x * 2.0, new_items
    return collects_in_a_local


@pytest.mark.parametrize("engine", ENGINES)
def test_the_rewrite_gives_pythons_log(engine):
    for x in (np.float64(1.0), np.float64(-1.0)):
        plain_log, graph_log = [], []
        value, new = rewritten(plain_log)(x)
        plain_log.extend(new)
        got, new = function(rewritten(graph_log), **engine)(x)
        graph_log.extend(new)
        assert got == value and graph_log == plain_log, (x, got, graph_log, plain_log)
