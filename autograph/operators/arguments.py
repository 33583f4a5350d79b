"""Arguments the traced function changes in place, written back to the caller's objects
after each run, as Python would have changed them.

In Python `x += 1`, `x[0] = 5` on an argument array and `lst.append(v)` on an argument list
change the caller's object. In the graph an array is a value: the in-place statement makes
a new tensor. So each trace follows which tensor is the current value of each argument array
(the placeholder, then each in-place result made from it, whatever name holds it: a helper's
parameter too), and which argument lists and dicts changed (the trace works on copies of
them). After a run the final values are copied into the caller's arrays (np.copyto) and the
caller's lists and dicts get their new items.

Refused, naming the line, where that cannot be Python's behaviour:
* an in-place change of an argument array inside a loop or `if` on a tensor (the change
  would have to come out of every iteration or branch: write `x = x + 1` there and return x);
* a read of the array's old value after the change (`inc(x)` of a helper that changes its
  parameter in place and returns nothing, then `x.sum()`: Python sees the new items, the
  graph's `x` is the old tensor);
* a changed argument list or dict given a new item that is a container holding tensors.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

import graphcore as gc
from graphcore.errors import StagingError

from .staging import is_copy, location

_PASS_THROUGH = frozenset({"Identity", "Enter", "Switch", "Merge", "Exit", "StopGradient"})
_trackers: "weakref.WeakKeyDictionary[gc.Graph, Tracker]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


class _Root:
    """One argument array: its placeholder (by position among the graph inputs), its name,
    its latest value and the older values with the op id after which reading them is stale."""

    __slots__ = ("index", "name", "latest", "superseded")

    def __init__(self, index: int, name: str, placeholder):
        self.index, self.name, self.latest = index, name, placeholder
        self.superseded: list = []  # (old tensor, last op id of the change, line)


class Tracker:
    """The arguments of one trace: array roots by the id of each of their values, and the
    containers (lists, dicts) passed in, with their items as they came."""

    def __init__(self, graph: gc.Graph):
        self.graph = graph
        self.values: dict = {}      # id(tensor) -> (tensor, _Root)
        self.roots: list = []
        self.containers: list = []  # (path, the trace's copy, its items as they came)

    def add_array(self, index: int, name: str, placeholder) -> None:
        root = _Root(index, name, placeholder)
        self.roots.append(root)
        self.values[id(placeholder)] = (placeholder, root)

    def add_containers(self, name: str, value, path=()) -> None:
        """Note every list and dict of an argument (the trace's copies), with their items."""
        if isinstance(value, list):
            self.containers.append(((name,) + path, value, list(value)))
            for i, v in enumerate(value):
                self.add_containers(name, v, path + (i,))
        elif isinstance(value, dict):
            self.containers.append(((name,) + path, value, dict(value)))
            for k, v in value.items():
                self.add_containers(name, v, path + (k,))
        elif isinstance(value, tuple):
            for i, v in enumerate(value):
                self.add_containers(name, v, path + (i,))

    def root_of(self, t) -> "_Root | None":
        hit = self.values.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        return None

    def reaches_root(self, t) -> "_Root | None":
        """The argument array `t` stands for, through the ops that carry a value into a loop
        or branch unchanged."""
        seen, todo = set(), [t]
        while todo and len(seen) < 256:
            u = todo.pop()
            if id(u) in seen:
                continue
            seen.add(id(u))
            root = self.root_of(u)
            if root is not None:
                return root
            if u.op.type in _PASS_THROUGH and not is_copy(u):
                todo.extend(x for x in u.op.inputs if x.op.type != "NextIteration")
        return None

    # -- the end of the trace -----------------------------------------------------------
    def finish(self, placeholders: list) -> "WriteBack | None":
        """Check that no old value is read after its change; the write-back plan (None:
        nothing changed)."""
        arrays = []
        for root in self.roots:
            for old, after, line in root.superseded:
                late = [op for op in old.consumers() if op._id > after]
                if late:
                    raise StagingError(
                        f"{location(line)}: this changes the caller's array '{root.name}' in place, and "
                        f"{late[0].location()} reads the array afterwards through a name that still holds its old "
                        f"value (a helper changed its parameter in place and did not return it, say): Python sees "
                        f"the new items there, the graph the old ones. Return the array from the helper and assign "
                        f"it (`{root.name} = bump({root.name})`), or write `{root.name} = {root.name} + ...` and use "
                        f"that name.")
            if root.latest is not placeholders[root.index]:
                arrays.append((root.index, root.latest))
        lists = []
        index = {id(p): i for i, p in enumerate(placeholders)}
        for path, copy, items in self.containers:
            if isinstance(copy, list):
                changed = len(copy) != len(items) or any(a is not b for a, b in zip(copy, items))
            else:
                changed = list(copy) != list(items) or any(copy[k] is not items[k] for k in copy)
            if changed:
                lists.append((path, copy, self._item_specs(path, copy, items, index)))
        if not arrays and not lists:
            return None
        return WriteBack(arrays, lists)

    def _item_specs(self, path, copy, items, index) -> list:
        """Per item of a changed container: ('input', i) the caller's own graph input,
        ('fetch', t) a value the run computes, ('same', key) the caller's own item, ('py', v)
        a Python value the trace put there."""
        def spec(v, key):
            if isinstance(v, gc.Tensor):
                if id(v) in index:
                    return ("input", index[id(v)])
                if v.op.ctx is not None:
                    raise StagingError(
                        f"argument '{path[0]}' gets an item computed inside a loop or `if` on a tensor ({v.op.location()}) "
                        "that is not a variable of it; assign it in the loop or branch first.")
                return ("fetch", v)
            if isinstance(copy, list):
                same = next((i for i, old in enumerate(items) if old is v), None)
            else:
                same = next((k for k, old in items.items() if old is v), None)
            if same is not None:
                return ("same", same)
            if _holds_tensor(v):
                raise StagingError(
                    f"argument '{path[0]}' (a {type(copy).__name__} the caller passed) is given a new "
                    f"{type(v).__name__} holding graph tensors; the graph cannot write such an item back into the "
                    f"caller's {type(copy).__name__}. Add numbers or arrays to it, or return the new value.")
            return ("py", v)
        if isinstance(copy, list):
            return [spec(v, i) for i, v in enumerate(copy)]
        return {k: spec(v, k) for k, v in copy.items()}


def _holds_tensor(v) -> bool:
    if isinstance(v, gc.Tensor):
        return True
    if isinstance(v, (list, tuple)):
        return any(_holds_tensor(x) for x in v)
    if isinstance(v, dict):
        return any(_holds_tensor(x) for x in v.values())
    return False


class WriteBack:
    """What a run writes back: arrays (graph input index, final tensor) and containers
    (path in the arguments, item specs)."""

    def __init__(self, arrays: list, containers: list):
        self.arrays = arrays
        self.containers = containers

    @property
    def tensors(self) -> list:
        """What a run fetches for the write-back, in order."""
        out = [t for _, t in self.arrays]
        for _, _, specs in self.containers:
            items = specs if isinstance(specs, list) else specs.values()
            out += [s[1] for s in items if s[0] == "fetch"]
        return out

    def follow(self, new) -> "WriteBack":
        """The plan with each fetched tensor replaced by `new(tensor)` (the optimizer's)."""
        arrays = [(i, new(t)) for i, t in self.arrays]
        containers = []
        for path, copy, specs in self.containers:
            def f(s):
                return ("fetch", new(s[1])) if s[0] == "fetch" else s
            containers.append((path, copy, [f(s) for s in specs] if isinstance(specs, list) else
                               {k: f(s) for k, s in specs.items()}))
        return WriteBack(arrays, containers)

    @property
    def needs_arguments(self) -> bool:
        return bool(self.containers)

    def apply(self, values: list, input_values: list, arguments: "dict | None") -> None:
        """Write a run's `values` (in the order of `tensors`) into the caller's objects:
        `input_values` (the graph inputs' values, the caller's arrays) and `arguments` (name
        -> the caller's argument)."""
        it = iter(values)
        for i, _ in self.arrays:
            target = input_values[i]
            value = next(it)
            if isinstance(target, np.ndarray) and target.flags.writeable:
                np.copyto(target, value, casting="unsafe")
        if arguments is None:
            return
        for path, _, specs in self.containers:
            target = arguments.get(path[0])
            for key in path[1:]:
                target = target[key]
            old = list(target) if isinstance(target, list) else dict(target)

            def item(s):
                kind, v = s
                if kind == "input":
                    return input_values[v]
                if kind == "fetch":
                    return next(it)
                if kind == "same":
                    return old[v]
                return v
            if isinstance(target, list):
                target[:] = [item(s) for s in specs]
            else:
                new = {k: item(s) for k, s in specs.items()}
                target.clear()
                target.update(new)


# -- the trace's hooks ----------------------------------------------------------------------

def start(graph: gc.Graph) -> Tracker:
    tracker = Tracker(graph)
    with _lock:
        _trackers[graph] = tracker
    return tracker


def stop(graph: gc.Graph) -> None:
    with _lock:
        _trackers.pop(graph, None)


def _tracker() -> "Tracker | None":
    g = gc.get_default_graph()
    return _trackers.get(g) if g is not None else None


def changed_in_place(current, result, what: str, line: int) -> "bool | None":
    """`current` changed in place (`what`, at the user's `line`) into `result`. Returns
    whether `current` is an argument array's value (its change will be written back);
    None when no trace follows arguments (converted code run another way)."""
    tracker = _tracker()
    if tracker is None:
        return None
    if not isinstance(current, gc.Tensor):
        return False
    root = tracker.root_of(current)
    g = tracker.graph
    if g.control_flow_context is not None:
        root = root or tracker.reaches_root(current)
        if root is None:
            return False
        raise StagingError(
            f"{location(line)}: {what} changes the caller's array '{root.name}' in place inside a loop or `if` on a "
            f"tensor (the statements after a `return` inside such an `if` count: they run in a branch): Python "
            f"changes the caller's array there, and the graph cannot write a change made inside graph control flow "
            f"back to it. Change a copy (`{root.name} = {root.name}.copy()` first) and return it, for the caller to "
            f"assign, or make the change before the loop or `if`.")
    if root is None or root.latest is not current:
        return root is not None
    if isinstance(result, gc.Tensor):
        root.superseded.append((current, result.op._id, line))
        root.latest = result
        tracker.values[id(result)] = (result, root)
    return True
