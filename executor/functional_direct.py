"""Direct execution of Control Flow v2: If and While run as ops (the functions they call run as graphs),
with no frames, no dead tokens and no lowering. `Session(g, functional="direct")`.

A `FunctionPlan` is built once per graph (or library function) and fetch set: the ops the
outputs and the effects need, in an order where each comes after its inputs and control
inputs, each with its kernel bound to its attributes. Running it is one pass over that
list, values in a list indexed by slot. An If runs the plan of the branch its predicate
picks; a While runs its condition's and its body's plans in a loop, the body's outputs
becoming the next iteration's inputs. Plans of library functions are kept on the root
plan, so each function is planned once however often it runs.

The same If and While steps are the frame executor's kernels of those ops when a
partitioned graph holds them (executor/functional_kernel.py: direct mode on devices).

What the frame executor adds is not here: no parallel iterations, no worker pool (ops run
one after another on the calling thread). A run's end (its deadline, a cancellation) is
met between two iterations of a While: each While reads its run's RunStop
(executor/interrupt.py) once per iteration and raises KernelStopped naming itself and the
iteration; a kernel already running is not interrupted, as on the frame executor.
"""
from __future__ import annotations

import functools
from operator import itemgetter

import numpy as np

from graphcore.errors import DeadlineExceededError, ExecutionError, InvalidArgumentError, execution_error_type
from graphcore.frames import topological_order
from graphcore.library import function_attrs
from graphcore.graph import Graph, Operation, Tensor

from . import interrupt
from .deadline import WATCHDOG, Deadline
from .interrupt import KernelStopped, RunStop
from .op_kernels import specialized_kernel
from .scalar_kernels import scalar_kernel

_IF, _WHILE, _KERNEL, _FED = 0, 1, 2, 3


class FunctionPlan:
    """The ops of `graph` that `outputs` (tensors) and its effects need, ready to run."""

    def __init__(self, graph: Graph, outputs: list[Tensor], inputs: list[Tensor], runtime, plans: dict,
                 targets: list[Operation] = (), effects: bool = True):
        self.graph = graph
        fed = {id(t): k for k, t in enumerate(inputs)}
        needed: dict[int, Operation] = {}
        stack = [t.op for t in outputs if id(t) not in fed] + list(targets)
        if effects:  # a function's effects run whether or not its outputs are read
            stack += [op for op in graph.get_operations() if op.op_def.stateful]
        while stack:
            op = stack.pop()
            if id(op) in needed:
                continue
            needed[id(op)] = op
            stack.extend(t.op for t in op.inputs if id(t) not in fed)
            stack.extend(op.control_inputs)
        ops = [op for op in graph.get_operations() if id(op) in needed]
        ops = topological_order(ops)
        slot: dict[int, int] = {}
        n = 0
        for t in inputs:
            slot[id(t)] = n
            n += 1
        steps = []
        for op in ops:
            if op.type == "Placeholder" and id(op.outputs[0]) in fed:
                continue  # (reached as a control input: its value is the feed's)
            ins = tuple(slot[id(t)] for t in op.inputs)
            outs = tuple(range(n, n + len(op.outputs)))
            for t, s in zip(op.outputs, outs):
                slot[id(t)] = s
            n += len(op.outputs)
            steps.append(self._step(op, ins, outs, runtime, plans))
        self.steps = steps
        self.size = n
        self.n_inputs = len(inputs)
        missing = [t for t in outputs if id(t) not in slot]
        if missing:  # pragma: no cover (outputs are reached above)
            raise ExecutionError(f"cannot compute {missing[0].name}")
        self.out_slots = tuple(slot[id(t)] for t in outputs)

    @staticmethod
    def _step(op: Operation, ins, outs, runtime, plans):
        d = op.op_def
        if function_attrs(d):
            g = op.graph
            if op.type == "If":
                fns = [g.get_function(op.attrs["else_branch"]), g.get_function(op.attrs["then_branch"])]
                return (_IF, op, ins, outs, [plan_of(fn, runtime, plans) for fn in fns])
            cond, body = g.get_function(op.attrs["cond"]), g.get_function(op.attrs["body"])
            return (_WHILE, op, ins, outs, [plan_of(cond, runtime, plans), plan_of(body, runtime, plans)])
        if op.type == "Placeholder":
            raise ExecutionError(f"placeholder {op.name!r} (created at {op.location()}) must be fed: pass its "
                                 "value in feed_dict")
        if d.kernel is None:
            raise ExecutionError(f"{op.describe()} has no kernel to run directly")
        # the frame executor's kernels: specialized for the attributes, or Python's operator
        # for scalars (executor/op_kernels.py, scalar_kernels.py)
        k = None if d.uses_runtime or not op.attrs else specialized_kernel(op.type, op.attrs)
        if k is None:
            k = scalar_kernel(op) or d.kernel
            if d.uses_runtime or op.attrs:
                k = functools.partial(k, *((runtime,) if d.uses_runtime else ()), **op.attrs)
        return (_KERNEL, op, _getter(ins), outs[0] if len(outs) == 1 else outs, k)

    def run(self, args: list) -> list:
        vals = list(args)
        vals += [None] * (self.size - self.n_inputs)
        for kind, op, ins, outs, what in self.steps:
            if kind == _KERNEL:  # (first: nearly every step is one)
                try:
                    r = what(*ins(vals))
                except Exception as e:  # noqa: BLE001 (named after the op, as the frame executor does)
                    _raise(op, e)
                if outs.__class__ is int:
                    vals[outs] = r
                else:
                    for s, v in zip(outs, r):
                        vals[s] = v
                continue
            a = [vals[i] for i in ins]
            r = run_if(what, a) if kind == _IF else run_while(op, what, a)
            for s, v in zip(outs, r):
                vals[s] = v
        return [vals[s] for s in self.out_slots]


