"""Only graphcore/graph.py reads the private state of a Graph, an Operation or a Tensor
(issue 26): every other module goes through their public API (`op.order`, `op.serial`,
`tensor.readers`, `op.waiters`, `graph.ops_by_name`, `graph.library`, `erase_ops(...,
check_users=False)`...), so the graph can change how it keeps itself without breaking passes.

Read from the source with `ast` (nothing is imported). The private names are taken from
graph.py itself: the `_x` attributes its three classes set or declare as slots and the `_x`
methods they define. A read `anything._x` of one of those names in another module fails
the test, unless that module's own classes define a `_x` of their own (FuncGraph's
`_lift_controls`, a hook Graph declares for it), or the object is `self` / `cls` (a class's
own field of the same name). Tests are left out: the tests of graph.py check its private
state on purpose.

Run as a script to list the reads: `python tests/graphcore/test_graph_privacy.py`.
"""
from __future__ import annotations

import ast
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRAPH_MODULE = os.path.join("graphcore", "graph.py")
GRAPH_CLASSES = ("Graph", "Operation", "Tensor")
SCANNED = ("graphcore", "executor", "autograph", "cli", "samples", "benchmarks")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _names_defined(tree: ast.AST, classes=None) -> set[str]:
    """The private names the classes of `tree` (only `classes`, if given) set on `self`,
    declare in `__slots__` or as class attributes, or define as methods."""
    out: set[str] = set()
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef) or (classes is not None and cls.name not in classes):
            continue
        for node in ast.walk(cls):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(node.name):
                out.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _private(node.attr) \
                    and isinstance(node.value, ast.Name) and node.value.id == "self":
                out.add(node.attr)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and t.id == "__slots__" and isinstance(node.value, (ast.Tuple, ast.List)):
                        out.update(e.value for e in node.value.elts
                                   if isinstance(e, ast.Constant) and isinstance(e.value, str) and _private(e.value))
                    elif isinstance(t, ast.Name) and _private(t.id) and node in cls.body:
                        out.add(t.id)
    return out


def graph_private_names() -> set[str]:
    with open(os.path.join(ROOT, GRAPH_MODULE)) as f:
        return _names_defined(ast.parse(f.read()), GRAPH_CLASSES)


def _sources(root: str):
    for package in SCANNED:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, package)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
            for f in sorted(filenames):
                path = os.path.join(dirpath, f)
                if f.endswith(".py") and os.path.relpath(path, root) != GRAPH_MODULE:
                    yield os.path.relpath(path, root)


def reads_in(tree: ast.AST, names: set[str]) -> list[ast.Attribute]:
    """The reads in one module's `tree` of the graph-private `names` (see the docstring)."""
    own = _names_defined(tree)
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in names and node.attr not in own
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]


def private_reads(root: str = ROOT) -> list[tuple[str, int, str]]:
    """(file, line, the expression) of every read of a graph-private name outside graph.py."""
    names = graph_private_names()
    found = []
    for rel in _sources(root):
        with open(os.path.join(root, rel)) as f:
            tree = ast.parse(f.read(), rel)
        found += [(rel, node.lineno, ast.unparse(node)) for node in reads_in(tree, names)]
    return found


def test_the_private_names_are_found_in_graph_py():
    """The scan knows what it looks for (a rename in graph.py must not empty it)."""
    names = graph_private_names()
    assert {"_order", "_id", "_by_name", "_ops", "_consumers", "_control_outputs", "_library", "_shape",
            "_while_contexts", "_check_op", "_remove", "_device", "_scope"} <= names


def test_no_module_outside_graph_py_reads_a_graph_private_field():
    reads = private_reads()
    assert not reads, "private fields of Graph / Operation / Tensor read outside graphcore/graph.py (use the " \
        "public API, or add one to graph.py):\n" + "\n".join(f"  {f}:{line}: {expr}" for f, line, expr in reads)


def test_the_scan_tells_a_private_read_from_a_class_own_field():
    """`op._order` and `graph._by_name` are caught; `self._order` and a `_lift_controls` the
    module's own class defines are not (the scan is neither blind nor too eager)."""
    tree = ast.parse("class Mine:\n"
                     "    _lift_controls = None\n"
                     "    def f(self, op, graph):\n"
                     "        return op._order, graph._by_name, self._order, graph._lift_controls\n")
    assert [ast.unparse(n) for n in reads_in(tree, graph_private_names())] == ["op._order", "graph._by_name"]


if __name__ == "__main__":
    reads = private_reads(sys.argv[1] if len(sys.argv) > 1 else ROOT)
    for f, line, expr in reads:
        print(f"{f}:{line}: {expr}")
    print(f"{len(reads)} reads of graph-private fields outside graphcore/graph.py "
          f"({len({f for f, _, _ in reads})} modules)")
