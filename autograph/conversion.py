"""Which callables are converted: the user's own functions are, library code is not.

`converted_call` is what every call in converted code goes through."""
from __future__ import annotations

import os
import sysconfig
import types

from graphcore import source_info

from .errors import SourceNotFoundError
from .operators.py_builtins import OVERLOADS

_DO_NOT_CONVERT = "__ag_do_not_convert__"
# Top-level packages whose functions are always called as they are.
_LIBRARY_MODULES = {"numpy", "math", "builtins", "graphcore", "executor", "autograph", "functools", "itertools",
                    "collections", "operator", "typing", "abc", "random", "re", "threading", "inspect", "copy",
                    "scipy", "typer", "gast", "astunparse", "pytest", "_pytest", "hypothesis"}
_STDLIB = sysconfig.get_paths().get("stdlib", "")
_THIS_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def do_not_convert(fn):
    """Mark `fn` so AutoGraph calls it as it is (it may still be traced)."""
    try:
        setattr(fn, _DO_NOT_CONVERT, True)
    except (AttributeError, TypeError):
        pass
    return fn


def is_convertible(fn) -> bool:
    """True for plain Python functions of the user's own code."""
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    if not isinstance(fn, types.FunctionType):
        return False
    if getattr(fn, _DO_NOT_CONVERT, False):
        return False
    module = (getattr(fn, "__module__", None) or "").split(".")[0]
    if module in _LIBRARY_MODULES:
        return False
    filename = fn.__code__.co_filename
    if source_info.is_generated(filename) or filename.startswith(_THIS_DIR):
        return False
    if "site-packages" in filename or (_STDLIB and filename.startswith(_STDLIB)):
        return False
    return not filename.startswith("<")


def converted_call(f, args, kwargs):
    """Call `f(*args, **kwargs)` the way converted code should: builtins with tensor
    overloads use them, the user's functions are converted first, the rest is called."""
    try:
        overload = OVERLOADS.get(f)
    except TypeError:  # unhashable callable
        overload = None
    if overload is not None:
        return overload(*args, **(kwargs or {}))
    if is_convertible(f):
        from .transpiler import convert  # noqa: PLC0415 (cycle: the transpiler emits calls to us)

        try:
            target = convert(f)
        except SourceNotFoundError:
            if getattr(f, "__name__", "") != "<lambda>":
                raise
            target = f  # a lambda whose source is ambiguous: its body is only an expression
        return target(*args, **(kwargs or {}))
    return f(*args, **(kwargs or {}))

