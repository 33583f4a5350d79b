"""The closure cells a conditional expression's branches may assign through `nonlocal`.

`r = g(x) if n > 0 else 0.0` with `def g(v): nonlocal c; c += 1; ...`: the converter makes
the branches lambdas, and a graph cond traces both (the true one twice when it replans), so
the Python cell of `c` took every trace's change: `c` came out 2 where Python gives 1 or 0,
or a tensor made inside one branch was read in the other. An `if` statement carries such
names as its state (converters/control_flow.py sees the nested functions' `nonlocal`); a
conditional expression, converted inside an expression, finds them here instead: the cells
of the functions its branches can reach through their closures, that one of those functions
assigns (STORE_DEREF). `if_exp` carries their contents through the cond as variables."""
from __future__ import annotations

import dis
import functools
import types


def assigned_cells(*functions) -> list[tuple[str, types.CellType]]:
    """(name, cell) of each closure cell reachable from `functions` (through the functions
    their closures hold) that a reachable function assigns, in a stable order."""
    found: dict[int, tuple[str, types.CellType]] = {}
    seen: set[int] = set()
    todo = [f for f in functions if isinstance(f, types.FunctionType)]
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        code = fn.__code__
        written = _assigned_free_names(code)
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            if name in written:
                found.setdefault(id(cell), (name, cell))
            try:
                value = cell.cell_contents
            except ValueError:  # (not bound yet)
                continue
            if isinstance(value, types.FunctionType):
                todo.append(value)
    return sorted(found.values(), key=lambda item: item[0])


@functools.lru_cache(maxsize=4096)
def _assigned_free_names(code) -> frozenset:
    return frozenset(ins.argval for ins in dis.get_instructions(code) if ins.opname == "STORE_DEREF")


_EMPTY = object()


def read(cell):
    """A cell's value (`_EMPTY` when it is not bound yet)."""
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY


def write(cell, value) -> None:
    if value is _EMPTY:
        return
    cell.cell_contents = value
