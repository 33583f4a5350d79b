"""Errors raised by AutoGraph, each naming the user's file and line."""
from __future__ import annotations

import linecache
import os

from graphcore.errors import AutographError, StagingError


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


__all__ = ["AutographError", "ConversionError", "SourceNotFoundError", "StagingError",
           "UndefinedVariableError"]
