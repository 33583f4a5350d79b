"""numpy's warnings from a kernel (overflow, an invalid value, a division by zero) shown at
the user's line that made the op, not at the kernel's line inside this package.

numpy warns from the innermost Python frame, which is a kernel here
(`executor/scalar_kernels.py:121: RuntimeWarning: overflow encountered in scalar
multiply`). `install()` does what `logging.captureWarnings` does: it replaces
`warnings.showwarning` with a function that, for a RuntimeWarning shown from a file of
this package or from generated code, finds the op being run on the stack (the executor's
`node`) and warns again with `warnings.warn_explicit` at the op's source line, so the
user's filters and the once-per-line rule apply there; with no op on the stack (an eager
op) the first frame of the user's own code is used (generated lines mapped back).
A filter appended after everyone else's shows every such warning at the kernel (numpy's
"once per location" would otherwise hide the second user line that overflows in the
same kernel); filters the user set come first and still decide (`-W error` raises, and
the run fails naming the op). Nothing changes while the hook is replaced, as pytest's
`catch_warnings(record=True)` does.
"""
from __future__ import annotations

import os
import sys
import threading
import warnings

from graphcore import source_info

_PACKAGE_DIRS = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), p) + os.sep
                      for p in ("graphcore", "executor", "autograph"))
_registries: dict[str, dict] = {}  # user file -> the registry warn_explicit keeps for it
_lock = threading.Lock()
_installed = False
_original = None


def _from_library(filename: str) -> bool:
    return filename.startswith(_PACKAGE_DIRS) or source_info.is_generated(filename)


def user_line(filename: str, lineno: int) -> tuple[str, int] | None:
    """Where a warning shown at `filename:lineno` (a kernel's line) belongs: walking out
    from that frame, the op an executor frame is running (its local `node`, a TaggedNode)
    at the op's source line, a generated line mapped to the user's, or the first frame of
    the user's own code. None for a warning of the user's own, or a frame not on the stack."""
    if not _from_library(filename):
        return None
    f = sys._getframe(1)
    while f is not None and not (f.f_code.co_filename == filename and f.f_lineno == lineno):
        f = f.f_back
    while f is not None:
        code_file = f.f_code.co_filename
        if code_file.startswith(_PACKAGE_DIRS):
            op = getattr(getattr(f.f_locals.get("node"), "item", None), "op", None)
            if op is not None and getattr(op, "source", None) is not None:
                return op.source.filename, op.source.lineno
        else:
            mapped = source_info.map_location(code_file, f.f_lineno)
            if mapped is not None:
                return mapped
            if not source_info.is_generated(code_file):
                return code_file, f.f_lineno
        f = f.f_back
    return None


def _showwarning(message, category, filename, lineno, file=None, line=None):
    where = user_line(filename, lineno) if file is None and issubclass(category, RuntimeWarning) else None
    if where is None:
        return _original(message, category, filename, lineno, file, line)
    user_file, user_lineno = where
    with _lock:
        registry = _registries.setdefault(user_file, {})
    module = os.path.splitext(os.path.basename(user_file))[0] or "<unknown>"
    warnings.warn_explicit(message, category, user_file, user_lineno, module=module, registry=registry)
    return None


def install() -> None:
    """Show kernel warnings at the user's lines (once; see the module docstring)."""
    global _installed, _original
    with _lock:
        if _installed:
            return
        _installed = True
        _original = warnings.showwarning
        warnings.showwarning = _showwarning
        # after every filter set so far (-W, PYTHONWARNINGS, the program's own): they decide first
        warnings.filterwarnings("always", category=RuntimeWarning, module=r"(executor|graphcore)(\.|$)",
                                append=True)
