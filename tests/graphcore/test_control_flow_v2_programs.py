"""Converted programs under Control Flow v2 give what plain Python gives, lowered and run
directly (and compiled, and on two devices): the converter's operators that build ops
inside a loop's test or body (int(), float(), bool(), len(), comparison chains, and/or,
print, staged lists, assert) build them in the function they belong to."""
import math

import numpy as np
import pytest

from autograph import StagingError, function
from autograph.testing import differential
from graphcore.library import reachable_functions

V2_MODES = [
    pytest.param({"control_flow": "v2"}, id="v2-lowered"),
    pytest.param({"control_flow": "v2", "functional": "direct"}, id="v2-direct"),
    pytest.param({"control_flow": "v2", "jit_compile": True}, id="v2-compiled"),
    pytest.param({"control_flow": "v2", "devices": ["cpu:0", "cpu:1"]}, id="v2-two-devices"),
]


def int_in_test(x):  # random programs, seed 71000771: the body waited for an op of the cond function
    k = 0
    while int(x) and k < 3:
        k += 1
    return k


def float_in_test(x):
    k = 0
    while float(x) > k and k < 3:
        k += 1
    return k


def bool_in_test(x):
    k = 0
    while bool(x - k) and k < 3:
        k += 1
    return k


def len_in_test(x):
    xs = np.arange(4.0) * x
    k = 0
    while k < len(xs) and xs[k] < 5:
        k += 1
    return k


def comparison_chain_in_test(x):
    k = 0
    while 0 <= k < x < 10:
        k += 1
    return k


def or_in_test(x):
    k = 0
    while (k < 2 or x > 100) and k < 5:
        k += 1
    return k


def print_in_test(x):  # the cond function returns only the predicate: its print must still run
    print("start")
    k = 0
    while print("test", k) or k < x:
        k += 1
    return k


def print_in_and_in_test(x):  # the print is in a cond inside the loop's test
    k = 0
    while k < x and print("test", k) is None:
        k += 1
    return k


def print_in_body(x):
    k = 0
    while k < x:
        print("body", k)
        k += 1
    return k


def staged_list(x):
    ys = []
    k = 0
    while k < x:
        ys.append(k * 2)
        k += 1
    return k, len(ys)


def conversions_in_a_cond_in_a_loop(x):
    k = 0
    s = 0.0
    while int(x) > k:
        if float(k) > 1.5 and bool(x):
            s += 1.0
        k += 1
    return s


def assert_and_int_in_test(x):
    k = 0
    while k < 3 and int(x) > -5:
        assert x > -100
        k += 1
    return k


def while_else_with_break(x):
    k = 0
    while int(x) > k:
        k += 1
        if k > 5:
            break
    else:
        k = -1
    return k


def nested_loops_with_conversions(x):
    k = 0
    while int(x) and k < 3:
        j = 0
        while bool(x) and j < int(x):
            j += 1
        k += j
    return k


PROGRAMS = [int_in_test, float_in_test, bool_in_test, len_in_test, comparison_chain_in_test, or_in_test,
            print_in_test, print_in_and_in_test, print_in_body, staged_list, conversions_in_a_cond_in_a_loop,
            assert_and_int_in_test, while_else_with_break, nested_loops_with_conversions]
ARGUMENTS = [np.float32(2.5), np.float64(0.0), np.float64(7.0)]


def _agrees(fn, options):
    for x in ARGUMENTS:
        plain = differential.call(fn, (x,))
        converted = differential.call(function(fn, **options), (x,))
        kind, detail = differential.compare(plain, converted)
        assert kind == differential.AGREE, f"{fn.__name__}({x!r}): {kind}: {detail}"


@pytest.mark.parametrize("options", V2_MODES)
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_converted_loops_agree_with_python_under_v2(fn, options):
    _agrees(fn, options)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_the_same_programs_agree_under_v1(fn):
    """print_in_and_in_test included: its loop's only effect is the print in a cond in its
    test, which v1 used to leave off the token (tests/autograph/test_effects_in_loop_tests.py)."""
    _agrees(fn, {"control_flow": "v1"})


# -- what v2 refuses, as v1 does: changes another name, the caller or a `with` would see ------------

def _conformance():
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "autograph"))
    import conformance_programs as cp
    return cp


@pytest.mark.parametrize("program,arg,match", [
    ("appends_through_one_name", np.array([1.0, 2.0]), r"changes the list that 'alias' also names"),
    ("appends_in_if_through_one_name", np.float64(1.0), r"changes the list that 'alias' also names"),
    ("changes_array_another_name_shares_in_if", np.float64(1.0), r"'z' shares its memory"),
    ("adds_to_a_set_in_loop", np.array([1.0, 2.0, 1.0]), r"changes a set inside a loop or `if` on a tensor"),
])
@pytest.mark.parametrize("options", V2_MODES[:2])
def test_changes_another_name_would_see_are_refused_inside_v2_bodies(program, arg, match, options):
    """A v2 branch or body is a function graph with no v1 context: the converter asks
    control_flow_scope, not `control_flow_context is None`, whether it is at the top level."""
    with pytest.raises(StagingError, match=match):
        function(getattr(_conformance(), program), **options)(arg)


def bumps_argument_in_loop(xs, n):
    k = 0
    while k < n:
        xs += 1.0
        k += 1
    return k


