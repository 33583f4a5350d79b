"""Static analyses that annotate the AST (see pyct.anno); converters only read them.

`analyze(fn_node)` runs, in order: activity (read / modified names per block),
reaching definitions (may / must be bound, needs activity) and liveness (needs activity).
"""
from __future__ import annotations

import gast

from . import activity, liveness, reaching_definitions


def analyze(node: gast.AST) -> gast.AST:
    activity.resolve(node)
    reaching_definitions.resolve(node)
    liveness.resolve(node)
    return node
