"""numpy's own inner loops, called from numba code: how a numba loop computes an op on
arrays and gets numpy's very bits.

numba's own array functions are not numpy's: its np.tanh and np.exp are libm's (on float32
values drawn from [-10, 10], 40% of numba's tanh and exp differ from numpy's SIMD loops
in the last bit), and its matmul needs scipy's BLAS and sums in an order of its own. So a numba
loop does not use them. It calls the strided loop numpy itself calls for that ufunc and
those dtypes, obtained once through the API numpy made for this
(`ufunc._resolve_dtypes_and_context` and `ufunc._get_strided_loop`, NumPy >= 1.24), with
the arguments numpy's ufunc machinery passes:

  - an elementwise op on C-contiguous operands of one shape (numpy's "trivial" path): one
    call over every element; each operand's stride is its item size, a scalar operand's
    0 (a 1-D operand's own stride, which is its item size in a numba loop), and the loop
    is the one numpy picks for those fixed strides;
  - MatMul on 2-D operands (either transposed, as a view): one call of matmul's gufunc
    loop with the operands' own strides, and that loop picks BLAS (gemm, gemv, syrk) or
    its own loop exactly as it does under numpy; the same OpenBLAS runs.

Anything else raises `HandOver` in the numba code: shapes that would broadcast or do not
match, an empty operand (numpy makes no call then), an index out of range. The loop's
Python kernel (executor/compiled_loop.py) then runs it again from its inputs with numpy.

numpy's ufunc machinery clears the floating-point status before each loop and, after it,
warns or raises as np.errstate says; these calls do not. A numba loop over arrays is
called with the status cleared and the exceptions np.errstate does not ignore
(`reported_fp_exceptions`: by default invalid, divide-by-zero and overflow), and hands
over if one of those is raised when it ends, so numpy's warnings and errors come from
numpy. (Underflow, ignored by default, is common: tanh and exp of small values.) It does
not clear the status itself: a loop stopped by a signal resumes where it was, with the
exceptions raised so far. (A BLAS worker thread's status is its own, under numpy too.)

Made on x86-64 Linux only (glibc's fenv flags; `unavailable` says why elsewhere).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import platform
import sys

import numpy as np


class HandOver(Exception):
    """Raised in numba code where numpy's own call could not be reproduced: the loop's
    Python kernel runs instead (it gives numpy's values, warnings and errors)."""


_CAPSULE = "numpy_1.24_ufunc_call_info"


class _CallInfo(ctypes.Structure):
    """The capsule's struct (numpy's `_get_strided_loop` docstring)."""
    _fields_ = [("strided_loop", ctypes.c_void_p), ("context", ctypes.c_void_p), ("auxdata", ctypes.c_void_p),
                ("requires_pyapi", ctypes.c_bool), ("no_floatingpoint_errors", ctypes.c_bool)]


# int loop(context, char **data, npy_intp *dimensions, npy_intp *strides, auxdata): pointers
# passed as int64 (one register each on x86-64, as a pointer is)
_LOOP_TYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                              ctypes.c_int64)
# glibc's <fenv.h> on x86-64: the exceptions numpy's npy_get_floatstatus tests
FE_INVALID, FE_DIVBYZERO, FE_OVERFLOW, FE_UNDERFLOW = 0x01, 0x04, 0x08, 0x10
FP_CHECKED = FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW

_kept: list = []  # the capsules: numpy ties the loops' auxdata to their lifetime


