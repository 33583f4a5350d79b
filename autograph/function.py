"""`@function`: convert a Python function, trace it into a graph once per input
signature, and run the graph with the executor on later calls.

Arguments that are numpy arrays or numpy scalars become graph inputs (placeholders)
keyed by dtype and shape; every other argument is a Python value that is part of the
cache key. `input_signature=` pins one trace. Calls return numpy values in the
structure the Python function returns. The other Python values a trace reads (globals,
closure cells, attributes of arguments...) are its guards (guards.py): a call first
checks them, and retraces when one changed, as the graph holds the old value.
"""
from __future__ import annotations

import collections
import contextlib
import copy
import dataclasses
import functools
import inspect
import threading
import traceback
import types
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import graphcore as gc
from executor import Session
from executor.distributed.ray_options import check_engine_options
from executor.session import functional_mode, jit_passes
from graphcore import passes, source_info
from graphcore.ops.logging_ops import FormattedString
from graphcore.ops.python_type_ops import as_type
from graphcore.side_tables import SideTable

from . import guards
from .errors import StagingError, UndefinedValueError
from .operators import arguments, closure_cells, effects, exceptions, maybe_defined, path_types, python_calls
from .operators.staged_lists import StagedList, listed
from .operators.staging import TruthOnly
from .conversion_policy import plain_function
from .transpiler import convert

_RUN_EAGERLY = False
RETRACE_LIMIT = 5     # traces ...
RETRACE_WINDOW = 10   # ... within this many calls trigger a warning
TRACES_PER_SIGNATURE = 8  # traces kept per input signature, for Python values (guards) that take turns


def run_functions_eagerly(enabled: bool) -> None:
    """With True, `@function`s run their original Python code (for debugging)."""
    global _RUN_EAGERLY
    _RUN_EAGERLY = bool(enabled)


def functions_run_eagerly() -> bool:
    return _RUN_EAGERLY


class RetracingWarning(UserWarning):
    """A function is traced again and again because an argument keeps changing."""


@dataclass(frozen=True)
class TensorSpec:
    """The dtype and shape (None = unknown) of a graph input."""

    shape: tuple | None
    dtype: gc.DType
    name: str | None = None

    def __init__(self, shape, dtype, name=None):
        object.__setattr__(self, "shape", None if shape is None else tuple(shape))
        object.__setattr__(self, "dtype", gc.as_dtype(dtype))
        object.__setattr__(self, "name", name)

    def is_compatible_with(self, value) -> bool:
        arr = np.asarray(value)
        if gc.as_dtype(arr.dtype) != self.dtype and not np.can_cast(arr.dtype, self.dtype.np_dtype, "same_kind"):
            return False
        if self.shape is None:
            return True
        return len(self.shape) == arr.ndim and all(d is None or d == a for d, a in zip(self.shape, arr.shape))


_GRAPH_NP_DTYPES = {d.np_dtype for d in (gc.bool_, gc.int32, gc.int64, gc.float32, gc.float64)}


def _is_graph_input(value) -> bool:
    return isinstance(value, (np.ndarray, np.generic))


def _fed_value(value) -> bool:
    """A value of an assigned `nonlocal` / global that is fed to the trace as a graph input."""
    return _is_graph_input(value) and value.dtype in _GRAPH_NP_DTYPES


# numpy's scalar types of numbers and bools: a value's type alone says its dtype and shape
_SCALAR_TYPES = frozenset(t for t in set(np.sctypeDict.values()) if np.dtype(t).kind in "biufc")


def _fast_key(args) -> tuple | None:
    """For a call whose arguments are all numpy scalars or arrays: per argument its scalar
    type, or an array's (dtype, shape), which say its cache key (see Function.__call__);
    None for any other call."""
    key = []
    for v in args:
        t = type(v)
        if t in _SCALAR_TYPES:
            key.append(t)
        elif t is np.ndarray:
            key.append((v.dtype, v.shape))
        else:
            return None
    return tuple(key)


# -- nested structures ---------------------------------------------------------------

def _flatten(value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten(v)]
    if isinstance(value, dict):
        return [x for k in value for x in _flatten(value[k])]
    if isinstance(value, _ObjectOutput):
        return _flatten(value.values)
    return [value]


class _ObjectOutput:
    """A returned dataclass or plain object holding tensors: each call returns a copy of it
    whose attributes hold that run's values (the traced object holds graph tensors)."""

    __slots__ = ("template", "names", "values")

    def __init__(self, template, names, values):
        self.template, self.names, self.values = template, names, values

    def build(self, values):
        obj = copy.copy(self.template)
        for name, v in zip(self.names, values):
            object.__setattr__(obj, name, v)  # (a frozen dataclass too, as its own __init__ does)
        return obj


def _attributes(obj) -> "list[str] | None":
    """The attributes a returned object's values live in: a dataclass's fields, else its
    __dict__ (None: not an object whose attributes can be copied)."""
    if isinstance(obj, type) or isinstance(obj, (types.ModuleType, types.FunctionType, types.MethodType,
                                                 functools.partial)):
        return None
    if dataclasses.is_dataclass(obj):
        return [f.name for f in dataclasses.fields(obj) if hasattr(obj, f.name)]
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        return list(d)
    slots = [n for c in type(obj).__mro__ for n in ((c.__dict__.get("__slots__", ()),) if isinstance(
        c.__dict__.get("__slots__", ()), str) else c.__dict__.get("__slots__", ()))]
    names = [n for n in dict.fromkeys(slots) if n not in ("__dict__", "__weakref__") and hasattr(obj, n)]
    return names or None


