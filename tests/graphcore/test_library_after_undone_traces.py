"""A trace undone (a replan, a loop body traced again with relaxed shapes) takes the
Control Flow v2 functions it added out of the library: a traced v2 graph's library holds
exactly the functions its ops call, as if each construct were traced once. (Without it
the library of most random programs kept the branches and bodies of undone traces.)"""
from __future__ import annotations

import contextlib
import io
import linecache

import pytest

import autograph
from autograph.testing.random_programs import generate
from graphcore.library import reachable_functions
from tests.scale import seeds


def _traced_graph(seed: int):
    program = generate(seed)
    filename = f"<library-after-undone-traces {seed}>"
    linecache.cache[filename] = (len(program.source), None, program.source.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(program.source, filename, "exec"), namespace)  # noqa: S102 (a generated test program)
    f = autograph.function(namespace[program.func_name], control_flow="v2")
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            return f.get_concrete_function(*program.args).graph
        except Exception:  # noqa: BLE001 (a program the converter refuses, or one that fails in Python too)
            return None


@pytest.mark.parametrize("seed", seeds(0, 60, 600))
def test_the_library_holds_only_called_functions(seed):
    g = _traced_graph(seed)
    if g is None:
        pytest.skip("the program does not trace")
    assert sorted(g.library) == sorted(fn.name for fn in reachable_functions(g))
