"""`assert`: Python's assert on Python values, an Assert op (sequenced like print) on tensors."""
from __future__ import annotations

from typing import Callable

import graphcore as gc

from . import effects
from .staging import is_tensor


def assert_stmt(test, message: Callable):
    if not is_tensor(test):
        assert test, message()
        return None
    g = test.graph
    msg = message()
    with g.control_dependencies(effects.dependencies()):
        op = gc.Assert(test, [], message=str(msg))
    effects.record(op)
    return op
