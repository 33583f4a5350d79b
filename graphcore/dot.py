"""Pictures of a graph, built with the `graphviz` package's Digraph (render with `dot`).

One cluster per while frame and per cond branch, nested as built and titled with the
user's line ("while loop (fibonacci.py:15)", "if (collatz.py:7): true branch"). The
control-flow primitives have their own shapes and colours, shown in a legend (Switch a
diamond, Merge an inverted triangle, Enter a house, Exit an inverted house,
NextIteration a double octagon, LoopCond a hexagon). A loop's Enter, Merge, Switch,
NextIteration and Exit carry the name of the Python variable they hold. Switch outputs
are labelled T (green) and F (red); control edges are dashed, loop back edges bold.
Fetched outputs point at a "result" node. The internal effects token (which orders
prints and asserts) is hidden unless asked for. `depth=N` draws every frame or branch
nested N deep as one node. Each node has a tooltip (in SVG) with its attributes, output
types, context and source line.

    dot = build_digraph(graph, fetches=[y], depth=1)   # a graphviz.Digraph
    dot.pipe(format="svg")                             # or graph.to_dot() for the text
"""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Iterable

from . import ops as _ops  # noqa: F401 (registers the op types whose pictures NODE_STYLES holds)
from .errors import GraphError
from .library import function_attrs
from .printer import context_chain, format_graph, format_value, summarize_graph, tensor_type
from .registry import registered_ops

if TYPE_CHECKING:
    import graphviz


def _graphviz():
    """The `graphviz` package, imported when a picture is drawn: graphcore itself loads
    and runs without it (a declared dependency that a bare environment may lack)."""
    try:
        import graphviz  # noqa: PLC0415 (optional at load time: graphcore runs without the drawing package)
    except ImportError:
        raise GraphError("drawing a graph needs the graphviz package: pip install graphviz "
                         "(and Graphviz's `dot` program to render it)") from None
    return graphviz


# type -> node attributes, as each op type declares them (define_op(..., picture=)); everything
# else is a rounded box
NODE_STYLES: dict[str, dict[str, str]] = {t: d.picture for t, d in registered_ops().items() if d.picture}
_DEVICE_CLUSTER = {"style": "rounded,bold", "color": "#6c757d", "fontsize": "13"}
_DEFAULT_NODE = {"shape": "box", "style": "rounded"}
_CLUSTER_STYLE = {
    "while": {"style": "rounded,filled", "fillcolor": "#eef6ff", "color": "#1d3557"},
    "true": {"style": "rounded,dashed", "color": "#2a9d8f"},
    "false": {"style": "rounded,dashed", "color": "#e76f51"},
}
_COLLAPSED_STYLE = {"shape": "box3d", "style": "filled", "fillcolor": "#dde7f3"}
_TRUE_COLOR, _FALSE_COLOR = "#2a9d8f", "#e76f51"

# the legend: the five v1 primitives (and LoopCond), what each does
LEGEND = (
    ("Switch", "Switch: passes its input to T or F by the predicate; the other output is dead"),
    ("Merge", "Merge: forwards the first live input"),
    ("Enter", "Enter: into a loop frame"),
    ("Exit", "Exit: out of a loop frame"),
    ("NextIteration", "NextIteration: to the next iteration"),
    ("LoopCond", "LoopCond: the loop's predicate"),
    ("_Send", "_Send: a value (or dead token) to another device, keyed by frame and iteration"),
    ("_Recv", "_Recv: the value sent from another device in this frame and iteration"),
)
_ONLY_IF_USED = frozenset({"_Send", "_Recv"})


def _carries_token(op) -> bool:
    """An op that only carries the effects token along (hidden unless show_effects): the
    control-flow primitives that forward a value, and Identity."""
    d = op.op_def
    return d.forwards and d.control_flow or op.type == "Identity"


EFFECTS_TOKEN_NAME = "effects"


