"""`converted_call`, what every call in converted code goes through: builtins with tensor
overloads use them, the user's functions are converted first (which ones: conversion_policy),
the rest is called. Because it sees every call, it also reports the two call failures
tracing would otherwise bury: a recursion that never ends while the graph is built, and a
graph tensor given to a function that needs a Python number (math.sqrt)."""
from __future__ import annotations

import random
import threading
import types

import numpy as np

import graphcore as gc
from graphcore import source_info
from graphcore.errors import StagingError

from . import guards
from .conversion_policy import do_not_convert, is_convertible, plain_function  # noqa: F401 (this module's names)
from .errors import SourceNotFoundError
from .operators.data_structures import LIST_QUERIES, list_method
from .operators.maybe_defined import may_be_none
from .operators.side_effects import (check_call_advances, check_call_result, check_changing_call,
                                     converted_call_scope, checks_calls, note_made)
from .operators.py_builtins import OVERLOADS, install_user_call
from .operators.python_calls import NOT_STAGED, maybe_stage
from .operators.staging import mark_copy
from .operators.strings import holds_tensor, str_format

# the transpiler's `convert(fn)`, installed when it is imported (`install_converter`): it
# emits the calls to converted_call, so importing it from here would close a circle
_convert = None


def install_converter(convert) -> None:
    global _convert
    _convert = convert


_TENSOR_COPY = gc.Tensor.copy  # numpy's x.copy() on a graph tensor (graphcore/numpy_api.py)


# generators of random numbers: a draw while the graph is built would become a constant
_RANDOM_SOURCES = (np.random.Generator, np.random.RandomState, random.Random)


def _random_draw_while_tracing(f) -> StagingError:
    where = source_info.user_location()
    at = f"{where.filename}:{where.lineno}: " if where is not None else ""
    owner = type(f.__self__)
    name = f"{owner.__module__.split('.')[0]}.random" if owner is not np.random.Generator else "a numpy Generator"
    return StagingError(
        f"{at}{f.__name__}() of {name} is called while the graph is built: it would draw once, and every call of the "
        "graph would reuse those numbers (Python draws new ones on each call). Draw them outside the function and "
        "pass them in as arguments (e.g. noise = rng.normal(size=n); f(x, noise)).")


def changing_call(method, args: tuple, kwargs: dict | None, what: str, line: int, own: bool):
    """`ag__.changing_call`: a call inside an expression of a method that may change its
    object (`log.append(k) is None`). A container's method runs as Python, or is refused
    where nothing carries its change (operators/side_effects.check_changing_call); a call
    on any other object is an ordinary converted_call."""
    if check_changing_call(method, what, line, own):
        return method(*args, **(kwargs or {}))
    return converted_call(method, args, kwargs)


def converted_call(f, args, kwargs):
    """Call `f(*args, **kwargs)` the way converted code should: builtins with tensor
    overloads use them, the user's functions are converted first, the rest is called.
    While a graph is built, a Python iterator the call makes is remembered with the loop
    or branch it was made in, and a call to Python that may advance one made outside the
    loop or branch being traced is refused (operators/side_effects.py)."""
    if not checks_calls():  # (no graph, or its top level with no iterator left to the run)
        return _call(f, args, kwargs)
    if not is_convertible(f) and not getattr(type(f), "inlined_when_traced", False):
        check_call_advances(f, args, kwargs)
    return note_made(_call(f, args, kwargs), args)


install_user_call(converted_call)  # sorted(..., key=f) calls f as converted code calls it


def _call(f, args, kwargs):
    try:
        overload = OVERLOADS.get(f)
    except TypeError:  # unhashable callable
        overload = None
    if overload is not None:
        return overload(*args, **(kwargs or {}))
    if isinstance(getattr(f, "__self__", None), _RANDOM_SOURCES) and gc.get_default_graph() is not None:
        staged = maybe_stage(f, args, kwargs)  # Python's random: drawn when the graph runs, as Python draws
        if staged is not NOT_STAGED:
            return staged
        raise _random_draw_while_tracing(f)
    if getattr(f, "__func__", None) is _TENSOR_COPY and type(f.__self__) is gc.Tensor:
        return mark_copy(f(*args, **(kwargs or {})))  # a fresh array: changing it in place changes nothing else
    if type(getattr(f, "__self__", None)) is str and f.__name__ == "format" and \
            any(isinstance(a, gc.Tensor) or holds_tensor(a) for a in (*args, *(kwargs or {}).values())):
        return str_format(f.__self__, *args, **(kwargs or {}))  # "...".format(x): formatted when the graph runs
    if type(getattr(f, "__self__", None)) is list and f.__name__ in LIST_QUERIES and gc.get_default_graph() is not None \
            and any(isinstance(a, gc.Tensor) for a in (*f.__self__, *args)):
        return list_method(f.__self__, f.__name__, args, kwargs)  # lst.count(x): compared when the graph runs
    if is_convertible(f):
        try:
            target = _convert(f)
        except SourceNotFoundError:
            if getattr(f, "__name__", "") != "<lambda>":
                raise
            target = f  # a lambda whose source is ambiguous: its body is only an expression
            guards.note(f)
        return _call_tracking_recursion(f, target, args, kwargs or {})
    if getattr(type(f), "inlined_when_traced", False) and gc.get_default_graph() is not None:
        if plain_function(f.python_function) is not None:
            # an @function called while tracing is inlined: a recursion through it is tracked too
            return _call_tracking_recursion(f.python_function, f, args, kwargs or {})
    if gc.get_default_graph() is not None:  # a call the graph has no op for: Python's, when the graph runs
        staged = maybe_stage(f, args, kwargs)
        if staged is not NOT_STAGED:
            return staged
    guards.note(f)  # the user's code called as it is (do_not_convert, a class): what it reads is traced
    try:
        return f(*args, **(kwargs or {}))
    except TypeError as e:
        if _needs_python_numbers(f) and any(isinstance(a, gc.Tensor) for a in (*args, *(kwargs or {}).values())):
            raise TypeError(_python_number_message(f, e)) from e
        raise


