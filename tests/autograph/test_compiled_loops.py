"""`@function(jit_compile=True)`: while loops of pure ops become one CompiledLoop op that
runs as generated Python (graphcore/passes/compile_loops.py, executor/compiled_loop.py).
Results, printed lines and exceptions are the same as interpreted, for every sample, the
conformance programs and random programs; what cannot be compiled stays interpreted; a
failing step is reported at its line; differentiating a compiled loop is refused clearly."""
from __future__ import annotations

import numpy as np
import pytest

import autograph
import graphcore as gc
from autograph import TensorSpec, function
from executor.compiled_loop import compiled_loop_kernel
from samples import available_samples
from test_conformance import CASES
from test_optimizer_differential import _outcome, _same, disagreements

RANDOM_SEEDS = range(2000, 2150)


def compiled_and_interpreted(python_fn, args, mode=True):
    """(value, error, printed) with jit_compile=mode, checked against the frame executor's."""
    jit = _outcome(autograph.function(python_fn, jit_compile=mode), args)
    interp = _outcome(autograph.function(python_fn), args)
    assert jit[1] == interp[1] and jit[2] == interp[2], (jit, interp)
    _same(interp[0], jit[0])
    return jit


def compiled_ops(fn, *args):
    """The CompiledLoop ops of the graph `fn` runs for `args` (optimized on the first call)."""
    fn(*args)
    return [op for op in fn.get_concrete_function(*args).graph.get_operations() if op.type == "CompiledLoop"]


@pytest.mark.parametrize("sample", available_samples(), ids=lambda s: s.name)
def test_samples(sample):
    for args in sample.examples:
        compiled_and_interpreted(sample.python_function, args)