def _esc(s: str) -> str:
    """Text for a DOT label or tooltip: backslashes kept literal, lines joined by \\n."""
    return s.replace("\\", "\\\\").replace("\n", "\\n")


def _var_label(name: str) -> str:
    """A loop variable's name as the converter gave it: `'n'` -> n."""
    if name.startswith("whether '") and name.endswith("' is defined"):
        return f"{name[9:-12]} defined?"
    if len(name) >= 2 and name[0] == name[-1] == "'":
        return name[1:-1]
    internal = name.startswith(("loop_vars[", "retval_", "do_return", "<")) or "effects" in name or "side-effect" in name
    return "" if internal else name


def loop_variable_names(graph) -> dict[str, str]:
    """op name -> the Python variable a loop op carries (its Enter, Merge, Switch,
    NextIteration and Exit), where the loop was told the names; a constant Enter of a
    placeholder is named after the placeholder."""
    out: dict[str, str] = {}
    for ctx in _contexts(graph):
        names = getattr(ctx, "loop_var_names", None) or []
        merges = getattr(ctx, "loop_merges", [])
        lists = [merges, getattr(ctx, "switches", []), getattr(ctx, "next_iterations", []),
                 getattr(ctx, "exits", [])]
        for k, name in enumerate(names):
            label = _var_label(name)
            if not label:
                continue
            for each in lists:
                if k < len(each):
                    out[each[k].name] = label
            if k < len(merges) and merges[k].inputs:
                out.setdefault(merges[k].inputs[0].op.name, label)  # the Enter
    for op in graph.get_operations():
        if op.type == "Enter" and op.name not in out and op.inputs and op.inputs[0].op.type == "Placeholder":
            out[op.name] = op.inputs[0].op.name
    return out


def _contexts(graph) -> list:
    seen: dict[int, Any] = {}
    for op in graph.get_operations():
        for c in context_chain(op.ctx):
            seen.setdefault(id(c), c)
    return list(seen.values())


def effects_ops(graph) -> set[str]:
    """Names of the ops that only carry the effects token (the Const `effects` and the
    Enter/Merge/Switch/Identity/NextIteration/Exit chain fed by it)."""
    hidden: set[str] = set()
    for op in graph.get_operations():  # creation order: a carrier's input 0 comes first
        if op.type == "Const" and op.name == EFFECTS_TOKEN_NAME and not op.inputs:
            hidden.add(op.name)
        elif _carries_token(op) and op.inputs and op.inputs[0].op.name in hidden:
            hidden.add(op.name)
    return hidden


def context_title(ctx) -> str:
    """`while loop (fibonacci.py:15)`, `if (collatz.py:7): true branch`."""
    where = _context_source(ctx)
    at = f" ({where})" if where else ""
    if ctx.is_while:
        return f"while loop{at}"
    return f"if{at}: {'true' if getattr(ctx, 'branch', 1) else 'false'} branch"


def _context_source(ctx) -> str:
    candidates = []
    if ctx.is_while:
        candidates = list(getattr(ctx, "loop_merges", [])) + list(getattr(ctx, "enters", []))
        if getattr(ctx, "loop_cond", None) is not None:
            candidates.append(ctx.loop_cond)
    else:
        pred = getattr(ctx, "pred", None)
        if pred is not None:
            candidates.append(pred.op)
    for op in candidates:
        if op.source is not None:
            return str(op.source)
    return ""


def _node_label(op, var: str | None) -> str:
    if var and op.op_def.control_flow and op.op_def.forwards:
        lines = [f"{op.type} {var}"]
    else:
        base = op.name.rsplit("/", 1)[-1]
        lines = [op.name] if base.startswith(op.type) and op.type not in ("Const", "Enter") else [op.name, op.type]
        if op.type == "Const":
            lines[-1] = f"Const {format_value(op.attrs.get('value'))}"[:40]
        elif op.type == "Enter":
            lines[-1] = f"Enter {op.attrs.get('frame_name')}" + (" (const)" if op.attrs.get("is_constant") else "")
    if op.outputs:
        lines.append(tensor_type(op.outputs[0]))
    return _esc("\n".join(lines))


