"""Graphviz DOT for a graph: a picture of its control flow (render with `dot -Tsvg`).

One cluster per while frame and per cond branch, nested as built; the control-flow
primitives have their own shapes and colours (Switch a diamond, Merge an inverted
triangle, Enter a house, Exit an inverted house, NextIteration a double octagon,
LoopCond a hexagon); control edges are dashed, loop back edges bold.
"""
from __future__ import annotations

from typing import Any

from .printer import context_chain, format_value, tensor_type

# type -> node attributes; everything else is a plain box
NODE_STYLES = {
    "Switch": 'shape=diamond, style=filled, fillcolor="#f4a261"',
    "Merge": 'shape=invtriangle, style=filled, fillcolor="#8ecae6"',
    "Enter": 'shape=house, style=filled, fillcolor="#90be6d"',
    "Exit": 'shape=invhouse, style=filled, fillcolor="#f94144", fontcolor=white',
    "NextIteration": 'shape=doubleoctagon, style=filled, fillcolor="#b5179e", fontcolor=white',
    "LoopCond": 'shape=hexagon, style=filled, fillcolor="#f9c74f"',
    "Placeholder": 'shape=ellipse, style=filled, fillcolor="#ffffb3"',
    "Const": 'shape=box, style="rounded,filled", fillcolor="#eeeeee", fontsize=10',
}
_DEFAULT_NODE = 'shape=box, style="rounded"'
_CLUSTER_STYLE = {
    "while": 'style="rounded,filled"; fillcolor="#eef6ff"; color="#1d3557";',
    "true": 'style="rounded,dashed"; color="#2a9d8f";',
    "false": 'style="rounded,dashed"; color="#e76f51";',
}


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _node_label(op) -> str:
    base = op.name.rsplit("/", 1)[-1]
    lines = [op.name] if base.startswith(op.type) and op.type not in ("Const", "Enter") else [op.name, op.type]
    if op.type == "Const":
        lines[-1] = f"Const {format_value(op.attrs.get('value'))}"[:40]
    elif op.type == "Enter":
        lines[-1] = f"Enter {op.attrs.get('frame_name')}" + (" (const)" if op.attrs.get("is_constant") else "")
    if op.outputs:
        lines.append(tensor_type(op.outputs[0]))
    return "\n".join(lines)


def to_dot(graph, name: str = "G") -> str:
    """The graph as Graphviz DOT text (render with `dot -Tsvg`)."""
    ops = graph.get_operations()
    # clusters: one per context object, nested by ctx.outer
    children: dict[int, list] = {}
    ctx_ops: dict[int, list] = {}
    ctxs: dict[int, Any] = {}
    root_ops = []
    for op in ops:
        chain = context_chain(op.ctx)
        if not chain:
            root_ops.append(op)
            continue
        for outer, inner in zip([None] + chain[:-1], chain):
            if id(inner) not in ctxs:
                ctxs[id(inner)] = inner
                children.setdefault(id(outer) if outer is not None else 0, []).append(inner)
        ctx_ops.setdefault(id(chain[-1]), []).append(op)
    out = [f"digraph {_q(name)} {{",
           '  graph [rankdir=TB, fontname="Helvetica", compound=true];',
           '  node [fontname="Helvetica", fontsize=11];',
           '  edge [fontname="Helvetica", fontsize=9];']

    def node(op, indent):
        style = NODE_STYLES.get(op.type, _DEFAULT_NODE)
        out.append(f"{indent}{_q(op.name)} [label={_q(_node_label(op))}, {style}];")

    counter = [0]

    def cluster(ctx, indent):
        counter[0] += 1
        kind = "while" if ctx.is_while else ("true" if getattr(ctx, "branch", 1) else "false")
        label = f"while frame {ctx.name}" if ctx.is_while else f"{ctx.name}: {kind} branch"
        out.append(f"{indent}subgraph cluster_{counter[0]} {{")
        out.append(f"{indent}  label={_q(label)}; {_CLUSTER_STYLE[kind]}")
        for op in ctx_ops.get(id(ctx), []):
            node(op, indent + "  ")
        for sub in children.get(id(ctx), []):
            cluster(sub, indent + "  ")
        out.append(f"{indent}}}")

    for op in root_ops:
        node(op, "  ")
    for ctx in children.get(0, []):
        cluster(ctx, "  ")
    for op in ops:
        for t in op.inputs:
            attrs = []
            if t.op.type == "Switch":
                attrs.append(f"taillabel={_q('T' if t.value_index else 'F')}")
            elif t.value_index:
                attrs.append(f"taillabel={_q(str(t.value_index))}")
            if t.op.type == "NextIteration" and op.type == "Merge":
                attrs.append('style=bold, color="#b5179e", constraint=false')
            suffix = f" [{', '.join(attrs)}]" if attrs else ""
            out.append(f"  {_q(t.op.name)} -> {_q(op.name)}{suffix};")
        for c in op.control_inputs:
            out.append(f'  {_q(c.name)} -> {_q(op.name)} [style=dashed, color="#777777", arrowhead=odot];')
    out.append("}")
    return "\n".join(out) + "\n"
