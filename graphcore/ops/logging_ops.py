"""Print and Assert: stateful ops that act when the graph runs, not when it is built."""
from __future__ import annotations

import sys

import numpy as np

from ..errors import InvalidArgumentError
from ..graph import Operation, Tensor, get_default_graph, graph_of
from ..registry import CHEAP, define_op


def _print_kernel(*values, template=None, sep=" ", end="\n", stream="stdout"):
    if template is None:
        text = sep.join(str(v) for v in values)
    else:
        it = iter(values)
        text = "".join(str(next(it)) if part is None else part for part in template)
    out = sys.stderr if stream == "stderr" else sys.stdout
    out.write(text + end)
    out.flush()
    return ()


print_op = define_op("Print", shape=lambda *v, **a: [], kernel=_print_kernel, num_outputs=0, cost=CHEAP,
                     stateful=True)
print_op.not_differentiable("no outputs")


def print(*values, sep: str = " ", end: str = "\n", stream: str = "stdout", name=None):  # noqa: A001
    """Print `values` when the graph runs (Python's print when no graph is being built).

    Non-tensor values are printed as they are; returns the Print op (or None eagerly)."""
    g = graph_of(values) or get_default_graph()
    if g is None:
        _print_kernel(*values, sep=sep, end=end, stream=stream)
        return None
    template, tensors = [], []
    for i, v in enumerate(values):
        if i:
            template.append(sep)
        if isinstance(v, Tensor):
            template.append(None)
            tensors.append(v)
        else:
            template.append(str(v))
    return g.create_op(print_op, tensors, {"template": tuple(template), "sep": sep, "end": end, "stream": stream},
                       name=name or "Print")


def _assert_kernel(cond, *data, message=""):
    if not np.all(cond):
        detail = ", ".join(str(d) for d in data)
        raise InvalidArgumentError(f"assertion failed: {message}" + (f" [{detail}]" if detail else ""))
    return ()


assert_op = define_op("Assert", shape=lambda c, *d, **a: [], kernel=_assert_kernel, num_outputs=0, cost=CHEAP,
                      stateful=True)
assert_op.not_differentiable("no outputs")


def Assert(condition, data=(), message: str = "", name=None) -> Operation | None:  # noqa: N802 (TF's name)
    """Fail the run with `message` (and the values of `data`) when `condition` is false."""
    data = list(data) if isinstance(data, (list, tuple)) else [data]
    g = graph_of([condition, *data]) or get_default_graph()
    if g is None:
        _assert_kernel(condition, *data, message=message)
        return None
    return g.create_op(assert_op, [condition, *data], {"message": str(message)}, name=name or "Assert")
