"""Arguments the traced function changes in place, written back to the caller's objects
after each run, as Python would have changed them.

In Python `x += 1`, `x[0] = 5` on an argument array and `lst.append(v)` on an argument list
change the caller's object. In the graph an array is a value: the in-place statement makes
a new tensor. So each trace follows which tensor is the current value of each argument array
(the placeholder, then each in-place result made from it, whatever name holds it: a helper's
parameter too; in a loop or a branch on a tensor, the loop's or the if's output when every
iteration and branch leaves the same array there, changed or not), and which argument lists and dicts changed (the trace
works on copies of them). After a run the final values are copied into the caller's arrays
(np.copyto) and the caller's lists and dicts get their new items.

Refused, naming the line, where that cannot be Python's behaviour:
* an in-place change of an argument array in a loop or branch on a tensor after which the
  name holds another array on some path or iteration (`if c: x += 1; x = x * 2`);
* a read of the array's old value after the change (`inc(x)` of a helper that changes its
  parameter in place and returns nothing, then `x.sum()`: Python sees the new items, the
  graph's `x` is the old tensor);
* a changed argument list or dict given a new item that is a container holding tensors.
"""
from __future__ import annotations

import threading

import numpy as np

import graphcore as gc
from graphcore.errors import StagingError
from graphcore.function_graph import FuncGraph, control_flow_scope, root_graph
from graphcore.ops.python_type_ops import as_type
from graphcore.side_tables import SideTable

from . import path_types
from .staging import is_copy, location


def _passes_through(op) -> bool:
    """Its output is its input's array (define_op's `forwards`), but for NextIteration: the
    next iteration's value, which lineage follows through the loop's Merge instead."""
    return op.op_def.forwards and op.type != "NextIteration"


_CYCLE = object()  # a loop's Merge being looked at: the array, if the rest of the loop says so
_trackers = SideTable("argument trackers")
_lock = threading.Lock()


class _Root:
    """One argument array: its placeholder (by position among the graph inputs), its name,
    and its in-place changes: (old value, new value, line, the context the change was made in)."""

    __slots__ = ("index", "name", "placeholder", "changes", "zero_d")

    def __init__(self, index: int, name: str, placeholder, zero_d: bool = False):
        self.index, self.name, self.placeholder = index, name, placeholder
        self.changes: list = []
        self.zero_d = zero_d  # a 0-d np.ndarray: changed in place as an array, though its tensor is a scalar


