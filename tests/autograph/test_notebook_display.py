"""What a notebook shows: Graph, ConcreteFunction and Function give short reprs and a
`_repr_mimebundle_` (SVG when Graphviz is there, the listing always); to_code's result
displays as highlighted Python."""
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import graphcore as gc
from autograph import function, to_code

HAS_DOT = shutil.which("dot") is not None


@function
def countdown(n):
    steps = 0
    while n > 0:
        n = n - 1
        steps += 1
    return steps


def _titles(svg: str) -> set[str]:
    root = ET.fromstring(svg)
    return {t.text for t in root.iter("{http://www.w3.org/2000/svg}title")}


def test_short_reprs():
    cf = countdown.get_concrete_function(np.int64(3))
    assert repr(cf.graph) == f"<Graph: {len(cf.graph)} ops, 1 while loop>"
    assert repr(cf) == f"<ConcreteFunction countdown(n: int64[]) -> int64[]: {len(cf.graph)} ops, 1 while loop>"
    assert repr(countdown).startswith("<Function countdown(n): ") and repr(countdown).endswith(" trace>")
    assert repr(gc.Graph()) == "<Graph: 0 ops>"


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz `dot` is not installed")
@pytest.mark.needs_graphviz
def test_mimebundles_hold_the_picture_and_the_listing():
    cf = countdown.get_concrete_function(np.int64(3))
    for obj in (cf.graph, cf, countdown):
        bundle = obj._repr_mimebundle_()
        assert set(bundle) == {"text/plain", "image/svg+xml"}
        assert "= Placeholder()" in bundle["text/plain"] and "Enter(" in bundle["text/plain"]
        assert "while/Merge" in _titles(bundle["image/svg+xml"])
    assert "result_0" in _titles(cf._repr_mimebundle_()["image/svg+xml"])  # the result is marked
    assert set(cf._repr_mimebundle_(exclude={"image/svg+xml"})) == {"text/plain"}


def test_without_graphviz_the_listing_is_shown(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no `dot` to run
    cf = countdown.get_concrete_function(np.int64(3))
    bundle = cf._repr_mimebundle_()
    assert set(bundle) == {"text/plain"} and bundle["text/plain"].startswith("<ConcreteFunction countdown(")


def test_an_untraced_function_says_so():
    @function
    def never_called(x):
        return x

    bundle = never_called._repr_mimebundle_()
    assert bundle == {"text/plain": "<Function never_called(x): 0 traces>\n(not traced yet: call it, or "
                                    "get_concrete_function(...))"}


def test_to_code_is_a_str_shown_as_highlighted_python():
    code = to_code(countdown)
    assert isinstance(code, str) and code.startswith("def countdown(n):")
    bundle = code._repr_mimebundle_()
    assert bundle["text/plain"] == code.rstrip("\n")
    html = bundle["text/html"]
    assert html.startswith('<div class="highlight"') and "<span" in html and "countdown" in html
