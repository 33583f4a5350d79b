"""Session(functional="direct", jit_compile=...) compiles, as @function does with those
options: its Whiles are lowered and made compiled loops (compiling a While takes its
lowered frame), not run directly with the jit option silently dropped."""
from __future__ import annotations

import numpy as np
import pytest

import graphcore as gc
from executor import Session


def _fib_graph():
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        n = gc.placeholder(gc.int64, [], name="n")
        out = gc.while_loop(lambda i, a, b: i < n, lambda i, a, b: (i + 1, b, a + b),
                            [np.int64(0), np.int64(0), np.int64(1)])
    assert any(op.type == "While" for op in g.get_operations())
    return g, n, out[1]


def _fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@pytest.mark.parametrize("jit", [True, "numba"])
def test_direct_with_jit_compile_runs_a_compiled_loop(jit):
    if jit == "numba":
        pytest.importorskip("numba")
    g, n, a = _fib_graph()
    s = Session(g, functional="direct", jit_compile=jit)
    assert s.run(a, {n: np.int64(30)}) == _fib(30)
    report = s.last_optimize_report
    assert report is not None, "the run was not optimized: jit_compile was dropped"
    ran = [op.type for op in report.fetches[0].graph.get_operations()]
    assert "CompiledLoop" in ran and "While" not in ran, ran

def test_direct_without_jit_runs_the_while_as_an_op():
    g, n, a = _fib_graph()
    s = Session(g, functional="direct")
    assert s.run(a, {n: np.int64(30)}) == _fib(30)
    assert s.last_optimize_report is None
