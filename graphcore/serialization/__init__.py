"""Graph files: a graph as a plain JSON document, with no code in it (no pickle, no eval).

    {"format": "autograph-graph", "version": 1,
     "contexts": [{"kind": "while", "name": "while", "outer": null, "parallel_iterations": 10, ...},
                  {"kind": "cond", "name": "cond", "branch": 1, "pred": "Less:0", "outer": null}],
     "ops": [{"name": "x", "type": "Placeholder", "inputs": [], "control_inputs": [],
              "attrs": {"dtype": {"dtype": "float64"}, "shape": {"shape": []}},
              "outputs": [{"dtype": "float64", "shape": []}], "device": "", "context": null,
              "source": {"file": "/home/me/f.py", "line": 3, "function": "f"}}, ...]}

Ops are listed in creation order, contexts after the context around them; attribute
values keep their Python type through tagged objects (attr_values.py).

Modules: writer.py (to_json), attr_values.py (attribute values, both ways),
document.py (reading: text -> checked records), builder.py (records -> Graph).
"""
from __future__ import annotations

from ..errors import GraphFileError
from ..validate import find_problems
from .builder import build_graph, restore_while_contexts
from .document import FORMAT, VERSION, parse, read_document
from .writer import to_json

__all__ = ["FORMAT", "VERSION", "from_json", "to_json"]


def from_json(text: str | bytes):
    """Load a graph written by `to_json`. The file is data only: nothing in it is executed.

    Raises GraphFileError naming the place of the first problem, e.g.
    `ops[12].inputs[1]: no tensor named 'foo:0'`; the loaded graph is validated.

    Example:
        g2 = gc.Graph.from_json(g.to_json())
    """
    file = read_document(parse(text))      # every field typed, every name resolved
    graph = build_graph(file)              # ops created, loop back edges wired
    problems = find_problems(graph)        # the invariants of Graph.validate
    if problems:
        raise GraphFileError(f"the graph in the file is not valid: {problems[0]}")
    restore_while_contexts(graph)          # what gradients read from a loop's context
    return graph
