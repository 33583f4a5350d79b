"""A kernel's cost, roughly, from its op type and its inputs: enough to tell whether handing
it to another thread pays. A hop to a worker and back (queue, wake-up, the run's lock)
costs tens of microseconds in CPython, so only kernels worth several hops go.

Estimates are in nanoseconds on one core: a MatMul by its multiply-adds (BLAS does about
twenty billion a second per core in float64 and twice as many in float32: measured 0.046-0.057
ns each in float64, 0.021-0.027 in float32, from 32x256x256 to 512x512x512), any other op by
the elements of its inputs.
"""
from __future__ import annotations

from math import prod

NS_PER_MULTIPLY_ADD = 0.05  # of 8-byte numbers (float64); in proportion to the item size
NS_PER_ELEMENT = 1.0

# What a round trip to a worker thread costs, and how many of them a kernel must be worth.
HOP_NS = 20_000
POOL_MIN_NS = 4 * HOP_NS
# Kernels at least this long run with the run's lock released (when another thread might
# use it meanwhile): releasing and taking it again costs about a microsecond.
UNLOCK_MIN_NS = 10_000
# A matmul estimated at most this long on one core runs as well on one BLAS thread as on
# several (a 32x256 by 256x256 float32 product: about 50 us; 256x256x256 float64: 0.8 ms).
SMALL_BLAS_NS = 250_000


def estimate_ns(op, args: tuple) -> float:
    """Nanoseconds the kernel of `op` (an Operation) will take on `args` (numpy values), roughly."""
    attrs = op.attrs
    if op.type == "Fused":  # its elementwise steps, and the MatMul that may start it
        steps = attrs["steps"]
        matmuls = sum(estimate_ns(_MatMulStep(s[2]), tuple(args[i] for i in s[1])) for s in steps
                      if s[0] == "MatMul" and all(i < len(args) for i in s[1]))  # on the op's own inputs
        return matmuls + len(steps) * max((getattr(x, "size", 1) for x in args), default=1) * NS_PER_ELEMENT
    if op.type == "MatMul" and len(args) == 2:
        a, b = (getattr(x, "shape", ()) for x in args)
        if len(a) >= 1 and len(b) >= 1:
            k = a[-2] if attrs.get("transpose_a") and len(a) >= 2 else a[-1]
            rows = prod(a) // max(k, 1)             # batch x m
            cols = (b[-2] if attrs.get("transpose_b") else b[-1]) if len(b) >= 2 else 1
            size = max(getattr(x, "itemsize", 8) for x in args)  # (float32: twice as many a second)
            return rows * k * cols * NS_PER_MULTIPLY_ADD * size / 8
    return sum(getattr(x, "size", 1) for x in args) * NS_PER_ELEMENT


class _MatMulStep:
    """A fused op's MatMul step, seen as an op by estimate_ns."""

    type = "MatMul"

    def __init__(self, attrs):
        self.attrs = attrs


def uses_blas(op) -> bool:
    """The kernel is a BLAS call (which may use several threads by itself)."""
    return op.type == "MatMul" or (op.type == "Fused" and any(s[0] == "MatMul" for s in op.attrs["steps"]))


class _Static:
    """An input as its static shape and dtype say it will be (for static_estimate_ns)."""

    __slots__ = ("shape", "size", "itemsize")

    def __init__(self, shape: tuple, itemsize: int):
        self.shape = shape
        self.size = prod(shape)
        self.itemsize = itemsize


def static_estimate_ns(op) -> float | None:
    """estimate_ns of `op` on inputs of its inputs' static shapes, or None when one of them is
    not fully known (the plan then decides per run, from the values)."""
    args = []
    for t in op.inputs:
        np_dtype = t.dtype.np_dtype
        if np_dtype is None or not t.shape.is_fully_defined():
            return None
        args.append(_Static(tuple(t.shape.as_list()), np_dtype.itemsize))
    return estimate_ns(op, tuple(args))
