"""Session: runs fetches of a graph with feeds; holds variable values across runs."""
from __future__ import annotations

import os
import threading
import time

import numpy as np

from graphcore import nest
from graphcore.errors import DeadlineExceededError, ExecutionError, GraphError
from graphcore.graph import Graph, Operation, Tensor

from graphcore.partition import partition
from graphcore.placement import device_list

from .deadline import run_deadline
from .distributed.device_part import DevicePart, op_at, op_path
from .distributed.local import LocalEngine
from .distributed.ray_options import check_engine_options
from .executor import _NO_VALUE, ExecutorState, TracedExecutorState
from .fetch_errors import missing_fetch_error
from .numba_loop import require_numba
from .plan import ExecutionPlan
from .pool import shared_pool
from .straight_line import straight_line


# What stateful kernels see: variable values and their lock. One process-wide default
# Runtime (graphcore.eager) is shared by eager code and every Session not given its own.
from graphcore.eager import Runtime, default_runtime  # noqa: E402,F401


class Session:
    """Runs a graph.

    Args:
      graph: the Graph to run.
      num_threads: worker threads for heavy kernels (default: the core count);
        1 runs everything on the calling thread, deterministically.
      runtime: where variable values live; default: the process-wide store shared
        with eager code and other Sessions (pass `Runtime()` for a private one).
      optimize: run the graph optimizer (graphcore.passes) before a run, on a copy of
        the graph made per set of fetches and feeds (the graph itself is not changed);
        off by default here (`@function` optimizes its own graphs), and off whatever
        this says when the environment sets AUTOGRAPH_OPTIMIZE=0.
      skip_passes: names of passes to leave out when optimizing.
      jit_compile: also turn while loops of pure ops into compiled loops (generated
        Python; graphcore/passes/compile_loops.py); implies optimizing a copy. "numba"
        compiles those of numeric scalars with numba (executor/numba_loop.py).
      devices: run across these devices (e.g. ["cpu:0", "cpu:1"]): each op goes to the
        device `gc.device(...)` put it on, else to the first (graphcore/placement.py);
        the graph is partitioned with _Send/_Recv pairs and control loops
        (graphcore/partition.py) and each device's part runs in its own executor.
      engine: where the devices run: "local" (threads of this process) or "ray" (one
        Ray actor per device; pip install -e '.[distributed]').
      engine_options: for engine="ray": {"address": the cluster to join (else
        RAY_ADDRESS, else a new local one), "task_nodes" / "task_resources" / "task_labels":
        {task: Ray node id / custom resource / {node label: value}}, where the devices
        of a task (`/job:worker/task:1/cpu:0`) run} (executor/distributed/ray_options.py).
      functional: how Control Flow v2's If/While ops run: "lower" (inlined into the v1
        primitives on a copy of the graph, graphcore/passes/lower_functional.py, then run
        by the frame executor like any graph) or "direct" (run as ops, no frames and no
        dead tokens, on the calling thread: executor/functional_direct.py; the graph is
        run as traced, without optimizing it (with `jit_compile` its Whiles are lowered and
        compiled instead, as @function does: a compiled loop is made from the lowered frame,
        so nothing is left to run directly); with `devices`, it is placed and
        partitioned with each If/While as one op that runs its functions whole on its
        device: executor/functional_kernel.py, graphcore/placement.py). None (default): the
        environment variable AUTOGRAPH_FUNCTIONAL decides, "lower" unless it says "direct".

    Example:
        Session(g).run([y, dx], feed_dict={x: 1.1})
    """

    def __init__(self, graph: Graph, num_threads: int | None = None, runtime: Runtime | None = None,
                 optimize: bool = False, skip_passes=(), jit_compile: bool = False, devices=None,
                 engine: str = "local", functional: str | None = None, engine_options: dict | None = None):
        if not isinstance(graph, Graph):
            raise TypeError(f"Session needs a graphcore.Graph, got {type(graph).__name__}")
        self.graph = graph
        self.num_threads = num_threads if num_threads is not None else (os.cpu_count() or 1)
        self._pool = shared_pool(self.num_threads) if self.num_threads > 1 else None
        self._plans: dict = {}
        self._plans_lock = threading.Lock()
        self.runtime = runtime if runtime is not None else default_runtime()
        self.last_stats = None
        jit_passes(jit_compile)
        self.optimize = optimize or bool(jit_compile)
        self.jit_compile = jit_compile
        self.skip_passes = tuple(skip_passes)
        self._optimized: dict = {}  # (graph version, fetch names, feed names) -> (graph, fetches, report)
        self.last_optimize_report = None
        self.devices = device_list(devices) if devices is not None else None
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(map(repr, ENGINES))}, got {engine!r}")
        self.engine_name = engine
        self.engine_options = check_engine_options(engine, engine_options)
        self.functional = functional_mode(functional)
        self._lowered: dict = {}  # (graph, version, fetch, target and feed names) -> lowered copy
        self._engine = None
        self._partitions: dict = {}  # (graph, fetch, target and feed names) -> (Partitioning, [DevicePart])
        self.last_partitioning = None
        self.last_messages = 0  # values and dead tokens the devices sent each other in the last run

    # -- public ------------------------------------------------------------------
    def run(self, fetches, feed_dict: dict | None = None, trace: list | None = None,
            timeout: float | None = None):
        """Compute `fetches` (a tensor, op, name, or any nested structure of them) and
        return numpy values in the same structure (None for ops).

        `feed_dict` maps tensors (or their names) to values that replace them.
        `trace`, if a list, receives one dict per execution step and frame event.
        `timeout` (seconds) ends a run that takes longer with DeadlineExceededError, as
        TensorFlow's RunOptions.timeout_in_ms; `with executor.deadline(s):` sets one for
        every run in a block. A kernel already running is not interrupted."""
        deadline = run_deadline(timeout)
        flat = nest.flatten(fetches)
        elems = [self.graph.as_graph_element(f) for f in flat]
        fetch_tensors = [e for e in elems if isinstance(e, Tensor)]
        targets = [e for e in elems if isinstance(e, Operation)]
        feed_tensors, feed_values = self._check_feeds(feed_dict or {})
        graph = self.graph
        if self.functional == "direct" and graph.library and not self.jit_compile:
            if self.devices is None:
                out = self._run_direct(graph, fetch_tensors, targets, feed_tensors, feed_values, deadline)
            elif trace is not None:
                raise GraphError("a run across devices cannot be traced yet; trace it without devices=")
            else:  # partitioned with its If/While ops as ops, each run whole on its device (functional_kernel.py)
                out = self._run_on_devices(graph, fetch_tensors, targets, feed_tensors, feed_values, deadline)
            it = iter(out)
            out = [None if isinstance(e, Operation) else next(it) for e in elems]
            return nest.pack_sequence_as(fetches, out) if nest.is_nested(fetches) else out[0]
        if self.optimize:
            graph, fetch_tensors, targets, feed_tensors = self._optimized_copy(fetch_tensors, targets, feed_tensors)
        if graph.library:  # If/While ops (Control Flow v2), unless the optimizer lowered them
            graph, fetch_tensors, targets, feed_tensors = self._lowered_copy(graph, fetch_tensors, targets,
                                                                             feed_tensors)
        if self.devices is not None:
            if trace is not None:
                raise GraphError("a run across devices cannot be traced yet; trace it without devices=")
            values = self._run_on_devices(graph, fetch_tensors, targets, feed_tensors, feed_values, deadline)
            it = iter(values)
            out = [None if isinstance(e, Operation) else next(it) for e in elems]
            return nest.pack_sequence_as(fetches, out) if nest.is_nested(fetches) else out[0]
        plan = self._plan(fetch_tensors, targets, feed_tensors, graph)
        out = self._execute(plan, feed_values, elems, trace, deadline)
        return nest.pack_sequence_as(fetches, out) if nest.is_nested(fetches) else out[0]

    def make_callable(self, fetches, feed_list=()) -> "RunCallable":
        """A function of the values of `feed_list` (tensors or their names), in that order,
        that runs `fetches` as `run(fetches, feed_dict=dict(zip(feed_list, values)))`
        does (the same values, the same errors), with what stays the same between runs
        worked out once (TensorFlow's Session.make_callable): the fetches and feeds looked
        up, the plan found, each feed's dtype and shape check reduced to a comparison for a
        value of exactly the placeholder's dtype and shape. `with executor.deadline(s):`
        applies to its runs as to run()'s.

        Example:
            add = Session(g).make_callable(y, [x])
            add(np.float64(1.5))
        """
        return RunCallable(self, fetches, feed_list)

    def _execute(self, plan: ExecutionPlan, feed_values: list, elems: list, trace, deadline) -> list:
        """Run `plan` (its feeds' values checked); the value of each of `elems` (None for an op)."""
        missing = plan.placeholders_needed
        if missing:
            names = ", ".join(repr(op.name) for op in missing)
            where = f" (created at {missing[0].location()})" if missing[0].source else ""
            raise ExecutionError(f"placeholder {names}{where} must be fed: pass its value in feed_dict")
        if deadline is not None and deadline.when <= time.monotonic():
            raise DeadlineExceededError(f"the run did not start: its deadline of {deadline.seconds:g} s has passed",
                                        timeout=deadline.seconds)
        pool = self._pool if plan.needs_pool else None  # (a graph of cheap ops runs on this thread alone)
        if trace is None:
            state = ExecutorState(plan, feed_values, pool, deadline)
        else:
            state = TracedExecutorState(plan, feed_values, trace, pool=pool, deadline=deadline)
        results = state.run()
        self.last_stats = state.stats
        out, k = [], 0
        for e in elems:
            if isinstance(e, Operation):
                out.append(None)
                continue
            v = results[k]
            if v is _NO_VALUE:
                raise missing_fetch_error(plan, state, k)
            if isinstance(v, np.ndarray) and v.ndim == 0:
                v = v[()]
            out.append(v)
            k += 1
        return out

    def close(self) -> None:
        """Let a Ray engine's actors go; worker threads belong to the process-wide pool."""
        if self._engine is not None and hasattr(self._engine, "close"):
            self._engine.close()
        self._engine = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- helpers --------------------------------------------------------------------
    def _optimized_copy(self, fetches, targets, feeds):
        """The graph optimized for these fetches and feeds (a copy, made once per graph
        version and fetch/feed set), with the fetches, targets and feeds in it."""
        from graphcore import passes  # noqa: PLC0415 (executor depends on graphcore only)

        if not passes.optimization_enabled(None) or any(t.op.type != "Placeholder" for t in feeds):
            return self.graph, fetches, targets, feeds  # a fed intermediate must not be folded away
        key = (self.graph.version, tuple(t.name for t in fetches), tuple(o.name for o in targets),
               tuple(t.name for t in feeds))
        with self._plans_lock:
            hit = self._optimized.get(key)
            if hit is None:
                copy = self.graph.copy()
                c_fetches = [copy.get_tensor_by_name(t.name) for t in fetches]
                c_targets = [copy.get_operation_by_name(o.name) for o in targets]
                c_feeds = [copy.get_tensor_by_name(t.name) for t in feeds]
                # a fed tensor is an input: fetch it too, so that nothing replaces it
                names = passes.DEFAULT_PASSES + jit_passes(self.jit_compile)
                report = passes.optimize(copy, c_fetches + c_targets + c_feeds, passes=names,
                                         skip=set(self.skip_passes) | set(passes.manager.skipped_by_environment()))
                n = len(c_fetches)
                hit = (copy, report.fetches[:n], report.fetches[n:n + len(c_targets)], c_feeds, report)
                if len(self._optimized) > 16:
                    self._optimized.clear()
                self._optimized[key] = hit
            self.last_optimize_report = hit[4]
            return hit[:4]

    def _run_direct(self, graph: Graph, fetches, targets, feeds, feed_values, deadline) -> list:
        """If/While run as ops (executor/functional_direct.py), planned once per graph version
        and fetch/target/feed set; a While ends at `deadline` between two iterations."""
        from .functional_direct import DirectRun  # noqa: PLC0415

        key = ("direct", id(graph), graph.version, tuple(id(t) for t in fetches), tuple(id(o) for o in targets),
               tuple(id(t) for t in feeds))
        with self._plans_lock:
            run = self._lowered.get(key)
            if run is None:
                if len(self._lowered) > 16:
                    self._lowered.clear()
                run = self._lowered[key] = DirectRun(graph, fetches, targets, feeds, self.runtime)
        if deadline is not None and deadline.when <= time.monotonic():
            raise DeadlineExceededError(f"the run did not start: its deadline of {deadline.seconds:g} s has passed",
                                        timeout=deadline.seconds)
        return run.run(feed_values, deadline)

    def _lowered_copy(self, graph: Graph, fetches, targets, feeds):
        """`graph` with its If/While ops lowered to the v1 primitives (a copy, made once per
        graph version and fetch/target/feed set), with the fetches, targets and feeds in it."""
        from graphcore import passes  # noqa: PLC0415
        from graphcore.library import has_functional_ops  # noqa: PLC0415
        from graphcore.passes.lower_functional import lowered_copy  # noqa: PLC0415

        key = (id(graph), graph.version, tuple(t.name for t in fetches), tuple(o.name for o in targets),
               tuple(t.name for t in feeds))
        with self._plans_lock:
            hit = self._lowered.get(key)
            if hit is None:
                if not has_functional_ops(graph):
                    hit = (graph, fetches, targets, feeds)
                elif (made := lowered_copy(graph, fetches, targets, feeds)) is not None:
                    hit = made  # (lowered into a new graph: nothing copied first)
                else:
                    copy = graph.copy()
                    c_fetches = [copy.get_tensor_by_name(t.name) for t in fetches]
                    c_targets = [copy.get_operation_by_name(o.name) for o in targets]
                    c_feeds = [copy.get_tensor_by_name(t.name) for t in feeds]
                    report = passes.optimize(copy, c_fetches + c_targets + c_feeds, passes=["lower_functional"])
                    n, m = len(c_fetches), len(c_targets)
                    hit = (copy, report.fetches[:n], report.fetches[n:n + m], report.fetches[n + m:])
                if len(self._lowered) > 16:
                    self._lowered.clear()
                self._lowered[key] = hit
            return hit

    def _run_on_devices(self, graph: Graph, fetches, targets, feeds, feed_values, deadline) -> list:
        """Partition (once per graph version and fetch/target/feed set) and run each
        device's part in the engine; the fetched values, in order."""
        for t in feeds:
            if t.op.type != "Placeholder":
                raise GraphError(f"a run across devices feeds placeholders only, but {t.name} is computed by "
                                 f"{t.op.describe()}; feed a placeholder instead")
        key = (id(graph), graph.version, tuple(t.name for t in fetches), tuple(o.name for o in targets),
               tuple(t.name for t in feeds))
        with self._plans_lock:
            hit = self._partitions.get(key)
            if hit is None:
                p = partition(graph, fetches, targets, feeds, self.devices)
                parts = [DevicePart(p.graph, d, p.fetches, p.feeds, runtime=self.runtime) for d in p.devices]
                if len(self._partitions) > 16:
                    self._partitions.clear()
                hit = self._partitions[key] = (p, parts)
            if self._engine is None:
                self._engine = _make_engine(self.engine_name, self.engine_options)
        self.last_partitioning = hit[0]
        if deadline is not None and deadline.when <= time.monotonic():
            raise DeadlineExceededError(f"the run did not start: its deadline of {deadline.seconds:g} s has passed",
                                        timeout=deadline.seconds)
        try:
            values = self._engine.run(hit[1], feed_values, deadline, num_fetches=len(fetches), partitioning=hit[0])
            self.last_messages = self._engine.last_messages
            return values
        except ExecutionError as e:  # name the op of the graph that was run, not of its partitioned copy
            if e.op is not None and e.op.graph is not graph:
                e.op = op_at(graph, op_path(e.op)) or e.op
            raise

    def _plan(self, fetches, targets, feeds, graph: Graph | None = None) -> ExecutionPlan:
        graph = self.graph if graph is None else graph
        key = (id(graph), graph.version, tuple(id(t) for t in fetches), tuple(id(o) for o in targets),
               tuple(id(t) for t in feeds))
        with self._plans_lock:
            plan = self._plans.get(key)
            if plan is None:
                plan = ExecutionPlan(graph, fetches, targets, feeds, runtime=self.runtime)
                if len(self._plans) > 64:
                    self._plans.clear()
                self._plans[key] = plan
            return plan

    def _check_feeds(self, feed_dict: dict):
        tensors, values = [], []
        for k, v in feed_dict.items():
            t = _feed_tensor(self.graph, k)
            if t.dtype.np_dtype is not None:
                v = _coerce_feed(t, v)
            tensors.append(t)
            values.append(v)
        return tensors, values


