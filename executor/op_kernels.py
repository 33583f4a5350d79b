"""Kernels for ops whose attributes make the generic kernel do work again on every call
that can be done once: the executor, fused ops and compiled loops run these instead of
`functools.partial(kernel, **attrs)`. Each gives the generic kernel's value (the same numpy
call on the same operands) and raises what it raises.

- MatMul without transposes: `np.matmul` itself (the generic kernel tests both flags and
  goes through a partial: about 1.5 us a call, 3% of a 32x256x256 float32 matmul).
- StridedSlice: the index written out as source from its spec, `x[int(d0)]` for `x[t]`,
  instead of the tuple rebuilt from the spec per call (1.7 us -> 0.3 us).

`specialized_kernel(op_type, attrs)` gives such a kernel, or None.
"""
from __future__ import annotations

import numpy as np


def specialized_kernel(op_type: str, attrs: dict):
    """A kernel for an op of this type and attributes, equal to its generic kernel with the
    attributes bound; None when there is none better."""
    if op_type == "MatMul" and not attrs.get("transpose_a") and not attrs.get("transpose_b") \
            and set(attrs) <= {"transpose_a", "transpose_b"}:
        return np.matmul
    if op_type == "StridedSlice" and set(attrs) == {"spec"}:
        return strided_slice_kernel(attrs["spec"])
    return None


_SOURCES: dict = {}  # spec -> kernel (specs repeat: x[t] in many loops)


def strided_slice_kernel(spec):
    """graphcore's _strided_slice_kernel for this spec, `np.asarray(x)[index]`, with the index
    written out: a constant bound as int(k), a dynamic one as int(d_k), as _index_tuple does."""
    try:
        kernel = _SOURCES.get(spec)
    except TypeError:  # (not hashable: not a spec this knows)
        return None
    if kernel is not None:
        return kernel
    n_dyn = 0

    def val(v) -> str:
        nonlocal n_dyn
        if v is None:
            return "None"
        kind, k = v
        if kind == "c":
            return repr(int(k))
        n_dyn = max(n_dyn, int(k) + 1)
        return f"int(d{int(k)})"

    parts = []
    for entry in spec:
        kind = entry[0]
        if kind == "index":
            parts.append(val(entry[1]))
        elif kind == "slice":
            parts.append(f"slice({val(entry[1])}, {val(entry[2])}, {val(entry[3])})")
        elif kind == "new":
            parts.append("None")
        elif kind == "ellipsis":
            parts.append("...")
        else:
            return None
    params = "".join(f", d{k}" for k in range(n_dyn)) + ", *_"  # (as *dyn: values the spec does not read)
    source = f"def strided_slice(x{params}):\n    return asarray(x)[({', '.join(parts)},)]\n"
    env = {"asarray": np.asarray}
    exec(compile(source, "<strided slice kernel>", "exec"), env)  # noqa: S102 (our own source)
    kernel = env["strided_slice"]
    kernel.source = source
    if len(_SOURCES) < 1024:
        _SOURCES[spec] = kernel
    return kernel
