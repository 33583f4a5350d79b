"""One device's part of a partitioned run: its plan over the ops placed on it (they reach
other devices' ops only through _Recv), the run's fetches and feeds that are its own,
and the values it produced. Both engines run parts: local.py on threads, ray_engine.py
in actors."""
from __future__ import annotations

import numpy as np

from graphcore.errors import ExecutionError
from graphcore.graph import Graph
from graphcore.library import called_functions

from ..executor import _NO_VALUE, ExecutorState
from ..fetch_errors import missing_fetch_error
from ..plan import ExecutionPlan


class DevicePart:
    """The plan of `device`'s ops in the partitioned `graph`. `fetches` and `feeds` are all
    of the run's (tensors of `graph`), in the run's order; the part takes its own."""

    def __init__(self, graph: Graph, device: str, fetches: list, feeds: list, runtime=None):
        self.device = device
        self.fetch_positions = [i for i, t in enumerate(fetches) if t.op.device == device]
        self.feed_positions = [i for i, t in enumerate(feeds) if t.op.device == device]
        fed = {id(feeds[i].op) for i in self.feed_positions}
        ops = [op for op in graph.get_operations() if op.device == device and id(op) not in fed]
        self.plan = ExecutionPlan(graph, [fetches[i] for i in self.fetch_positions], ops,
                                  [feeds[i] for i in self.feed_positions], runtime=runtime)
        # heavy kernels (matmuls, large arrays): the part gets a thread of its own
        self.heavy = any(not it.cheap for it in self.plan.items if it.op is not None)
        if self.plan.placeholders_needed:
            op = self.plan.placeholders_needed[0]
            where = f" (created at {op.location()})" if op.source else ""
            raise ExecutionError(f"placeholder {op.name!r}{where} must be fed: pass its value in feed_dict")

    def ops_using_runtime(self) -> list:
        """The ops this part runs that read or write variables (a Runtime's state), those
        inside the functions its If/While ops call included."""
        out, seen = [], set()
        stack = [it.op for it in self.plan.items if it.op is not None]
        while stack:
            op = stack.pop()
            if op.op_def.uses_runtime:
                out.append(op)
            for name in called_functions(op):
                if name not in seen:
                    seen.add(name)
                    stack.extend(op.graph.get_function(name).get_operations())
        return out

    def state(self, feed_values: list, transport, deadline=None, pool=None) -> ExecutorState:
        """A new run of this part, with the run's feed values (all of them, in order)."""
        return ExecutorState(self.plan, [feed_values[i] for i in self.feed_positions], pool=pool, deadline=deadline,
                             transport=transport)

    def results(self, state: ExecutorState) -> list[tuple[int, object]]:
        """(position among the run's fetches, value) of this part's fetches after `state` ran."""
        out = []
        for k, pos in enumerate(self.fetch_positions):
            v = state.results[k]
            if v is _NO_VALUE:
                raise missing_fetch_error(self.plan, state, k)
            if isinstance(v, np.ndarray) and v.ndim == 0:
                v = v[()]
            out.append((pos, v))
        return out


def on_device(error: BaseException, device: str) -> BaseException:
    """`error` with the device it happened on at the front of its message (same type, so an
    IndexError raised by a kernel is still caught as one)."""
    if isinstance(error, ExecutionError) and error.args and not str(error.args[0]).startswith("on device "):
        error.args = (f"on device {device}: {error.args[0]}",) + tuple(error.args[1:])
        error.device = device
    return error


def op_path(op) -> tuple[str | None, str]:
    """(the library function `op` is in, None for the graph itself; its name): how the op is
    found again in another copy of its graph (partitioned, loaded in a Ray actor), op_at."""
    return (op.graph.name if op.graph.outer_graph is not None else None), op.name


def op_at(graph: Graph, path: tuple[str | None, str]):
    """The op of `graph` (or of the function of its library) that `path` (op_path) names,
    else None."""
    function, name = path
    where = graph if function is None else graph.library.get(function)
    return None if where is None else where.ops_by_name.get(name)