def op_tooltip(op) -> str:
    """What a tooltip shows: name and type, attributes, output types, context, source line."""
    lines = [f"{op.name} = {op.type}"]
    lines += [f"{k} = {format_value(v)}"[:120] for k, v in op.attrs.items()]
    lines += [f"output {t.value_index}: {tensor_type(t)}" for t in op.outputs]
    chain = context_chain(op.ctx)
    if chain:
        lines.append("in " + " / ".join(context_title(c) for c in chain))
    if op.source is not None:
        lines.append(f"line {op.source}")
    return _esc("\n".join(lines))


# a default picture shows at most this many nodes (what a 1920 x 1080 screen shows legibly);
# fit_depth collapses loops and branches until it does
SCREEN_NODES = 60
# ... and Graphviz scales a larger drawing down to this size in inches (at 96 dpi, 1920 x 1080)
SCREEN_SIZE = "20,11.25"


def _visible_ops(graph, show_effects: bool) -> list:
    hidden = set() if show_effects else effects_ops(graph)
    return [op for op in graph.get_operations() if op.name not in hidden]


def drawn_nodes(graph, depth: int | None, show_effects: bool = False) -> int:
    """How many op nodes a picture at `depth` draws: the ops outside any context nested
    `depth` deep, plus one node per such context."""
    collapsed: set[int] = set()
    n = 0
    for op in _visible_ops(graph, show_effects):
        chain = context_chain(op.ctx)
        if depth is None or len(chain) <= depth:
            n += 1
        else:
            collapsed.add(id(chain[depth]))
    return n + len(collapsed)


def fit_depth(graph, max_nodes: int = SCREEN_NODES, show_effects: bool = False) -> int | None:
    """The deepest picture of `graph` with at most `max_nodes` nodes: None (every op) when
    the whole graph fits, else the depth at which loops and branches are drawn as one node
    (0 at the least: the size limit then scales the picture down)."""
    if drawn_nodes(graph, None, show_effects) <= max_nodes:
        return None
    deepest = max((len(context_chain(op.ctx)) for op in graph.get_operations()), default=0)
    for d in range(deepest - 1, 0, -1):
        if drawn_nodes(graph, d, show_effects) <= max_nodes:
            return d
    return 0


def collapse_note(graph, depth: int | None, how_to_open: str, show_effects: bool = False) -> str:
    """What a picture at `depth` collapsed, and how to open it (`how_to_open`, e.g. "--depth 2
    opens them"), for its caption; "" when nothing was."""
    if depth is None:
        return ""
    inside: dict[int, int] = {}
    kinds: dict[int, bool] = {}
    for op in _visible_ops(graph, show_effects):
        chain = context_chain(op.ctx)
        if len(chain) > depth:
            inside[id(chain[depth])] = inside.get(id(chain[depth]), 0) + 1
            kinds[id(chain[depth])] = chain[depth].is_while
    if not inside:
        return ""
    loops = sum(kinds.values())
    branches = len(kinds) - loops
    what = " and ".join(x for x in (f"{loops} loop{'s' * (loops != 1)}" if loops else "",
                                     f"{branches} branch{'es' * (branches != 1)}" if branches else "") if x)
    where = "outermost" if depth == 0 else f"nested {depth} deep"
    return (f"{what} ({where}) drawn as one node each, {sum(inside.values())} ops inside; "
            f"{how_to_open}")