def _holds_tensor(v, depth: int = 0) -> bool:
    if isinstance(v, gc.Tensor) or isinstance(v, StagedList):
        return True
    if depth > 20:
        return False
    if isinstance(v, (list, tuple)):
        return any(_holds_tensor(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return any(_holds_tensor(x, depth + 1) for x in v.values())
    if isinstance(v, (str, bytes, int, float, complex, np.ndarray, np.generic)) or v is None:
        return False
    names = _attributes(v)
    return names is not None and any(_holds_tensor(getattr(v, n), depth + 1) for n in names)


_OWN_PACKAGES = frozenset({"autograph", "graphcore", "executor"})


def _objects_out(value, depth: int = 0):
    """The returned structure with each object that holds tensors (a dataclass, a plain
    object) replaced by an _ObjectOutput of its attributes."""
    if depth > 20 or isinstance(value, gc.Tensor):
        return value
    if isinstance(value, (list, tuple)):
        items = [_objects_out(v, depth + 1) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        items = {k: _objects_out(v, depth + 1) for k, v in value.items()}
        return value if all(items[k] is value[k] for k in value) else items
    if isinstance(value, (str, bytes, int, float, complex, np.ndarray, np.generic, StagedList)) or value is None:
        return value
    if type(value).__module__.partition(".")[0] in _OWN_PACKAGES:
        return value  # (a TruthOnly, a FormattedString...: checked as they are)
    names = _attributes(value)
    if not names or not _holds_tensor(value):
        return value
    return _ObjectOutput(value, names, [_objects_out(getattr(value, n), depth + 1) for n in names])


class _ListOutput:
    """A returned list that a graph loop appended to: fetched stacked, returned as a list."""

    __slots__ = ("stacked", "kinds")

    def __init__(self, stacked, kinds: tuple = ((), False)):
        self.stacked = stacked
        self.kinds = kinds  # which items are Python numbers: returned as Python's (StagedList.item_kinds)

    def listed(self, value) -> list:
        return listed(self.kinds, value)


def _escaped_value(t: gc.Tensor, python_function) -> StagingError:
    where = _definition_location(python_function)
    inside = "loop" if any(getattr(c, "is_while", False) for c in _contexts(t.op.ctx)) else "if"
    article = "a" if inside == "loop" else "an"
    return StagingError(
        f"{python_function.__name__} (defined at {where}) returns a value computed inside {article} {inside} on a "
        f"tensor (at {t.op.location()}) that is not a variable of that {inside}: a nested function changed it through "
        "`nonlocal` or `global`, or it was kept in an outside object, so it has one value per iteration or branch. "
        "Make it a variable there: assign it in the body (e.g. `c = bump(c, i)` with bump returning the new value).")


def _contexts(ctx):
    while ctx is not None:
        yield ctx
        ctx = getattr(ctx, "outer", None)


def _returned_shape(v, python_function):
    """A returned `x.shape` is what numpy returns, a tuple of ints, when tracing knows it."""
    if not isinstance(v, gc.TensorShape):
        return v
    if v.is_fully_defined():
        return tuple(v.as_list())
    where = _definition_location(python_function)
    raise StagingError(f"{python_function.__name__} (defined at {where}) returns a shape that is only "
                       f"partly known while tracing ({v}); return graphcore.shape(x) to get it when the graph runs")


def _pack(structure, flat: list, pos: list | None = None, build: bool = False):
    """`structure` with its leaves from `flat`; `build`: returned objects made (a call's
    result), else kept as _ObjectOutput (a structure of tensors)."""
    pos = pos if pos is not None else [0]
    if isinstance(structure, _ObjectOutput):
        values = _pack(structure.values, flat, pos, build)
        return structure.build(values) if build else _ObjectOutput(structure.template, structure.names, values)
    if isinstance(structure, (list, tuple)):
        items = [_pack(v, flat, pos, build) for v in structure]
        if isinstance(structure, tuple) and hasattr(structure, "_fields"):
            return type(structure)(*items)
        return type(structure)(items)
    if isinstance(structure, dict):
        items = {k: _pack(structure[k], flat, pos, build) for k in structure}
        if type(structure) is dict:
            return items
        out = copy.copy(structure)  # an OrderedDict, a defaultdict: its own type, as Python returns it
        out.clear()
        out.update(items)
        return out
    v = flat[pos[0]]
    pos[0] += 1
    return v


def _key_of(value):
    if isinstance(value, (np.ndarray, np.generic)):  # a graph input (the common case: first)
        return ("tensor", value.dtype, value.shape)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_key_of(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _key_of(v)) for k, v in value.items()))
    try:
        hash(value)
        return ("py", type(value), value)
    except TypeError:
        return ("id", type(value), id(value))


def _warn_at_user_line(message: str, category: type[Warning]) -> None:
    """Warn at the user's line that made the call (the innermost frame outside this
    project, a generated line mapped back), however deep in the library the call path is."""
    where = source_info.user_location(2)
    if where is None:
        warnings.warn(message, category, stacklevel=2)
        return
    module = where.filename.rsplit("/", 1)[-1].removesuffix(".py") or "<unknown>"
    warnings.warn_explicit(message, category, where.filename, where.lineno, module=module)


def _describe_key(key) -> str:
    if key[0] == "tensor":
        return f"{key[1]}{list(key[2])}"
    if key[0] == "py":
        return repr(key[2])
    return str(key)


# -- concrete functions ------------------------------------------------------------------

def _definition_location(fn):
    plain = plain_function(fn)
    code = getattr(inspect.unwrap(plain), "__code__", None) if plain is not None else None
    return source_info.SourceLocation(code.co_filename, code.co_firstlineno, code.co_name) if code else None


class ConcreteFunction:
    """One traced graph: `.graph`, its input placeholders, and how to rebuild outputs."""

    def __init__(self, graph: gc.Graph, inputs: list, structured_outputs, fetches: list, token, name: str,
                 returned=None, optimize: bool | None = None, skip_passes=(), jit_compile: bool = False,
                 devices=None, engine: str = "local", kinds=None, write_back=None, functional: str | None = None,
                 engine_options: dict | None = None, state_writes=()):
        self.graph = graph
        # the `nonlocal` / global names the trace assigned (closure_cells.StateName), with the
        # value each holds after a run: a tensor fetched (and its Python type code, path_types),
        # or a Python value as the trace left it
        self._state_writes = list(state_writes)
        self._fed: list = []  # the `nonlocal` / global names fed as its last inputs (closure_cells.StateName)
        self.inputs = inputs
        self.structured_outputs = structured_outputs
        self._fetches = fetches
        self._token = token
        # a bool tensor, false in a run where the function fell off its end (result None)
        self._returned = returned
        # per fetch: None, or the Python type code (path_types) of a value whose type depends on
        # the path: a code, or an int32 tensor fetched beside it
        self._kinds = list(kinds) if kinds is not None else [None] * len(fetches)
        # the arguments a run changes in place, written back to the caller's (operators/arguments)
        self._write_back = write_back
        self._typed = any(k is not None for k in self._kinds)  # (_follow keeps which are None)
        self.name = name
        self._session: Session | None = None
        self._lock = threading.Lock()
        self._optimize = optimize
        self._skip_passes = tuple(skip_passes)
        self._jit_compile = jit_compile
        self._devices, self._engine, self._engine_options = devices, engine, engine_options
        self._functional = functional  # how If/While run (Session's functional=; None: the environment's)
        self._run_fetches: list | None = None  # what runs: the fetches after optimizing
        self._run_callable = None  # Session.make_callable of them, fed the inputs
        self.optimize_report: "passes.OptimizeReport | None" = None
        # the Python values this trace depends on (autograph/guards.py), and their check
        self.guards: "guards.Guards | None" = None
        self._check = None

    def _all_fetches(self) -> list:
        return (list(self._fetches) + [k for k in self._kinds if isinstance(k, gc.Tensor)]
                + [t for t in (self._token, self._returned) if t is not None]
                + (self._write_back.tensors if self._write_back is not None else [])
                + self._state_tensors())

    def _state_tensors(self) -> list:
        return [t for _, v, kind in self._state_writes for t in (v, kind) if isinstance(t, gc.Tensor)]

    def optimize(self, passes_to_run=None, force: bool = False) -> "passes.OptimizeReport | None":
        """Optimize the graph in place (graphcore.passes) for what a call fetches: the
        outputs, the effects token and the returned flag. Done once, on the first call:
        `get_concrete_function(...).graph` before any call is the graph as traced (what
        `gc.gradients` builds on; differentiating it after a call is safe too, the
        optimized graph computes the same). Returns the report, None when switched off.

        `passes_to_run` names the passes (default: all); `force` optimizes even when it is
        switched off (the CLI's `graph --optimize`)."""
        with self._lock:
            if self._run_fetches is None:
                fetches = self._all_fetches()
                enabled = force or passes.optimization_enabled(self._optimize)
                if (enabled or self._jit_compile) and fetches:
                    skip = set(self._skip_passes) | set(passes.manager.skipped_by_environment())
                    if functional_mode(self._functional) == "direct" and not self._jit_compile:
                        skip.add("lower_functional")  # If/While run as ops: the other passes see them as ops
                    # (compiled loops are made from a While's lowered frame, the loop v1 builds: with
                    # jit_compile the Whiles are lowered and compiled, nothing is left to run directly)
                    if passes_to_run is None and self._jit_compile:  # compiled loops: last, after fusion
                        passes_to_run = (passes.DEFAULT_PASSES if enabled else ()) + jit_passes(self._jit_compile)
                    self.optimize_report = passes.optimize(self.graph, fetches, passes=passes_to_run,
                                                           skip=skip - set(passes_to_run or ()))
                    self._follow(dict(zip(map(id, fetches), self.optimize_report.fetches)))
                    fetches = self.optimize_report.fetches
                self._run_fetches = fetches
            return self.optimize_report

    def _follow(self, replaced: dict) -> None:
        """Point the outputs at the tensors the optimizer put in their place (`replaced`:
        id of the old tensor -> the new one), so gradients built after a call, and what
        the outputs show, see tensors still in the graph."""
        def new(v):
            if isinstance(v, gc.Tensor):
                return replaced.get(id(v), v)
            return _ListOutput(new(v.stacked), v.kinds) if isinstance(v, _ListOutput) else v

        self._fetches = [new(t) for t in self._fetches]
        self._kinds = [new(k) for k in self._kinds]
        self._token, self._returned = new(self._token), new(self._returned)
        if self._write_back is not None:
            self._write_back = self._write_back.follow(new)
        self._state_writes = [(s, new(v), new(k)) for s, v, k in self._state_writes]
        self.structured_outputs = _pack(self.structured_outputs, [new(v) for v in _flatten(self.structured_outputs)])
    @property
    def outputs(self) -> list:
        """The graph tensors the function returns, in order (what a run fetches)."""
        return list(self._fetches)

    @property
    def session(self) -> Session:
        with self._lock:
            if self._session is None:
                self._session = Session(self.graph, devices=self._devices, engine=self._engine,
                                        functional=self._functional, engine_options=self._engine_options)
            return self._session

    def _run_flat(self, input_values: list, trace: list | None = None, arguments: dict | None = None):
        if self._run_fetches is None:
            self.optimize()
        fetches = self._run_fetches
        try:
            if not fetches:
                values = []
            elif trace is None and len(input_values) == len(self.inputs):
                run = self._run_callable
                if run is None:  # (the fetches and feeds, looked up once: executor/session.py)
                    run = self._run_callable = self.session.make_callable(fetches, self.inputs)
                values = run(*input_values)
            else:  # a traced run is on one thread, so the steps it records are reproducible
                session = self.session if trace is None else Session(self.graph, num_threads=1,
                                                                     functional=self._functional)
                values = session.run(fetches, feed_dict=dict(zip(self.inputs, input_values)), trace=trace)
        except gc.InvalidArgumentError as e:
            _raise_undefined_read(e)
            exceptions.reraise_staged(e)
            raise
        except gc.ExecutionError as e:  # a Python call's own exception (python_calls)
            python_calls.reraise_python(e)
            raise
        if self._state_writes:  # (fetched after all else)
            values = self._write_state(list(values))
        if self._write_back is not None:  # (fetched last)
            n = len(self._write_back.tensors)
            self._write_back.apply(list(values[len(values) - n:]), input_values, arguments)
            values = values[:len(values) - n]
        if self._returned is not None and not bool(values[-1]):
            return None
        if self._typed:
            values = self._as_python_types(list(values))
        if isinstance(self.structured_outputs, gc.Tensor):  # one tensor returned
            return values[0]
        values = list(values)[:len(self._fetches)]
        flat = _flatten(self.structured_outputs)
        it = iter(values)
        out = [next(it) if isinstance(v, gc.Tensor) else v.listed(next(it)) if isinstance(v, _ListOutput) else v
               for v in flat]
        return _pack(self.structured_outputs, out, build=True)

    def _write_state(self, values: list) -> list:
        """Leave in each assigned `nonlocal` / global its value after this run, of the
        Python type the program gives it; the other fetched values."""
        n = len(self._state_tensors())
        it = iter(values[len(values) - n:])
        for state, v, kind in self._state_writes:
            if isinstance(v, gc.Tensor):
                value = next(it)
                code = next(it) if isinstance(kind, gc.Tensor) else kind
                state.set(as_type(value, code, state.what) if code is not None else value)
            else:
                state.set(v)
        return values[:len(values) - n]

    def _as_python_types(self, values: list) -> list:
        """The returned values whose Python type depends on the path, as the type this run's
        path gave them (the int 0, not 0.0: path_types)."""
        n = len(self._fetches)
        tags = iter(values[n:])
        for i, k in enumerate(self._kinds):
            if k is not None:
                code = next(tags) if isinstance(k, gc.Tensor) else k
                values[i] = as_type(values[i], code, "the returned value")
        return values

    def __call__(self, *input_values):
        """Run the graph with one value per graph input, in order."""
        return self._run_flat(list(input_values))

    def signature_text(self) -> str:
        """`fibonacci(n: int64[]) -> int64[]`."""
        args = ", ".join(f"{t.op.name}: {t.dtype}{t.shape}" for t in self.inputs)
        outs = [f"{t.dtype}{t.shape}" for t in self._fetches]
        ret = outs[0] if len(outs) == 1 else f"({', '.join(outs)})"
        return f"{self.name}({args}) -> {ret}"

    def __repr__(self) -> str:
        return f"<ConcreteFunction {self.signature_text()}: {gc.printer.summarize_graph(self.graph)}>"

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """In a notebook: the graph's picture with its results marked, and its listing."""
        return gc.dot.mimebundle(self.graph, repr(self), fetches=self._fetches, include=include, exclude=exclude)


def _raise_undefined_read(e: "gc.InvalidArgumentError") -> None:
    """A failed guard of a maybe-undefined read (see operators.maybe_defined) is reported
    as the UndefinedVariableError Python would raise, without the executor's wrapping."""
    message = e.op.attrs.get("message", "") if e.op is not None and e.op.type == "Assert" else ""
    if message.startswith(maybe_defined.MESSAGE_PREFIX):
        raise UndefinedValueError(message[len(maybe_defined.MESSAGE_PREFIX):], e) from e


@contextlib.contextmanager
def _state_fed(state_before: list, fed: list):
    """While the trace runs, each fed `nonlocal` / global holds its placeholder; after it,
    whatever happened, every assigned name that holds a tensor, and every fed one, is
    given back its value from before: a user's cell never keeps a tensor. Yields the list
    `_state_left` fills."""
    for s, _, p in fed:
        s.set(p)
    after: list = []
    try:
        yield after
    finally:
        fed_names = {id(s) for s, _, _ in fed}
        for s, before in state_before:
            if id(s) in fed_names or _holds_tensor(s.get()):
                s.set(before)


def _state_of_started(state_before: list):
    """A user function the trace runs that `assigned_state` did not reach from the function
    (a helper found through an attribute, `obj.step(x)`): the names it assigns join
    `state_before` with their values as it starts, so a tensor it leaves in them is written
    back after each run (its value was a constant of the trace, and a guard: a change
    retraces) or refused, and never stays there."""
    known = {s.key for s, _ in state_before}

    def started(fn) -> None:
        for s in closure_cells.assigned_state(fn):
            if s.key not in known:
                known.add(s.key)
                state_before.append((s, s.get()))
    return started


def _state_left(state_before: list, fed: list, g: gc.Graph) -> list:
    """(name, value) of each assigned `nonlocal` / global the run must leave a value in:
    a tensor it holds now (fetched), or a fed one's new Python value. Refused: a tensor
    made inside a loop or branch, or a container holding tensors, which cannot be written
    back as the value Python leaves."""
    fed_names = {id(s) for s, _, _ in fed}
    untouched = {id(p) for _, _, p in fed}
    out = []
    for s, _ in state_before:
        now = s.get()
        if id(now) in untouched:  # not assigned by this trace: it keeps its object
            continue
        if isinstance(now, gc.Tensor) and now.op.graph is g and now.op.ctx is None:
            out.append((s, now))
        elif _holds_tensor(now):
            raise _state_refused(s, now)
        elif id(s) in fed_names:
            out.append((s, now))
    return out


def _state_refused(state, now) -> StagingError:
    kind = "nonlocal" if state.cell is not None else "global"
    if isinstance(now, gc.Tensor):
        return StagingError(
            f"{state.what} is assigned a tensor of one iteration or branch of a loop or `if` on a tensor that does "
            f"not carry it (a helper called there assigns it), which the graph cannot leave in it as Python would "
            f"after each call. Return the new value from the helper and assign '{state.name}' in the loop or `if` "
            f"itself (declared `{kind}` in that function).")
    what = ("a list changed inside a loop or `if` on a tensor" if isinstance(now, StagedList) else
            f"a {type(now).__name__} changed inside a loop or `if` on a tensor" if isinstance(now, (list, dict, set))
            else f"a {type(now).__name__} holding tensors")
    return StagingError(
        f"{state.what} is assigned {what}, which the graph cannot leave in it as Python would after each call. "
        f"A `nonlocal` or `global` name can carry a number or a numpy array of a fixed shape: build the list in "
        f"a local variable and return it (and assign '{state.name}' from the result outside the function), or "
        f"assign '{state.name}' a number or array.")


_GRAPH_STATEMENTS = {"_graph_while": "names", "_graph_for": "names", "_graph_if": None}


def _state_refusal(state_before: list, error: BaseException) -> "StagingError | None":
    """A trace failed inside a loop or `if` on a tensor that carries an assigned `nonlocal`
    / global holding a list, dict or set (staged as a list of tensors: `items + [v]` then
    fails on it): the refusal to give instead, as the limit is the name's."""
    containers = {s.name: (s, before) for s, before in state_before if isinstance(before, (list, dict, set))}
    if not containers:
        return None
    frames = [f for f, _ in traceback.walk_tb(error.__traceback__)]
    for i, frame in enumerate(frames):
        name = frame.f_code.co_name
        if name in _GRAPH_STATEMENTS and _GRAPH_STATEMENTS[name] is None and i > 0:
            frame = frames[i - 1]  # (_graph_if: its caller, if_stmt, has the names)
        elif name not in _GRAPH_STATEMENTS:
            continue
        for n in frame.f_locals.get("names") or ():
            if n in containers:
                return _state_refused(*containers[n])
    return None


def _run_effects_before(graph: gc.Graph, token, feeds: dict) -> None:
    """Run the effects staged so far (their chain ends at `token`); a staged failure among
    them, earlier in program order, is raised instead."""
    try:
        Session(graph, num_threads=1).run([token], feed_dict=feeds)
    except gc.InvalidArgumentError as e:
        _raise_undefined_read(e)
        exceptions.reraise_staged(e)
        raise


def _user_note(exc: BaseException) -> None:
    """Point an error raised by converted code at the user's line, not generated code."""
    for frame, lineno in reversed(list(traceback.walk_tb(exc.__traceback__))):
        hit = source_info.map_location(frame.f_code.co_filename, lineno)
        if hit is not None:
            f, line = hit
            if hasattr(exc, "add_note"):
                exc.add_note(f"  in the user's code at {f}:{line}")
            return


def _short_repr(v) -> str:
    r = repr(v)
    return r if len(r) <= 40 else r[:37] + "..."


# -- @function -------------------------------------------------------------------------

class Function:
    """A Python function compiled to graphs; see the module docstring and `function`."""

    # called while another function is traced, its Python function is traced inline there
    # (conversion.converted_call, which asks this instead of importing the class)
    inlined_when_traced = True

    def __init__(self, python_function: Callable, input_signature=None, autograph: bool = True,
                 instance=None, optimize: bool | None = None, skip_passes=(), jit_compile: bool = False,
                 devices=None, engine: str = "local", control_flow: str | None = None,
                 functional: str | None = None, engine_options: dict | None = None):
        if control_flow not in (None, "v1", "v2"):
            raise ValueError(f"control_flow must be 'v1' or 'v2' (None: AUTOGRAPH_CONTROL_FLOW decides), got "
                             f"{control_flow!r}")
        self.control_flow = control_flow
        if functional is not None:
            functional_mode(functional)  # (checked now; None: AUTOGRAPH_FUNCTIONAL decides at each run)
        self.functional = functional
        # `@function` over `@staticmethod` / `@classmethod`: keep the function, bind as they would
        self._method_kind = type(python_function) if isinstance(python_function, (staticmethod, classmethod)) else None
        if self._method_kind is not None:
            python_function = python_function.__func__
        self.python_function = python_function
        self.input_signature = None if input_signature is None else [
            s if isinstance(s, TensorSpec) else TensorSpec(*s) for s in input_signature]
        self.autograph = autograph
        self.optimize = optimize  # None: on unless AUTOGRAPH_OPTIMIZE=0
        self.skip_passes = tuple(skip_passes)
        self.jit_compile = jit_compile
        self.devices, self.engine = devices, engine
        check_engine_options(engine, engine_options)  # (refused now, not at the first call)
        self.engine_options = engine_options
        self._instance = instance
        self._signature = inspect.signature(python_function)
        # the parameters' names when all are positional (a call with one value for each binds
        # them in order, without Signature.bind)
        params = self._signature.parameters.values()
        self._positional = tuple(p.name for p in params) if all(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) else None
        # the names a call's values bind to when it passes one for each parameter, without
        # input_signature (whose calls convert values): such a call of numpy values only is
        # looked up in _fast (_fast_key -> the traces of its cache key in _cache)
        self._arg_names = None if self._positional is None or input_signature is not None else \
            self._positional[1:] if instance is not None else self._positional
        self._fast: dict = {}
        # input signature -> its traces, the one used last first; each is valid while
        # its guards hold (the Python values it read are unchanged)
        self._cache: dict = {}
        self._latest: ConcreteFunction | None = None
        self._lock = threading.RLock()
        self._history: collections.deque = collections.deque(maxlen=RETRACE_WINDOW)
        self._traced_keys: collections.deque = collections.deque(maxlen=RETRACE_WINDOW)
        # per trace in _traced_keys: None (a new signature) or the Python value whose change
        # made it, as (what, its value then)
        self._trace_reasons: collections.deque = collections.deque(maxlen=RETRACE_WINDOW)
        self._warned = False
        # instance -> this method bound to it: on the instance itself (a table here would keep
        # every instance alive, the bound function holding it); classes and objects without a
        # __dict__ in a weak table
        self._bound = SideTable("bound method")
        self._bound_elsewhere: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        # the `nonlocal` cells and globals it assigns: those holding numpy values are graph inputs
        self._state = closure_cells.assigned_state(python_function)
        functools.update_wrapper(self, python_function)
        if not hasattr(self, "__name__"):  # functools.partial and other callables without one
            self.__name__ = getattr(plain_function(python_function), "__name__", type(python_function).__name__)

    # methods: `obj.f` is this function with `self` bound, sharing nothing mutable
    def __get__(self, instance, owner=None):
        if self._method_kind is staticmethod:
            return self
        if self._method_kind is classmethod:
            instance = owner if owner is not None else type(instance)
        if instance is None:
            return self
        own_dict = type(getattr(instance, "__dict__", None)) is dict
        try:
            bound = (self._bound if own_dict else self._bound_elsewhere).get(instance)
        except TypeError:
            bound = None
        if bound is None:
            bound = Function(self.python_function, self.input_signature, self.autograph, instance=instance,
                             optimize=self.optimize, skip_passes=self.skip_passes, jit_compile=self.jit_compile,
                             devices=self.devices, engine=self.engine, control_flow=self.control_flow,
                             functional=self.functional, engine_options=self.engine_options)
            try:
                (self._bound if own_dict else self._bound_elsewhere)[instance] = bound
            except TypeError:
                pass
        return bound

    @property
    def bound_python_function(self) -> Callable:
        """The Python callable this stands for: the function, bound if it is a method."""
        fn = self.python_function
        return fn if self._instance is None else types.MethodType(fn, self._instance)

    def _callable(self):
        convertible = self.autograph and plain_function(self.python_function) is not None
        fn = convert(self.python_function) if convertible else self.python_function
        return fn if self._instance is None else types.MethodType(fn, self._instance)

    def __call__(self, *args, **kwargs):
        if _RUN_EAGERLY:
            return self.bound_python_function(*args, **kwargs)
        if gc.get_default_graph() is not None:  # called while tracing: inline it
            if not self.autograph:  # (a converted one is noted by convert)
                guards.note(self.python_function)
            return self._callable()(*args, **kwargs)
        if self._fast and not kwargs:  # numpy values whose signature was traced: no binding, no key to build
            traces = self._fast.get(_fast_key(args))
            if traces is not None:
                concrete = traces[0]
                check = concrete._check
                if check is None or check(list(zip(self._arg_names, args))):
                    self._history.append(False)  # (_note_call of a call that traced nothing)
                    # (then the `nonlocal` / global values it is fed: the check held their types)
                    return concrete._run_flat(list(args) + [s.get() for s in concrete._fed] if concrete._fed
                                              else list(args))
                # (a guard failed: _concrete tries the other traces, or traces anew)
        concrete, inputs = self._concrete(args, kwargs, record=True)
        if concrete._write_back is not None and concrete._write_back.needs_arguments:
            return concrete._run_flat(inputs, arguments=dict(self._bind(args, kwargs)))
        return concrete._run_flat(inputs)

    def traced_call(self, *args, trace: list, **kwargs):
        """Call the function as usual, on one thread, appending every executor step and
        frame event to `trace` (what `autograph trace` prints)."""
        concrete, inputs = self._concrete(args, kwargs, record=False)
        return concrete._run_flat(inputs, trace=trace)

    def get_concrete_function(self, *args, **kwargs) -> ConcreteFunction:
        """The traced graph for these arguments (traced now if needed)."""
        return self._concrete(args, kwargs, record=False)[0]

    # -- tracing -------------------------------------------------------------------
    def _bind(self, args, kwargs) -> list[tuple[str, Any]]:
        names = self._positional
        if names is not None and not kwargs:
            if self._instance is None:
                if len(args) == len(names):
                    return list(zip(names, args))
            elif len(args) + 1 == len(names):
                return list(zip(names[1:], args))
        if self._instance is not None:
            args = (self._instance,) + tuple(args)
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        items = list(bound.arguments.items())
        return items[1:] if self._instance is not None else items

    def _concrete(self, args, kwargs, record: bool):
        items = self._bind(args, kwargs)
        if self.input_signature is not None:
            items = self._apply_signature(items)
            key = ("signature",)
            inputs = [v for _, v in items for v in _flatten(v) if _is_graph_input(v)]
        else:  # (one walk for the key and the graph inputs, in _key_of's and _flatten's order)
            key, inputs = [], []
            for name, v in items:
                if isinstance(v, (np.ndarray, np.generic)):
                    key.append((name, ("tensor", v.dtype, v.shape)))
                    inputs.append(v)
                else:
                    key.append((name, _key_of(v)))
                    if isinstance(v, (list, tuple, dict)):
                        inputs.extend(x for x in _flatten(v) if _is_graph_input(x))
            key = tuple(key)
        if self._state:  # (after the arguments, as _trace makes their placeholders)
            inputs = inputs + [v for v in (s.get() for s in self._state) if _fed_value(v)]
        with self._lock:
            traces = self._cache.get(key)
            reason = None
            if traces is None:
                concrete = None
            else:
                concrete = traces[0]
                check = concrete._check
                if check is not None and not check(items):
                    concrete = self._another_trace(traces, items)
                    if concrete is None:
                        reason = traces[0].guards.explain(items)
            traced = concrete is None
            if traced:
                concrete = self._trace(items, inputs if record else None)
                if traces is None:
                    traces = self._cache[key] = []
                traces.insert(0, concrete)
                del traces[TRACES_PER_SIGNATURE:]
                self._latest = concrete
            if record:
                self._note_call(traced, key, reason)
            names = self._arg_names
            if names is not None and not kwargs and len(args) == len(names):
                fast = _fast_key(args)
                if fast is not None:
                    self._fast[fast] = traces
        return concrete, inputs

    @staticmethod
    def _another_trace(traces: list, items) -> "ConcreteFunction | None":
        """A trace of this signature, other than the first, whose guards hold now (a Python
        value that takes turns between a few values); it becomes the first."""
        for i in range(1, len(traces)):
            c = traces[i]
            if c._check is None or c._check(items):
                traces.insert(0, traces.pop(i))
                return c
        return None

    def _apply_signature(self, items):
        if len(items) < len(self.input_signature):
            raise TypeError(f"{self.__name__} has an input_signature of {len(self.input_signature)} tensors "
                            f"but was called with {len(items)} arguments")
        out = []
        for i, (name, v) in enumerate(items):
            if i < len(self.input_signature):
                spec = self.input_signature[i]
                if not spec.is_compatible_with(v):
                    raise TypeError(
                        f"argument '{name}' of {self.__name__}: {np.asarray(v).dtype}{list(np.shape(v))} does not "
                        f"match its input_signature {spec.dtype}{list(spec.shape) if spec.shape else spec.shape}")
                v = np.asarray(v, dtype=spec.dtype.np_dtype)
            out.append((name, v))
        return out

    def _trace(self, items, inputs: list | None = None) -> ConcreteFunction:
        """Trace the function for these arguments. With `inputs` (the graph inputs' values,
        on a call), an exception the Python raises while tracing comes after the effects
        (prints...) that precede it in program order have run, as in Python."""
        g = gc.Graph()
        placeholders = []
        v2 = contextlib.nullcontext() if self.control_flow is None else gc.control_flow_v2(self.control_flow == "v2")
        with g.as_default(), v2:
            call_args = {}
            for i, (name, value) in enumerate(items):
                flat = _flatten(value)
                new = []
                for j, leaf in enumerate(flat):
                    if _is_graph_input(leaf):
                        if self.input_signature is not None and i < len(self.input_signature):
                            spec = self.input_signature[i]
                            shape = None if spec.shape is None else list(spec.shape)
                            dtype = spec.dtype
                        else:
                            arr = np.asarray(leaf)
                            if arr.dtype.kind in "biufc" and arr.dtype not in _GRAPH_NP_DTYPES:
                                raise TypeError(gc.dtypes.unsupported_numpy_dtype(
                                    arr.dtype, f"argument '{name}' of {self.__name__}"))
                            shape, dtype = list(np.shape(leaf)), gc.as_dtype(arr.dtype)
                        p = gc.placeholder(dtype, shape=shape, name=name if len(flat) == 1 else f"{name}_{j}")
                        placeholders.append(p)
                        new.append(p)
                    else:
                        new.append(leaf)
                call_args[name] = _pack(value, new)
            # the `nonlocal` / global names it assigns: numpy values are inputs, fed at each call
            state_before, fed = [], []
            for s in self._state:
                v = s.get()
                state_before.append((s, v))
                if _fed_value(v):
                    p = gc.placeholder(gc.as_dtype(v.dtype), shape=list(np.shape(v)), name=f"nonlocal_{s.name}")
                    fed.append((s, v, p))
            tracker = arguments.start(g)  # the arguments changed in place, to write back
            k = 0
            for name, value in items:
                for leaf in _flatten(value):
                    if _is_graph_input(leaf):
                        tracker.add_array(k, name, placeholders[k], isinstance(leaf, np.ndarray) and leaf.ndim == 0)
                        k += 1
                tracker.add_containers(name, call_args[name])
            token0 = gc.constant(np.int32(0), name="effects")
            # inputs belong to the user's `def` line, not to whoever called the function
            where = _definition_location(self.python_function)
            for op in [p.op for p in placeholders] + [p.op for _, _, p in fed] + [token0.op]:
                op.source = where
            placeholders += [p for _, _, p in fed]
            # what the trace reads of Python values: its guards (converted functions are
            # noted as they start, by transpiler.convert)
            first = next(iter(self._signature.parameters), "self")
            with guards.recording([n for n, _ in items], [v for _, v in items], self._instance, first) as recorder, \
                    _state_fed(state_before, fed) as state_after:
                for s, v, _ in fed:
                    recorder.add_fed(s.guard_path, s.guard_get, s.name, v)
                recorder.on_function = _state_of_started(state_before)
                fn = self._callable()
                recorder.add_function(fn)  # (not converted, or a partial's bound arguments)
                with effects.chain_scope(token0) as chain:
                    try:
                        try:
                            out = self._invoke(fn, call_args)
                        finally:
                            arguments.stop(g)
                        write_back = tracker.finish(placeholders)
                        state_after.extend(_state_left(state_before, fed, g))
                    except Exception as e:
                        refused = _state_refusal(state_before, e) if not isinstance(e, StagingError) else None
                        if refused is not None:
                            raise refused from e
                        _user_note(e)
                        if inputs is not None and chain.effects and not isinstance(e, gc.AutographError):
                            _run_effects_before(g, chain.token, dict(zip(placeholders, inputs)))
                        raise
            out = _objects_out(out)
            flat_out = _flatten(out)
            for v in flat_out:
                if isinstance(v, TruthOnly):  # an `and` / `or` result the graph cannot give
                    raise StagingError(v.message)
            if any(isinstance(v, FormattedString) for v in flat_out):  # f"{x:.2f}": its text, made when it runs
                flat_out = [python_calls.rendered(v) if isinstance(v, FormattedString) else v for v in flat_out]
                out = _pack(out, flat_out)
            if any(isinstance(v, (gc.TensorShape, StagedList, gc.DType)) for v in flat_out):
                flat_out = [_ListOutput(v.stacked(), v.item_kinds(
                                "returning", f"{self.__name__} (defined at {_definition_location(self.python_function)})"))
                            if isinstance(v, StagedList) else
                            v.np_dtype if isinstance(v, gc.DType) else  # numpy's dtype, as `a.dtype` is there
                            _returned_shape(v, self.python_function) for v in flat_out]
                out = _pack(out, flat_out)
            fetches = [v.stacked if isinstance(v, _ListOutput) else v for v in flat_out]
            fetches = [v for v in fetches if isinstance(v, gc.Tensor)]
            for t in fetches:
                if t.op.ctx is not None:  # one value per iteration or branch: not the function's result
                    raise _escaped_value(t, self.python_function)
            token = chain.token if chain.effects else None
            marks = [maybe_defined.lookup(t) for t in fetches]
            returned = next((m.flag for m in marks if m is not None and m.is_return), None)
            kinds = [path_types.returned_kind(t) for t in fetches]
            state_writes = [(s, v, path_types.returned_kind(v) if isinstance(v, gc.Tensor) else None)
                            for s, v in state_after]
        concrete = ConcreteFunction(g, placeholders, out, fetches, token, self.__name__, returned,
                                    optimize=self.optimize, skip_passes=self.skip_passes,
                                    jit_compile=self.jit_compile, devices=self.devices, engine=self.engine,
                                    kinds=kinds, write_back=write_back, functional=self.functional,
                                    engine_options=self.engine_options, state_writes=state_writes)
        concrete._fed = [s for s, _, _ in fed]
        concrete.guards = recorder.compile(self.__name__)
        concrete._check = concrete.guards.check if concrete.guards is not None else None
        return concrete

    def _invoke(self, fn, call_args: dict):
        params = list(self._signature.parameters.values())
        if self._instance is not None:
            params = params[1:]
        args, kwargs = [], {}
        for p in params:
            if p.name not in call_args:
                continue
            v = call_args[p.name]
            if p.kind is p.VAR_POSITIONAL:
                args.extend(v)
            elif p.kind is p.VAR_KEYWORD:
                kwargs.update(v)
            elif p.kind is p.KEYWORD_ONLY:
                kwargs[p.name] = v
            else:
                args.append(v)
        return fn(*args, **kwargs)

    def _note_call(self, traced: bool, key, reason=None) -> None:
        self._history.append(traced)
        if not traced:  # (a call that traced nothing raises no trace count: it cannot warn)
            return
        self._traced_keys.append(key)
        self._trace_reasons.append(reason)
        if self._warned or sum(self._history) < RETRACE_LIMIT or (key == ("signature",) and reason is None):
            return
        self._warned = True
        if reason is not None:
            self._warn_changing_value(reason)
            return
        keys = list(self._traced_keys)
        changing = [name for i, (name, _) in enumerate(keys[-1])
                    if len({k[i][1] for k in keys[-RETRACE_LIMIT:] if i < len(k)}) > 1]
        values = ", ".join(_describe_key(k[i][1]) for k in keys[-3:] for i, (n, _) in enumerate(k)
                           if changing and n == changing[0])
        _warn_at_user_line(
            f"{self.__name__} was traced {sum(self._history)} times in the last {len(self._history)} calls because "
            f"argument {', '.join(repr(c) for c in changing) or '?'} keeps changing (e.g. {values}). Pass it as a "
            "numpy value so it becomes a graph input, or pin the trace with input_signature=.",
            RetracingWarning)

    def _warn_changing_value(self, reason) -> None:
        what = reason[0]
        values = [_short_repr(r[1]) for r in list(self._trace_reasons)[-3:] if r is not None and r[0] == what]
        _warn_at_user_line(
            f"{self.__name__} was traced {sum(self._history)} times in the last {len(self._history)} calls because "
            f"the Python value {what}, which it reads, keeps changing (e.g. {', '.join(values)}): each trace holds "
            "it as a constant. Pass it as an argument, as a numpy value, so that it becomes a graph input. (A "
            "value the function changes itself, such as `self.count += 1`, changes on every call.)",
            RetracingWarning)

    @property
    def trace_count(self) -> int:
        """How many traces are kept (per input signature, those of Python values it read)."""
        return sum(len(t) for t in self._cache.values())

    def __repr__(self) -> str:
        params = ", ".join(self._signature.parameters)
        traces = self.trace_count
        return f"<Function {self.__name__}({params}): {traces} trace{'' if traces == 1 else 's'}>"

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """In a notebook: the latest traced graph (see ConcreteFunction), or the short repr
        before the first call."""
        with self._lock:
            latest = self._latest
        if latest is None:
            return {"text/plain": repr(self) + "\n(not traced yet: call it, or get_concrete_function(...))"}
        return gc.dot.mimebundle(latest.graph, f"{self!r}, the latest:\n{latest!r}", fetches=latest._fetches,
                                 include=include, exclude=exclude)


def function(func: Callable | None = None, *, input_signature=None, autograph: bool = True,
             optimize: bool | None = None, skip_passes=(), jit_compile: bool = False, devices=None,
             engine: str = "local", control_flow: str | None = None, functional: str | None = None,
             engine_options: dict | None = None):
    """Decorator: `@function` or `@function(input_signature=[TensorSpec([None], gc.float64)],
    autograph=False)`. With autograph=False the function is traced as it is (Python
    control flow on tensors then fails as in graph mode).

    The traced graph is optimized (graphcore.passes) before its first run: `optimize=False`
    (or the environment variable AUTOGRAPH_OPTIMIZE=0) runs it as traced, and
    `skip_passes=["cse"]` leaves out named passes. `jit_compile=True` also turns each while
    loop of pure ops into one CompiledLoop op that runs as generated Python (graphcore/
    passes/compile_loops.py); loops it cannot take stay on the frame executor.
    `jit_compile="numba"` runs those loops whose values are numeric scalars and whose ops
    have an exact machine form as numba-compiled code (pip install -e '.[jit]').
    `devices=["cpu:0", "cpu:1"]` runs the graph partitioned across those devices (ops go
    where `gc.device(...)` put them, else to the first), on threads of this process or,
    with `engine="ray"`, one Ray actor per device (executor/session.py says more;
    `engine_options={"address": ..., "task_nodes": ...}` as Session's).
    `control_flow="v2"` builds `if`/`while` on tensors as If/While ops over function graphs
    (Control Flow v2, graphcore/v2_control_flow.py), lowered before they run; "v1" the five
    primitives; None (default): AUTOGRAPH_CONTROL_FLOW decides, v1 unless it says v2.
    `functional="direct"` runs those If/While ops as ops (executor/functional_direct.py)
    instead of lowering them (None: AUTOGRAPH_FUNCTIONAL decides, "lower" unless it says
    "direct")."""
    jit_passes(jit_compile)  # checks the value (and that numba is there for "numba")
    kw = dict(input_signature=input_signature, autograph=autograph, optimize=optimize, skip_passes=skip_passes,
              jit_compile=jit_compile, devices=devices, engine=engine, control_flow=control_flow,
              functional=functional, engine_options=engine_options)

    def make(f):
        if isinstance(f, Function) and f._instance is None:  # function(@function f, jit_compile=True): these options
            return Function(f.python_function, **{**kw, "input_signature": input_signature or f.input_signature})
        return Function(f, **kw)
    return make if func is None else make(func)
