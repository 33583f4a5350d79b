"""Static analyses that annotate the AST (see pyct.anno); converters only read them.

`analyze(fn_node)` runs, in order: activity (read / modified names per block),
reaching definitions (may / must be bound, needs activity) and liveness (needs activity).
A converter names the ones it reads (`requires_analysis`: a tuple of the names below, or
True for all). Activity and reaching definitions run before every converter that reads
any: a read found maybe undefined on one form of the tree stays marked (guarded) through
the later rewrites. Liveness runs only for the converters that read it.
"""
from __future__ import annotations

import gast

from . import activity, liveness, reaching_definitions

ANALYSES = {"activity": activity.resolve, "reaching_definitions": reaching_definitions.resolve,
            "liveness": liveness.resolve}


_ALWAYS = ("activity", "reaching_definitions")


def analyze(node: gast.AST, only=None) -> gast.AST:
    """Run the analyses on `node` (`only`: the names of those wanted, None for all; see
    the module docstring for the ones that always run)."""
    for name, resolve in ANALYSES.items():
        if only is None or name in only or name in _ALWAYS:
            resolve(node)
    return node