class Tracker:
    """The arguments of one trace: array roots by the id of each of their values, and the
    containers (lists, dicts) passed in, with their items as they came."""

    def __init__(self, graph: gc.Graph):
        self.graph = graph
        self.values: dict = {}      # id(tensor) -> (tensor, _Root)
        self.roots: list = []
        self.containers: list = []  # (path, the trace's copy, its items as they came)

    def add_array(self, index: int, name: str, placeholder, zero_d: bool = False) -> None:
        root = _Root(index, name, placeholder, zero_d)
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

    def lineage(self, t, memo: dict) -> "_Root | None":
        """The argument array `t` is the current value of on every path (None: another array
        on some path): a registered value, what a pass-through op carries (into a loop, out
        of it, to its next iteration), a Merge (an if's output, a loop variable) all of whose
        inputs are that array; a loop's Merge is assumed to be while its inputs are looked at."""
        root, _ = self._lineage(t, memo, set())
        return None if root is _CYCLE else root

    def _lineage(self, t, memo: dict, visiting: set):
        """(root or None or _CYCLE, whether it rests on a Merge still being looked at)."""
        key = id(t)
        if key in memo:
            return memo[key], False
        root = self.root_of(t)
        earlier = None if root is not None or is_copy(t) else _earlier(t)
        if earlier is None:
            memo[key] = root
            return root, False
        if key in visiting:
            return _CYCLE, True
        visiting.add(key)
        found, cyclic = [], False
        for x in earlier:
            r, c = self._lineage(x, memo, visiting)
            found.append(r)
            cyclic = cyclic or c
        visiting.discard(key)
        roots = [r for r in found if r is not _CYCLE]
        if any(r is None for r in roots) or len({id(r) for r in roots}) > 1:
            result = None
        else:
            result = roots[0] if roots else _CYCLE
        if not cyclic or result is None:
            memo[key] = result
        return result, cyclic and result is not None

    # -- the end of the trace -----------------------------------------------------------
    def finish(self, placeholders: list) -> "WriteBack | None":
        """Check that no old value is read after its change; the write-back plan (None:
        nothing changed)."""
        arrays = []
        g = self.graph
        memo: dict = {}
        for root in self.roots:
            changes = [c for c in root.changes if _still_built(c[1], g)]
            final, reached = self._final(root, changes, memo)
            for old, new, line, ctx in changes:
                late = [op for op in old.consumers() if op.graph is new.graph and op.serial > new.op.serial
                        and (op.graph is ctx or _inside(op.ctx, ctx))]
                late = [op for op in late if not _control_anchor(op)]
                if not late and id(new) not in reached:
                    if ctx is None:
                        late = [new.op]  # (a helper's change another change of the old value replaced)
                    else:
                        raise StagingError(
                            f"{location(line)}: this changes the caller's array '{root.name}' in place inside a loop "
                            f"or an `if` on a tensor, and after it '{root.name}' names another array on some path or "
                            f"iteration (assigned anew, or changed by a helper that did not return it): which array "
                            f"is the caller's then depends on the path. Change a copy (`{root.name} = "
                            f"{root.name}.copy()` before the loop or if) and return it, or change the caller's array "
                            f"the same way on every path.")
                if late:
                    raise StagingError(
                        f"{location(line)}: this changes the caller's array '{root.name}' in place, and "
                        f"{late[0].location()} reads the array afterwards through a name that still holds its old "
                        f"value (a helper changed its parameter in place and did not return it, say): Python sees "
                        f"the new items there, the graph the old ones. Return the array from the helper and assign "
                        f"it (`{root.name} = bump({root.name})`), or write `{root.name} = {root.name} + ...` and use "
                        f"that name.")
            if final is not placeholders[root.index]:
                arrays.append((root.index, final))
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

    def _final(self, root, changes, memo) -> tuple:
        """The argument's value at the end (the newest value of it outside any control flow)
        and the ids of the values that lead there."""
        start = [root.placeholder] + [new for _, new, _, _ in changes]
        seen, todo, values = set(), list(start), []
        while todo:
            t = todo.pop()
            if id(t) in seen or self.lineage(t, memo) is not root:
                continue
            seen.add(id(t))
            values.append(t)
            for op in t.consumers():
                todo.extend(op.outputs)
        top = [t for t in values if t.graph is self.graph and t.op.ctx is None
               and t.op.type not in ("Switch", "Enter", "NextIteration")]
        final = max(top, key=lambda t: t.op.serial)
        # the values an end value grew from: a change must be one of them
        reached, todo = set(), [final]
        while todo:
            t = todo.pop()
            if id(t) in reached or self.lineage(t, memo) is not root:
                continue
            reached.add(id(t))
            hit = next((old for old, new, _, _ in changes if new is t), None)
            todo.extend([hit] if hit is not None else _earlier(t) or t.op.inputs[:1])
        return final, reached

    def _item_specs(self, path, copy, items, index) -> list:
        """Per item of a changed container: ('input', i) the caller's own graph input,
        ('fetch', t) a value the run computes (('fetch_as', t, kind): as the Python type of path_types'
        kind), ('same', key) the caller's own item, ('py', v)
        a Python value the trace put there."""
        def spec(v, key):
            if isinstance(v, gc.Tensor):
                if id(v) in index:
                    return ("input", index[id(v)])
                if v.op.ctx is not None:
                    raise StagingError(
                        f"argument '{path[0]}' gets an item computed inside a loop or `if` on a tensor ({v.op.location()}) "
                        "that is not a variable of it; assign it in the loop or branch first.")
                kind = path_types.returned_kind(v)  # a Python number (ys.append(math.ceil(x))) given as one,
                if kind is not None:                # of the type the run's path gives it (-2 if c else n)
                    return ("fetch_as", v, kind)
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


