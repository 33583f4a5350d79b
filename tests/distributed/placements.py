"""Ways the tests put a traced graph's ops on two devices, besides gc.device in the code."""
from __future__ import annotations

DEVICES = ["cpu:0", "cpu:1"]


def round_robin(graph) -> None:
    """Every op on the next device in turn (the placer then moves the loop and cond
    primitives next to their data)."""
    for i, op in enumerate(graph.get_operations()):
        op.device = DEVICES[i % 2]


def loop_bodies_elsewhere(graph) -> None:
    """Each loop's body on cpu:1, its predicate and everything else on cpu:0; the branches
    of conds on different devices (true on cpu:1, false on cpu:0)."""
    for op in graph.get_operations():
        op.device = "cpu:0"
        c = op.ctx
        while c is not None:
            if c.is_while:
                if op.type not in ("LoopCond", "Less", "LessEqual", "Greater", "GreaterEqual", "Equal",
                                   "NotEqual", "LogicalAnd", "LogicalOr", "LogicalNot"):
                    op.device = "cpu:1"
                break
            if getattr(c, "branch", None) is not None:
                op.device = "cpu:1" if c.branch else "cpu:0"
                break
            c = c.outer


def outer_and_inner(graph) -> None:
    """Nested loops spanning devices: ops of the outermost frame and of odd nesting depth
    on cpu:1, the root and even depths on cpu:0."""
    for op in graph.get_operations():
        depth, c = 0, op.ctx
        while c is not None:
            depth += bool(c.is_while)
            c = c.outer
        op.device = DEVICES[depth % 2]


PLACEMENTS = {"round_robin": round_robin, "loop_bodies_elsewhere": loop_bodies_elsewhere,
              "outer_and_inner": outer_and_inner}
