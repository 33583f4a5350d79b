"""Which callables are converted: the user's own functions are, library code is not. A leaf
below conversion (converted_call), the transpiler and `@function`, which all ask it."""
from __future__ import annotations

import functools
import linecache
import os
import sysconfig
import types

from graphcore import source_info

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


def plain_function(fn) -> types.FunctionType | None:
    """The Python function that `convert` would convert for `fn` (a function, bound
    method, static or class method, or functools.partial of one), or None."""
    while not isinstance(fn, types.FunctionType):
        if isinstance(fn, (types.MethodType, staticmethod, classmethod)):
            fn = fn.__func__
        elif isinstance(fn, functools.partial):
            fn = fn.func
        else:
            return None
    return fn


def is_convertible(fn) -> bool:
    """True for plain Python functions of the user's own code (also bound, or in a
    functools.partial)."""
    if getattr(fn, _DO_NOT_CONVERT, False):
        return False
    fn = plain_function(fn)
    if fn is None or getattr(fn, _DO_NOT_CONVERT, False):
        return False
    module = (getattr(fn, "__module__", None) or "").split(".")[0]
    if module in _LIBRARY_MODULES:
        return False
    filename = fn.__code__.co_filename
    if source_info.is_generated(filename) or filename.startswith(_THIS_DIR):
        return False
    if "site-packages" in filename or (_STDLIB and filename.startswith(_STDLIB)):
        return False
    # `<stdin>`, `<string>`: no source to convert; a `<...>` name with lines in linecache
    # (IPython cells, programs registered there) has it
    return not filename.startswith("<") or bool(linecache.getlines(filename))
