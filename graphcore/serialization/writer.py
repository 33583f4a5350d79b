"""Writing a graph file: the graph as a JSON document (the format is described in
graphcore/serialization/__init__.py)."""
from __future__ import annotations

import json
from typing import Any

from ..errors import GraphError
from ..frames import topological_order
from ..library import reachable_functions
from .attr_values import encode_attr
from .document import FORMAT, VERSION


def to_json(graph, indent: int | None = 1, signature: dict | None = None) -> str:
    """The graph as a JSON document that `from_json` loads back; ops in the graph's order
    where it lists every op after what it waits for (a traced graph does), else in an order
    that does (a rewritten graph may have put an op before its inputs).

    `signature` (a file written from a traced function) says how to call the graph:
    {"inputs": [(name, placeholder tensor), ...], "outputs": [tensor, ...], "function":
    name, "structure": "value" | "tuple" | "list"}; it is written as tensor names, which
    the reader matches to the file's ops (document.py, read_document)."""
    contexts = _ContextTable()
    ops = graph.get_operations()
    _refuse_python_calls(ops)
    if not _in_order(ops):
        ops = topological_order(ops)
    ops = [_op_entry(op, contexts) for op in ops]
    doc = {"format": FORMAT, "version": VERSION, "contexts": contexts.entries, "ops": ops}
    if signature is not None:
        doc["signature"] = _signature_entry(signature)
    if graph.library:  # the functions the ops call (If, While), each before its callers
        reachable = reachable_functions(graph)
        for fn in reachable:  # (a branch or body calling Python is refused as the graph's own ops are)
            _refuse_python_calls(fn.get_operations())
        functions = [_function_entry(fn) for fn in reachable]
        if functions:
            doc["functions"] = functions
    return json.dumps(doc, indent=indent, allow_nan=False) + "\n"


def _refuse_python_calls(ops) -> None:
    """A graph file is data: a Python call (py_function, a staged str() or clock reading) has
    no text that a loader could run without running arbitrary code, so it is refused here."""
    for op in ops:
        if op.type == "PyFunction" or any(t.dtype.name == "pyobject" for t in op.outputs):
            raise GraphError(
                f"cannot write the graph to a file: {op.describe()} calls Python when the graph runs "
                f"(py_function, or a call staged from converted code such as str(x), json.dumps or "
                f"time.perf_counter()), and a graph file holds data, never code. Run the graph in this process "
                f"(engine='ray' sends graphs to its workers as files: run it with engine='local'), or compute "
                f"the value outside the function")


def _function_entry(fn) -> dict:
    contexts = _ContextTable()
    ops = fn.get_operations()
    _refuse_python_calls(ops)
    if not _in_order(ops):
        ops = topological_order(ops)
    ops = [_op_entry(op, contexts) for op in ops]
    return {"name": fn.name, "inputs": [_tensor_name(t) for t in fn.inputs],
            "outputs": [_tensor_name(t) for t in fn.outputs], "contexts": contexts.entries, "ops": ops}


def _in_order(ops) -> bool:
    """Every op stands after its control inputs and after at least one data input (the
    loader builds an op whose later inputs it wires afterwards, as loops need)."""
    seen: set[int] = set()
    for op in ops:
        if any(id(c) not in seen for c in op.control_inputs) or \
                (op.inputs and not any(id(t.op) in seen for t in op.inputs)):
            return False
        seen.add(id(op))
    return True


def _tensor_name(t) -> str:
    return f"{t.op.name}:{t.value_index}"


def _signature_entry(signature: dict) -> dict:
    return {"function": str(signature.get("function", "")),
            "inputs": [{"name": name, "tensor": _tensor_name(t)} for name, t in signature["inputs"]],
            "outputs": [_tensor_name(t) for t in signature["outputs"]],
            "structure": signature.get("structure", "value")}


def _op_entry(op, contexts: "_ContextTable") -> dict:
    where = f"op {op.name!r} ({op.type}) attr"
    src = op.source
    return {
        "name": op.name,
        "type": op.type,
        "inputs": [_tensor_name(t) for t in op.inputs],
        "control_inputs": [c.name for c in op.control_inputs],
        "attrs": {k: encode_attr(v, f"{where} {k!r}") for k, v in op.attrs.items()},
        "outputs": [{"dtype": t.dtype.name, "shape": None if t.shape.dims is None else list(t.shape.dims)}
                    for t in op.outputs],
        "device": op.device or "",
        "context": contexts.index(op.ctx),
        "source": None if src is None else {"file": src.filename, "line": src.lineno, "function": src.function},
    }


class _ContextTable:
    """The contexts the ops are in, each listed after the context around it."""

    def __init__(self):
        self.entries: list[dict] = []
        self._index: dict[int, int] = {}

    def index(self, ctx) -> int | None:
        if ctx is None:
            return None
        if id(ctx) not in self._index:
            outer = self.index(ctx.outer)
            self._index[id(ctx)] = len(self.entries)
            self.entries.append(_context_entry(ctx, outer))
        return self._index[id(ctx)]


def _context_entry(ctx, outer: int | None) -> dict:
    entry: dict[str, Any] = {"name": ctx.name, "outer": outer}
    if ctx.is_while:
        entry["kind"] = "while"
        entry["parallel_iterations"] = int(getattr(ctx, "parallel_iterations", 10))
        mi = getattr(ctx, "maximum_iterations", None)
        if mi is not None and hasattr(mi, "op"):
            entry["maximum_iterations"] = {"tensor": _tensor_name(mi)}
        elif mi is not None:
            entry["maximum_iterations"] = int(mi)
        entry["has_counter"] = bool(getattr(ctx, "has_counter", False))
    else:
        entry["kind"] = "cond"
        entry["branch"] = int(ctx.branch)
        pred = getattr(ctx, "pred", None)
        # (a predicate the optimizer folded away is no longer in the graph: the cond is then known)
        in_graph = pred is not None and pred.op in pred.op.graph
        entry["pred"] = _tensor_name(pred) if in_graph else None
    return entry
