"""Copying a graph in memory (`Graph.copy`): what the optimizer, the partitioner and the
Session rewrite is a copy, so the user's graph stays as traced.

The ops are copied by the graph itself (`Graph.copy_ops_into`: names, order, attributes,
readers); this module copies what refers to them: the control-flow contexts, the function
library (each function a FuncGraph of the copy, with its inputs, outputs, captures and
caller), the variables and collections, and the side tables. Everything that refers to an
op, tensor, context or graph of the original refers to its copy; containers are copied;
numpy arrays too; other values (dtypes, shapes, source lines, functions) are shared.

A side table (what a module remembers about a graph or context, side_tables.py) is copied
only when it holds graph objects and plain values alone; one holding anything else (an
object of the module's own, which may refer to the original) is left out, so the copy never
shares state with the original: the module then knows nothing of the copy, as of a graph
loaded from a file.
"""
from __future__ import annotations

import numpy as np

from .control_flow import ControlFlowContext
from .dtypes import DType
from .errors import GraphError
from .function_graph import FuncGraph
from .graph import Graph, Operation, Tensor
from .shapes import TensorShape
from .side_tables import copy_tables
from .source_info import SourceLocation

# values a side table may hold besides graph objects and containers (all immutable)
_PLAIN = (type(None), bool, int, float, complex, str, bytes, np.generic, np.dtype, DType, TensorShape, SourceLocation)


def copy_graph(graph: Graph) -> Graph:
    """An independent copy of `graph` (the outermost graph: functions are copied with it)."""
    if graph.outer_graph is not None:
        raise GraphError(f"cannot copy the function graph {getattr(graph, 'name', '?')!r} alone: it shares the "
                         "library of the graph that calls it; copy that graph (its functions come with it)")
    c = _Copier()
    new = Graph()
    c.put(graph, new)
    pairs = [(graph, new)] + _copy_library(c, graph, new)
    for old, made in pairs:
        for k, v in old.copy_ops_into(made).items():
            c.put(k, v)
    for old, made in pairs:
        for op in old.iter_operations():
            if op.ctx is not None:
                c.get(op).ctx = c.value(op.ctx, strict=False)
        for ctx in old.while_contexts.values():
            made.add_while_context(c.value(ctx, strict=False))
    _copy_function_fields(c, pairs[1:])
    new.variables = list(graph.variables)  # (a Variable names state of the runtime: the same in both)
    new.collections = c.value(graph.collections, strict=False)
    for old, made in [*pairs, *c.contexts]:
        copy_tables(old, made, lambda v: c.value(v, strict=True))
    return new


def _copy_library(c: "_Copier", graph: Graph, new: Graph) -> list[tuple[Graph, Graph]]:
    """A FuncGraph of the copy for each function of the library, each made after the graph
    around it, added to the copy's library under the same names in the same order (an undone
    trace leaves no function behind: Graph.drop_functions)."""
    made, pending = [], list(graph.library.values())
    while pending:
        later = []
        for fn in pending:
            outer = c.memo.get(id(fn.outer_graph))
            if outer is None:
                later.append(fn)
                continue
            fc = FuncGraph(fn.name, outer)
            c.put(fn, fc)
            made.append((fn, fc))
        if len(later) == len(pending):
            raise GraphError(f"cannot copy the graph: its function {later[0].name!r} is enclosed by a graph that "
                             "is neither the graph nor one of its library's functions")
        pending = later
    for fn in graph.library.values():
        new.add_function(c.memo[id(fn)])
    return made


def _copy_function_fields(c: "_Copier", pairs) -> None:
    """What a FuncGraph has besides a Graph's fields (inputs, outputs, captures, caller...)."""
    graph_fields = set(vars(Graph()))
    for fn, fc in pairs:
        for k, v in vars(fn).items():
            if k not in graph_fields:
                setattr(fc, k, c.value(v, strict=False))


class _Copier:
    """The originals copied so far (by id) and how any value is copied."""

    def __init__(self):
        self.memo: dict[int, object] = {}  # id(original) -> its copy
        self.kept: list = []  # the originals (alive while copying, so their ids stay theirs)
        self.contexts: list[tuple[ControlFlowContext, ControlFlowContext]] = []

    def put(self, old, new) -> None:
        self.memo[id(old)] = new
        self.kept.append(old)

    def get(self, old):
        return self.memo[id(old)]

    def value(self, v, strict: bool):
        """`v` with what it refers to of the original mapped onto the copy. `strict` (side
        tables): LookupError for a value that is not plain, or a graph object not copied;
        else (contexts, functions) such a value is shared, and an op or tensor no longer in
        its graph (a cond predicate the optimizer folded away) becomes None, as in a graph file."""
        hit = self.memo.get(id(v))
        if hit is not None:
            return hit
        if isinstance(v, ControlFlowContext):
            return self.context(v)
        if isinstance(v, (Graph, Operation, Tensor)):
            if strict:
                raise LookupError(v)
            return None
        kind = type(v)
        if kind is list or kind is tuple or kind is set or kind is frozenset:
            return kind(self.value(x, strict) for x in v)
        if kind is dict:
            return {self.key(k, strict): self.value(x, strict) for k, x in v.items()}
        if kind is np.ndarray:
            return v.copy()
        if strict and not isinstance(v, _PLAIN):
            raise LookupError(v)
        return v

    def key(self, k, strict: bool):
        """A dict key: a table keyed by `id(tensor)` (a context's captures) gets the copy's id."""
        if type(k) is int and k in self.memo:
            return id(self.memo[k])
        return self.value(k, strict)

    def context(self, ctx: ControlFlowContext) -> ControlFlowContext:
        """A copy of `ctx` in the copied graph: its fields mapped, its removal hook registered
        with the copy (as its constructor does)."""
        new = object.__new__(type(ctx))
        self.put(ctx, new)
        ControlFlowContext.__init__(new, self.get(ctx.graph), None, ctx.name)
        fields = {k: self.value(v, strict=False) for k, v in vars(ctx).items()}
        new.__dict__.update(fields)
        self.contexts.append((ctx, new))
        return new