def unavailable() -> str | None:
    """Why numba loops cannot take arrays here, or None."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return f"numba loops over arrays are made on x86-64 Linux only (this is {sys.platform} {platform.machine()})"
    if not hasattr(np.add, "_get_strided_loop") or not hasattr(np.add, "_resolve_dtypes_and_context"):
        return f"numpy {np.__version__} does not give its strided loops (NumPy >= 1.24 does)"
    if _fenv() is None:
        return "glibc's libm (fetestexcept) was not found"
    return None


@functools.cache
def _fenv():
    name = ctypes.util.find_library("m")
    try:
        libm = ctypes.CDLL(name or "libm.so.6")
        test, clear = libm.fetestexcept, libm.feclearexcept
    except (OSError, AttributeError):
        return None
    for fn in (test, clear):
        fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
    return test, clear


def resolved_dtypes(ufunc, in_dtypes) -> tuple | None:
    """The dtypes numpy's loop for `ufunc` on operands of these dtypes takes and gives
    (inputs..., output), or None if numpy finds none."""
    try:
        resolved, _ = ufunc._resolve_dtypes_and_context(tuple(np.dtype(d) for d in in_dtypes) + (None,) * ufunc.nout)
    except (TypeError, ValueError):
        return None
    return tuple(np.dtype(d) for d in resolved)


@functools.cache
def strided_loop(ufunc, in_dtypes: tuple, fixed_strides: tuple | None):
    """(the loop as a ctypes function numba calls, its context, its auxdata) numpy uses for
    `ufunc` on these dtypes and fixed strides (None: any); ValueError if its loop needs
    the GIL (object loops)."""
    _, capsule = ufunc._resolve_dtypes_and_context(tuple(np.dtype(d) for d in in_dtypes) + (None,) * ufunc.nout)
    ufunc._get_strided_loop(capsule, fixed_strides=fixed_strides)
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    info = _CallInfo.from_address(get(capsule, _CAPSULE.encode()))
    if info.requires_pyapi or not info.strided_loop:
        raise ValueError(f"numpy's loop of {ufunc.__name__} on {in_dtypes} needs Python")
    _kept.append(capsule)
    return _LOOP_TYPE(info.strided_loop), int(info.context or 0), int(info.auxdata or 0)


_ERRSTATE_FLAGS = {"invalid": FE_INVALID, "divide": FE_DIVBYZERO, "over": FE_OVERFLOW, "under": FE_UNDERFLOW}


def reported_fp_exceptions() -> int:
    """The exceptions numpy reports under np.errstate now (warns, raises, calls...): those
    not 'ignore' (by default invalid, divide-by-zero and overflow; underflow is ignored)."""
    return sum(flag for kind, flag in _ERRSTATE_FLAGS.items() if np.geterr()[kind] != "ignore")


def fp_clear() -> None:
    """Clears the floating-point exceptions numpy checks (from Python, before a loop)."""
    _fenv()[1](FP_CHECKED)


@functools.cache
def fp_raised():
    """A numba function giving the floating-point exceptions numpy checks raised since they
    were last cleared (a bit mask of FE_*)."""
    import numba  # noqa: PLC0415 (optional; the caller checked)

    test = _fenv()[0]

    @numba.njit(nogil=True, cache=False)
    def raised():
        return test(FP_CHECKED)
    return raised


@functools.cache
def elementwise(ufunc, kinds: tuple, dtype, out_dtype):
    """A numba function applying `ufunc` (one or two inputs, all of `dtype`) as numpy's
    trivial path does: `kinds` says which operands are arrays ("a") and which scalars
    ("s"); array operands must have one shape (else HandOver). Made once per process (as
    the other makers here): numba compiles it on first use, for the types it is given."""
    import numba  # noqa: PLC0415

    d, out_d = np.dtype(dtype), np.dtype(out_dtype)
    strides = tuple(0 if k == "s" else d.itemsize for k in kinds) + (out_d.itemsize,)
    loop, context, auxdata = strided_loop(ufunc, (d,) * len(kinds), strides)
    s0, s1, s_out = strides[0], strides[-2], out_d.itemsize
    scalar_type, out_type = d.type, out_d.type
    njit = numba.njit(nogil=True, cache=False)

    @njit
    def call(x, y, out, n, sx, sy, n_in):
        """One call of numpy's loop over n elements: data pointers, count and strides in one
        int64 block (inputs, output; the count; their strides)."""
        block = np.empty(8, np.int64)
        block[0] = x
        block[1] = y if n_in == 2 else out
        block[2] = out
        block[3] = n
        block[4] = sx
        block[5] = sy if n_in == 2 else s_out
        block[6] = s_out
        base = block.ctypes.data
        status = loop(context, base, base + 24, base + 32, auxdata)
        if status != 0:
            raise HandOver("numpy's loop failed")

    @njit
    def stride_of(a, s):
        """A 1-D operand's own stride (numpy passes it), checked to be the one the loop was
        picked for; an N-D one's is its item size (contiguous)."""
        if a.ndim == 1 and a.size > 1 and a.strides[0] != s:
            raise HandOver("a 1-D operand of another stride")
        return s

    if kinds == ("a",):
        @njit
        def unary(x):
            out = np.empty(x.shape, out_type)
            if x.size == 0:
                raise HandOver("an empty array: numpy makes no call")
            call(x.ctypes.data, 0, out.ctypes.data, x.size, stride_of(x, s0), 0, 1)
            return out
        return unary
    if kinds == ("a", "a"):
        @njit
        def both_arrays(x, y):
            if x.shape != y.shape:
                raise HandOver("operands of different shapes: numpy broadcasts them by its iterator")
            if x.size == 0:
                raise HandOver("an empty array: numpy makes no call")
            out = np.empty(x.shape, out_type)
            call(x.ctypes.data, y.ctypes.data, out.ctypes.data, x.size, stride_of(x, s0), stride_of(y, s1), 2)
            return out
        return both_arrays
    if kinds == ("a", "s"):
        @njit
        def array_scalar(x, y):
            if x.size == 0:
                raise HandOver("an empty array: numpy makes no call")
            cell = np.empty(1, scalar_type)
            cell[0] = scalar_type(y)
            out = np.empty(x.shape, out_type)
            call(x.ctypes.data, cell.ctypes.data, out.ctypes.data, x.size, stride_of(x, s0), 0, 2)
            return out
        return array_scalar
    if kinds == ("s", "a"):
        @njit
        def scalar_array(x, y):
            if y.size == 0:
                raise HandOver("an empty array: numpy makes no call")
            cell = np.empty(1, scalar_type)
            cell[0] = scalar_type(x)
            out = np.empty(y.shape, out_type)
            call(cell.ctypes.data, y.ctypes.data, out.ctypes.data, y.size, 0, stride_of(y, s1), 2)
            return out
        return scalar_array
    raise ValueError(f"operand kinds {kinds}: one or two operands, at least one an array")


