"""The executor's trace as a step-by-step account, in the manner of the walk-through of
seed 002:

    step 11  while/Merge            Merge          root/while:0   iter 0  live
             pending  while/Less 2 -> 1
             + iteration 1 of root/while created (2 in flight)

Each step is one node taken from the ready queue: the node, its frame and iteration,
and whether its token was live or dead; below it, the pending counts it changed in
its consumers (dead counts too), and the frames and iterations created and freed.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TraceSummary:
    steps: int
    frames_created: int
    iterations_created: int
    dead_steps: int


def summarize(events: list[dict]) -> TraceSummary:
    runs = [e for e in events if e["event"] == "run"]
    return TraceSummary(
        steps=len(runs),
        frames_created=sum(1 for e in events if e["event"] == "frame_created"),
        iterations_created=sum(1 for e in events if e["event"] == "iteration_created"),
        dead_steps=sum(1 for e in runs if e.get("dead")),
    )


def _pending_text(e: dict) -> str:
    p0, p1 = e["pending"]
    d0, d1 = e.get("dead_count", (0, 0))
    parts = []
    if p0 != p1:
        parts.append(f"{p0} -> {p1}")
    if d0 != d1:
        parts.append(f"dead {d0} -> {d1}")
    ready = "  (ready)" if p1 == 0 and p0 != 0 else ""
    return f"{e['node']} {', '.join(parts)}{ready}"


def format_event(e: dict, name_width: int = 24, type_width: int = 14, frame_width: int = 16) -> str | None:
    """One event as text (None for events shown elsewhere)."""
    kind = e["event"]
    pad = " " * 9
    if kind == "run":
        state = "dead" if e.get("dead") else "live"
        return (f"step {e['step']:<3} {e['node']:<{name_width}} {e.get('type', ''):<{type_width}} "
                f"{e['frame']:<{frame_width}} iter {e['iteration']}  {state}")
    if kind == "pending":
        return f"{pad}pending  {_pending_text(e)}"
    if kind == "frame_created":
        return f"{pad}+ frame {e['frame']} created"
    if kind == "frame_freed":
        return f"{pad}- frame {e['frame']} done: freed"
    if kind == "iteration_created":
        flight = f" ({e['in_flight']} in flight)" if "in_flight" in e else ""
        return f"{pad}+ iteration {e['iteration']} of {e['frame'].rsplit(':', 1)[0]} created{flight}"
    if kind == "iteration_freed":
        return f"{pad}- iteration {e['iteration']} of {e['frame'].rsplit(':', 1)[0]} done: freed"
    if kind == "deferred":
        return f"{pad}~ {e['node']} waits: {e['frame']} would exceed parallel_iterations"
    return f"{pad}{kind} " + ", ".join(f"{k}={v}" for k, v in e.items() if k != "event")


def format_trace(events: list[dict], show_pending: bool = True) -> str:
    """The whole trace, one line per event (pending-count lines optional)."""
    runs = [e for e in events if e["event"] == "run"]
    name_w = max([len(e["node"]) for e in runs] + [12])
    type_w = max([len(e.get("type", "")) for e in runs] + [6])
    frame_w = max([len(e["frame"]) for e in runs] + [6])
    lines = []
    step_frame = None
    for e in events:
        if e["event"] == "run":
            step_frame = e["frame"]
        if e["event"] == "pending":
            if not show_pending:
                continue
            if e["frame"] != step_frame:  # e.g. a NextIteration feeding the next iteration
                e = dict(e, node=f"{e['node']} (in {e['frame']})")
        line = format_event(e, name_w, type_w, frame_w)
        if line is not None:
            lines.append(line.rstrip())
    s = summarize(events)
    lines.append(f"{s.steps} steps ({s.dead_steps} on dead tokens), {s.frames_created} frame(s) and "
                 f"{s.iterations_created} extra iteration(s) created")
    return "\n".join(lines) + "\n"
