"""Output for people: highlighted source (rich), side-by-side or stacked, tables, and
values printed compactly. Every function also has a plain-text mode (`--plain`)."""
from __future__ import annotations

import shutil
import sys
import textwrap
from dataclasses import dataclass

import numpy as np
from rich import box
from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

# a terminal at least this wide shows the original and the converted code side by side
SIDE_BY_SIDE_WIDTH = 140


def console(plain: bool = False) -> Console:
    """A console on the current stdout (looked up now, so test runners can capture it)."""
    # no_color None: rich then honours $NO_COLOR
    return Console(file=sys.stdout, no_color=True if plain else None, highlight=False, soft_wrap=plain,
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


def result_repr(v) -> str:
    """A result as `run` and `grad` print it: arrays with numpy's own repr (`array([2. , 3.5])`,
    dtype shown where numpy shows it), numpy scalars as the Python number they hold."""
    if isinstance(v, np.generic):
        return repr(v.item())
    if isinstance(v, np.ndarray):
        return repr(v)
    if isinstance(v, tuple):
        return "(" + ", ".join(result_repr(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(result_repr(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {result_repr(x)}" for k, x in v.items()) + "}"
    return repr(v)


def show_code(original: str, converted: str, original_title: str, converted_title: str, plain: bool,
              width: int | None = None, first_line: int = 1) -> None:
    """Print the original and the converted source: beside each other on a wide
    terminal, else one above the other; `plain` prints uncoloured text with headers.
    The original is numbered as in its file (from `first_line`), the numbers the converted
    code's `line=` arguments refer to; the converted code is not numbered (its own line
    numbers would be a second, unrelated count)."""
    if plain:
        out = sys.stdout
        out.write(f"# --- {original_title} ---\n{original.rstrip()}\n\n")
        out.write(f"# --- {converted_title} ---\n{converted.rstrip()}\n")
        return
    con = console()
    if width:
        con.width = width
    left = Syntax(original.rstrip(), "python", line_numbers=True, start_line=max(first_line, 1), word_wrap=True)
    right = Syntax(converted.rstrip(), "python", line_numbers=False, word_wrap=True)
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


def short_value(v, digits: int = 6) -> str:
    """A value for a table cell: floats to `digits` significant digits, arrays on one line."""
    if isinstance(v, (float, np.floating)):
        text = repr(float(v))
        return text if len(text) <= digits + 4 else f"{float(v):.{digits}g}"
    if isinstance(v, np.ndarray):
        with np.printoptions(precision=digits - 2, threshold=12, edgeitems=3, suppress=True):
            return " ".join(np.array2string(v, separator=", ", max_line_width=10_000).split())
    if isinstance(v, tuple):
        return "(" + ", ".join(short_value(x, digits) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(short_value(x, digits) for x in v) + "]"
    return format_value(v)


@dataclass(frozen=True)
class Column:
    """A table column: `justify` "left" or "right"; a `squeeze` column gives up width (its
    cells wrap onto more lines) when the table would not fit, the others never do."""
    header: str
    justify: str = "left"
    squeeze: bool = False


# a squeezed column keeps at least this many characters a line
MIN_SQUEEZED = 10


def terminal_width(default: int = 80) -> int:
    """The width to fit: the terminal's, else $COLUMNS, else 80 (a pipe)."""
    return shutil.get_terminal_size((default, 24)).columns


def fit_widths(columns: list[Column], rows: list[list[str]], budget: int) -> list[int]:
    """Column widths whose sum fits `budget`: the natural widths, the squeezable columns
    narrowed (the widest first, never below their header or MIN_SQUEEZED) until the total
    fits; the sum is still over `budget` when even that is not enough."""
    widths = [max([len(c.header)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    while sum(widths) > budget:
        cands = [i for i, c in enumerate(columns) if c.squeeze and widths[i] > max(len(c.header), MIN_SQUEEZED)]
        if not cands:
            break
        i = max(cands, key=lambda k: widths[k])
        widths[i] -= 1
    return widths


def _wrap(text: str, width: int) -> list[str]:
    """A cell's lines at `width`: wrapped at spaces, a longer word folded; never cut short."""
    return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]


def _stacked(title: str, columns: list[Column], rows: list[list[str]], width: int) -> None:
    """Each row as a block (`name` then `  header: value` lines, wrapped): for a terminal
    too narrow for the columns side by side, so no value is cut or dropped."""
    out = sys.stdout
    out.write("\n".join(_wrap(title, width)) + "\n")
    label = max(len(c.header) for c in columns[1:]) if len(columns) > 1 else 0
    for r in rows:
        out.write("\n" + "\n".join(_wrap(f"{columns[0].header}: {r[0]}", width)) + "\n")
        for c, x in zip(columns[1:], r[1:]):
            lines = _wrap(x, max(width - label - 4, 10))
            out.write(f"  {c.header + ':':<{label + 1}} {lines[0]}\n")
            for more in lines[1:]:
                out.write(" " * (label + 4) + more + "\n")


def table(title: str, columns: list, rows: list[list[str]], plain: bool, width: int | None = None) -> None:
    """A table that fits the terminal (80 columns in a pipe): rich box drawing, or aligned
    plain columns. Squeezable columns wrap onto more lines; when even that does not fit,
    each row is printed as a block of `header: value` lines. No value is ever cut."""
    columns = [c if isinstance(c, Column) else Column(c) for c in columns]
    width = width or terminal_width()
    budget = width - 2 * (len(columns) - 1) if plain else width - 3 * len(columns) + 1
    widths = fit_widths(columns, rows, budget)
    if sum(widths) > budget:
        _stacked(title, columns, rows, width)
        return
    if plain:
        out = sys.stdout
        out.write("\n".join(_wrap(title, width)) + "\n")

        def lines(cells):
            wrapped = [_wrap(x, w) if c.squeeze else [x] for c, x, w in zip(columns, cells, widths)]
            for k in range(max(len(w) for w in wrapped)):
                parts = [(w[k] if k < len(w) else "") for w in wrapped]
                out.write("  ".join(p.rjust(w) if c.justify == "right" else p.ljust(w)
                                    for c, p, w in zip(columns, parts, widths)).rstrip() + "\n")

        lines([c.header for c in columns])
        out.write("  ".join("-" * w for w in widths) + "\n")
        for r in rows:
            lines(r)
        return
    # rich, no outer edge: each column has one space of padding each side, and one
    # character separates neighbours
    t = Table(title=title, box=box.SIMPLE_HEAVY, show_edge=False, padding=(0, 1))
    for c, w in zip(columns, widths):
        t.add_column(c.header, justify=c.justify, no_wrap=not c.squeeze, overflow="fold",
                     min_width=None if c.squeeze else w, max_width=w)
    for r in rows:
        t.add_row(*r)
    con = console()
    con.width = width
    con.print(t)
