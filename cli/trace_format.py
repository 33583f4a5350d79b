"""The executor's trace as a step-by-step account of the rules of execution (the table in
executor/executor.py): one line per node the executor takes from its ready queue:

    step 16  while/Switch    Switch   root/while:0   iter 0  live  pred=True → :1 live, :0 dead
             pending  while/Exit 1 -> 0, dead 0 -> 1  (ready)
             + iteration 1 of root/while created (2 in flight)

Each step is one node taken from the ready queue: the node, its frame and iteration,
whether its token was live or dead, and what the step means where the events imply it:
for a Switch which output was live (so the predicate), for a Merge which input arrived,
and the value it sent on. Below it come the pending counts it changed
in its consumers (dead counts too), and the frames and iterations created and freed.

The executor records node names, frames, iterations, pending/dead counts and each live
value sent; what a step means is read off those events here.
`TraceWriter` is a sink for the executor (it has `append`): it prints each step as soon
as the next begins, so a long run is streamed in constant memory.
"""
from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from typing import Callable

from .render import format_value
from .trace_timeline import TimelineWriter

LEGEND = """\
legend: one step = one node taken from the ready queue, in its frame and iteration
        (root/while:3 is iteration 3 of loop `while`); live or dead is its token
        pending A -> B: inputs the consumer still waits for; dead: its dead inputs
        (ready): the consumer can run; + created, - freed: frames and iterations
        Switch: pred=True → :1 live, :0 dead; Merge: which input arrived;
        → v: the value the step sent on (dead tokens carry none)"""


@dataclass
class TraceSummary:
    steps: int = 0
    frames_created: int = 0
    iterations_created: int = 0
    dead_steps: int = 0

    def add(self, e: dict) -> None:
        kind = e["event"]
        if kind == "run":
            self.steps += 1
            self.dead_steps += bool(e.get("dead"))
        elif kind == "frame_created":
            self.frames_created += 1
        elif kind == "iteration_created":
            self.iterations_created += 1

    def text(self) -> str:
        return (f"{self.steps} steps ({self.dead_steps} on dead tokens), {self.frames_created} frame(s) and "
                f"{self.iterations_created} extra iteration(s) created")


def short_value(v, width: int = 24) -> str:
    text = format_value(v)
    return text if len(text) <= width else text[: width - 1] + "…"


class StepAnnotator:
    """What a step means, read off its events: the value it sent (the executor records each
    live output), a Switch's live output and so its predicate, and the input a Merge took
    (its pending count fell without a dead count)."""

    def __init__(self, graph=None):
        self.ops = {op.name: op for op in graph.get_operations()} if graph is not None else {}
        self.arrived: dict[tuple[str, str], str] = {}  # (Merge, frame tag) -> the live input's node

    def note_pending(self, e: dict) -> None:
        op = self.ops.get(e["node"])
        d0, d1 = e.get("dead_count", (0, 0))
        if op is not None and op.type == "Merge" and d0 == d1 and e["pending"][0] != e["pending"][1]:
            self.arrived.setdefault((e["node"], e["frame"]), e["source"])

    def annotate(self, run: dict, after: list[dict]) -> dict:
        """Facts for the step `run` (followed by its events `after`), as JSON-ready keys."""
        node, kind = run["node"], run.get("type", "")
        outputs: dict[int, object] = {}
        for e in after:  # a loop invariant re-sent to a new iteration is another node's output
            if e["event"] == "output" and e["node"] == node:
                outputs.setdefault(e["port"], e["value"])
        facts: dict = {}
        if kind == "Switch":
            live = min(outputs) if outputs else self._live_port(node, after)
            if run.get("dead"):
                facts["switch"] = {"live": None}
            elif live is not None:
                facts["switch"] = {"live": live, "pred": bool(live)}
        elif kind == "Merge":
            source = self.arrived.pop((node, run["frame"]), None)
            op = self.ops.get(node)
            if not run.get("dead") and source is not None and op is not None:
                index = next((i for i, t in enumerate(op.inputs) if t.op.name == source), None)
                facts["merge"] = {"input": index, "from": source}
            outputs = {0: outputs[0]} if 0 in outputs else {}  # its index output is what "merge" says
        if len(outputs) == 1:
            facts["value"] = short_value(next(iter(outputs.values())))
        elif outputs:
            facts["value"] = short_value(tuple(outputs[k] for k in sorted(outputs)), width=40)
        return facts


    def _live_port(self, node: str, after: list[dict]) -> int | None:
        """A Switch's live output when it sent no value event (its live output has no
        consumer, or only a control one): the output whose consumers got a dead token
        is the dead one, so the other is live."""
        op = self.ops.get(node)
        if op is None:
            return None
        for e in after:
            consumer = self.ops.get(e["node"]) if e["event"] == "pending" and e.get("source") == node else None
            if consumer is None or e["dead_count"][0] == e["dead_count"][1]:
                continue
            ports = {t.value_index for t in consumer.inputs if t.op is op}
            if len(ports) == 1:
                return 1 - ports.pop()
        return None


