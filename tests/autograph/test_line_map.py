"""The line map of generated code (pyct.origin_info.generate, noted while the text is written)
is the map found by parsing the text back and walking it beside the converted tree: each
generated line maps to the origin of the first statement or expression starting on it, its
own or its nearest annotated ancestor's."""
from __future__ import annotations

import ast
import gast
import numpy as np
import pytest

from autograph import transpiler
from autograph.pyct import anno, origin_info, parser
from autograph.pyct.transformer import child_nodes
from autograph.testing import differential, random_programs


def _reparsed_map(transformed, source: str) -> dict:
    """The map by the other route: the text parsed back, both trees walked side by side."""
    out: dict = {}

    def walk(a, b, inherited):
        if type(a) is not type(b):
            return
        origin = anno.getanno(a, anno.ORIGIN) or inherited
        line = getattr(b, "lineno", None)
        if line and origin is not None and isinstance(b, (gast.stmt, gast.expr)):
            out.setdefault(line, (origin[0], origin[1]))
        for ca, cb in zip(child_nodes(a), child_nodes(b)):
            walk(ca, cb, origin)

    walk(transformed, gast.ast_to_gast(ast.parse(source)), None)
    return out


@pytest.fixture
def generated(monkeypatch):
    """Every (tree, source, line map) origin_info.generate makes while converting."""
    seen = []
    real = origin_info.generate

    def recording(tree):
        source, line_map = real(tree)
        seen.append((tree, source, line_map))
        return source, line_map

    monkeypatch.setattr(origin_info, "generate", recording)
    return seen


def decorate(f):
    return f


def constructs(x, n):
    total = 0
    if x > 0:
        total += 1
    elif x < -1:
        total -= 1
    elif x == 0:
        total = (x +
                 1)
    else:
        total = -x
    for i in range(n):
        try:
            total += 10 // (i - 1)
        except ZeroDivisionError as e:
            total -= 1
        finally:
            total += 0

    @decorate
    def inner(y):
        return y * 2

    scale = lambda v: v * 3  # noqa: E731
    while total > 100:
        total = total // 2
    label = f"{total} and {n}"
    return inner(total) + scale(1), label


def _check(seen) -> None:
    assert seen
    for tree, source, line_map in seen:
        assert source == parser.unparse(tree)
        assert line_map == _reparsed_map(tree, source)
        assert line_map  # (the user's lines are there)


def test_line_map_of_many_constructs(generated):
    transpiler._transform(constructs)
    _check(generated)
    converted = transpiler.convert(constructs)
    assert converted(np.int64(3), 4) == constructs(np.int64(3), 4)


@pytest.mark.parametrize("seed", range(40))
def test_line_map_of_random_programs(generated, seed):
    fn, _ = differential.load_function(random_programs.generate(seed))
    transpiler._transform(fn)
    _check(generated)


ELIF_CHAIN = """\
def g(x):
    if x > 0:
        y = 1
    elif x < -1:
        y = 2
    elif (x
          == 0):
        y = 3
    else:
        y = 4
    try:
        y += 1
    except (ValueError,
            TypeError):
        pass
    return y
"""


def test_an_elif_chain_maps_each_branch_to_its_own_line():
    # (converted code has no Python `if` left: this is the writer's own case, on a tree as parsed)
    tree = parser.parse(ELIF_CHAIN)
    origin_info.annotate(tree, "user.py", 100, 0)
    source, line_map = origin_info.generate(tree)
    assert source == parser.unparse(tree)
    assert line_map == _reparsed_map(tree, source)
    lines = source.splitlines()
    elifs = [k + 1 for k, text in enumerate(lines) if text.lstrip().startswith("elif ")]
    assert [line_map[k] for k in elifs] == [("user.py", 104), ("user.py", 106)], source