def build_digraph(graph, name: str = "G", fetches: Iterable = (), show_effects: bool = False,
                  depth: int | None = None, legend: bool = True, by_device: bool = False,
                  note: str = "", size: str | None = None) -> "graphviz.Digraph":
    """The picture of `graph` as a graphviz.Digraph (see the module docstring).

    Args:
      fetches: tensors to mark as results (a "result" node points at each).
      show_effects: draw the effects-token chain too.
      depth: draw each frame or cond branch nested `depth` deep (0 = outermost) as one node.
      legend: add the legend of the control-flow primitives used (if any).
      by_device: one cluster per device (a partitioned graph: graphcore/partition.py),
        loops and branches inside it as usual; each _Send is joined to its _Recv.
      note: a caption under the picture (collapse_note: what was collapsed, how to open it).
      size: the largest drawing, "W,H" in inches (SCREEN_SIZE): Graphviz scales it down to fit.
    """
    if by_device and depth is not None:
        raise GraphError("a picture by device draws every op: leave out the depth")
    ops = _visible_ops(graph, show_effects)
    fetches = list(fetches)
    dot = _new_digraph(name, size)
    picture = _Picture(dot, ops, loop_variable_names(graph), {t.op.name for t in fetches}, depth)
    if by_device:
        picture.draw_by_device()
    else:
        picture.draw_nested()
    picture.draw_edges()
    picture.draw_send_recv_pairs()
    picture.draw_results(fetches)
    if graph.library:  # Control Flow v2: the functions If/While ops call, as clusters beside them
        _add_functions(dot, graph, [op for op in ops if picture.node_of[op.name] == op.name], depth, 0)
    if legend:
        _draw_legend(dot, {op.type for op in ops})
    if note:  # last: a graph attribute set before the clusters would be theirs too
        dot.attr(label=_esc(note), labelloc="b", labeljust="l", fontsize="12", fontcolor="#444444")
    return dot


def _new_digraph(name: str, size: str | None) -> "graphviz.Digraph":
    dot = _graphviz().Digraph(name=name)
    dot.attr("graph", rankdir="TB", fontname="Helvetica", compound="true")
    dot.attr("node", fontname="Helvetica", fontsize="11")
    dot.attr("edge", fontname="Helvetica", fontsize="9")
    if size:
        dot.attr(size=size)
    return dot