@functools.cache
def matmul(dtype, transpose_a: bool, transpose_b: bool):
    """A numba function (a, b) -> a @ b on 2-D arrays of `dtype` (either seen transposed, as
    numpy's swapaxes view is): one call of numpy's matmul loop with the operands' strides."""
    import numba  # noqa: PLC0415

    d = np.dtype(dtype)
    loop, context, auxdata = strided_loop(np.matmul, (d, d), None)
    item = d.type

    @numba.njit(nogil=True, cache=False)
    def product(a, b):
        if transpose_a:
            m, n, a_m, a_n = a.shape[1], a.shape[0], a.strides[1], a.strides[0]
        else:
            m, n, a_m, a_n = a.shape[0], a.shape[1], a.strides[0], a.strides[1]
        if transpose_b:
            n_b, p, b_n, b_p = b.shape[1], b.shape[0], b.strides[1], b.strides[0]
        else:
            n_b, p, b_n, b_p = b.shape[0], b.shape[1], b.strides[0], b.strides[1]
        if n != n_b:
            raise HandOver("inner dimensions differ: numpy raises ValueError")
        if m == 0 or n == 0 or p == 0:
            raise HandOver("an empty operand or result")
        out = np.empty((m, p), item)
        # data pointers; the outer count (1) and the core dimensions m, n, p; the outer strides
        # (one iteration: unused), then the core strides of a (m, n), b (n, p) and out (m, p)
        block = np.empty(16, np.int64)
        block[0], block[1], block[2] = a.ctypes.data, b.ctypes.data, out.ctypes.data
        block[3], block[4], block[5], block[6] = 1, m, n, p
        block[7], block[8], block[9] = 0, 0, 0
        block[10], block[11], block[12], block[13] = a_m, a_n, b_n, b_p
        block[14], block[15] = out.strides[0], out.strides[1]
        base = block.ctypes.data
        if loop(context, base, base + 24, base + 56, auxdata) != 0:
            raise HandOver("numpy's matmul loop failed")
        return out
    return product


@functools.cache
def index_first_axis():
    """A numba function (x, i) -> x[i] on an array (a view, or a scalar for a vector), with
    numpy's rule for a negative index; out of range, HandOver (numpy raises IndexError,
    which the Python kernel reports)."""
    import numba  # noqa: PLC0415

    @numba.njit(nogil=True, cache=False)
    def take(x, i):
        n = x.shape[0]
        k = i + n if i < 0 else i
        if k < 0 or k >= n:
            raise HandOver("an index out of range")
        return x[k]
    return take
