"""Python data structures in converted code: `list.append` that also works on a staged
tensor list inside a graph loop, and the item snapshots that carry containers whose items
are assigned through graph control flow."""
from __future__ import annotations

import numpy as np

import graphcore as gc

from .staged_lists import StagedList
from .staging import is_tensor, same_python_value


def list_append(target, value):
    """`target.append(value)`; returns the list (a new tensor list when staged)."""
    if isinstance(target, StagedList):
        return target.appended(value)
    if is_tensor(target) and target.dtype == gc.variant:
        return gc.tensor_list_push_back(target, value)
    target.append(value)
    return target


def copy_containers(values):
    """`values` with every list, dict and numpy array copied (deeply), so a trace that
    changes them in place (a loop's first trace, an `if`'s branches) leaves the originals as
    they were."""
    if isinstance(values, np.ndarray):
        return values.copy()
    if isinstance(values, list):
        return [copy_containers(v) for v in values]
    if isinstance(values, dict):
        return {k: copy_containers(v) for k, v in values.items()}
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
