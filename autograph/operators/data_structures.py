"""Python data structures in converted code: `list.append` that also works on a staged
tensor list inside a graph loop, and the item snapshots that carry containers whose items
are assigned through graph control flow.

A list appended to inside a loop or `if` on a tensor becomes that statement's state, a new
value after it: a second name for the same list (`alias = acc`) or a container holding it
(`d = {"vals": acc}`) would see the appends in Python and keep the old list in the graph,
so such an append is refused (`refuse_if_aliased`)."""
from __future__ import annotations

import builtins
import sys
from collections import OrderedDict

import numpy as np

import graphcore as gc
from graphcore.errors import StagingError
from graphcore.function_graph import control_flow_scope
from graphcore.side_tables import SideTable

from .staged_errors import guard_value
from .staged_lists import StagedList
from .staging import in_dry_run, is_tensor, location, same_python_value


class InPlaceAliasError(StagingError):
    """An in-place change to an array or a list that another variable names: Python changes
    both, the graph would change one (a loop's dry run lets it through, as the real body's
    first iteration would raise it too)."""


class AliasedListError(InPlaceAliasError):
    """A list that graph control flow appends to is also reachable under another name."""


def on_graph_path() -> bool:
    """Whether the code running is traced inside a loop or `if` on a tensor (or is a loop
    body's dry run, traced once before the loop to plan it)."""
    g = gc.get_default_graph()
    return g is not None and (control_flow_scope(g) is not None or in_dry_run())


def list_append(target, value, name: str | None = None, line: int = 0, held_at: int = 0):
    """`target.append(value)`; returns the list (a new tensor list when staged). `name`,
    `line`, `held_at`: the variable, the user's line, a line that puts the list into a
    container (0: none), for the refusal of appends another name would see."""
    staged = isinstance(target, StagedList) or is_tensor(target) and target.dtype == gc.variant
    # state of the loop or `if` being traced (its trace works on a copy), not a list the body makes for itself
    carried = name is not None and on_graph_path() and builtins.len(originals(target)) > 1
    if staged or carried:
        _refuse_unstageable_item(value, name or "the list", line)
    if isinstance(target, StagedList):
        return target.appended(value)
    if staged:
        return gc.tensor_list_push_back(target, value)
    if carried:
        refuse_if_aliased(target, name, f"`{name}.append(...)`", line, held_at, sys._getframe(1))
    target.append(value)
    return target


def _refuse_unstageable_item(value, name: str, line: int) -> None:
    """A list a loop or `if` on a tensor appends to becomes a graph list of numbers or
    arrays: a string or a list of values cannot be one of its items."""
    if isinstance(value, str):
        raise TypeError(f"{location(line)}: `{name}.append(...)` of a string inside a loop or `if` on a tensor: a list "
                        "built in the graph holds numbers and arrays. Print each line where it is made, or collect "
                        "the numbers and format them after the loop.")
    if callable(value) or not (is_tensor(value) or isinstance(value, (int, float, complex, np.generic, np.ndarray,
                                                                       list, tuple, dict, StagedList))):
        what = "a function" if callable(value) else "None" if value is None else f"a {type(value).__name__}"
        raise TypeError(f"{location(line)}: `{name}.append(...)` of {what} inside a loop or `if` on a tensor: a list "
                        "built in the graph holds numbers and arrays, and how many items it gets is known only when "
                        "the graph runs. Build such a list before the loop (over a Python range), or append the "
                        "numbers it would give.")
    if isinstance(value, (list, tuple, dict)) and not _numbers_only(value):
        raise TypeError(f"{location(line)}: `{name}.append(...)` of a {type(value).__name__} holding graph values "
                        "inside a loop or `if` on a tensor: a list built in the graph holds numbers and arrays. "
                        "Append an array (`np.array([a, b])`, a row of the final np.array) or each number on its own.")


def _numbers_only(value) -> bool:
    items = value.values() if isinstance(value, dict) else value
    return all(isinstance(v, (int, float, bool, np.generic)) for v in items)


def refuse_if_aliased(target: list, name: str, what: str, line: int, held_at: int, frame) -> None:
    """Refuse changing the list `target` (variable `name`) inside graph control flow when
    another variable of the converted function names it, or the function puts it into a
    container (line `held_at`): Python's other names see the change, the graph's do not."""
    same = originals(target)
    generated = frame.f_code.co_filename
    while frame is not None:
        if frame.f_code.co_filename == generated:
            for other, v in frame.f_locals.items():
                if other != name and not other.startswith("ag__") and not other.endswith("_") and \
                        any(v is o for o in same):
                    raise AliasedListError(
                        f"{location(line)}: {what} inside a loop or `if` on a tensor changes the list that '{other}' "
                        f"also names, so in Python '{other}' sees the change; in the graph the list is a value of the "
                        f"loop or branch, and '{other}' would keep the old one. Use one name for the list (or "
                        f"assign `{other} = {name}` after the loop or `if`).")
        frame = frame.f_back
    if held_at:
        raise AliasedListError(
            f"{location(line)}: {what} inside a loop or `if` on a tensor changes a list that line {held_at} puts into "
            f"a list, dict or object, which in Python holds this very list and sees the change; in the graph the list "
            f"is a value of the loop or branch, and the container would keep the old one. Put the list into the "
            f"container after the loop or `if`.")


# copies that control-flow traces work on -> what each copies (see copy_containers), kept
# with the graph being traced (copies hold its tensors: a module-level table kept every
# graph alive); lists take no weak references, so the copies are held, the oldest let go
# past _MAX_COPIES; outside a trace, in a small table of their own
_ORIGINALS = SideTable("container copies")
_UNTRACED: "OrderedDict[int, tuple]" = OrderedDict()
_MAX_COPIES = 4096


