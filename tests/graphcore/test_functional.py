"""map_fn, scan and foldl as graph loops equal their plain Python meaning."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import graphcore as gc
from executor import Session


def _run(build, xv):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [None, 3])
        out = build(x)
    return Session(g, num_threads=1).run(out, {x: xv})


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=1, max_value=6))
def test_map_scan_foldl_match_python(n):
    xv = np.arange(n * 3, dtype=np.float64).reshape(n, 3) - 4
    np.testing.assert_allclose(_run(lambda x: gc.map_fn(lambda r: gc.reduce_sum(r * r), x), xv),
                               [float((r * r).sum()) for r in xv])
    np.testing.assert_allclose(_run(lambda x: gc.scan(lambda a, r: a * 0.5 + r, x), xv),
                               np.array([xv[:i + 1][::-1].T @ (0.5 ** np.arange(i + 1)) for i in range(n)]))
    acc = 1.0
    for r in xv:
        acc = acc + float(r.max())
    np.testing.assert_allclose(_run(lambda x: gc.foldl(lambda a, r: a + gc.reduce_max(r), x, initializer=1.0), xv),
                               acc)


def test_map_fn_with_structured_output_and_eager():
    xv = np.arange(6.0).reshape(2, 3)
    out = _run(lambda x: gc.map_fn(lambda r: {"s": gc.reduce_sum(r), "m": r * 2.0}, x), xv)
    np.testing.assert_allclose(out["s"], xv.sum(1))
    np.testing.assert_allclose(out["m"], xv * 2)
    np.testing.assert_allclose(gc.scan(lambda a, r: a + r, xv), np.cumsum(xv, 0))