class RunCallable:
    """Session.make_callable's function: `callable(*feed_values)` -> the fetched values.

    What run() works out per call is worked out here once per graph version: the fetches
    and feed tensors looked up (a changed graph has them looked up again, with run()'s
    errors), the plan, and per feed the dtype and fully known shape a value may have to be
    passed as it is. Any other value goes through run()'s check (_coerce_feed), which
    converts it or raises the same error. Sessions that optimize a copy of the graph or run
    across devices run each call through run() itself."""

    __slots__ = ("session", "fetches", "feed_list", "_version", "_elems", "_fetch_tensors", "_targets", "_feeds",
                 "_exact", "_plan", "_flat", "_through_run", "_line", "_scalar_feeds")

    def __init__(self, session: Session, fetches, feed_list=()):
        self.session = session
        self.fetches = fetches
        self.feed_list = list(feed_list)
        self._through_run = session.optimize or session.devices is not None or bool(session.graph.library)
        self._version = None
        self._prepare()

    def _prepare(self) -> None:
        """Look the fetches and feeds up in the graph as it is now (run()'s checks and errors)."""
        graph = self.session.graph
        version = graph.version
        self._elems = [graph.as_graph_element(f) for f in nest.flatten(self.fetches)]
        self._fetch_tensors = [e for e in self._elems if isinstance(e, Tensor)]
        self._targets = [e for e in self._elems if isinstance(e, Operation)]
        self._feeds = [_feed_tensor(graph, k) for k in self.feed_list]
        # per feed: (numpy dtype, shape) of a value passed as it is; dtype None: any value is
        self._exact = [(t.dtype.np_dtype, tuple(t.shape.as_list()) if t.shape.is_fully_defined() else None)
                       for t in self._feeds]
        # the numpy scalar type of each feed's dtype when all are of shape (): values of exactly
        # those types are passed as they are, with one comparison for all
        self._scalar_feeds = tuple(dtype.type for dtype, _ in self._exact) if all(
            dtype is not None and shape == () for dtype, shape in self._exact) else None
        # 2: one fetch, not nested (its value returned); 1: a flat list of tensors; 0: packed
        self._flat = 2 if not nest.is_nested(self.fetches) else int(
            type(self.fetches) is list and len(self._targets) == 0 and all(not nest.is_nested(f) for f in self.fetches))
        self._plan = None
        self._line = None  # the plan as a StraightLine (executor/straight_line.py), if it is one
        self._version = version

    def __call__(self, *values):
        if len(values) != len(self.feed_list):
            raise TypeError(f"this callable takes {len(self.feed_list)} feed values (for "
                            f"{', '.join(t.name for t in self._feeds) or 'no tensor'}), got {len(values)}")
        session = self.session
        if self._through_run:
            return session.run(self.fetches, feed_dict=dict(zip(self.feed_list, values)))
        if self._version != session.graph.version:
            self._prepare()
        if tuple(map(type, values)) == self._scalar_feeds:
            feed_values = list(values)
        else:
            feed_values = []
            for v, (dtype, shape), t in zip(values, self._exact, self._feeds):
                cls = type(v)
                if dtype is None:
                    pass
                elif (cls is dtype.type or (cls is np.ndarray and v.dtype is dtype)) and v.shape == shape:
                    if cls is np.ndarray and not v.ndim:
                        v = v[()]
                else:
                    v = _coerce_feed(t, v)
                feed_values.append(v)
        plan = self._plan
        if plan is None:
            plan = self._plan = session._plan(self._fetch_tensors, self._targets, self._feeds)
            self._line = straight_line(plan)
        deadline = run_deadline(None)
        line = self._line
        results = line.run(feed_values) if line is not None and deadline is None else None
        if results is not None:  # (None: a kernel raised; the frame executor raises it, worded as always)
            session.last_stats = line.stats  # (what the frame executor's stats would say of the run)
            if self._flat == 2:
                return _scalar(results[0])
            if self._targets:
                it = iter(results)
                out = [None if isinstance(e, Operation) else _scalar(next(it)) for e in self._elems]
            else:
                out = list(map(_scalar, results))
        else:
            out = session._execute(plan, feed_values, self._elems, None, deadline)
        if self._flat:
            return out[0] if self._flat == 2 else out
        return nest.pack_sequence_as(self.fetches, out)