class _Picture:
    """One picture being drawn: the ops' contexts as a tree (each op in its innermost
    context), which node draws each op (itself, or the node of a collapsed context), and
    the edges drawn so far (each once)."""

    def __init__(self, dot, ops: list, var_names: dict, fetched: set, depth: int | None):
        self.dot, self.ops, self.var_names, self.fetched = dot, ops, var_names, fetched
        self.children: dict[int, list] = {}  # id(context) (0: the root) -> the contexts right inside
        self.ctx_ops: dict[int, list] = {}  # id(context) -> the ops whose innermost context it is
        self.level: dict[int, int] = {}  # id(context) -> how deep it is nested (0: outermost)
        self.root_ops: list = []
        self._context_tree()
        self.node_of: dict[str, str] = {op.name: op.name for op in ops}  # op name -> the node drawing it
        self.collapsed: dict[int, str] = {}  # id(context) -> its node, for contexts drawn as one
        if depth is not None:
            self._collapse(depth)
        self.clusters = 0
        self.seen_edges: set[tuple[str, str, str]] = set()

    def _context_tree(self) -> None:
        seen: set[int] = set()
        for op in self.ops:
            chain = context_chain(op.ctx)
            if not chain:
                self.root_ops.append(op)
                continue
            for i, (outer, inner) in enumerate(zip([None] + chain[:-1], chain)):
                if id(inner) not in seen:
                    seen.add(id(inner))
                    self.level[id(inner)] = i
                    self.children.setdefault(id(outer) if outer is not None else 0, []).append(inner)
            self.ctx_ops.setdefault(id(chain[-1]), []).append(op)

    def _collapse(self, depth: int) -> None:
        """Every op inside a context nested `depth` deep is drawn as that context's node; so
        is a constant (hoisted out of the loop) that only such a node uses."""
        node_of, collapsed = self.node_of, self.collapsed
        for op in self.ops:
            for c in context_chain(op.ctx):
                if self.level[id(c)] >= depth:
                    collapsed.setdefault(id(c), f"collapsed_{len(collapsed)}_{c.name}")
                    node_of[op.name] = collapsed[id(c)]
                    break
        users: dict[str, set] = {}
        for op in self.ops:
            for t in op.inputs:
                users.setdefault(t.op.name, set()).add(node_of[op.name])
        for op in self.ops:
            if op.type == "Const" and len(users.get(op.name, ())) == 1:
                (only,) = users[op.name]
                if only.startswith("collapsed_"):
                    node_of[op.name] = only

    # -- nodes and clusters ----------------------------------------------------------
    def draw_nested(self) -> None:
        for op in self.root_ops:
            if self.node_of[op.name] == op.name:
                self._node(self.dot, op)
        for ctx in self.children.get(0, []):
            self._cluster(self.dot, ctx)

    def draw_by_device(self) -> None:
        for device in dict.fromkeys(op.device for op in self.ops):
            self.clusters += 1
            with self.dot.subgraph(name=f"cluster_{self.clusters}") as dc:
                dc.attr(label=_esc(f"device {device or '(default)'}"), **_DEVICE_CLUSTER)
                for op in self.root_ops:
                    if op.device == device:
                        self._node(dc, op)
                for ctx in self.children.get(0, []):
                    self._cluster(dc, ctx, device)

    def _node(self, g, op) -> None:
        attrs = dict(NODE_STYLES.get(op.type, _DEFAULT_NODE))
        if op.name in self.fetched:
            attrs["penwidth"] = "2.5"
        g.node(op.name, label=_node_label(op, self.var_names.get(op.name)), tooltip=op_tooltip(op), **attrs)

    def _collapsed_node(self, g, ctx) -> None:
        inner = [op for op in self.ops if self.node_of[op.name] == self.collapsed[id(ctx)]]
        kinds = Counter(op.type for op in inner)
        summary = ", ".join(f"{n} {t}" for t, n in kinds.most_common())
        label = f"{context_title(ctx)}\n{len(inner)} ops"
        g.node(self.collapsed[id(ctx)], label=_esc(label), tooltip=_esc(f"{context_title(ctx)}: {summary}"),
               **_COLLAPSED_STYLE)

    def _cluster(self, g, ctx, device=None) -> None:
        """One context's cluster; with a device, only that device's ops (a loop spanning
        devices is drawn in each device's cluster)."""
        if device is not None and not self._has_op_on(ctx, device):
            return
        if device is None and id(ctx) in self.collapsed:
            self._collapsed_node(g, ctx)
            return
        self.clusters += 1
        kind = "while" if ctx.is_while else ("true" if getattr(ctx, "branch", 1) else "false")
        with g.subgraph(name=f"cluster_{self.clusters}") as c:
            c.attr(label=_esc(context_title(ctx)), tooltip=_esc(f"{context_title(ctx)}, frame {ctx.name}"),
                   **_CLUSTER_STYLE[kind])
            for op in self.ctx_ops.get(id(ctx), []):
                if op.device == device if device is not None else self.node_of[op.name] == op.name:
                    self._node(c, op)
            for sub in self.children.get(id(ctx), []):
                self._cluster(c, sub, device)

    def _has_op_on(self, ctx, device) -> bool:
        return any(op.device == device for op in self.ctx_ops.get(id(ctx), [])) or \
            any(self._has_op_on(sub, device) for sub in self.children.get(id(ctx), []))

    # -- edges -------------------------------------------------------------------------
    def _edge(self, tail: str, head: str, key: str = "", **attrs) -> None:
        if tail == head or (tail, head, key) in self.seen_edges:
            return
        self.seen_edges.add((tail, head, key))
        self.dot.edge(tail, head, **attrs)

    def draw_edges(self) -> None:
        """Data edges (a Switch's labelled T / F, a loop's back edge bold) and control edges."""
        node_of = self.node_of
        for op in self.ops:
            head = node_of[op.name]
            for t in op.inputs:
                if t.op.name not in node_of:
                    continue  # a hidden token carrier
                tail = node_of[t.op.name]
                if tail != t.op.name or head != op.name:  # an edge into or out of a collapsed node
                    self._edge(tail, head)
                    continue
                self._edge(tail, head, f"{t.value_index}", **_data_edge_style(t, op))
            for c in op.control_inputs:
                if c.name in node_of:
                    self._edge(node_of[c.name], head, "^", style="dashed", color="#777777", arrowhead="odot")

    def draw_send_recv_pairs(self) -> None:
        recvs = {(op.attrs["tensor_name"], op.attrs["recv_device"]): op for op in self.ops if op.type == "_Recv"}
        for op in self.ops:
            if op.type == "_Send":
                recv = recvs.get((op.attrs["tensor_name"], op.attrs["recv_device"]))
                if recv is not None:
                    self._edge(op.name, recv.name, "send", style="dashed", color="#0077b6", penwidth="1.5",
                               tooltip=_esc(f"{op.attrs['tensor_name']}: {op.attrs['send_device']} -> "
                                            f"{op.attrs['recv_device']}"))

    def draw_results(self, fetches: list) -> None:
        for i, t in enumerate(fetches):
            if t.op.name not in self.node_of:
                continue
            label = "result" if len(self.fetched) == 1 and i == 0 else f"result {i}"
            self.dot.node(f"result_{i}", label=label, shape="cds", style="filled", fillcolor="#ffd166",
                          tooltip=_esc(f"fetched: {t.name} {tensor_type(t)}"))
            self.dot.edge(self.node_of[t.op.name], f"result_{i}", label=str(t.value_index) if t.value_index else None,
                          penwidth="2")


