"""Rematerialisation: a backward loop recomputes cheap forward values instead of keeping
them, within a memory budget.

A gradient rule inside a loop that reads a forward value (tanh's rule reads its output)
makes the forward loop push that value onto a list every iteration and the backward loop
pop it (control_flow_grad.GradWhileContext). That costs memory: one copy per iteration.
An elementwise value can instead be computed again in the backward loop from what it was
computed from, popped in turn (or recomputed, recursively); constants are made again.

    with gc.memory_budget(0):            # recompute every elementwise value
        dx, = gc.gradients(loss, [x])
    dx, = gc.gradients(loss, [x], memory_budget=64 * 2**20)   # keep up to 64 MiB per backward loop

The budget counts the bytes a backward loop's lists hold per iteration of the forward
loop (values of unknown shape count as over it); a value that would go over it is
recomputed if it can be (an elementwise op of the forward body, outside conds), else
kept. Without a budget (the default) every value read is kept, as before. Fused ops
(the optimizer's) recompute their own intermediates in any case: their gradient is built
from their inputs.
"""
from __future__ import annotations

import contextlib
import threading
from math import prod

from ..graph import Tensor

_setting = threading.local()


@contextlib.contextmanager
def memory_budget(nbytes: int | None):
    """Within the block, backward loops keep at most `nbytes` of forward values per
    iteration and recompute cheap ones beyond that (None: keep everything)."""
    if nbytes is not None and nbytes < 0:
        raise ValueError(f"memory_budget: {nbytes} bytes; give a number of bytes >= 0, or None to keep every value")
    saved = getattr(_setting, "budget", None)
    _setting.budget = nbytes
    try:
        yield
    finally:
        _setting.budget = saved


def current_budget() -> int | None:
    return getattr(_setting, "budget", None)


def nbytes(t: Tensor) -> int | None:
    """Bytes of one value of `t`, when its shape and dtype are known."""
    d = t.dtype.np_dtype
    if d is None or not t.shape.is_fully_defined():
        return None
    return prod(t.shape.as_list()) * d.itemsize


def recomputable(t: Tensor, body) -> bool:
    """`t` can be computed again in the backward loop of `body`: a float value of an
    elementwise op with no control inputs, right in the loop's body (a value of a cond
    branch is live only in some iterations), and `body` not itself a backward loop.
    Predicates and counters are popped as before: the backward loop's conds are built on
    popped predicates, which differentiating it again relies on."""
    op = t.op
    if hasattr(body, "forward"):
        return False  # a backward loop differentiated again: its values are popped ones, kept as they are
    return (op.op_def.elementwise and op.ctx is body and not op.control_inputs and not op.op_def.stateful
            and t.dtype.is_floating and all(x.dtype.np_dtype is not None for x in op.inputs))


def keep(kept: int, t: Tensor) -> tuple[bool, int]:
    """(whether to keep `t` given `kept` bytes kept already, the new count)."""
    budget = current_budget()
    size = nbytes(t)
    if budget is None:
        return True, kept + (size or 0)
    if size is not None and kept + size <= budget:
        return True, kept + size
    return False, kept
