"""The text listing of a graph (`str(graph)`): one line per op, in creation order.

    %while/Add_1: int64[] = Add(%while/Switch_2:1, %while/Enter_4)  # frame while, fib.py:7
    %Print = Print(%x, template=('x = ', None), ...)                 # no outputs: no type

A tensor is written `%op` for output 0 and `%op:k` for output k; control inputs are
`^op`. Attributes follow the inputs as keywords (small constants in full, large ones
as `<float64[100,3]>`). The comment gives the control-flow context the op was built
in (outermost first: `frame while`, `cond cond_1:true`), its device and the user's
source line.
"""
from __future__ import annotations

import numpy as np

from .dtypes import DType
from .library import reachable_functions
from .shapes import TensorShape

# arrays with at most this many elements are printed in full
MAX_INLINE_ELEMENTS = 8


def tensor_ref(t) -> str:
    """`%name` for output 0, `%name:k` for output k."""
    return f"%{t.op.name}" if t.value_index == 0 else f"%{t.op.name}:{t.value_index}"


def tensor_type(t) -> str:
    """`float32[3]`, `int64[]`, `float64[?,2]`."""
    return f"{t.dtype}{t.shape}"


def format_value(v) -> str:
    """An attribute value, briefly."""
    if isinstance(v, np.ndarray):
        if v.dtype.kind in "biuf" and v.size <= MAX_INLINE_ELEMENTS:
            return _py_repr(v.tolist())
        return f"<{_np_dtype_name(v.dtype)}{list(v.shape)}>".replace(" ", "")
    if isinstance(v, np.generic):
        return _py_repr(v.item())
    if isinstance(v, DType):
        return v.name
    if isinstance(v, TensorShape):
        return str(v)
    if isinstance(v, tuple):
        inner = ", ".join(format_value(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(format_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {format_value(x)}" for k, x in v.items()) + "}"
    if type(v).__name__ == "ListValue":
        return f"<tensor list of {len(v)}>"
    return _py_repr(v)


def _py_repr(v) -> str:
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_py_repr(x) for x in v) + "]"
    return repr(v)


def _np_dtype_name(d: np.dtype) -> str:
    return "bool" if d.kind == "b" else str(d)


def context_chain(ctx) -> list:
    """The contexts an op was built in, outermost first."""
    chain = []
    while ctx is not None:
        chain.append(ctx)
        ctx = ctx.outer
    chain.reverse()
    return chain


def describe_context(ctx) -> str:
    """`frame while`, `cond cond:true`, outermost first, joined by ', '."""
    parts = []
    for c in context_chain(ctx):
        if c.is_while:
            parts.append(f"frame {c.name}")
        else:
            parts.append(f"cond {c.name}:{'true' if getattr(c, 'branch', 1) else 'false'}")
    return ", ".join(parts)


# attrs that repeat what the output type already says
_IMPLIED_ATTRS = {"Const": ("dtype",), "Placeholder": ("dtype", "shape")}


def format_op(op) -> str:
    """One line of the listing (see the module docstring)."""
    args = [tensor_ref(t) for t in op.inputs]
    args += [f"^{c.name}" for c in op.control_inputs]
    implied = _IMPLIED_ATTRS.get(op.type, ())
    args += [f"{k}={format_value(v)}" for k, v in op.attrs.items() if k not in implied]
    call = f"{op.type}({', '.join(args)})"
    if op.outputs:
        outs = ", ".join(f"{tensor_ref(t)}: {tensor_type(t)}" for t in op.outputs)
        line = f"{outs} = {call}"
    else:
        line = f"%{op.name} = {call}"
    notes = []
    where = describe_context(op.ctx)
    if where:
        notes.append(where)
    if op.device:
        notes.append(f"device {op.device}")
    if op.source is not None:
        notes.append(str(op.source))
    return f"{line}  # {', '.join(notes)}" if notes else line


def format_graph(graph) -> str:
    """The whole listing, one line per op in creation order, ending with a newline
    (an empty graph gives `# empty graph`)."""
    ops = graph.get_operations()
    if not ops:
        return "# empty graph\n"
    text = "\n".join(format_op(op) for op in ops) + "\n"
    if graph.library:  # the functions its If/While ops call (Control Flow v2)
        text += format_library(graph)
    return text


def summarize_graph(graph) -> str:
    """`27 ops, 1 while loop, 2 conds` (a cond counts once for its two branches)."""
    loops, conds = set(), set()
    for op in graph.get_operations():
        for c in context_chain(op.ctx):
            (loops if c.is_while else conds).add(c.name)
    parts = [f"{len(graph)} op" + ("" if len(graph) == 1 else "s")]
    if loops:
        parts.append(f"{len(loops)} while loop" + ("" if len(loops) == 1 else "s"))
    if conds:
        parts.append(f"{len(conds)} cond" + ("" if len(conds) == 1 else "s"))
    return ", ".join(parts)


def format_library(graph) -> str:
    """The listing of the functions `graph` calls, after the graph's own:

        function cond_true(%capture: float64[]) -> (%Mul):
          %Mul: float64[] = Mul(%capture, %Const)
    """
    parts = []
    for fn in reachable_functions(graph):
        args = ", ".join(f"{tensor_ref(t)}: {tensor_type(t)}" for t in fn.inputs)
        outs = ", ".join(tensor_ref(t) for t in fn.outputs)
        body = "".join(f"  {format_op(op)}\n" for op in fn.get_operations() if op.type != "Placeholder"
                       or not any(op is t.op for t in fn.inputs))
        parts.append(f"\nfunction {fn.name}({args}) -> ({outs}):\n{body}")
    return "".join(parts)