def _data_edge_style(t, reader) -> dict[str, str]:
    """A data edge's look: a Switch output labelled T or F in its colour, another output
    its index, a loop's back edge (NextIteration -> Merge) bold."""
    attrs: dict[str, str] = {}
    if t.op.type == "Switch":
        taken = bool(t.value_index)
        attrs.update(label="T" if taken else "F", fontcolor=_TRUE_COLOR if taken else _FALSE_COLOR,
                     color=_TRUE_COLOR if taken else _FALSE_COLOR)
    elif t.value_index:
        attrs["label"] = str(t.value_index)
    if t.op.type == "NextIteration" and reader.type == "Merge":
        attrs.update(style="bold", color="#b5179e", constraint="false")
    return attrs


def _draw_legend(dot, used: set) -> None:
    """The legend of the control-flow primitives the picture uses (none if it uses none)."""
    if not used & {k for k, _ in LEGEND}:
        return
    with dot.subgraph(name="cluster_legend") as lg:
        lg.attr(label="legend", style="rounded", color="#999999", fontsize="10")
        prev = None
        for kind, text in LEGEND:
            if kind in _ONLY_IF_USED and kind not in used:
                continue
            key = f"legend_{kind}"
            lg.node(key, label=kind, tooltip=_esc(text), fontsize="9", **NODE_STYLES[kind])
            if prev is not None:
                lg.edge(prev, key, style="invis")
            prev = key


_FUNCTION_CLUSTER = {"style": "rounded,filled", "fillcolor": "#f4f1fb", "color": "#6a4c93"}
_FUNCTION_ROLES = {"then_branch": "then", "else_branch": "else", "cond": "cond", "body": "body"}


