"""Central finite differences for gradient tests (float64)."""
from __future__ import annotations

import numpy as np

from executor import Session


def numeric_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d f(x) / dx by central differences; f maps an array to a scalar."""
    x = np.array(x, dtype=np.float64)
    out = np.zeros_like(x)
    flat, gflat = x.reshape(-1), out.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = float(f(x))
        flat[i] = old - eps
        lo = float(f(x))
        flat[i] = old
        gflat[i] = (hi - lo) / (2 * eps)
    return out


def check_graph_grads(g, y, xs, grads, feeds: dict, rtol=1e-5, atol=1e-7, session=None):
    """Compare symbolic `grads` (tensors, one per placeholder in `xs`) at `feeds`
    with central differences of the scalar `y`."""
    s = session or Session(g, num_threads=1)
    sym = s.run(list(grads), feeds)
    for x, gs in zip(xs, sym):
        base = dict(feeds)

        def f(v, x=x, base=base):
            d = dict(base)
            d[x] = v
            return s.run(y, d)

        num = numeric_grad(f, feeds[x])
        assert gs is not None, f"no gradient for {x.name}"
        np.testing.assert_allclose(np.asarray(gs), num, rtol=rtol, atol=atol, err_msg=f"gradient for {x.name}")
    return sym