@pytest.mark.parametrize("f,args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_conformance_programs(f, args):
    compiled_and_interpreted(f, args)


def test_random_programs():
    failures = disagreements(compiled_and_interpreted, RANDOM_SEEDS)
    assert not failures, "\n".join(failures)


def fib(n):
    a, b, i = np.int64(1), np.int64(1), np.int64(1)
    while i < n:
        a, b, i = b, a + b, i + 1
    return a


def newton(x, n):
    y = x
    k = 0
    while k < n:
        y = 0.5 * (y + x / y)
        k += 1
    return y, k


@pytest.mark.parametrize("fn, args", [(fib, (np.int64(10),)), (fib, (np.int64(200),)),  # 200: wraps around
                                      (fib, (np.int32(40),)), (newton, (np.float64(2.0), np.int64(6))),
                                      (newton, (np.float32(9.0), np.int32(3)))])
def test_pure_loops_become_one_op_and_agree_with_python(fn, args):
    jit = function(fn, jit_compile=True)
    with np.errstate(over="ignore"):
        expected = fn(*args)
    _same(expected, jit(*args))
    (op,) = compiled_ops(jit, *args)
    assert op.type == "CompiledLoop" and "fib.py" not in op.location()
    kernel = compiled_loop_kernel(op)
    assert "while True:" in kernel.source and "break" in kernel.source


def cond_in_loop(n):
    s = 0
    i = 0
    while i < n:
        if i % 3 == 0:
            s += i
        elif i % 3 == 1:
            if s > 10:
                s -= 1
        i += 1
    return s


@pytest.mark.parametrize("n", [np.int64(0), np.int64(1), np.int64(20), np.int32(50)])
def test_conds_in_a_loop_become_guarded_steps(n):
    jit = function(cond_in_loop, jit_compile=True)
    assert jit(n) == cond_in_loop(n) and type(jit(n)) is type(function(cond_in_loop)(n))
    (op,) = compiled_ops(jit, n)
    source = compiled_loop_kernel(op).source
    assert "if v" in source and " else v" in source  # guarded steps, Merges as choices


def print_in_loop(n):
    i = 0
    while i < n:
        print("i", i)
        i += 1
    return i


def loop_in_loop(n):
    total = 0
    k = 0
    while k < n:
        j = 0
        while j < k:
            total += j
            j += 1
        k += 1
    return total


def print_in_inner_loop(n):
    total = 0
    for k in range(n):
        j = 0
        while j < k:
            print("j", j)
            j += 1
        total += k
    return total


@pytest.mark.parametrize("fn", [print_in_loop, print_in_inner_loop])
def test_loops_it_cannot_take_stay_interpreted(fn, capsys):
    """A print stays in its loop, and a loop with such a loop inside stays interpreted too."""
    jit = function(fn, jit_compile=True)
    assert jit(np.int64(7)) == fn(np.int64(7))
    assert compiled_ops(jit, np.int64(7)) == []
    printed = capsys.readouterr().out
    assert printed and printed == _printed_by(fn, np.int64(7), capsys)


def _printed_by(fn, arg, capsys):
    fn(arg)
    return capsys.readouterr().out * 3  # the plain function once; the graph printed for 3 calls


def test_nested_loops_compile_into_one_op_innermost_first():
    """The inner loop compiles first and becomes a step of the outer one; a cond that reads
    the inner loop's result (count_primes' `if is_prime`) follows the compiled result."""
    jit = function(loop_in_loop, jit_compile=True)
    for n in (0, 1, 7, 12):
        assert jit(np.int64(n)) == loop_in_loop(np.int64(n))
    (op,) = compiled_ops(jit, np.int64(7))
    assert [s[0] for s in op.attrs["body_steps"]].count("CompiledLoop") == 1
    assert compiled_loop_kernel(op).source.count("while True") == 1  # the inner loop is its own kernel
    from samples.count_primes import count_primes
    primes = function(count_primes, jit_compile=True)
    assert [primes(np.int64(n)) for n in (2, 30, 100)] == [count_primes(n) for n in (2, 30, 100)]
    assert len(compiled_ops(primes, np.int64(30))) == 1


def grow(x, y, n):
    i = 0
    while i < n:
        x = x + y
        i += 1
    return x


def test_a_failing_step_is_reported_at_its_line():
    jit = function(grow, jit_compile=True,
                   input_signature=[TensorSpec([None], gc.float64), TensorSpec([None], gc.float64),
                                    TensorSpec([], gc.int64)])
    assert compiled_ops(jit, np.ones(3), np.ones(3), np.int64(2))
    with pytest.raises(gc.ExecutionError) as e:
        jit(np.ones(3), np.ones(4), np.int64(2))
    message = str(e.value)
    assert "(Add)" in message and f"test_compiled_loops.py:{grow.__code__.co_firstlineno + 3}" in message
    np.testing.assert_array_equal(jit(np.ones(3), np.full(3, 2.0), np.int64(2)), grow(np.ones(3), np.full(3, 2.0), 2))


def test_differentiating_a_compiled_loop_is_refused_with_what_to_do():
    jit = function(newton, jit_compile=True)
    args = (np.float64(2.0), np.int64(4))
    jit(*args)
    concrete = jit.get_concrete_function(*args)
    with concrete.graph.as_default():
        with pytest.raises(gc.GraphError, match="jit_compile"):
            gc.gradients(concrete.structured_outputs[0], [concrete.inputs[0]])


def test_session_jit_compile_runs_a_compiled_copy():
    from executor import Session

    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        _, y = gc.while_loop(lambda i, v: i < 30, lambda i, v: (i + 1, v * 0.5 + x), [0, x])
    plain = Session(g).run(y, {x: 3.0})
    s = Session(g, jit_compile=True)
    assert s.run(y, {x: 3.0}) == plain
    assert {p.name: p.rewritten for p in s.last_optimize_report.passes}["compile_loops"] == 1
    assert not any(op.type == "CompiledLoop" for op in g.get_operations())  # the user's graph is left as it is


def test_cli_graph_jit_prints_the_compiled_loop():
    from typer.testing import CliRunner

    from cli.main import app

    r = CliRunner().invoke(app, ["graph", "fibonacci", "10", "--jit", "--plain"])
    assert r.exit_code == 0, r.output
    assert "CompiledLoop(" in r.output and "compile_loops" in r.output
    assert "def loop(" in r.output and "while True:" in r.output and "fibonacci.py:15, compiled" in r.output
    r = CliRunner().invoke(app, ["graph", "print_loop", "3", "4", "--jit", "--plain"])
    assert r.exit_code == 0 and "no loop was compiled" in r.output


def test_options_given_to_an_already_decorated_function_apply():
    """`function(f, jit_compile=True)` on an `@function` f traces the plain function with
    these options (it used to call the decorated one inside, options ignored)."""
    from samples.collatz import collatz
    assert isinstance(collatz, autograph.Function)
    jit = function(collatz, jit_compile=True)
    assert jit.jit_compile and jit.python_function is collatz.python_function
    assert jit(np.int64(9)) == collatz(np.int64(9))
    assert compiled_ops(jit, np.int64(9)) and not compiled_ops(collatz, np.int64(9))
    plain = function(collatz, optimize=False)
    plain(np.int64(9))
    assert plain.get_concrete_function(np.int64(9)).optimize_report is None


def test_what_waits_for_any_exit_of_a_compiled_loop_waits_for_the_compiled_loop():
    """Every Exit's waiters move to the CompiledLoop (only the last Exit's did: the erase of
    the others then refused, as ops still waited for them)."""
    from executor import Session  # noqa: PLC0415
    from graphcore.passes import optimize  # noqa: PLC0415

    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.int64, [], name="x")
        i, v = gc.while_loop(lambda i, v: i < x, lambda i, v: (i + 1, v * 2),
                             [gc.constant(np.int64(0)), gc.constant(np.int64(1))])
        with g.control_dependencies([i.op, v.op]):
            y = gc.identity(v) + 1
    y = optimize(g, [y], passes=["compile_loops"], validate=True).fetches[0]
    (loop,) = [op for op in g.get_operations() if op.type == "CompiledLoop"]
    assert any(loop in op.control_inputs for op in g.get_operations())
    assert Session(g).run(y, {x: np.int64(5)}) == 33
