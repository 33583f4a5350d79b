"""The code emitter (executor/codegen.py) and the builders' own defence: a CompiledLoop or
Fused op whose attributes hold text (attack strings), out-of-range or ill-typed indices
reaches a builder (as if a graph file's checks had missed it): no code from it runs, and
the builder raises GraphError naming the op, never a raw TypeError/IndexError/SyntaxError.
Generated functions are compiled under linecache-registered names."""
from __future__ import annotations

import copy
import linecache
import traceback
import types

import numpy as np
import pytest

import graphcore as gc
from executor import Session, codegen
from executor.compiled_loop import compiled_loop_kernel
from executor.fused_kernel import fused_kernel
from executor.numba_loop import numba_available
from graphcore.errors import ExecutionError, GraphError


@pytest.fixture
def attack(tmp_path):
    """An attack string that would create a file if it ever ran, and the file."""
    target = tmp_path / "PWNED"
    text = f"0 if __import__('os').system('touch {target}') is None else 0"
    yield text
    assert not target.exists(), "code from an attribute ran"


def _jit_graph(backend=None):
    """A graph whose loop has a cond inside (a cond's Merge, guarded steps), compiled."""
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def body(i, x):
            x = gc.cond(x % 2 == 0, lambda: x // 2, lambda: 3 * x + 1)
            return i + 1, x
        r = gc.while_loop(lambda i, x: i < n, body, [gc.constant(np.int64(0)), gc.constant(np.int64(27))])
    s = Session(g, jit_compile="numba" if backend == "numba" else True)
    assert s.run(r, {n: np.int64(3)}) == [3, 124]
    graph = next(iter(s._optimized.values()))[0]
    op = next(o for o in graph.get_operations() if o.type == "CompiledLoop")
    return op


@pytest.fixture(scope="module")
def loop_op():
    return _jit_graph()


def _fake(op, attrs=None, name=None):
    """An op like `op` with other attributes or name (what a builder reads of an op)."""
    return types.SimpleNamespace(type=op.type, name=op.name if name is None else name, inputs=op.inputs,
                                 attrs=copy.deepcopy(op.attrs) if attrs is None else attrs)


def _builds_or_refuses(op):
    """The builder makes a kernel, or raises GraphError naming the op: nothing else."""
    try:
        return compiled_loop_kernel(op)
    except GraphError as e:
        assert repr(codegen.label(op.name)) in str(e) or op.name in str(e), str(e)
        return None


def _merge_step(a):
    for key in ("cond_steps", "body_steps"):
        for j, s in enumerate(a[key]):
            if s[0] == "Merge":
                return key, j
    raise AssertionError("no cond Merge in the loop")


def _guarded_step(a):
    for j, s in enumerate(a["body_steps"]):
        if s[6]:
            return j
    raise AssertionError("no guarded step in the loop")


def _set(a, key, j, field, value):
    steps = list(a[key])
    step = list(steps[j])
    step[field] = value
    steps[j] = tuple(step)
    a[key] = tuple(steps)


PLACES = ["exits", "nexts", "pred", "merge_inputs", "guard", "step_type", "step_inputs", "n_vars"]


def _poison(a, place, value):
    if place == "exits":
        a["exits"] = [value]
    elif place == "nexts":
        a["nexts"] = [value] + list(a["nexts"][1:])
    elif place == "pred":
        a["pred"] = value
    elif place == "merge_inputs":
        key, j = _merge_step(a)
        _set(a, key, j, 1, (value,) + tuple(a[key][j][1][1:]))
    elif place == "guard":
        j = _guarded_step(a)
        _set(a, "body_steps", j, 6, ((value, True),))
    elif place == "step_type":
        _set(a, "body_steps", 0, 0, value)
    elif place == "step_inputs":
        _set(a, "body_steps", 0, 1, (value,))
    elif place == "n_vars":
        a["n_vars"] = value


@pytest.mark.parametrize("place", PLACES)
def test_an_attack_string_in_a_loop_attribute_runs_nothing_and_names_the_op(loop_op, attack, place):
    a = copy.deepcopy(loop_op.attrs)
    _poison(a, place, attack)
    with pytest.raises(GraphError) as e:
        compiled_loop_kernel(_fake(loop_op, a))
    assert loop_op.name in str(e.value)


@pytest.mark.parametrize("bad", ["0", -1, 10 ** 6, 1.0, True, None, [0], (0, 1), {"a": 1}],
                         ids=lambda b: repr(b)[:12])
@pytest.mark.parametrize("place", PLACES)
def test_a_malformed_loop_attribute_is_a_graph_error_never_a_raw_one(loop_op, place, bad):
    a = copy.deepcopy(loop_op.attrs)
    _poison(a, place, bad)
    kernel = _builds_or_refuses(_fake(loop_op, a))
    if kernel is not None:  # (an index that happens to be in range: a loop, but no raw error at the build)
        assert callable(kernel)


def test_a_loop_op_named_with_code_builds_and_runs_nothing(loop_op, attack):
    name = f"loop\n{attack}\n# "
    kernel = compiled_loop_kernel(_fake(loop_op, name=name))
    for source in [kernel.source, *getattr(kernel, "inner_sources", ())]:
        assert "\n" + attack not in source


@pytest.mark.skipif(not numba_available(), reason="numba is optional")
@pytest.mark.parametrize("place", ["exits", "nexts", "pred", "merge_inputs", "guard"])
def test_the_numba_builder_is_defended_too(attack, place):
    op = _jit_graph("numba")
    assert op.attrs.get("backend") == "numba"
    a = copy.deepcopy(op.attrs)
    _poison(a, place, attack)
    with pytest.raises(GraphError):
        compiled_loop_kernel(_fake(op, a))


def test_a_tampered_loop_fails_its_run_with_a_graph_error_naming_it(attack, tmp_path):
    op = _jit_graph()
    graph = op.graph
    op.attrs["exits"] = [attack]
    fetch = op.outputs[0]
    with pytest.raises(GraphError) as e:
        Session(graph).run(fetch, {graph.get_tensor_by_name("n:0"): np.int64(3)})
    assert op.name in str(e.value)


def _fused_op():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        y = gc.tanh(x * 2.0 + 1.0)
    s = Session(g, optimize=True)
    s.run(y, {x: np.ones(3)})
    graph = next(iter(s._optimized.values()))[0]
    return next(o for o in graph.get_operations() if o.type == "Fused")


@pytest.mark.parametrize("field", [0, 1, 2, 5])
def test_an_attack_in_a_fused_step_runs_nothing_and_names_the_op(attack, field):
    op = _fused_op()
    steps = [list(s) for s in op.attrs["steps"]]
    steps[-1][field] = attack if field != 1 else (attack,)
    a = dict(op.attrs, steps=tuple(tuple(s) for s in steps))
    with pytest.raises(GraphError) as e:
        fused_kernel(_fake(op, a))
    assert op.name in str(e.value)


def test_literals_and_identifiers_are_only_checked_values():
    assert codegen.literal(3) == "3" and codegen.literal(np.int64(-2)) == "-2"
    assert codegen.literal(True) == "True" and codegen.literal(0.5) == "0.5"
    for bad in ["1", "__import__('os')", float("nan"), float("inf"), None, [1], object()]:
        with pytest.raises(GraphError):
            codegen.literal(bad)
    assert codegen.ident("v", 7) == "v7"
    for prefix, number in [("v", "7"), ("v", -1), ("v", 1.0), ("v", True), ("v-", 1), ("v\n", 1), ("", 1)]:
        with pytest.raises(GraphError):
            codegen.ident(prefix, number)
    assert codegen.index(2, 3) == 2
    for bad in [3, -1, "1", 1.0, False]:
        with pytest.raises(GraphError):
            codegen.index(bad, 3)


def test_generated_lines_show_in_tracebacks():
    src = codegen.Source()
    with src.block("def f(x0)"):
        src.line("v1 = x0 + 1")
        src.line("return v1 // x0")
    f = codegen.compile_function(src.text(), "f", {}, "test function", "my op\nname")
    assert "\n" not in f.__code__.co_filename
    assert linecache.getline(f.__code__.co_filename, 3).strip() == "return v1 // x0"
    try:
        f(0)
    except ZeroDivisionError as e:
        text = "".join(traceback.format_exception(e))
    assert "return v1 // x0" in text


def test_a_compiled_loop_failing_shows_its_generated_lines_and_the_users_line():
    g = gc.Graph()
    with g.as_default():
        xs = gc.placeholder(gc.float64, [None], name="xs")
        n = gc.placeholder(gc.int64, [], name="n")
        r = gc.while_loop(lambda i, t: i < n, lambda i, t: (i + 1, t + xs[i]),  # the failing line
                          [gc.constant(np.int64(0)), gc.constant(0.0)])
    s = Session(g, jit_compile=True)
    with pytest.raises(ExecutionError) as e:
        s.run(r, {xs: np.arange(3.0), n: np.int64(5)})
    assert "test_codegen.py" in str(e.value)
    frames = traceback.extract_tb(e.value.__cause__.__traceback__)
    generated = [f for f in frames if f.filename.startswith("<compiled loop")]
    assert generated and all(f.line for f in generated)  # (the lines are in linecache)
