"""`autograph demo`: every sample, converted and as plain Python, compared in a table."""
from __future__ import annotations

import contextlib
import io
import time
from dataclasses import dataclass

import numpy as np

from .render import short_value


def values_agree(a, b, rtol: float | None = None) -> bool:
    """Same structure and values; floats within `rtol` (default 1e-9), others exact."""
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        if not isinstance(a, (list, tuple)) or not isinstance(b, (list, tuple)) or len(a) != len(b):
            return False
        return all(values_agree(x, y, rtol) for x, y in zip(a, b))
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(
            values_agree(a[k], b[k], rtol) for k in a)
    try:
        x, y = np.asarray(a), np.asarray(b)
    except Exception:  # noqa: BLE001 (not array-like: compare as Python values)
        return a == b
    if x.shape != y.shape:
        return False
    if x.dtype.kind in "fc" or y.dtype.kind in "fc":
        return bool(np.allclose(x, y, rtol=1e-9 if rtol is None else rtol, atol=0, equal_nan=True))
    if x.dtype.kind in "biu" and y.dtype.kind in "biu":
        return bool(np.array_equal(x, y))
    return bool(np.all(x == y))


@dataclass
class DemoRow:
    sample: str
    args: str
    result: str
    agrees: bool
    ops: int
    converted_ms: float
    plain_ms: float
    error: str = ""


def _time_call(fn, args, repeat: int = 3) -> tuple[object, float, str]:
    """(result, best time in ms, captured stdout of the first call)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        result = fn(*args)
    best = float("inf")
    for _ in range(repeat):
        with contextlib.redirect_stdout(io.StringIO()):
            t0 = time.perf_counter()
            fn(*args)
            best = min(best, time.perf_counter() - t0)
    return result, best * 1000, buf.getvalue()


def run_sample(sample, args) -> DemoRow:
    """Run one example both ways; printed output must agree too."""
    arg_text = ", ".join(_short(a) for a in args)
    try:
        converted, t_conv, out_conv = _time_call(sample.fn, args)
        plain, t_plain, out_plain = _time_call(sample.python_function, args)
        ops = len(sample.fn.get_concrete_function(*args).graph.get_operations())
        agrees = values_agree(converted, plain, sample.tolerance) and out_conv == out_plain
        return DemoRow(sample.name, arg_text, short_value(converted), agrees, ops, t_conv, t_plain)
    except Exception as e:  # noqa: BLE001 (one failing sample must not stop the demo)
        msg = str(e).splitlines()[0] if str(e) else ""
        return DemoRow(sample.name, arg_text, "", False, 0, 0.0, 0.0, error=f"{type(e).__name__}: {msg}")


def _short(v) -> str:
    if isinstance(v, (tuple, list)) and any(isinstance(e, np.ndarray) for e in v):
        inner = ", ".join(_short(e) for e in v)
        return f"({inner})" if isinstance(v, tuple) else f"[{inner}]"
    if isinstance(v, np.ndarray) and v.size > 6:
        return f"<{v.dtype}{list(v.shape)}>".replace(" ", "")
    return short_value(v)


def demo_rows(samples, progress=None) -> list[DemoRow]:
    """Every example of every sample; `progress(description)` is called before each."""
    rows = []
    for s in samples:
        for args in s.examples:
            if progress is not None:
                progress(f"{s.name}({_short(args[0]) if args else ''}...)")
            rows.append(run_sample(s, args))
    return rows
