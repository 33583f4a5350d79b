"""A kernel's cost, roughly, from its op type and its inputs: enough to tell whether handing
it to another thread pays. A hop to a worker and back (queue, wake-up, the run's lock)
costs tens of microseconds in CPython, so only kernels worth several hops go.

Estimates are in nanoseconds on one core: a MatMul by its multiply-adds (BLAS does about
ten to twenty billion a second per core), any other op by the elements of its inputs.
"""
from __future__ import annotations

from math import prod

NS_PER_MULTIPLY_ADD = 0.08
NS_PER_ELEMENT = 1.0

# What a round trip to a worker thread costs, and how many of them a kernel must be worth.
HOP_NS = 20_000
POOL_MIN_NS = 4 * HOP_NS
# Kernels at least this long run with the run's lock released (when another thread might
# use it meanwhile): releasing and taking it again costs about a microsecond.
UNLOCK_MIN_NS = 10_000


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
            return rows * k * cols * NS_PER_MULTIPLY_ADD
    return sum(getattr(x, "size", 1) for x in args) * NS_PER_ELEMENT


class _MatMulStep:
    """A fused op's MatMul step, seen as an op by estimate_ns."""

    type = "MatMul"

    def __init__(self, attrs):
        self.attrs = attrs


def uses_blas(op) -> bool:
    """The kernel is a BLAS call (which may use several threads by itself)."""
    return op.type == "MatMul" or (op.type == "Fused" and any(s[0] == "MatMul" for s in op.attrs["steps"]))
