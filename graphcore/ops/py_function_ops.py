"""PyFunction: an op that calls a Python function on its inputs' values when the graph runs
(TensorFlow's py_function, JAX's pure_callback): the escape hatch for what the graph has no op
for. The function stays in this process (a table keyed by an int attribute, freed with the
graph): a graph file never carries one, and a process without the table refuses to run it.

Outputs are declared (`Tout`) and checked on every call; `pyobject` declares a run-time Python
object (a str, list, dict) that only other PyFunctions, Print and the fetch look at. The OpDef
is stateful so that no pass folds, merges, moves or prunes a call: Python runs each call."""
from __future__ import annotations

import itertools
import threading
import weakref

import numpy as np

from .. import dtypes as dt
from ..attr_schema import BOOL, DTYPE, SHAPE, STR, AttrError, opt, tuple_of
from ..eager import ordered_state_access
from ..errors import GraphError, NoGradientError
from ..graph import Tensor, get_default_graph, graph_of
from ..registry import CHEAP, define_op
from ..shapes import TensorShape, as_shape
from ..source_info import user_location
from .array_ops import constant, zeros_like

# A run-time Python object: no numpy storage, so every numeric op refuses it by its dtype.
pyobject = dt.pyobject


class _Entry:
    __slots__ = ("func", "grad", "name", "where", "as_python")

    def __init__(self, func, grad, name, where, as_python):
        self.func, self.grad, self.name, self.where, self.as_python = func, grad, name, where, as_python


_functions: dict[int, _Entry] = {}
_keys = itertools.count(1)
_lock = threading.Lock()


def _rule(*inputs, key, Tout, shapes, stateful=True, func=""):  # noqa: N803 (TensorFlow's name)
    return [(d, s) for d, s in zip(Tout, shapes)]


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of {value.dtype} with shape {value.shape}"
    if isinstance(value, np.generic):
        return f"np.{type(value).__name__}"
    return f"a Python {type(value).__name__}"


def _checked(value, d: dt.DType, shape: TensorShape, entry: _Entry, i: int):
    """`value` as the declared dtype and shape, or a TypeError / ValueError naming the call's line.
    Python numbers take the declared dtype of their kind (an int fits an int or a float dtype);
    numpy values must have it exactly (numpy's own casting would hide a wrong declaration)."""
    if d is pyobject:
        return value
    where = f"{entry.where}: " if entry.where else ""
    what = f"{where}py_function {entry.name} returned {_describe(value)} as output {i}, declared {d}{shape}"
    if isinstance(value, (bool, np.bool_)) and not d.is_bool:
        raise TypeError(f"{what}: a bool is not a {d}; convert it in the function")
    if isinstance(value, bool) or (isinstance(value, int) and (d.is_integer or d.is_floating)) or \
            (isinstance(value, float) and d.is_floating):
        if d.is_integer and not np.iinfo(d.np_dtype).min <= value <= np.iinfo(d.np_dtype).max:
            raise OverflowError(f"{what}: {value} does not fit")
        out = np.asarray(value, dtype=d.np_dtype)[()]
    elif isinstance(value, (np.ndarray, np.generic)) and value.dtype == d.np_dtype:
        out = value
    else:
        raise TypeError(f"{what}: return {d} values (e.g. np.asarray(v, np.{d.np_dtype}))")
    if shape.dims is not None and (np.ndim(out) != len(shape.dims) or any(
            s is not None and s != n for s, n in zip(shape.dims, np.shape(out)))):
        raise ValueError(f"{what}: its shape {tuple(np.shape(out))} is not the declared {shape}")
    return out


def call_entry(entry: _Entry, values, Tout, shapes):  # noqa: N803
    if any(entry.as_python):
        values = [v.item() if p and isinstance(v, (np.generic, np.ndarray)) else v
                  for v, p in zip(values, entry.as_python)]
    out = entry.func(*values)
    if len(Tout) == 1:
        return out if Tout[0] is pyobject else _checked(out, Tout[0], shapes[0], entry, 0)
    if not isinstance(out, (tuple, list)) or len(out) != len(Tout):
        where = f"{entry.where}: " if entry.where else ""
        raise TypeError(f"{where}py_function {entry.name} returned {_describe(out)}, declared {len(Tout)} outputs: "
                        f"return a tuple of {len(Tout)} values")
    return tuple(_checked(v, d, s, entry, i) for i, (v, d, s) in enumerate(zip(out, Tout, shapes)))


def _kernel(*values, key, Tout, shapes, stateful=True, func=""):  # noqa: N803
    entry = _functions.get(key)
    if entry is None:
        raise GraphError(
            "PyFunction: the Python function this op calls is not in this process: a py_function runs only in "
            "the process that built the graph (not from a graph file, nor on a Ray worker)")
    return call_entry(entry, values, Tout, shapes) if Tout else (entry.func(*values), ())[1]


def _function_key(v, where):
    """A graph file never names a Python call (it is data), so a PyFunction read from one is
    refused, whatever its key (copies within the process are made by Graph.copy, not files)."""
    raise AttrError(where, "a PyFunction calls a Python function of the process that built the graph, and a "
                           "graph file is data: it cannot name one. Build the graph with its py_function in "
                           "the process that runs it")


py_function_op = define_op("PyFunction", shape=_rule, kernel=_kernel, num_outputs=None, cost=CHEAP, stateful=True,
                           doc="calls a Python function on its inputs' values when the graph runs",
                           attrs={"key": _function_key, "func": opt(STR), "Tout": tuple_of(DTYPE, 1024),
                                  "shapes": tuple_of(SHAPE, 1024), "stateful": BOOL})