def describe(facts: dict) -> str:
    """The facts of a step as text: `pred=True → :1 live, :0 dead`, `input 1 (x) arrived`,
    `→ 5` (the value it sent)."""
    parts = []
    sw = facts.get("switch")
    if sw is not None:
        if sw["live"] is None:
            parts.append("dead input → :0 and :1 dead")
        else:
            parts.append(f"pred={sw['pred']} → :{sw['live']} live, :{1 - sw['live']} dead")
    mg = facts.get("merge")
    if mg is not None:
        parts.append(f"input {mg['input']} ({mg['from']}) arrived")
    if "value" in facts:
        parts.append(f"→ {facts['value']}")
    return "; ".join(parts)


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


def format_event(e: dict, name_width: int = 24, type_width: int = 14, frame_width: int = 16,
                 facts: dict | None = None) -> str | None:
    """One event as text (None for events shown elsewhere)."""
    kind = e["event"]
    pad = " " * 9
    if kind == "run":
        state = "dead" if e.get("dead") else "live"
        note = describe(facts or {})
        return (f"step {e['step']:<3} {e['node']:<{name_width}} {e.get('type', ''):<{type_width}} "
                f"{e['frame']:<{frame_width}} iter {e['iteration']}  {state}" + (f"  {note}" if note else ""))
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


def frame_matches(pattern: str, tag: str) -> bool:
    """`--frame`: the tag (`root/while:3/inner:0`), the path without iterations
    (`root/while/inner`) or the innermost frame's name (`inner`), shell wildcards allowed."""
    path = "/".join(part.rsplit(":", 1)[0] for part in tag.split("/"))
    last = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(x, pattern) for x in (tag, path, last))


def op_matches(pattern: str, e: dict) -> bool:
    """`--op`: the node's name or its op type, shell wildcards allowed."""
    return fnmatch.fnmatchcase(e["node"], pattern) or fnmatch.fnmatchcase(e.get("type", ""), pattern)