def _scalar(v):
    """A fetched 0-d array as its numpy scalar, as _execute returns it."""
    return v[()] if isinstance(v, np.ndarray) and v.ndim == 0 else v


def _feed_tensor(graph: Graph, key) -> Tensor:
    t = graph.as_graph_element(key)
    if not isinstance(t, Tensor):
        raise GraphError(f"feed_dict keys must be tensors, got the op {t.name}")
    return t


ENGINES = ("local", "ray")


FUNCTIONAL_MODES = ("lower", "direct")  # how If/While run (Session's functional=)
FUNCTIONAL_ENV = "AUTOGRAPH_FUNCTIONAL"


def functional_mode(functional: str | None) -> str:
    """`functional` checked, or when None what AUTOGRAPH_FUNCTIONAL says ("lower" unset)."""
    where = "functional"
    if functional is None:
        functional, where = os.environ.get(FUNCTIONAL_ENV, "lower").strip().lower() or "lower", FUNCTIONAL_ENV
    if functional not in FUNCTIONAL_MODES:
        raise ValueError(f"{where} must be one of {', '.join(map(repr, FUNCTIONAL_MODES))}, got {functional!r}")
    return functional


def jit_passes(jit_compile) -> tuple[str, ...]:
    """The passes `jit_compile` asks for: none (False), compiled loops (True), and numba
    kernels for them ("numba", which needs numba installed)."""
    if jit_compile is False or jit_compile is None:
        return ()
    if jit_compile is True:
        return ("compile_loops",)
    if jit_compile == "numba":
        require_numba()
        return ("compile_loops", "numba_loops")
    raise ValueError(f"jit_compile must be False, True or 'numba', got {jit_compile!r}")


def _make_engine(name: str, options=None):
    if name == "ray":
        from .distributed.ray_engine import RayEngine  # noqa: PLC0415 (Ray is an optional extra)
        return RayEngine(options)
    return LocalEngine()


def _coerce_feed(t: Tensor, value):
    """The fed value as the placeholder's dtype. Same-kind casts (int64 -> int32) and int ->
    float are allowed; float -> int and anything to or from bool would lose meaning."""
    arr = np.asarray(value)
    target = t.dtype.np_dtype
    if arr.dtype != target:
        if not (arr.dtype.kind == target.kind or (arr.dtype.kind in "iu" and target.kind == "f")):
            raise ExecutionError(f"cannot feed a value of dtype {arr.dtype} to {t.name} ({t.op.type} of dtype "
                                 f"{t.dtype}); pass a {t.dtype} value")
        arr = arr.astype(target)
    dims = t.shape.dims
    if dims is not None and dims != arr.shape and not t.shape.is_compatible_with(arr.shape):  # (equal: the usual)
        raise ExecutionError(f"cannot feed a value of shape {list(arr.shape)} to {t.name}, which has shape {t.shape}")
    return arr if arr.ndim else arr[()]