def run_if(branches, args: list) -> list:
    """An If's outputs: the plan of the branch its predicate (args[0]) picks, run on the
    other arguments (`branches`: the else and then branches' plans)."""
    return branches[1 if bool(args[0]) else 0].run(args[1:])


def run_while(op: Operation, cond_body, args: list) -> list:
    """A While's outputs: its body's plan run on the loop variables while its condition's
    plan says so. Between iterations, the end of the run (its RunStop) ends the loop."""
    cond, body = cond_body
    stop = interrupt.current()
    if stop is None:  # (a run that nothing ends early: no check per iteration)
        while bool(cond.run(args)[0]):
            args = body.run(args)
        return args
    n = 0
    while bool(cond.run(args)[0]):
        args = body.run(args)
        n += 1
        if stop.reason is not None:
            raise KernelStopped(stop.reason, f"the While {op.name} (created at {op.location()}) at iteration {n}")
    return args


def _getter(ins: tuple):
    """vals -> the tuple of the values at `ins` (one itemgetter call)."""
    if not ins:
        return lambda vals: ()
    if len(ins) == 1:
        i = ins[0]
        return lambda vals: (vals[i],)
    return itemgetter(*ins)


def plan_of(fn, runtime, plans: dict) -> FunctionPlan:
    """The plan of library function `fn`, made once per function and reused by every call."""
    p = plans.get(id(fn))
    if p is None or p.graph is not fn:
        p = plans[id(fn)] = FunctionPlan(fn, list(fn.outputs), list(fn.inputs), runtime, plans)
    return p


def _raise(op: Operation, e: BaseException):
    if isinstance(e, ExecutionError) and getattr(e, "op", None) is not None:
        raise e
    cls = InvalidArgumentError if isinstance(e, InvalidArgumentError) else ExecutionError
    msg = f"while executing {op.name} ({op.type}) directly, created at {op.location()}: {type(e).__name__}: {e}"
    raise execution_error_type(cls, e)(msg, op=op, frame="", iteration=0, original=e) from e


class DirectRun:
    """A graph's fetches computed directly: `run(feed_values)`; plans kept per fetch set."""

    def __init__(self, graph: Graph, fetches: list[Tensor], targets: list[Operation], feeds: list[Tensor], runtime):
        self.plans: dict = {}
        self.root = FunctionPlan(graph, fetches, feeds, runtime, self.plans, targets=targets, effects=False)

    def run(self, feed_values: list, deadline: Deadline | None = None) -> list:
        """The fetched values; a 0-d array as its numpy scalar, as the frame executor fetches it.
        A run past `deadline` ends at its next While iteration with DeadlineExceededError."""
        args = [np.asarray(v) if isinstance(v, (list, tuple)) else v for v in feed_values]
        if deadline is None:
            out = self.root.run(args)
        else:
            out = _run_until(self.root, args, deadline)
        return [v[()] if isinstance(v, np.ndarray) and v.ndim == 0 else v for v in out]


def _run_until(plan: FunctionPlan, args: list, deadline: Deadline) -> list:
    """plan.run(args), its Whiles told to stop at `deadline` (the watchdog sets the run's
    RunStop then: executor/deadline.py)."""
    stop = RunStop()
    alarm = WATCHDOG.arm(deadline.when, lambda: stop.stop(interrupt.DEADLINE))
    try:
        with interrupt.running(stop):
            return plan.run(args)
    except KernelStopped as e:
        where = e.args[1] if len(e.args) > 1 and e.args[1] else "a While loop"
        raise DeadlineExceededError(f"the run exceeded its deadline of {deadline.seconds:g} s, in {where}; does "
                                    "the loop's condition ever become false?", frame="", iteration=0,
                                    timeout=deadline.seconds) from None
    finally:
        WATCHDOG.cancel(alarm)
