"""A list, dict or set changed by a method called inside an expression (`log.append(k) is
None`, `stack.pop() > 0`): Python's result where Python control flow runs the call, a clear
refusal where a graph would carry no change (a loop's test, an operand of `and` / `or` or a
branch of a conditional expression decided by a tensor; an `append` inside an expression in a
loop or `if` on a tensor). Before, each was traced once and its change kept: a wrong value."""
import os

import numpy as np
import pytest

from autograph import StagingError, function
from autograph.testing import differential

FILE = os.path.basename(__file__)
MODES = [pytest.param({"control_flow": "v1"}, id="v1"), pytest.param({"control_flow": "v2"}, id="v2-lowered"),
         pytest.param({"control_flow": "v2", "functional": "direct"}, id="v2-direct"),
         pytest.param({"jit_compile": True}, id="compiled")]


def append_in_and_of_loop_test(x):
    log = []
    k = 0
    while k < x and log.append(k) is None:
        k += 1
    return k, len(log)


def pop_in_loop_test(x):
    stack = [1.0, 2.0, 3.0, 4.0]
    k = 0
    while k < x and stack.pop() > 0:
        k += 1
    return k, len(stack)


def update_in_loop_test(x):
    d = {"n": 0}
    k = 0
    while k < x and d.update(n=k) is None:
        k += 1
    return k, d["n"]


def append_in_and_at_top_level(x):
    log = []
    if x > 1 and log.append(1) is None:
        print("yes")
    return len(log)


def append_in_conditional_expression(x):
    log = []
    k = 0
    while k < x:
        y = log.append(k) if k > 0 else None
        k += 1
    return k, len(log)


def append_as_a_value_in_a_loop_body(x):
    log = []
    k = 0
    while k < x:
        ok = log.append(k) is None
        k += 1
    return k, len(log)


def append_in_an_if_test_in_a_loop(x):
    log = []
    k = 0
    while k < x:
        if log.append(k) is None and k > 1:
            print("k", k)
        k += 1
    return k, len(log)


def _push(acc, v):
    acc.append(v)
    return acc


def helper_changing_its_argument_in_an_operand(x):
    log = []
    ok = x > 1 and len(_push(log, 1.0)) > 0
    return len(log)


@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("fn,call", [
    (append_in_and_of_loop_test, "log.append"), (pop_in_loop_test, "stack.pop"), (update_in_loop_test, "d.update"),
    (append_in_and_at_top_level, "log.append"), (append_in_conditional_expression, "log.append"),
    (append_as_a_value_in_a_loop_body, "log.append"), (append_in_an_if_test_in_a_loop, "log.append"),
], ids=lambda v: getattr(v, "__name__", v))
def test_a_change_no_graph_carries_is_refused_naming_the_line_and_call(fn, call, options):
    line = fn.__code__.co_firstlineno + next(i for i, text in enumerate(
        open(__file__).read().splitlines()[fn.__code__.co_firstlineno - 1:]) if call + "(" in text)
    assert differential.call(fn, (np.float64(2.5),)).error is None  # (Python runs it)
    with pytest.raises(StagingError, match=rf"{FILE}:{line}: '{call}\(\.\.\.\)' changes a "):
        function(fn, **options)(np.float64(2.5))


@pytest.mark.parametrize("options", MODES)
def test_a_helper_handing_back_the_list_it_changed_in_an_operand_is_refused(options):
    with pytest.raises(StagingError, match=r"changes an object passed to _push, which is called in an operand of "):
        function(helper_changing_its_argument_in_an_operand, **options)(np.float64(2.5))


# -- where Python control flow runs the change, or the graph carries it: Python's results ------------

def changes_under_python_control_flow(x):
    stack = [1.0, 2.0, 3.0]
    log = []
    k = 0
    while k < 2 and stack.pop() > 0:  # a Python loop: its test runs as Python
        k += 1
    first = log.append(x) is None  # at the top level: once per call, as in Python
    s = 0.0
    n = 0
    while n < x:  # a loop on a tensor
        tmp = []
        ok = tmp.append(n) is None and len(tmp) == 1  # a list the body makes itself, each iteration
        if ok:
            s += 1.0
        n += 1
    return k, len(stack), first, len(log), s


def dict_changed_in_a_loop_body_expression(x):
    d = {"a": 0.0}
    k = 0
    while k < x:
        v = d.setdefault("a", 5.0) + 1.0  # the dict is loop state (activity reads the change)
        d["a"] = v
        k += 1
    return d["a"]


@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("fn", [changes_under_python_control_flow, dict_changed_in_a_loop_body_expression],
                         ids=lambda f: f.__name__)
def test_changes_python_or_the_graph_carries_agree_with_python(fn, options):
    for x in (np.float64(2.5), np.float64(0.0), np.float64(4.0)):
        plain = differential.call(fn, (x,))
        converted = differential.call(function(fn, **options), (x,))
        kind, detail = differential.compare(plain, converted)
        assert kind == differential.AGREE, f"{fn.__name__}({x!r}): {kind}: {detail}"
