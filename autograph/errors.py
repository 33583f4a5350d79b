"""Errors raised by AutoGraph, each naming the user's file and line."""
from __future__ import annotations

import linecache
import os

from graphcore.errors import AutographError, InvalidArgumentError, StagingError


def _location(filename: str | None, lineno: int | None, col: int | None) -> str:
    if not filename or not lineno:
        return ""
    text = linecache.getline(filename, lineno).rstrip("\n")
    where = f'  File "{filename}", line {lineno}'
    if not text:
        return where
    caret = ""
    if col is not None:
        caret = "\n    " + " " * col + "^"
    return f"{where}\n    {text}{caret}"


class ConversionError(AutographError):
    """A construct could not be converted. The message shows the user's file, line, a
    caret under the construct and what to write instead."""

    def __init__(self, message: str, filename: str | None = None, lineno: int | None = None,
                 col: int | None = None):
        self.filename = filename
        self.lineno = lineno
        self.col = col
        loc = _location(filename, lineno, col)
        super().__init__(f"{os.path.basename(filename)}:{lineno}: {message}\n{loc}" if loc else message)


class SourceNotFoundError(ConversionError):
    """The function's source code is not available (exec, REPL, C functions)."""


class UndefinedVariableError(AutographError, NameError):
    """A variable that may be undefined on some path was read (`UnboundLocalError` in
    plain Python)."""


class UndefinedValueError(UndefinedVariableError, InvalidArgumentError):
    """Raised when the graph runs: a variable that may be undefined (assigned only in a
    loop on a tensor that ran zero times, or in the branch of an if on a tensor that did
    not run) was read. An UndefinedVariableError and an InvalidArgumentError (the failed
    Assert that guards the read)."""

    def __init__(self, message: str, original: InvalidArgumentError | None = None):
        InvalidArgumentError.__init__(self, message, op=getattr(original, "op", None),
                                      frame=getattr(original, "frame", None),
                                      iteration=getattr(original, "iteration", None), original=original)


__all__ = ["AutographError", "ConversionError", "SourceNotFoundError", "StagingError",
           "UndefinedVariableError", "UndefinedValueError"]
