"""The frame executor's kernel of an If or While op: the op runs its functions' plans as a
whole (executor/functional_direct.py), with no frames and no dead tokens inside, while
the graph around it runs on the frame executor. This is direct mode across devices
(`Session(g, functional="direct", devices=[...])`): the graph is partitioned with its
If/While ops as ordinary ops (graphcore/partition.py), each placed on one device and its
inputs and outputs crossing devices by _Send/_Recv, and the device's executor runs it here.

A failure inside a function is the frame executor's kernel error, naming the op of the
function that failed (its type, the user's line) as the frame executor names a failing
op, and carrying that op (an Assert's: the Python exception the program raises). A While
ends between two iterations when its run is stopped (deadline, cancellation): the plan
marks a graph with If/While ops stoppable, so that its runs make a RunStop.
"""
from __future__ import annotations

from graphcore.errors import ExecutionError
from graphcore.graph import Operation

from .functional_direct import plan_of, run_if, run_while


def functional_kernel(op: Operation, runtime):
    """kernel(*input values) -> the op's outputs (one value for a single output), running
    the functions of If/While `op`; each function planned once, when the kernel is made."""
    plans: dict = {}
    g = op.graph
    single = len(op.outputs) == 1
    if op.type == "If":
        branches = [plan_of(g.get_function(op.attrs[a]), runtime, plans) for a in ("else_branch", "then_branch")]

        def run(args):
            return run_if(branches, args)
    elif op.type == "While":
        loop = [plan_of(g.get_function(op.attrs[a]), runtime, plans) for a in ("cond", "body")]

        def run(args):
            return run_while(op, loop, args)
    else:  # pragma: no cover (only If and While call functions)
        raise ExecutionError(f"{op.describe()} calls functions, but only If and While can run them")

    def kernel(*args):
        try:
            out = run(list(args))
        except ExecutionError as e:  # the function's op that failed, as the frame executor names it
            raise _as_step_failure(e) from None
        return out[0] if single else out
    return kernel


def _as_step_failure(e: ExecutionError) -> BaseException:
    """The exception a function's op raised, marked with that op (`step_op`), for the frame
    executor's kernel error to name and carry; `e` itself if no op or exception is known."""
    original = e.original
    if e.op is None or original is None:
        return e
    if getattr(original, "step_op", None) is None:
        original.step_op = e.op
    return original