# Functions of these modules written in C take Python numbers: given a graph tensor they
# fail with whatever their C conversion says, which does not tell the user what to do.
_PYTHON_NUMBER_MODULES = {"math", "cmath", "builtins"}


def _needs_python_numbers(f) -> bool:
    return (isinstance(f, types.BuiltinFunctionType) or isinstance(f, type)) and \
        getattr(f, "__module__", None) in _PYTHON_NUMBER_MODULES


def _python_number_message(f, error: TypeError) -> str:
    name = f.__name__
    qualified = name if f.__module__ == "builtins" else f"{f.__module__}.{name}"
    call = source_info.user_location()
    where = f"{call.filename}:{call.lineno}: " if call is not None else ""
    if hasattr(gc, name) and isinstance(getattr(np, name, None), np.ufunc):
        instead = (f"Use np.{name}(x) (numpy's ufuncs on a graph tensor build the graph op) or "
                   f"graphcore.{name}(x) instead.")
    else:
        instead = ("graphcore has no op for it: compute it from the ops it has, or pass the value as a Python "
                   "number so that it stays Python.")
    return (f"{where}{qualified}() needs a Python number but got a graph tensor, whose value is only known when "
            f"the graph runs. {instead} (Python said: {error})")


class _Activation:
    """How deep calls of one user function are nested on this thread, and where it first
    called itself."""

    __slots__ = ("depth", "recursive_call")

    def __init__(self):
        self.depth = 0
        self.recursive_call = None


_activations = threading.local()


def _call_tracking_recursion(f, target, args, kwargs):
    """Call the converted `target`. A recursion that does not end while a graph is built
    (its end depends on a tensor: both branches of an `if` on a tensor are traced, and
    the body of a loop on a tensor) would otherwise die in a RecursionError deep in the
    tracing machinery; the outermost call of the recursive function reports it."""
    table = _activations.__dict__.setdefault("table", {})
    code = plain_function(f).__code__
    act = table.get(code)
    if act is None:
        act = table[code] = _Activation()
    act.depth += 1
    if act.depth == 2 and act.recursive_call is None:
        act.recursive_call = source_info.user_location()
    try:
        with converted_call_scope() as call:
            result = target(*args, **kwargs)
        check_call_result(call, result, code.co_name)
        if gc.get_default_graph() is not None and may_be_none(result):
            raise _maybe_none_result(f)
        return result
    except RecursionError:
        if act.depth > 1 or act.recursive_call is None or gc.get_default_graph() is None:
            raise
        raise _unending_recursion(f, act.recursive_call) from None
    finally:
        act.depth -= 1
        if act.depth == 0:
            del table[code]


def _maybe_none_result(f) -> StagingError:
    code = plain_function(f).__code__
    call = source_info.user_location()
    where = f"{call.filename}:{call.lineno}: " if call is not None else ""
    return StagingError(
        f"{where}{code.co_name} (defined at {code.co_filename}:{code.co_firstlineno}) returns None on some paths (a "
        "`return` without a value, or the end of the function) and a value on others, and which path runs is "
        "known only when the graph runs; its caller cannot tell None from the value while the graph is built. "
        "Return a value on every path (e.g. a value and a bool saying whether it is valid).")


def _unending_recursion(f, call) -> StagingError:
    code = plain_function(f).__code__
    where = f"{call.filename}:{call.lineno}" if call is not None else "?"
    return StagingError(
        f"{where}: {code.co_name} (defined at {code.co_filename}:{code.co_firstlineno}) calls itself without end "
        "while the graph is built. A recursion that stops on a tensor's value cannot become a finite graph: both "
        "branches of an `if` on a tensor, and the body of a loop on a tensor, are traced, so every call traces "
        "the next one. Make the value that ends the recursion a Python value (e.g. a depth passed as a Python "
        "int), or write the recursion as a `while` loop. (If it does end on a Python value, it nests deeper "
        "than Python's recursion limit allows while tracing.)")