@py_function_op.gradient
def _py_function_grad(op, *dys):
    entry = _functions.get(op.attrs["key"])
    if entry is None or entry.grad is None:
        name = entry.name if entry is not None else op.name
        raise NoGradientError(
            f"{op.location()}: no gradient for py_function {name}: the graph cannot differentiate Python code. "
            f"Give one with py_function(..., grad=g), g(*inputs, *output_grads) -> one gradient per input, or "
            f"wrap its inputs in graphcore.stop_gradient")
    dys = [dy if dy is not None else zeros_like(y) for dy, y in zip(dys, op.outputs)]
    tins = [t.dtype for t in op.inputs]
    grads = py_function(entry.grad, [*op.inputs, *dys], tins, stateful=False,
                        name=f"{entry.name}_grad", shapes=[t.shape for t in op.inputs])
    grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    return [g if t.dtype.is_differentiable else None for g, t in zip(grads, op.inputs)]


def _dtypes(Tout):  # noqa: N803
    single = not isinstance(Tout, (list, tuple))
    return single, [pyobject if d is object or d is pyobject else dt.as_dtype(d) for d in ([Tout] if single else Tout)]


def py_function(func, inputs, Tout, stateful: bool = True, grad=None, name=None, shapes=None,  # noqa: N803
                as_python=None):
    """Call `func(*values of inputs)` when the graph runs; returns a Tensor per `Tout`.

    Args:
      func: a Python function of numpy values (Python objects for `pyobject` inputs).
      inputs: tensors (or values that become constants).
      Tout: a dtype, a list of dtypes, or `object` / `pyobject` for a run-time Python object;
        `[]` for no outputs (a call for its effect).
      stateful: an effect: run in program order with prints and variable updates, also when its
        value is not read (inside an @autograph.function; always kept by the optimizer).
      grad: `grad(*input_values, *output_grads) -> one gradient per input`, run at run time; without
        it, differentiating through the call is refused.
      shapes: declared output shapes (unknown when omitted), checked on each call.
      as_python: per input, pass a scalar as the Python number it stands for (`.item()`).
    Raises (at run time): what `func` raises; TypeError / ValueError when it returns values other
    than declared, naming the call's line.

        y = gc.py_function(lambda v: np.sort(v), [x], gc.float64)
    """
    loc = user_location()
    at = f"{loc.filename}:{loc.lineno}: " if loc is not None else ""
    if not callable(func):
        raise TypeError(f"{at}py_function calls a Python function, got {type(func).__name__} {func!r:.60}")
    try:
        single, tout = _dtypes(Tout)
        if Tout == [] or Tout == ():
            single, tout = False, []
        shapes = [TensorShape(()) if d is pyobject else as_shape(None) for d in tout] if shapes is None else \
            [as_shape(s) for s in ([shapes] if single else shapes)]
    except (TypeError, ValueError, GraphError) as e:
        raise TypeError(f"{at}py_function's Tout / shapes: {e} (Tout: a dtype such as np.float64, a list of them, "
                        f"object for a Python object, or [])") from None
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    fname = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or type(func).__name__
    flags = tuple(bool(f) for f in (as_python or [False] * len(inputs)))
    g = graph_of(inputs) or get_default_graph()
    if g is None:  # eager: call it now, checked the same way
        entry = _Entry(func, grad, fname, "", flags)
        out = call_entry(entry, inputs, tout, shapes) if tout else (func(*inputs), ())[1]
        return out if tout else None
    entry = _Entry(func, grad, fname, at[:-2], flags)
    with _lock:
        key = next(_keys)
        _functions[key] = entry
    root = g
    while getattr(root, "outer_graph", None) is not None:  # a function graph (If / While): the graph around it
        root = root.outer_graph
    weakref.finalize(root, _functions.pop, key, None)
    inputs = [t if isinstance(t, Tensor) else constant(t) if _is_data(t) else _python_constant(t, g) for t in inputs]
    attrs = {"key": key, "func": fname[:200], "Tout": tuple(tout), "shapes": tuple(shapes), "stateful": bool(stateful)}
    if stateful:  # ordered with the other effects of a traced function (autograph's chain)
        holder = []
        ordered_state_access(g, lambda: holder.append(g.create_op(py_function_op, inputs, attrs,
                                                                  name=name or "PyFunction")) or _AnyOp(holder[0]))
        op = holder[0]
    else:
        op = g.create_op(py_function_op, inputs, attrs, name=name or "PyFunction")
    if not tout:
        return op
    return op.outputs[0] if single else list(op.outputs)


def _is_data(value) -> bool:
    """A value a graph constant holds (a number, bool or numeric array); else a Python object."""
    if isinstance(value, (str, bytes)):
        return False
    try:
        return np.asarray(value).dtype.kind in "biuf"
    except ValueError:  # a ragged list: a Python object
        return False


def _python_constant(value, g):
    """A Python object among the inputs (a str, a dict): the run-time object, made by a call."""
    with g.as_default():
        return py_function(lambda: value, [], pyobject, stateful=False, name="PyValue")


class _AnyOp:
    """What ordered_state_access's hooks read from a build result: its `.op`."""

    __slots__ = ("op",)

    def __init__(self, op):
        self.op = op


def is_pyobject(t) -> bool:
    return isinstance(t, Tensor) and t.dtype is pyobject


def function_of(op):
    """The Python function a PyFunction op calls (None when not in this process)."""
    entry = _functions.get(op.attrs.get("key"))
    return entry.func if entry is not None else None