def _copies() -> "OrderedDict[int, tuple]":
    g = gc.get_default_graph()
    return _UNTRACED if g is None else _ORIGINALS.setdefault(g, OrderedDict())


def _remember(copy, original):
    table = _copies()
    table[id(copy)] = (copy, original)
    if len(table) > _MAX_COPIES:
        table.popitem(last=False)
    return copy


def originals(value) -> list:
    """`value`, and what it is a copy of (a branch's or a loop trace's copy of a list or a
    numpy array), and so on back to the user's own object."""
    out = [value]
    table = _copies()
    while len(out) < 64:
        entry = table.get(id(out[-1]))
        if entry is None or entry[0] is not out[-1]:
            break
        out.append(entry[1])
    return out


def copy_containers(values):
    """`values` with every list, dict and numpy array copied (deeply), so a trace that
    changes them in place (a loop's first trace, an `if`'s branches) leaves the originals as
    they were; each copy remembers its original (`originals`)."""
    if isinstance(values, np.ndarray):
        return _remember(values.copy(), values)
    if isinstance(values, list):
        return _remember([copy_containers(v) for v in values], values)
    if isinstance(values, dict):
        return _remember({k: copy_containers(v) for k, v in values.items()}, values)
    if isinstance(values, tuple) and not hasattr(values, "_fields"):
        return tuple(copy_containers(v) for v in values)
    return values


def unchanged(before, after) -> bool:
    """`after` (from a trace on copies, see copy_containers) is `before`, or a copy of the
    numpy array `before` that the trace did not change."""
    return after is before or isinstance(before, np.ndarray) and same_python_value(before, after)


def contents(container):
    """The items of a container whose items are assigned in control flow: a snapshot
    (lists and dicts copied) that control-flow operators carry as state."""
    return copy_containers(container)


def set_contents(container, items) -> None:
    """Write `items` (a snapshot from `contents`) back into `container` in place, nested
    lists and dicts too, so every alias of it sees the new items."""
    if container is items:
        return
    if isinstance(container, list) and isinstance(items, list):
        if len(container) != len(items):
            container[:] = copy_containers(items)
            return
        for i, v in enumerate(items):
            _set_item(container, i, v)
    elif isinstance(container, dict) and isinstance(items, dict):
        for k in [k for k in container if k not in items]:
            del container[k]
        for k, v in items.items():
            _set_item(container, k, v)


def _set_item(container, key, value) -> None:
    old = container[key] if (isinstance(container, dict) and key in container) or isinstance(container, list) else None
    if isinstance(old, (list, dict)) and type(old) is type(value):
        set_contents(old, value)
    else:
        container[key] = copy_containers(value)


# -- list methods that compare items, where graph tensors take part ---------------------------

LIST_QUERIES = frozenset({"count", "index", "sort", "remove"})


def _equal_scalar(v, x):
    """Python's `v is x or v == x` for one list item (a bool tensor, or a Python bool);
    numpy's ValueError for an array, whose truth is ambiguous."""
    if v is x:
        return True
    eq = v == x
    if not is_tensor(eq):
        return builtins.bool(eq)
    if eq.shape.rank != 0:
        raise ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() or "
                         "a.all()")
    return eq


def list_method(lst: list, name: str, args, kwargs):
    """`lst.count(x)`, `lst.index(x)` of a list or item that is a graph tensor: Python's
    answer when the graph runs (an int; index's ValueError fails the run where Python raises).
    `sort` and `remove`, whose result would depend on values only the run knows, are refused."""
    from .math_functions import kept  # noqa: PLC0415 (math_functions imports much of operators)
    from .staging import python_value  # noqa: PLC0415

    where = location(0)
    if name in ("sort", "remove"):
        what = "order" if name == "sort" else "length"
        instead = ("np.sort(np.array(lst)) (an array), or sort the list outside the converted function" if name == "sort"
                   else "a numpy mask (`a = a[a != x]`), or remove the item outside the converted function")
        raise TypeError(f"{where}: list.{name}() of a list compared with graph tensors: the list's {what} would "
                        f"depend on values known only when the graph runs, and a Python list cannot change when the "
                        f"graph runs. Use {instead}.")
    if kwargs or builtins.len(args) != (1 if name == "count" else builtins.len(args)) or not args:
        return getattr(lst, name)(*args, **(kwargs or {}))
    x = args[0]
    if name == "count":
        total = 0
        for v in lst:
            eq = _equal_scalar(v, x)
            total = total + (gc.cast(eq, gc.int64) if is_tensor(eq) else builtins.int(eq))
        return python_value(total) if is_tensor(total) else total
    start, stop = (builtins.list(args[1:]) + [0, builtins.len(lst)])[:2] if builtins.len(args) > 1 else (0, builtins.len(lst))
    found = None
    for i in builtins.reversed(builtins.range(builtins.len(lst))[start:stop]):
        eq = _equal_scalar(lst[i], x)
        if eq is True:
            found = i
        elif is_tensor(eq):
            found = gc.where(eq, gc.constant(np.int64(i)), found if found is not None else gc.constant(np.int64(-1)))
    if found is None:
        return lst.index(*args)  # Python's own ValueError: no item can equal it
    if not is_tensor(found):
        return found
    test = gc.greater_equal(found, gc.constant(np.int64(0)))
    message = f"{x!r} is not in list" if not is_tensor(x) else "the value is not in list"
    out = kept(lambda: _guarded(found, test, ValueError(message)), found)
    return python_value(out)


def _guarded(value, test, exc):
    return guard_value(value, test, exc)


def holds_tensor_item(lst) -> bool:
    return builtins.any(is_tensor(v) for v in lst)