def sets_items_of_argument_in_if_in_loop(xs, n):
    for j in range(n):
        if xs[0] > 2.0:
            xs[1] = j
        else:
            xs *= 2.0
    return xs[0]


@pytest.mark.parametrize("options", V2_MODES)
@pytest.mark.parametrize("fn,n", [(bumps_argument_in_loop, 2), (sets_items_of_argument_in_if_in_loop, 3)],
                         ids=["loop", "if-in-loop"])
def test_an_argument_array_changed_inside_v2_functions_is_written_back(fn, n, options):
    """The caller's array after the call is Python's: the change made in a While's body or an
    If's branch is followed out through the op's outputs (random programs, seed 43: it was
    silently lost)."""
    want, got = np.array([1.0, 2.0]), np.array([1.0, 2.0])
    assert function(fn, **options)(got, np.int64(n)) == fn(want, np.int64(n))
    np.testing.assert_array_equal(got, want)


class _Timer:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def with_in_loop(x):
    k = 0
    while k < x:
        with _Timer():
            k += 1
    return k


def test_a_with_block_inside_a_v2_loop_is_refused():
    for control_flow in ("v1", "v2"):
        with pytest.raises(StagingError, match="`with _Timer\\(\\)` inside a loop or `if` on a tensor"):
            function(with_in_loop, control_flow=control_flow)(np.float64(3.0))


def chained_comparison_returned(x):
    return x != 3.0 >= x


def test_direct_fetches_a_0d_value_as_its_numpy_scalar():
    """As the frame executor fetches it (random programs, seed 110: np.False_, not array(False))."""
    got = function(chained_comparison_returned, control_flow="v2", functional="direct")(np.float64(5.0))
    assert type(got) is np.bool_ and got == chained_comparison_returned(np.float64(5.0))


def countdown_sum(n):
    s = 0
    while n > 0:
        s += n * n
        n -= 1
    return s


@pytest.mark.parametrize("functional", ["lower", "direct"])
def test_compiled_loops_take_a_while_through_its_lowered_frame(functional):
    """jit_compile with v2: the While is lowered to the frame v1 builds and compile_loops
    makes its CompiledLoop (direct execution does not keep the While then: the compiled
    loop is faster); the same value as v1's compiled loop and Python."""
    n = np.int64(30)
    v1 = function(countdown_sum, control_flow="v1", jit_compile=True)
    v2 = function(countdown_sum, control_flow="v2", functional=functional, jit_compile=True)
    assert v2(n) == v1(n) == countdown_sum(n)
    types = v2.get_concrete_function(n).graph.op_types()
    assert "CompiledLoop" in types and "While" not in types


def prints_then_a_math_error(x, xs):
    if x >= 7:
        for v in xs[::-1]:
            print("v:", v)
            if not v == 1:
                if not math.floor(x):
                    return 4 <= x < 3
        return x < 2
    return x <= -1


@pytest.mark.parametrize("options", [{"control_flow": "v1"}] + [p.values[0] for p in V2_MODES])
def test_a_failing_math_call_in_a_v2_branch_comes_after_the_prints_before_it(options):
    """math.floor(inf) fails the run where Python raises, after the print before it: the
    check is built in the branch function under the effects before it (it was built with
    the waits of the graph its input came from, the enclosing one: no wait, so it ran first;
    random programs seed 1594)."""
    args = (np.float64(np.inf), np.array([2, 4]))
    plain = differential.call(prints_then_a_math_error, args)
    converted = differential.call(function(prints_then_a_math_error, **options), args)
    assert plain.error == "OverflowError" and plain.stdout == "v: 4\n"
    kind, detail = differential.compare(plain, converted)
    assert kind == differential.AGREE, detail


def test_a_failing_math_call_in_a_v2_branch_waits_for_the_effects_before_it():
    traced = function(prints_then_a_math_error, control_flow="v2", optimize=False).get_concrete_function(
        np.float64(np.inf), np.array([2, 4]))
    floors = [op for fn in reachable_functions(traced.graph) for op in fn.get_operations() if op.type == "PythonMath"]
    assert floors and all(op.control_inputs and all(c.graph is op.graph for c in op.control_inputs) for op in floors)


def _scaled(a, b=0.0, *, scale=0.1):
    if a > b:
        return (a - b) * scale
    return a + scale


def path_typed_after_an_early_return(n, m, x):
    if m > 7:
        return
    else:
        total = _scaled(x if n <= 5 else 3.0, b=-1.25, scale=3.0)
    return (1.1, total)


@pytest.mark.parametrize("options", V2_MODES[:2])
@pytest.mark.parametrize("n", [np.int64(6), np.int64(2)])
def test_a_value_whose_python_type_depends_on_the_path_keeps_it_through_v2_functions(n, options):
    """A float on one path and np.float64 on another, read in a branch function that
    captures it: its kind is the captured tensor's (random programs seed 2670 returned
    np.float64(12.75) for Python's 12.75)."""
    args = (n, np.int64(5), np.float64(1.75))
    want = path_typed_after_an_early_return(*args)
    got = function(path_typed_after_an_early_return, **options)(*args)
    assert got == want
    exact_types = [type(v) for v in want]
    assert [type(v) for v in got] == exact_types
