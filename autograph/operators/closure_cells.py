"""The closure cells a conditional expression's branches may assign through `nonlocal`.

`r = g(x) if n > 0 else 0.0` with `def g(v): nonlocal c; c += 1; ...`: the converter makes
the branches lambdas, and a graph cond traces both (the true one twice when it replans), so
the Python cell of `c` took every trace's change: `c` came out 2 where Python gives 1 or 0,
or a tensor made inside one branch was read in the other. An `if` statement carries such
names as its state (converters/control_flow.py sees the nested functions' `nonlocal`); a
conditional expression, converted inside an expression, finds them here instead: the cells
of the functions its branches can reach through their closures, that one of those functions
assigns (STORE_DEREF). `if_exp` carries their contents through the cond as variables.

Below, the same facts for a whole `@function`: the `nonlocal` cells and module globals it
(or a helper it reaches) assigns, which Function feeds in and writes back per call."""
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


# -- `nonlocal` / `global` names a `@function` assigns: fed in and written back per call --------
#
# `def add(x): nonlocal total; total = total + x`: Python reads the cell's current value on
# each call and leaves the new one there. A trace that read the cell as a constant and left
# its tensor in it broke the next call (a tensor of another graph). So each such name holding
# a numpy value is a graph input of the trace (fed its value at each call; a guard retraces
# when its type, dtype or shape changes), and a tensor the trace leaves in it is fetched and
# written back after each run, as the Python type the program gives it. The name is given
# back its value before the trace, whatever happens: a user's cell never holds a tensor.


class StateName:
    """One `nonlocal` cell or module global a traced function assigns."""

    __slots__ = ("name", "cell", "namespace", "guard_path", "guard_get", "where")

    def __init__(self, name: str, cell=None, namespace: "dict | None" = None, where: str = ""):
        # where: "file:line" of the function's first assignment to the name
        self.name, self.cell, self.namespace, self.where = name, cell, namespace, where
        if cell is not None:
            self.guard_path, self.guard_get = ("cell", id(cell)), ("cell", cell)
        else:
            self.guard_path, self.guard_get = ("global", id(namespace), name), ("global", namespace, name)

    def get(self):
        if self.cell is not None:
            return read(self.cell)
        return self.namespace.get(self.name, _EMPTY)

    def set(self, value) -> None:
        if value is _EMPTY:
            return
        if self.cell is not None:
            self.cell.cell_contents = value
        else:
            self.namespace[self.name] = value

    @property
    def key(self) -> tuple:
        return ("cell", id(self.cell)) if self.cell is not None else ("global", id(self.namespace), self.name)

    @property
    def what(self) -> str:
        return f"{self.where}: the {'nonlocal' if self.cell is not None else 'global'} '{self.name}'"


def assigned_state(fn) -> list[StateName]:
    """The `nonlocal` cells and globals that `fn`, or a function it reaches through its
    closure or the globals it loads (a helper, the function `grad` wraps), assigns: a
    helper's `nonlocal` changed in a trace is the caller's to carry (the library's are not
    followed)."""
    from ..guards import _library_file  # noqa: PLC0415 (guards imports the operators' package)

    found: dict = {}
    seen: set[int] = set()
    todo = [fn]
    while todo:
        f = todo.pop()
        while not isinstance(f, types.FunctionType):
            inner = getattr(f, "__func__", None) or getattr(f, "__wrapped__", None)  # (a method, a `@function`)
            if inner is None or inner is f:
                break
            f = inner
        if not isinstance(f, types.FunctionType) or id(f) in seen:
            continue
        seen.add(id(f))
        code = f.__code__
        if _library_file(code.co_filename):  # (grad's wrapper: only the functions it holds)
            todo.extend(v for v in map(read, f.__closure__ or ()) if callable(v))
            continue
        todo.extend(v for name in _loaded_global_names(code) if callable(v := f.__globals__.get(name)))
        written = _assigned_free_names(code)
        for name, cell in zip(code.co_freevars, f.__closure__ or ()):
            if name in written and id(cell) not in found:
                found[id(cell)] = StateName(name, cell=cell, where=_assignment_line(code, name))
            value = read(cell)
            if callable(value):
                todo.append(value)
        for name in _assigned_global_names(code):
            key = (id(f.__globals__), name)
            if key not in found:
                found[key] = StateName(name, namespace=f.__globals__, where=_assignment_line(code, name))
    return sorted(found.values(), key=lambda s: s.name)


def _assignment_line(code, name: str) -> str:
    """"file:line" of the first assignment to `name` in `code` (or a function nested in it)."""
    line = None
    for ins in dis.get_instructions(code):
        if ins.opname in ("STORE_DEREF", "STORE_GLOBAL") and ins.argval == name:
            line = ins.positions.lineno if ins.positions is not None else None
            break
    if line is None:
        line = next((int(_assignment_line(c, name).rpartition(":")[2]) for c in code.co_consts
                     if isinstance(c, types.CodeType) and name in _assigned_global_names(c)), code.co_firstlineno)
    return f"{code.co_filename}:{line}"


@functools.lru_cache(maxsize=4096)
def _loaded_global_names(code) -> frozenset:
    names = {ins.argval for ins in dis.get_instructions(code) if ins.opname == "LOAD_GLOBAL"}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _loaded_global_names(const)
    return frozenset(names)


@functools.lru_cache(maxsize=4096)
def _assigned_global_names(code) -> frozenset:
    names = {ins.argval for ins in dis.get_instructions(code) if ins.opname == "STORE_GLOBAL"}
    for const in code.co_consts:  # (a nested function declaring the same `global`)
        if isinstance(const, types.CodeType):
            names |= _assigned_global_names(const)
    return frozenset(names)