def _control_anchor(op) -> bool:
    """A control-flow context's pivot (an Identity of a loop's first Switch that input-less
    ops of the body wait on): it passes no value on, so it reads no array."""
    return op.type == "Identity" and bool(op.waiters) and not any(o.consumers() for o in op.outputs)


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
            for s in items:
                if s[0] == "fetch":
                    out.append(s[1])
                elif s[0] == "fetch_as":
                    out += [s[1]] + ([s[2]] if isinstance(s[2], gc.Tensor) else [])
        return out

    def follow(self, new) -> "WriteBack":
        """The plan with each fetched tensor replaced by `new(tensor)` (the optimizer's)."""
        arrays = [(i, new(t)) for i, t in self.arrays]
        containers = []
        for path, copy, specs in self.containers:
            def f(s):
                if s[0] == "fetch_as":
                    return ("fetch_as", new(s[1]), new(s[2]) if isinstance(s[2], gc.Tensor) else s[2])
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
                kind, v = s[:2]
                if kind == "input":
                    return input_values[v]
                if kind == "fetch":
                    return next(it)
                if kind == "fetch_as":
                    value = next(it)
                    return as_type(value, next(it) if isinstance(s[2], gc.Tensor) else s[2], f"an item of '{path[0]}'")
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
    return _trackers.get(root_graph(g)) if g is not None else None  # (a v2 branch or body: its trace's)


def _earlier(t):
    """The values `t` is one of, a step back, when it carries an array on unchanged: a
    pass-through op's input, a Merge's inputs, an input of a v2 function the tensor it stands
    for, an If's output the branches' outputs, a While's loop variable its value entering
    and the body's result; None when `t` is a value of its own."""
    op = t.op
    if _passes_through(op) or op.type == "NextIteration":
        if op.type == "Merge":
            return list(op.inputs) if t.value_index == 0 else None  # (a Merge's second output: which input)
        return op.inputs[:1]
    if op.type == "Placeholder" and isinstance(op.graph, FuncGraph):
        source = op.graph.source_of(t)
        return [source] if source is not None else None
    if op.type == "If":
        return [op.graph.get_function(op.attrs[a]).outputs[t.value_index] for a in ("then_branch", "else_branch")]
    if op.type == "While" and t.value_index > 0:  # (0: the iteration counter)
        return [op.inputs[t.value_index], op.graph.get_function(op.attrs["body"]).outputs[t.value_index]]
    return None


def _still_built(t, g) -> bool:
    """`t` (a change's result) was not rolled back, nor made in a v2 function whose If or
    While a retrace removed (or never made)."""
    op, fn = t.op, t.graph
    while True:
        if op not in fn:
            return False
        if fn is g:
            return True
        op = getattr(fn, "caller", None)
        if op is None:
            return False
        fn = op.graph


def _inside(ctx, outer) -> bool:
    """Whether control-flow context `ctx` is `outer` or nested in it (None: the top level)."""
    while ctx is not None and ctx is not outer:
        ctx = getattr(ctx, "outer", None)
    return ctx is outer


def is_zero_d_array_argument(value) -> bool:
    """Whether `value` (a scalar tensor) is the current value of a 0-d np.ndarray argument:
    numpy changes such an array in place (`a += 1`, `a[()] = v`), a numpy scalar never."""
    tracker = _tracker()
    if tracker is None or not isinstance(value, gc.Tensor):
        return False
    root = tracker.root_of(value) or tracker.lineage(value, {})
    return root is not None and root.zero_d


def changed_in_place(current, result, what: str, line: int) -> "bool | None":
    """`current` changed in place (`what`, at the user's `line`) into `result`. Returns
    whether `current` is an argument array's value (its change will be written back);
    None when no trace follows arguments (converted code run another way)."""
    tracker = _tracker()
    if tracker is None:
        return None
    if not isinstance(current, gc.Tensor):
        return False
    ctx = control_flow_scope(gc.get_default_graph())  # (a v2 branch or body: its function graph)
    root = tracker.root_of(current) or tracker.lineage(current, {})
    if root is None:
        return False
    if isinstance(result, gc.Tensor):
        root.changes.append((current, result, line, ctx))
        tracker.values[id(result)] = (result, root)
    return True
