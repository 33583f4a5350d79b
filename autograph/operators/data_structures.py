"""`list.append` that also works on a staged tensor list inside a graph loop."""
from __future__ import annotations

import graphcore as gc

from .staging import is_tensor


def list_append(target, value):
    """`target.append(value)`; returns the list (a new tensor list when staged)."""
    if is_tensor(target) and target.dtype == gc.variant:
        return gc.tensor_list_push_back(target, value)
    target.append(value)
    return target
