"""The shape of the imports, read from the source with `ast` (nothing is imported).

Pins what issue 13 asked for: no import circle among graphcore's modules, and
function-local imports only where a real cycle of meaning remains, each with a reason; and
issue 26's: no circle in any package (graphcore, executor, autograph, cli) counting
function-local imports, and each package importing only those below it.

Run as a script for the figures: `python tests/graphcore/test_import_structure.py`
(function-local imports, circles with and without them, functions over 80 lines).

Edges: `import a.b` and `from a.b import name` depend on module a.b; `from pkg import
sub` where `sub` is a module depends on pkg.sub. The packages above a module (which
Python imports first) are not counted as edges: every module would otherwise be in a
circle with the package `__init__` that imports it. Imports under `if TYPE_CHECKING:`
never run and are left out.
"""
from __future__ import annotations

import ast
import os
import sys
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = "graphcore"
LONG_FUNCTION = 80

# The function-local imports that remain, by (module, imported module): each breaks a
# real cycle of meaning, said in its own comment. A new one must be added here with a reason.
ALLOWED_LOCAL_IMPORTS: set[tuple[str, str]] = {
    ("graphcore.dot", "graphviz"),  # an optional package at load time, not a cycle
}


@dataclass(frozen=True)
class Import:
    source: str       # importing module, e.g. "graphcore.control_flow"
    target: str       # imported module, e.g. "graphcore.ops.array_ops"
    local: bool       # inside a function body
    line: int
    comment: str      # the text after `#` on the import's line


def modules(package: str = PACKAGE, root: str = ROOT) -> dict[str, str]:
    """Module name -> file path, for every .py file of the package."""
    out = {}
    base = os.path.join(root, package)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
        for f in sorted(filenames):
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), root)[:-3].split(os.sep)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join(rel)] = os.path.join(dirpath, f)
    return out


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([name] if name else []))


def imports_of(module: str, path: str, known: dict[str, str]) -> list[Import]:
    """Every import of `module` that names a module of `known` (graphcore's own)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.splitlines()
    tree = ast.parse(text, path)
    is_package = os.path.basename(path) == "__init__.py"
    found: list[Import] = []

    def add(target: str, node: ast.stmt, local: bool) -> None:
        if target in known and target != module:
            line = lines[node.lineno - 1]
            comment = line.split("#", 1)[1].strip() if "#" in line else ""
            found.append(Import(module, target, local, node.lineno, comment))

    def visit(node: ast.AST, local: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit_stmt(sub, local)
                continue
            visit_stmt(child, local)

    def visit_stmt(child: ast.AST, local: bool) -> None:
        if isinstance(child, ast.Import):
            for a in child.names:
                add(a.name, child, local)
        elif isinstance(child, ast.ImportFrom):
            base = _resolve(module, is_package, child.level, child.module)
            for a in child.names:
                sub = f"{base}.{a.name}"
                add(sub if sub in known else base, child, local)
        else:
            inner = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner)

    visit(tree, False)
    return found


def all_imports(package: str = PACKAGE) -> list[Import]:
    known = modules(package)
    seen, out = set(), []
    for mod, path in known.items():
        for imp in imports_of(mod, path, known):  # one entry per statement and module imported
            if (imp.source, imp.line, imp.target) not in seen:
                seen.add((imp.source, imp.line, imp.target))
                out.append(imp)
    return out


def circles(imports: list[Import]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.source, set()).add(imp.target)
        graph.setdefault(imp.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = [0]

    def strongconnect(v: str) -> None:
        # iterative Tarjan: (node, iterator over its successors)
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return sorted(out)


PACKAGES = ("graphcore", "executor", "autograph", "cli")  # bottom to top: each may import those before it
LAYER = {name: i for i, name in enumerate(PACKAGES)}


def imports_everywhere() -> list[Import]:
    """Every import between the modules of all four packages, function-local ones included."""
    known: dict[str, str] = {}
    for package in PACKAGES:
        known.update(modules(package))
    seen, out = set(), []
    for mod, path in known.items():
        for imp in imports_of(mod, path, known):
            if (imp.source, imp.line, imp.target) not in seen:
                seen.add((imp.source, imp.line, imp.target))
                out.append(imp)
    return out


def long_functions(package: str = PACKAGE, limit: int = LONG_FUNCTION) -> list[tuple[str, str, int]]:
    """(module, function, lines) for every function longer than `limit` lines."""
    out = []
    for mod, path in modules(package).items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    out.append((mod, node.name, n))
    return sorted(out)


# -- the pins ----------------------------------------------------------------------------

def test_no_import_circle_at_load_time():
    top = [imp for imp in all_imports() if not imp.local]
    assert circles(top) == []


def test_no_import_circle_even_counting_function_local_imports():
    assert circles(all_imports()) == []


def test_function_local_imports_are_the_allowed_ones_each_with_a_reason():
    local = [imp for imp in all_imports() if imp.local]
    unexpected = [f"{i.source}:{i.line} imports {i.target}" for i in local
                  if (i.source, i.target) not in ALLOWED_LOCAL_IMPORTS]
    assert unexpected == []
    assert all(i.comment for i in local), "each function-local import says why on its line"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle_in_any_package_counting_function_local_imports(package):
    """Across all four packages, a function-local import counted as any other: no circle
    touches `package` (a function-local import that closes one only hides it)."""
    found = [c for c in circles(imports_everywhere()) if any(m.split(".")[0] == package for m in c)]
    assert found == []


def test_each_package_imports_only_the_packages_below_it():
    """graphcore knows nothing of the others; executor depends on graphcore only; autograph
    calls executor; cli sits on top (DESIGN.md), function-local imports included."""
    up = [f"{i.source}:{i.line} imports {i.target}" for i in imports_everywhere()
          if LAYER[i.target.split(".")[0]] > LAYER[i.source.split(".")[0]]]
    assert up == []


def test_no_function_of_graphcore_is_over_80_lines():
    """A long function is split into named helpers (issue 26: dot.build_digraph and
    Graph.move_out_of_loop were the last)."""
    assert long_functions() == []


def test_ops_never_import_gradients():
    bad = [f"{i.source}:{i.line}" for i in all_imports()
           if i.source.startswith("graphcore.ops") and i.target.startswith("graphcore.gradients")]
    assert bad == []


def test_graph_imports_none_of_its_printers_exporters_or_ops():
    heavy = ("graphcore.printer", "graphcore.dot", "graphcore.serialization", "graphcore.validate",
             "graphcore.ops", "graphcore.registry", "graphcore.control_flow", "graphcore.graph_copy")
    bad = [i.target for i in all_imports() if i.source == "graphcore.graph" and i.target.startswith(heavy)]
    assert bad == []


def main() -> None:
    imps = all_imports()
    local = [i for i in imps if i.local]
    statements = {(i.source, i.line) for i in local}
    print(f"function-local imports in {PACKAGE}: {len(statements)} statements")
    for i in local:
        print(f"  {i.source}:{i.line} -> {i.target}  # {i.comment}")
    for title, sub in (("load-time circles (module-level imports)", [i for i in imps if not i.local]),
                       ("circles counting function-local imports", imps)):
        cs = circles(sub)
        print(f"{title}: {len(cs)}")
        for c in cs:
            print(f"  {len(c)} modules: {', '.join(c)}")
    lf = long_functions()
    print(f"functions over {LONG_FUNCTION} lines: {len(lf)}")
    for mod, name, n in lf:
        print(f"  {mod}.{name}: {n}")


if __name__ == "__main__":
    sys.exit(main())
