"""Kernels for ops whose attributes make the generic kernel do work again on every call
that can be done once: the executor, fused ops and compiled loops run these instead of
`functools.partial(kernel, **attrs)`. Each gives the generic kernel's value (the same numpy
call on the same operands) and raises what it raises.

- MatMul without transposes: `np.matmul` itself (the generic kernel tests both flags and
  goes through a partial: about 1.5 us a call, 3% of a 32x256x256 float32 matmul).
- StridedSlice: the index written out as source from its spec, `x[int(d0)]` for `x[t]`,
  instead of the tuple rebuilt from the spec per call (1.7 us -> 0.3 us).

- PythonArith (+, -, * of Python numbers traced: `i * j` of two range() counters): two
  int64 (or two float64) scalars by the Python operator, without the generic kernel's
  dispatch on the operator and its type tests (the result past int64 refused there).

`specialized_kernel(op_type, attrs)` gives such a kernel, or None.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from graphcore.errors import GraphError

from . import codegen


def specialized_kernel(op_type: str, attrs: dict):
    """A kernel for an op of this type and attributes, equal to its generic kernel with the
    attributes bound; None when there is none better."""
    if op_type == "MatMul" and not attrs.get("transpose_a") and not attrs.get("transpose_b") \
            and set(attrs) <= {"transpose_a", "transpose_b"}:
        return np.matmul
    if op_type == "StridedSlice" and set(attrs) == {"spec"}:
        return strided_slice_kernel(attrs["spec"])
    if op_type == "PythonArith" and set(attrs) == {"op"} and attrs["op"] in _PYTHON_FAST:
        return python_arith_kernel(attrs["op"])
    return None


_PYTHON_FAST = {"Add": operator.add, "Sub": operator.sub, "Mul": operator.mul}
_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1


def python_arith_kernel(op: str):
    """PythonArith's kernel for `op` (Add, Sub or Mul): two int64 scalars as Python ints (an
    int result within int64, as an int64), or two float64 scalars as Python floats; anything
    else, and an int result past int64 (which it refuses), goes to the generic kernel."""
    from graphcore.registry import get_op_def  # noqa: PLC0415

    fast = _PYTHON_FAST[op]
    generic = functools.partial(get_op_def("PythonArith").kernel, op=op)
    int64, float64 = np.int64, np.float64

    def python_arith(x, y):
        tx = type(x)
        if tx is type(y):
            if tx is int64:
                out = fast(int(x), int(y))
                if _INT64_MIN <= out <= _INT64_MAX:
                    return int64(out)
            elif tx is float64:
                return float64(fast(float(x), float(y)))
        return generic(x, y)
    return python_arith


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
            return codegen.int_literal(k)
        n_dyn = max(n_dyn, codegen.index(k, 1 << 16) + 1)
        return f"int({codegen.ident('d', k)})"

    parts = []
    try:
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
    except (GraphError, TypeError, ValueError, IndexError):  # not a spec as graphcore makes them: the generic kernel
        return None
    params = "".join(f", {codegen.ident('d', k)}" for k in range(n_dyn)) + ", *_"  # (*_: values the spec does not read)
    source = f"def strided_slice(x{params}):\n    return asarray(x)[({', '.join(parts)},)]\n"
    kernel = codegen.compile_function(source, "strided_slice", {"asarray": np.asarray}, "strided slice kernel")
    kernel.source = source
    if len(_SOURCES) < 1024:
        _SOURCES[spec] = kernel
    return kernel
