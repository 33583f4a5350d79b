"""Annotations on AST nodes: analyses write them, converters read them.

Keys are plain strings listed here so that every producer and consumer agree.
"""
from __future__ import annotations

from typing import Any

_FIELD = "___ag_anno"

# Written by origin_info: (user_file, user_line, user_col) of the node in the user's source.
ORIGIN = "origin"
# Written by activity: the Scope of a statement / block (see activity.Scope).
SCOPE = "scope"
BODY_SCOPE = "body_scope"
ORELSE_SCOPE = "orelse_scope"
# Written by liveness: frozenset of names live before / after a statement.
LIVE_IN = "live_in"
LIVE_OUT = "live_out"
# Written by reaching_definitions: names that may / must be bound before a statement.
DEFINED_IN = "defined_in"
MUST_DEFINED_IN = "must_defined_in"
# On a Name load: the name may be unbound here.
MAYBE_UNDEFINED = "maybe_undefined"
# Written by break / return converters on a For: an expression to test before each iteration.
EXTRA_TEST = "extra_test"
# Marks generated nodes that later converters must leave alone.
SKIP = "skip"


def setanno(node: Any, key: str, value: Any) -> None:
    annos = getattr(node, _FIELD, None)
    if annos is None:
        annos = {}
        setattr(node, _FIELD, annos)
    annos[key] = value


def getanno(node: Any, key: str, default: Any = None) -> Any:
    annos = getattr(node, _FIELD, None)  # (read on every node of every pass: no {} made for a node without)
    return default if annos is None else annos.get(key, default)


def hasanno(node: Any, key: str) -> bool:
    return key in getattr(node, _FIELD, {})
