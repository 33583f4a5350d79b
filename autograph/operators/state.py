"""Control-flow state with Python containers opened up: a list, tuple or dict held by a
state variable is carried element by element, so each element can be a cond output or a
loop variable of its own (`d['k'] = x + 1` or `a[i] = ...` inside a loop on a tensor).

Converted code gives the operators the state as `get_state` / `set_state` over named
variables. Item assignments `a[i] = v` make the container's items state under the name
`a[:]`, read with `ag__.contents(a)` (a snapshot) and written back in place with
`ag__.set_contents` (see data_structures), so aliases of `a` see the result. A variable
rebound to a new container of the same shape (`t = (t[0] + 1, t[1])`) is opened up the
same way. `FlatState` is the view the operators work on: its names are the leaves'
names (`a[0]`, `d['k']`), its values the leaves; setting it rebuilds fresh containers.
"""
from __future__ import annotations

from typing import Callable, Sequence

from graphcore.errors import StagingError

from .staged_lists import StagedList
from .staging import describe, is_special, is_value, location
from .variables import Undefined, is_undefined, returned_none

CONTENTS_SUFFIX = "[:]"


def is_container(value) -> bool:
    return isinstance(value, (list, tuple, dict))


def display_name(name: str) -> str:
    """The user's name for a state entry: `a` for the items of `a` (`a[:]`)."""
    return name[:-len(CONTENTS_SUFFIX)] if name.endswith(CONTENTS_SUFFIX) else name


