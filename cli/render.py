"""Output for people: highlighted source (rich), side-by-side or stacked, tables, and
values printed compactly. Every function also has a plain-text mode (`--plain`)."""
from __future__ import annotations

import sys

import numpy as np
from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

# a terminal at least this wide shows the original and the converted code side by side
SIDE_BY_SIDE_WIDTH = 140


def console(plain: bool = False) -> Console:
    """A console on the current stdout (looked up now, so test runners can capture it)."""
    return Console(file=sys.stdout, no_color=plain, highlight=False, soft_wrap=plain,
                   force_terminal=None if not plain else False)


def format_value(v) -> str:
    """A result, compactly: numpy scalars as Python numbers, arrays with their values."""
    if isinstance(v, np.generic):
        return repr(v.item())
    if isinstance(v, np.ndarray):
        return " ".join(np.array2string(v, separator=", ", threshold=20, precision=6,
                                        max_line_width=10_000).split())
    if isinstance(v, tuple):
        return "(" + ", ".join(format_value(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(format_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {format_value(x)}" for k, x in v.items()) + "}"
    return repr(v)


def show_code(original: str, converted: str, original_title: str, converted_title: str, plain: bool,
              width: int | None = None) -> None:
    """Print the original and the converted source: beside each other on a wide
    terminal, else one above the other; `plain` prints uncoloured text with headers."""
    if plain:
        out = sys.stdout
        out.write(f"# --- {original_title} ---\n{original.rstrip()}\n\n")
        out.write(f"# --- {converted_title} ---\n{converted.rstrip()}\n")
        return
    con = console()
    if width:
        con.width = width
    left = Syntax(original.rstrip(), "python", line_numbers=True, word_wrap=True)
    right = Syntax(converted.rstrip(), "python", line_numbers=True, word_wrap=True)
    if con.width >= SIDE_BY_SIDE_WIDTH:
        table = Table(show_header=True, expand=True, box=None, padding=(0, 1))
        table.add_column(original_title, ratio=2)
        table.add_column(converted_title, ratio=3)
        table.add_row(left, right)
        con.print(table)
    else:
        con.rule(original_title)
        con.print(left)
        con.rule(converted_title)
        con.print(right)


def show_text(text: str, plain: bool, lexer: str | None = None) -> None:
    """Text as it is (plain) or highlighted with `lexer`."""
    if plain or lexer is None or not console().is_terminal:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    console().print(Syntax(text.rstrip(), lexer, word_wrap=True))


def table(title: str, columns: list[str], rows: list[list[str]], plain: bool) -> None:
    """A table: rich box drawing, or aligned plain columns."""
    if plain:
        widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
        out = sys.stdout
        out.write(f"{title}\n")
        out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip() + "\n")
        out.write("  ".join("-" * w for w in widths) + "\n")
        for r in rows:
            out.write("  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip() + "\n")
        return
    t = Table(title=title)
    for i, c in enumerate(columns):
        t.add_column(c, overflow="fold", no_wrap=i == 0)
    for r in rows:
        t.add_row(*r)
    console().print(t)