class TraceWriter:
    """A sink for the executor's trace (it has `append`): groups each step with the events
    that follow it, annotates it, filters it and writes it at once.

    Args:
      write: where each line goes (text) or each JSON object (json), newline included.
      graph: the traced graph, for the annotations and the column widths.
      fmt: "text", "json" (one event per line, the step's facts as keys of its run event) or
        "html" (a timeline page, cli/trace_timeline.py, titled `title`).
      show_pending: text only: include the pending-count lines.
      limit: show at most this many steps (the run goes on; the summary counts them all).
      frame, op: show only steps whose frame / node match (see frame_matches, op_matches).
    """

    def __init__(self, write: Callable[[str], object], graph=None, fmt: str = "text",
                 show_pending: bool = True, limit: int | None = None, frame: str | None = None,
                 op: str | None = None, title: str = "autograph trace"):
        self.write = write
        self.fmt = fmt
        self.timeline = TimelineWriter(write) if fmt == "html" else None
        if self.timeline is not None:
            self.timeline.begin(title)
        self.show_pending = show_pending
        self.limit, self.frame, self.op = limit, frame, op
        self.annotator = StepAnnotator(graph)
        self.summary = TraceSummary()
        self.shown = 0
        self.hidden_by_limit = 0
        self.step: list[dict] = []  # the current step's run event and what followed it
        self.frames_seen: dict[str, None] = {}  # frame paths without iterations, in order (for --frame)
        self.matched = 0  # steps that passed --frame and --op (shown or over the --limit)
        self.before_first: list[dict] = []  # frame events before the first step
        names = [op.name for op in graph.get_operations()] if graph is not None else []
        types = [op.type for op in graph.get_operations()] if graph is not None else []
        self.name_w = min(max([len(n) for n in names] + [12]), 32)
        self.type_w = min(max([len(t) for t in types] + [6]), 16)
        self.frame_w = min(max([_frame_tag_width(graph)] + [6]), 32) if graph is not None else 16

    # the executor calls this for every event, in order
    def append(self, e: dict) -> None:
        self.summary.add(e)
        if e["event"] == "pending":
            self.annotator.note_pending(e)
        if e["event"] == "run":
            self._flush()
            self.step = [e]
            self.frames_seen.setdefault(re.sub(r":\d+", "", e["frame"]))
        elif self.step:
            self.step.append(e)
        else:
            self._emit_loose(e)

    def close(self, result: str | None = None) -> None:
        """Write the last step and, in text, what the filters left out and the summary; an
        HTML page ends with the summary and `result` (the run's result, formatted)."""
        self._flush()
        if self.timeline is not None:
            shown = f" ({self.shown} shown, --limit {self.limit})" if self.hidden_by_limit else ""
            self.timeline.end(self.summary.text() + shown, result)
            return
        if self.fmt == "json":
            self.write(json.dumps({"event": "summary", **self.summary.__dict__}) + "\n")
            return
        if self.hidden_by_limit:
            self.write(f"... {self.hidden_by_limit} more step(s) not shown (--limit {self.limit})\n")
        self.write(self.summary.text() + "\n")

    def unmatched_filters(self) -> str:
        """What to say when --frame or --op let no step through (else ""): the frames seen."""
        if self.matched or (self.frame is None and self.op is None) or not self.summary.steps:
            return ""
        asked = " and ".join(f"--{k} {v}" for k, v in (("frame", self.frame), ("op", self.op)) if v is not None)
        return (f"no step matched {asked}; the run's frames were {', '.join(self.frames_seen)} "
                f"(a frame: its name, root/NAME or root/NAME:ITERATION; --op: a node name or op type)")

    def _wanted(self, run: dict) -> bool:
        if self.frame is not None and not frame_matches(self.frame, run["frame"]):
            return False
        return self.op is None or op_matches(self.op, run)

    def _emit_loose(self, e: dict) -> None:
        if self.frame is None and self.op is None:
            self._write_event(e, None)

    def _flush(self) -> None:
        if not self.step:
            return
        run, after = self.step[0], self.step[1:]
        self.step = []
        facts = self.annotator.annotate(run, after)
        if not self._wanted(run):
            return
        self.matched += 1
        if self.limit is not None and self.shown >= self.limit:
            self.hidden_by_limit += 1
            return
        self.shown += 1
        self._write_event(run, facts)
        for e in after:
            if e["event"] == "output":
                continue  # in the step's facts
            if e["event"] == "pending" and e["frame"] != run["frame"] and self.fmt == "text":
                e = dict(e, node=f"{e['node']} (in {e['frame']})")  # e.g. a NextIteration feeding the next iteration
            self._write_event(e, None)

    def _write_event(self, e: dict, facts: dict | None) -> None:
        if self.timeline is not None:
            if e["event"] == "run":
                self.timeline.step(e, describe(facts or {}))
            return
        if self.fmt == "json":
            out = dict(e)
            if facts:
                out.update(facts)
            self.write(json.dumps(out, default=str) + "\n")
            return
        if e["event"] == "pending" and not self.show_pending:
            return
        line = format_event(e, self.name_w, self.type_w, self.frame_w, facts)
        if line is not None:
            self.write(line.rstrip() + "\n")


def _frame_tag_width(graph) -> int:
    """How wide a frame tag gets: `root/while:00/inner:00` for the deepest loop."""
    from graphcore.printer import context_chain  # noqa: PLC0415

    widest = len("root")
    for op in graph.get_operations():
        chain = [c for c in context_chain(op.ctx) if c.is_while]
        widest = max(widest, len("root") + sum(len(c.name.rsplit("/", 1)[-1]) + 4 for c in chain))
    return widest