def _add_functions(dot, graph, callers, depth, level: int, caller_prefix: str = "") -> None:
    """For each If/While among `callers`: a cluster per function it calls (its ops, their
    edges), a dotted edge from the op to it; nested functions the same way, one level
    deeper (`depth` levels drawn: the op alone stands for what is deeper)."""
    if depth is not None and level >= depth:
        return
    for op in callers:
        for attr in function_attrs(op.op_def):
            fn = graph.get_function(op.attrs[attr])
            prefix = f"fn {fn.name}/"  # (no ":", which an edge end would read as a port)
            fops = [f for f in fn.get_operations()]
            if not fops:
                continue
            cluster = "cluster_fn_" + "".join(ch if ch.isalnum() else "_" for ch in fn.name)
            with dot.subgraph(name=cluster) as c:
                c.attr(label=_esc(f"{_FUNCTION_ROLES.get(attr, attr)} of {op.name}: {fn.name}"),
                       tooltip=_esc(f"function {fn.name}{fn.signature()}"), **_FUNCTION_CLUSTER)
                arg = {id(t.op): k for k, t in enumerate(fn.inputs)}
                for f in fops:
                    attrs = dict(NODE_STYLES.get(f.type, _DEFAULT_NODE))
                    if id(f) in arg:
                        c.node(prefix + f.name, label=_esc(f"input {arg[id(f)]}: {f.name}"), shape="invhouse",
                               tooltip=op_tooltip(f))
                    else:
                        c.node(prefix + f.name, label=_node_label(f, None), tooltip=op_tooltip(f), **attrs)
                    for t in f.inputs:
                        c.edge(prefix + t.op.name, prefix + f.name, label=str(t.value_index) if t.value_index else None)
                    for d in f.control_inputs:
                        c.edge(prefix + d.name, prefix + f.name, style="dashed", color="#777777", arrowhead="odot")
                for k, t in enumerate(fn.outputs):
                    c.node(f"{prefix}<out {k}>", label=f"output {k}", shape="plain", fontsize="9")
                    c.edge(prefix + t.op.name, f"{prefix}<out {k}>", style="dotted")
                _add_functions(c, fn, fops, depth, level + 1, prefix)  # nested functions inside it
            dot.edge(caller_prefix + op.name, prefix + fops[0].name, lhead=cluster, style="dotted",
                     color="#6a4c93", label=_FUNCTION_ROLES.get(attr, attr), arrowhead="empty")


def to_dot(graph, name: str = "G", **options) -> str:
    """The graph as Graphviz DOT text (render with `dot -Tsvg`); options as build_digraph."""
    return build_digraph(graph, name=name, **options).source


def render_svg(graph, **options) -> str | None:
    """The picture as SVG text, or None when Graphviz (the package or its `dot` program) is
    not installed."""
    try:
        gv = _graphviz()
    except GraphError:
        return None
    try:
        return build_digraph(graph, **options).pipe(format="svg", encoding="utf-8")
    except (gv.ExecutableNotFound, gv.CalledProcessError):
        return None


def mimebundle(graph, title: str = "", fetches: Iterable = (), include=None, exclude=None) -> dict[str, str]:
    """What a notebook shows for a graph (IPython's `_repr_mimebundle_`): the SVG picture
    when Graphviz is there (large graphs with nested loops collapsed), and always the
    text listing under a one-line title."""
    text = (title + "\n" if title else "") + format_graph(graph)
    bundle = {"text/plain": text.rstrip("\n")}
    wanted = (include is None or "image/svg+xml" in include) and not (exclude and "image/svg+xml" in exclude)
    if wanted and len(graph):
        depth = fit_depth(graph)
        note = collapse_note(graph, depth, "graph.to_dot(depth=None) draws every op")
        svg = render_svg(graph, fetches=list(fetches), depth=depth, note=note, size=SCREEN_SIZE)
        if svg is not None:
            bundle["image/svg+xml"] = svg
    return bundle


def graph_repr(graph) -> str:
    """`<Graph: 27 ops, 1 while loop>`."""
    return f"<Graph: {summarize_graph(graph)}>"
