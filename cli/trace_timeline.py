"""The executor's trace as a self-contained HTML page: a timeline with one lane per frame
and iteration (`root`, `root/while:0`, `root/while:1`, ...), one mark per step in the order
the executor took them, coloured as the graph pictures colour the five primitives, hollow
where the token was dead, and the step's node, op, value and meaning on hover.

It is written as the run goes (TraceWriter hands over each step once it is complete), so
a long run is streamed: the page's data is a JavaScript array written one step per line,
and the script at the end draws it as SVG when the browser loads the page. Nothing is
fetched from the network.
"""
from __future__ import annotations

import html
import json
from typing import Callable

from graphcore.dot import NODE_STYLES

_COLOURS = {op: style["fillcolor"] for op, style in NODE_STYLES.items() if "fillcolor" in style}
_OTHER_COLOUR = "#adb5bd"

_HEAD = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
 body {{ font: 13px system-ui, sans-serif; margin: 16px; color: #222; }}
 h1 {{ font-size: 16px; margin: 0 0 4px; }}
 #legend span {{ display: inline-block; margin-right: 12px; }}
 #legend i {{ display: inline-block; width: 10px; height: 10px; margin-right: 4px; border: 1px solid #555; }}
 #timeline {{ overflow: auto; border: 1px solid #ddd; margin-top: 8px; }}
 .lane-label {{ font: 11px monospace; fill: #333; }}
 .step.dead {{ fill: white !important; stroke-dasharray: 2 1; }}
 #summary {{ margin-top: 8px; color: #555; }}
</style></head><body>
<h1>{title}</h1>
<div id="legend"></div>
<div id="timeline"></div>
<div id="summary"></div>
<script>
const COLOURS = {colours};
const OTHER = "{other}";
const STEPS = [
"""

# The drawing: lanes in order of first appearance, x = step number, hover = <title>.
_TAIL = """];
const INFO = {info};
(function draw() {{
  const lanes = [], laneOf = new Map();
  for (const s of STEPS) if (!laneOf.has(s.frame)) {{ laneOf.set(s.frame, lanes.length); lanes.push(s.frame); }}
  const W = 9, H = 16, GAP = 4, LEFT = 8 + 7 * Math.max(4, ...lanes.map(l => l.length)), TOP = 18;
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("width", LEFT + STEPS.length * W + 20);
  svg.setAttribute("height", TOP + lanes.length * (H + GAP) + 10);
  const el = (name, attrs, parent) => {{
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    (parent || svg).appendChild(e);
    return e;
  }};
  lanes.forEach((lane, i) => {{
    const y = TOP + i * (H + GAP);
    el("rect", {{x: 0, y: y - 1, width: LEFT + STEPS.length * W + 20, height: H + 2,
                fill: i % 2 ? "#fafafa" : "#f1f3f5", class: "lane", "data-frame": lane}});
    el("text", {{x: 4, y: y + H - 4, class: "lane-label"}}).textContent = lane;
  }});
  STEPS.forEach((s, k) => {{
    const g = el("g", {{class: "step-group"}});
    const rect = el("rect", {{x: LEFT + k * W, y: TOP + laneOf.get(s.frame) * (H + GAP), width: W - 2, height: H,
                             rx: 2, fill: COLOURS[s.type] || OTHER, stroke: COLOURS[s.type] || "#555",
                             class: "step" + (s.dead ? " dead" : ""), "data-step": s.step,
                             "data-node": s.node, "data-type": s.type}}, g);
    const lines = [`step ${{s.step}}  ${{s.node}} (${{s.type}})`, `${{s.frame}}  iter ${{s.iteration}}  ` +
                   (s.dead ? "dead" : "live")];
    if (s.note) lines.push(s.note);
    el("title", {{}}, rect).textContent = lines.join("\\n");
  }});
  document.getElementById("timeline").appendChild(svg);
  const legend = document.getElementById("legend");
  for (const [op, colour] of Object.entries(COLOURS).concat([["other ops", OTHER]])) {{
    const span = document.createElement("span");
    span.innerHTML = `<i style="background:${{colour}}"></i>`;
    span.appendChild(document.createTextNode(op));
    legend.appendChild(span);
  }}
  const dead = document.createElement("span");
  dead.innerHTML = '<i style="background:white;border-style:dashed"></i>';
  dead.appendChild(document.createTextNode("dead token"));
  legend.appendChild(dead);
  document.getElementById("summary").textContent = INFO.summary + (INFO.result ? "; result: " + INFO.result : "");
  document.body.setAttribute("data-drawn", STEPS.length);
}})();
</script></body></html>
"""


def _script_json(value) -> str:
    """JSON that cannot end the <script> element it sits in."""
    return json.dumps(value, default=str).replace("</", "<\\/")


class TimelineWriter:
    """Writes the page: `begin` the head, `step` each step's mark (one line of data), `end`
    the drawing script with the run's summary and result."""

    def __init__(self, write: Callable[[str], object]):
        self.write = write
        self.started = False

    def begin(self, title: str) -> None:
        self.write(_HEAD.format(title=html.escape(title), colours=_script_json(_COLOURS), other=_OTHER_COLOUR))
        self.started = True

    def step(self, run: dict, note: str) -> None:
        record = {k: run.get(k) for k in ("step", "node", "type", "frame", "iteration", "dead")}
        record["note"] = note
        self.write(_script_json(record) + ",\n")

    def end(self, summary: str, result: str | None = None) -> None:
        if not self.started:
            self.begin("autograph trace")
        self.write(_TAIL.format(info=_script_json({"summary": summary, "result": result})))