def same_structure(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same_structure(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same_structure(x, y) for x, y in zip(a, b))
    return not is_container(b)


def _a(what: str) -> str:
    return f"an {what}" if what[0] in "aeiou" else f"a {what}"


def _shape_of(value) -> str:
    if isinstance(value, dict):
        return f"a dict with keys {list(value)}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)} elements"
    return describe(value)


def _grown_list(name: str, before, after) -> "str | None":
    """The path (`res['a']`, `retval_`) of a list that graph control flow appends to (a list
    of run-time length after it) in a variable whose structure otherwise stays, if any."""
    if isinstance(after, StagedList) and isinstance(before, (list, StagedList)):
        return name
    if "[" in name and isinstance(before, list) and isinstance(after, list) and len(after) > len(before):
        return name  # (appended to inside a container: the traced branch made it longer)
    if isinstance(before, dict) and isinstance(after, dict) and list(before) == list(after):
        for k in before:
            found = _grown_list(f"{name}[{k!r}]", before[k], after[k])
            if found is not None:
                return found
    if isinstance(before, (list, tuple)) and type(before) is type(after) and len(before) == len(after):
        for i, (a, b) in enumerate(zip(before, after)):
            found = _grown_list(f"{name}[{i}]", a, b)
            if found is not None:
                return found
    return None


def _grown_list_message(path: str, what: str, line: int) -> str:
    """Why a list appended to in graph control flow cannot be where it is, and what to write."""
    if is_special(path):  # (the converter's return slot: `return acc` inside the loop)
        return (f"{location(line)}: the returned value is a list that {_a(what)} on a tensor appends to, returned from "
                f"inside the {what}: the graph cannot return a list of run-time length from there. Leave the {what} "
                f"with `break` (or a flag in its condition) and `return` the list after it.")
    root = path.split("[", 1)[0]
    if root == path:
        return (f"{location(line)}: '{path}' is a list that {_a(what)} on a tensor appends to, in a way the graph "
                f"cannot carry (its length is known only when the graph runs). Append to it in every iteration's "
                f"same place, or collect the items in a new list and add them after the {what}.")
    return (f"{location(line)}: '{path}' is a list inside '{root}' that {_a(what)} on a tensor appends to: a list "
            f"held in another container cannot grow inside graph control flow (its length is known only when the "
            f"graph runs). Keep it in a variable of its own: `items = {path}` before the {what}, `items.append(...)` "
            f"inside, `{path} = items` after it.")


def _leaf_names(name: str, template) -> list[str]:
    if isinstance(template, dict):
        return [n for k, v in template.items() for n in _leaf_names(f"{name}[{k!r}]", v)]
    if isinstance(template, (list, tuple)):
        return [n for i, v in enumerate(template) for n in _leaf_names(f"{name}[{i}]", v)]
    return [name]


def leaves(template) -> list:
    """The leaves of a (nested) container, in the order FlatState carries them."""
    return _leaves(template)


def _leaves(template) -> list:
    if isinstance(template, dict):
        return [x for v in template.values() for x in _leaves(v)]
    if isinstance(template, (list, tuple)):
        return [x for v in template for x in _leaves(v)]
    return [template]


def _rebuild(template, leaves):
    if isinstance(template, dict):  # a key some path has not added yet stays absent
        items = {k: _rebuild(v, leaves) for k, v in template.items()}
        return {k: v for k, v in items.items() if not is_undefined(v)}
    if isinstance(template, (list, tuple)):
        items = [_rebuild(v, leaves) for v in template]
        if isinstance(template, tuple):
            return type(template)(*items) if hasattr(template, "_fields") else tuple(items)
        return items
    return next(leaves)


def check_item_targets(names, values, what: str, line: int) -> None:
    """Items can be assigned through graph control flow only in lists and dicts."""
    for name, v in zip(names, values):
        if name.endswith(CONTENTS_SUFFIX) and not isinstance(v, (list, dict)):
            raise StagingError(
                f"{location(line)}: items of '{display_name(name)}' are assigned inside {_a(what)} on a tensor, "
                f"but it is {describe(v)}; only Python lists and dicts can be updated item by item there. Build "
                "a new value instead (e.g. collect the items in a list and gc.stack them).")


def _refuse_unstageable_items(name, before, after, what: str, line: int) -> None:
    """A list grown by items a graph list cannot hold (a lambda, None, an object): say so,
    rather than that its length changed."""
    if not (isinstance(before, list) and isinstance(after, list) and len(after) > len(before)):
        return
    new = next((x for x in after[len(before):] if not is_value(x)), _NONE)
    if new is _NONE:
        return
    kind = "a function" if callable(new) else "None" if new is None else f"a {type(new).__name__}"
    raise StagingError(
        f"{location(line)}: '{name}' is appended {kind} inside {'a loop' if what == 'loop' else 'an if'} on a tensor: "
        f"a list built in graph control flow holds numbers and arrays, and how many items it gets is known only "
        f"when the graph runs. Build such a list before the {what} (over a Python range), or append the numbers it "
        f"would give.")


_NONE = object()


class ShapeChanged(StagingError):
    """A container variable changed shape inside a branch; `index` and `value` say which
    and to what, so the if can try again with the new shape if every branch makes it."""

    def __init__(self, message: str, index: int, value):
        super().__init__(message)
        self.index, self.value = index, value


def adds_keys(template, value) -> bool:
    """`value` is the dict `template` with keys added (the others keep their shape)."""
    return (isinstance(template, dict) and isinstance(value, dict) and set(template) < set(value)
            and all(same_structure(template[k], value[k]) for k in template))


class FlatState:
    """`get_state` / `set_state` seen leaf by leaf. `templates[i]` is the container whose
    shape variable i keeps (None: carried as one value)."""

    def __init__(self, get_state: Callable, set_state: Callable, names: Sequence[str], nouts: int,
                 templates: Sequence, what: str, line: int):
        self._get, self._set = get_state, set_state
        self._raw_names, self._nouts = list(names), nouts
        self._names = [display_name(n) for n in names]
        self._templates = list(templates)
        self.what, self.line = what, line
        self.names: list[str] = []
        self.nouts = 0
        for i, (name, t) in enumerate(zip(self._names, self._templates)):
            leaf_names = [name] if t is None else _leaf_names(name, t)
            self.names += leaf_names
            if i < nouts:
                self.nouts += len(leaf_names)

    @property
    def templates(self) -> list:
        return list(self._templates)

    def in_place(self, index: int) -> str | None:
        """The user's name of variable `index` if it is the items of a container (`a[:]`),
        written back in place (data_structures.set_contents) so it must keep its length."""
        return self._names[index] if self._raw_names[index].endswith(CONTENTS_SUFFIX) else None

    @classmethod
    def of_values(cls, get_state, set_state, names, nouts, what: str, line: int) -> "FlatState":
        """Opens up every container the variables hold now (and item snapshots, which
        must be containers)."""
        values = tuple(get_state())
        check_item_targets(names, values, what, line)
        return cls(get_state, set_state, names, nouts, [v if is_container(v) else None for v in values], what, line)

    def get(self) -> tuple:
        return self.flatten(self._get())

    def get_raw(self) -> tuple:
        return tuple(self._get())

    def set_raw(self, values) -> None:
        self._set(tuple(values))

    def flatten(self, values, missing_keys: bool = False) -> tuple:
        """`values` (one per variable) as leaves; raises if a container changed shape.
        With `missing_keys`, a dict may lack keys of its template (undefined leaves)."""
        out = []
        for i, (name, t, v) in enumerate(zip(self._names, self._templates, values)):
            if t is None:
                out.append(v)
                continue
            if is_undefined(v) or (is_special(name) and returned_none(v)):
                out += [v] * len(_leaves(t))  # a return value set as a tuple on some path only
                continue
            if missing_keys and adds_keys(v, t):
                out += [x for k, sub in t.items() for x in (_leaves(v[k]) if k in v else
                                                             [Undefined(f"{name}[{k!r}]")] * len(_leaves(sub)))]
                continue
            if not same_structure(t, v):
                _refuse_unstageable_items(name, t, v, self.what, self.line)
                grown = _grown_list(name, t, v)
                if grown is not None:
                    raise ShapeChanged(_grown_list_message(grown, self.what, self.line), i, v)
                raise ShapeChanged(
                    f"{location(self.line)}: '{name}' is {_shape_of(t)} before the {self.what} but {_shape_of(v)} "
                    f"after it; a Python container must keep its length and keys inside {_a(self.what)} on a "
                    "tensor (give it its final size before, or collect items with .append in a loop; a dict may "
                    "gain a key only if every branch adds it).", i, v)
            out += _leaves(v)
        return tuple(out)

    def initial(self) -> tuple:
        """The leaves before the statement: keys that branches add are undefined there."""
        return self.flatten(self._get(), missing_keys=True)

    def open_leaf(self, leaf: int, template) -> "FlatState":
        """A view in which the variable at flat position `leaf` (carried as one value so
        far) is opened up as a container shaped like `template`."""
        k = 0
        for i, t in enumerate(self._templates):
            if t is None and k == leaf:
                return self.with_shape(i, template)
            k += 1 if t is None else len(_leaves(t))
        raise ValueError(f"no variable carried as one value at flat position {leaf}")

    def with_shape(self, index: int, template) -> "FlatState":
        templates = list(self._templates)
        templates[index] = template
        return FlatState(self._get, self._set, self._raw_names, self._nouts, templates, self.what, self.line)

    def learn(self, flat_a, flat_b, keep_whole=frozenset()) -> "FlatState | None":
        """A view that also opens up variables undefined on one side and a container on
        the other, or holding two different containers of one shape (learnt from two
        flat states), or None if there are none. Variables in `keep_whole` (indices) stay
        carried as one value (lists the branches append to)."""
        templates, k, learnt = [], 0, False
        for i, t in enumerate(self._templates):
            if i in keep_whole:
                templates.append(t)
                k += 1
                continue
            n = 1 if t is None else len(_leaves(t))
            unset = [is_undefined(v) or (is_special(self._names[i]) and returned_none(v)) for v in
                     (flat_a[k], flat_b[k])] if k < len(flat_a) else [False, False]
            if t is None and unset[0] != unset[1]:  # (a tuple returned on one path, None on another)
                other = flat_b[k] if unset[0] else flat_a[k]
                if is_container(other):
                    t, learnt = other, True
            elif (t is None and k < len(flat_a) and is_container(flat_a[k]) and flat_a[k] is not flat_b[k]
                  and same_structure(flat_a[k], flat_b[k])):  # e.g. `return x, 1` / `return -x, x + 2`
                t, learnt = flat_a[k], True
            templates.append(t)
            k += n
        if not learnt:
            return None
        return FlatState(self._get, self._set, self._raw_names, self._nouts, templates, self.what, self.line)

    def set(self, leaves) -> None:
        it = iter(leaves)
        self._set(tuple(next(it) if t is None else _rebuild(t, it) for t in self._templates))
