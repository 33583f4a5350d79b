"""`grad` and `value_and_grad`: derivatives of a Python function whose control flow
autograph converts, computed by graphcore.gradients on the traced graph.

    @autograph.function            # optional: plain functions work too
    def f(x, n):
        y = x
        for _ in range(n):          # with n a numpy int this is a graph loop
            y = y * x
        return gc.reduce_sum(y)

    df = autograph.grad(f)          # df(x, n) -> d f / d x
    v, dx = autograph.value_and_grad(f)(np.array([1.0, 2.0]), np.int64(3))
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

import graphcore as gc

from .conversion import is_convertible, plain_function
from .errors import SourceNotFoundError
from .function import Function
from .operators import path_types
from .transpiler import convert


def _converted(f):
    """What runs inside the traced graph: the converted function for the user's own code;
    library code, and wrappers such as the function `grad` returns, as they are (so
    grad(grad(f)) differentiates through the inner gradient)."""
    if isinstance(f, Function):
        return f._callable()
    if not is_convertible(f):
        return f
    try:
        return convert(f)
    except SourceNotFoundError:  # a lambda whose source is ambiguous: its body is only an expression
        if getattr(plain_function(f), "__name__", "") != "<lambda>":
            raise
        return f


def _not_differentiable(name: str, dtype) -> TypeError:
    return TypeError(f"grad: argument {name} is {dtype}; a gradient with respect to an integer or bool is "
                     f"not defined (it would be 0); pass a float, e.g. np.float64(3) or x.astype(np.float64)")


def _as_differentiable(v, name: str):
    """Python numbers at the differentiated positions become float64 graph inputs; a
    numpy integer or bool there is an error (its gradient would silently be 0)."""
    if isinstance(v, (bool, np.bool_)):
        raise _not_differentiable(name, "a bool")
    if isinstance(v, (int, float)):
        return np.float64(v)
    if isinstance(v, (np.generic, np.ndarray)) and v.dtype.kind in "iub":
        raise _not_differentiable(name, f"a numpy {v.dtype}")
    return v


def _location(target):
    from .function import _definition_location  # noqa: PLC0415

    return _definition_location(target)


def _arg_name(sig: inspect.Signature, i: int) -> str:
    names = list(sig.parameters)
    return f"{i} ({names[i]})" if i < len(names) else str(i)


def _several_outputs(target, out) -> TypeError:
    """f returned a tuple, list or dict without has_aux: which output to differentiate is
    not said (JAX refuses it too)."""
    name = getattr(target, "__name__", "the function")
    where = _location(target)
    what = f"a {type(out).__name__} of {len(out)} values" if hasattr(out, "__len__") else f"a {type(out).__name__}"
    return TypeError(
        f"grad differentiates a function with one scalar output, and {name} (defined at {where}) returns {what}. "
        f"Return only the value to differentiate, or pass has_aux=True: {name} then returns a pair (value, aux), "
        "the value is differentiated and aux comes back beside the gradient, as in JAX "
        "(grad(f, has_aux=True)(x) -> (gradient, aux); value_and_grad -> ((value, aux), gradient)).")


def _run_options(f) -> dict:
    """How `f` runs when it is a Function made with options (compiled, on devices, its
    control flow and engine), or the gradient of one: its gradient runs the same way
    (`grad(function(f, jit_compile=True))` compiles the gradient's loops too)."""
    inherited = getattr(f, "run_options", None)
    if inherited is not None:
        return dict(inherited)
    if not isinstance(f, Function):
        return {}
    return {"optimize": f.optimize, "skip_passes": f.skip_passes, "jit_compile": f.jit_compile,
            "devices": f.devices, "engine": f.engine, "control_flow": f.control_flow,
            "functional": f.functional, "engine_options": f.engine_options}


def value_and_grad(f, argnums=0, has_aux: bool = False):
    """A function returning `(f(*args), gradient)`, the gradient of f's scalar output with
    respect to the argument(s) at `argnums` (an int, or a tuple giving a tuple of
    gradients). Control flow on tensors in `f` is converted as by `@function`; the
    traced graph is cached by the arguments' dtypes and shapes. With `has_aux=True`, f
    returns a pair `(value, aux)`: the value is differentiated and the call returns
    `((value, aux), gradient)`, as JAX's does. A Function made with options
    (`function(f, jit_compile=True, devices=...)`) is differentiated and run with them.

    Raises GraphError when f's output is not a scalar, TypeError when it returns several
    values without has_aux, and TypeError when a differentiated argument is a numpy
    integer or bool (pass a float; a Python int becomes float64)."""
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    target = f.bound_python_function if isinstance(f, Function) else f
    sig = inspect.signature(target)

    @functools.wraps(target, updated=())  # (not target's attributes: a grad's get_concrete_function would
    def traced(*args, **kwargs):          # become the Function's own, the inner gradient's trace)
        # inlined into another trace, a differentiated argument may be a numpy value (a
        # constant of that trace): differentiate with respect to it as a tensor
        args = tuple(gc.constant(a) if i in nums and isinstance(a, (np.ndarray, np.generic)) else a
                     for i, a in enumerate(args))
        out = _converted(f)(*args, **kwargs)
        aux = None
        if has_aux:
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise TypeError(f"grad with has_aux=True: {getattr(target, '__name__', 'the function')} (defined at "
                                f"{_location(target)}) must return a pair (value, aux); it returns "
                                + ("one value" if isinstance(out, gc.Tensor) else f"a {type(out).__name__}"))
            out, aux = out
        if isinstance(out, (tuple, list, dict)):
            raise _several_outputs(target, out)
        if not isinstance(out, gc.Tensor):
            out = gc.constant(out, dtype=gc.float64)
        xs = [args[i] for i in nums]
        for i, x in zip(nums, xs):
            if isinstance(x, gc.Tensor) and not x.dtype.is_differentiable:
                raise _not_differentiable(_arg_name(sig, i), f"a tensor of {x.dtype}")
        tensors = [x for x in xs if isinstance(x, gc.Tensor)]
        found = iter(gc.gradients(out, tensors) if tensors else [])
        grads = []
        for x in xs:
            if not isinstance(x, gc.Tensor):
                grads.append(None)
                continue
            gx = next(found)  # (of x's type, whatever the Python types of the values it went through)
            grads.append(path_types.anchor(gx if gx is not None else gc.zeros_like(x)))
        gradient = grads[0] if single else tuple(grads)
        return ((out, aux), gradient) if has_aux else (out, gradient)

    traced.__signature__ = sig
    options = _run_options(f)
    compiled = Function(traced, autograph=False, **options)

    @functools.wraps(target)
    def run(*args, **kwargs):
        args = list(args)
        for i in nums:
            if i >= len(args):
                raise TypeError(f"argnums {i} is out of range for {len(args)} positional arguments")
            args[i] = _as_differentiable(args[i], _arg_name(sig, i))
        return compiled(*args, **kwargs)

    run.get_concrete_function = lambda *a, **k: compiled.get_concrete_function(*a, **k)
    run.run_options = options
    return run


def grad(f, argnums=0, has_aux: bool = False):
    """A function returning the gradient of f's scalar output with respect to the
    argument(s) at `argnums`; with `has_aux=True` (f returns `(value, aux)`), the pair
    `(gradient, aux)`, as JAX's. See value_and_grad."""
    vg = value_and_grad(f, argnums, has_aux=has_aux)

    @functools.wraps(vg)
    def run(*args, **kwargs):
        value, gradient = vg(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    run.get_concrete_function = vg.get_concrete_function
    run.run_options = vg.run_options
    return run
