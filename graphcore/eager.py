"""The process-wide variable store.

Variable values live in a Runtime, keyed by each Variable's process-unique name.
One default Runtime is shared by eager code and by every Session that is not given
its own (`Session(g, runtime=Runtime())`): a variable created and updated eagerly,
read in a graph, and updated again inside an @autograph.function (whose concrete
functions each run their own Session) sees one value throughout."""
from __future__ import annotations

import itertools
import threading
from typing import Any


class Runtime:
    """What stateful kernels see: variable values (name -> ndarray) and their lock."""

    def __init__(self):
        self.variables: dict[str, Any] = {}
        self.lock = threading.Lock()


_DEFAULT = Runtime()
_names: dict[str, itertools.count] = {}
_names_lock = threading.Lock()


def eager_runtime() -> Runtime:
    """The process-wide default Runtime (eager ops and Sessions without their own)."""
    return _DEFAULT


default_runtime = eager_runtime


def unique_variable_name(name: str) -> str:
    """`name`, `name_1`, ... unique in this process (variables are keyed by it)."""
    with _names_lock:
        c = _names.get(name)
        if c is None:
            _names[name] = itertools.count(1)
            return name
        while True:
            cand = f"{name}_{next(c)}"
            if cand not in _names:
                _names[cand] = itertools.count(1)
                return cand


# Variable reads and updates are ordered in program order, as TensorFlow 2's automatic
# control dependencies do: a tracer that chains side effects (autograph's @function)
# registers `state_dependency_hooks` (-> ops/tensors the access must wait for) and
# `state_update_hooks` (called with each read or update op once it is built).
state_dependency_hooks: list = []
state_update_hooks: list = []


def ordered_state_access(g, build):
    """Build a variable read or update with `build()` after the accesses before it, and
    make the accesses after it wait for it."""
    deps = [d for hook in list(state_dependency_hooks) for d in hook()]
    if deps:
        with g.control_dependencies(deps):
            out = build()
    else:
        out = build()
    for hook in list(state_update_hooks):
        hook(out.op)
    return out
