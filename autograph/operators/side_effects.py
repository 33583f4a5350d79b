"""`python_side_effect`: warns when a statement that changes an object from outside the
function is traced inside graph control flow, where it runs once while the graph is
built instead of each time the graph runs (see converters/side_effects.py)."""
from __future__ import annotations

import os
import warnings
import weakref

import graphcore as gc
from graphcore import source_info


class SideEffectWarning(UserWarning):
    """A Python side effect inside a loop or `if` on a tensor runs only while tracing."""


_warned: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # graph -> {(file, line, what)}


def python_side_effect(what: str, passed_in: bool, line: int) -> None:
    g = gc.get_default_graph()
    if g is None or g.control_flow_context is None:
        return  # Python control flow, or the function's top level: runs as Python would
    where = source_info.user_location()
    filename = where.filename if where is not None else "<unknown>"
    seen = _warned.setdefault(g, set())
    if (filename, line, what) in seen:
        return
    seen.add((filename, line, what))
    owner = "an object passed to the function" if passed_in else "an object from outside the function"
    warnings.warn_explicit(
        f"{os.path.basename(filename)}:{line}: '{what}' changes {owner} inside a loop or `if` on a tensor. Python "
        "side effects there run while the graph is built, not each time the graph runs: the change happens once "
        "per trace (not once per iteration, nor only when the branch is taken), and the object may be left holding "
        "graph tensors. Return the value from the function instead, or keep it in a graphcore.Variable.",
        SideEffectWarning, filename, line)
