"""A checking mode: every kernel's output must have the dtype and shape its op declared.

The graph is built from the shape rules, the values come from the kernels; when the two
disagree (a rule says int32 and np.sum returns int64) every op built on the declared dtype
is built on a guess, and the result can differ from the same numpy program. The suite runs
with this check on (tests/conftest.py), so such a mismatch fails where it happens, naming
the op, instead of surfacing as a wrong value far away.

    AUTOGRAPH_CHECK_KERNELS=1 python my_program.py     # or kernel_contract.enable()

Off by default: it costs a few microseconds per op.
"""
from __future__ import annotations

import os

import numpy as np


class KernelContractError(RuntimeError):
    """A kernel returned a value its op did not declare: a bug in graphcore, not in user code."""


# Ops whose output is a name standing for state held elsewhere, typed as the state.
_HANDLE_OPS = frozenset({"VarHandleOp"})

_enabled = os.environ.get("AUTOGRAPH_CHECK_KERNELS", "") not in ("", "0")


def enable(on: bool = True) -> None:
    """Check kernels of the plans made from now on (plans are cached per Session)."""
    global _enabled
    _enabled = bool(on)


def enabled() -> bool:
    return _enabled


def checked(kernel, op):
    """`kernel` wrapped so that each output is compared with `op`'s declared outputs."""
    if op.type in _HANDLE_OPS:
        return kernel
    specs = [(t.dtype.np_dtype, t.shape.as_list() if t.shape.rank is not None else None) for t in op.outputs]
    if all(np_dtype is None for np_dtype, _ in specs):
        return kernel  # opaque handles (TensorList, resources): nothing to compare

    def run(*args):
        out = kernel(*args)
        outs = (out,) if len(specs) == 1 else out
        for i, (value, (np_dtype, dims)) in enumerate(zip(outs, specs)):
            if np_dtype is not None:
                _check(op, i, value, np_dtype, dims)
        return out

    return run


def _check(op, i: int, value, np_dtype, dims) -> None:
    where = f" (created at {op.location()})" if getattr(op, "source", None) else ""
    if not isinstance(value, (np.ndarray, np.generic)):
        raise KernelContractError(f"kernel of {op.type} {op.name}{where} returned output {i} as "
                            f"{type(value).__name__}, not a numpy value of dtype {np_dtype}")
    if value.dtype != np_dtype:
        raise KernelContractError(f"kernel of {op.type} {op.name}{where} returned output {i} of dtype {value.dtype}, "
                            f"but the op declares {np_dtype}")
    if dims is not None:
        shape = np.shape(value)
        if len(shape) != len(dims) or any(d is not None and d != s for d, s in zip(dims, shape)):
            raise KernelContractError(f"kernel of {op.type} {op.name}{where} returned output {i} of shape {shape}, "
                                f"but the op declares {tuple(dims)}")
