"""Control Flow v2: `cond` and `while_loop` built as one If / While op whose branches,
condition and body are function graphs (graphcore/function_graph.py), instead of the v1
Switch/Merge/Enter/Exit/NextIteration wiring.

Switched on by `with gc.control_flow_v2():`, by `@autograph.function(control_flow="v2")`
or by the environment variable AUTOGRAPH_CONTROL_FLOW=v2; v1 stays the default. The
public builders in control_flow.py (and case, switch_case, map_fn, scan, foldl and the
converter's constructs, which call them) dispatch here when it is on, after their Python
value handling, so both versions mean the same for Python predicates and values.

Tensors a branch or body reads from outside become explicit inputs (captures). Both
branches of an If are given every input either one captures, so they have one signature.
Every While carries an iteration counter as loop variable 0 (the gradient reads it as the
loop's trip count) and passes captures through as loop variables; maximum_iterations is
part of the cond function.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading

import numpy as np

from . import control_flow as _control_flow
from . import dtypes as dt
from . import nest
from .control_flow import _is_passthrough, _RelaxShapes, _to_tensor_like, body_outputs
from .errors import GraphError, StagingError
from .function_graph import FuncGraph
from .graph import Tensor, get_default_graph, graph_of
from .library import uncalled_functions
from .ops import math_ops
from .ops._helpers import is_python_number
from .ops.array_ops import cast, constant
from .ops.functional_ops import if_op, while_op

_state = threading.local()
ENV = "AUTOGRAPH_CONTROL_FLOW"


def control_flow_v2_enabled() -> bool:
    """Whether cond/while_loop build If/While now: the innermost `control_flow_v2` block
    on this thread decides, else AUTOGRAPH_CONTROL_FLOW=v2."""
    on = getattr(_state, "on", None)
    if on is not None:
        return on
    return os.environ.get(ENV, "v1").strip().lower() == "v2"


@contextlib.contextmanager
def control_flow_v2(enabled: bool = True):
    """Inside, gc.cond / gc.while_loop (and all built on them) build If / While ops
    (`enabled=False`: the v1 primitives, whatever the environment says)."""
    before = getattr(_state, "on", None)
    _state.on = bool(enabled)
    try:
        yield
    finally:
        _state.on = before


def _union_captures(fgs) -> list[Tensor]:
    """The outer tensors any of `fgs` captures, each once, in first-seen order."""
    seen, out = set(), []
    for fg in fgs:
        for outer, _ in fg.captures:
            if id(outer) not in seen:
                seen.add(id(outer))
                out.append(outer)
    return out


def _control_captures(fgs) -> list:
    seen, out = set(), []
    for fg in fgs:
        for op in fg.control_captures:
            if id(op) not in seen:
                seen.add(id(op))
                out.append(op)
    return out


# -- cond -------------------------------------------------------------------------

def cond_v2(pred: Tensor, true_fn, false_fn, name: str | None = None):
    """An If op; `pred` is a scalar bool tensor (control_flow.cond checked it)."""
    g = graph_of([pred])
    with g.name_scope(name or "cond") as scope:
        base = scope.rstrip("/")
        fgs, results = {}, {}
        for branch, fn in ((1, true_fn), (0, false_fn)):
            fgs[branch] = fg = FuncGraph(f"{base}_{'true' if branch else 'false'}", g)
            with fg.as_default():
                results[branch] = fn()
        t_out, f_out = results[1], results[0]
        if not nest.same_structure(t_out, f_out):
            raise StagingError(
                f"{base}: the true branch returns {nest.structure_description(t_out)} but the false branch "
                f"returns {nest.structure_description(f_out)}; make both branches return the same structure")
        outs = {1: [], 0: []}
        passthrough: dict[int, object] = {}
        for i, (tv, fv) in enumerate(zip(nest.flatten(t_out), nest.flatten(f_out))):
            if not isinstance(tv, Tensor) and not isinstance(fv, Tensor):
                if _is_passthrough(tv) and (tv is fv or tv == fv):
                    passthrough[i] = tv
                    continue
                if is_python_number(tv) and is_python_number(fv):
                    common = dt.as_dtype(np.result_type(type(tv), type(fv)))
                    with fgs[1].as_default():
                        tv = constant(tv, dtype=common)
                    with fgs[0].as_default():
                        fv = constant(fv, dtype=common)
            pair = {}
            for branch, v, other in ((1, tv, fv), (0, fv, tv)):
                fg = fgs[branch]
                with fg.as_default():
                    try:
                        v = _to_tensor_like(v, other if isinstance(other, Tensor) else None)
                    except TypeError as e:
                        raise StagingError(f"{base}: output {i} of the {'true' if branch else 'false'} "
                                           f"branch cannot be a graph value: {e}") from None
                    pair[branch] = fg.capture(v)
            if pair[1].dtype != pair[0].dtype:
                raise StagingError(
                    f"{base}: output {i} is {pair[1].dtype} in the true branch but {pair[0].dtype} in the "
                    "false branch; cast one so both branches return the same dtype")
            outs[1].append(pair[1])
            outs[0].append(pair[0])
        inputs = _union_captures(fgs.values())
        for branch, fg in fgs.items():
            fg.inputs = [fg.capture(u) for u in inputs]
            fg.outputs = outs[branch]
            g.add_function(fg)
        op = g.create_op(if_op, [pred, *inputs], {"then_branch": fgs[1].name, "else_branch": fgs[0].name},
                         name="If", control_inputs=_control_captures(fgs.values()))
    fgs[1].caller = fgs[0].caller = op
    it = iter(op.outputs)
    flat = [passthrough[i] if i in passthrough else next(it) for i in range(len(nest.flatten(t_out)))]
    return nest.pack_sequence_as(t_out, flat)


# -- while_loop ---------------------------------------------------------------------

def while_loop_v2(cond, body, structure, single: bool, flat: list, shapes: list, relaxable: bool,
                  parallel_iterations: int, maximum_iterations, name, names, return_same_structure: bool):
    """A While op (control_flow.while_loop checked the arguments and made `flat` tensors)."""
    g = graph_of(flat) or get_default_graph()
    for _ in range(len(flat) * 8 + 2):
        functions = set(g.library)
        try:
            return _build_while(g, cond, body, structure, single, flat, shapes, relaxable, parallel_iterations,
                                maximum_iterations, name, names, return_same_structure)
        except _RelaxShapes as r:
            shapes[r.index] = r.shape
            # the body is traced again: the functions its first trace added (its ifs' branches,
            # its loops' bodies) are called by nothing now
            g.drop_functions(uncalled_functions(g, set(g.library) - functions))
    raise GraphError("while_loop: shapes did not settle")  # pragma: no cover


def _arguments(fg: FuncGraph, flat: list, shapes: list, names: list) -> list[Tensor]:
    args = [fg.add_argument(dt.int64, (), "counter")]
    for v, s, n in zip(flat, shapes, names):
        args.append(fg.add_argument(v.dtype, s, _arg_name(n)))
        fg.initial_values[id(args[-1])] = v
    return args


def _arg_name(n: str) -> str:
    clean = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in n).strip("_")
    return clean or "arg"


def _build_while(g, cond, body, structure, single, flat, shapes, relaxable, parallel_iterations,
                 maximum_iterations, name, names, return_same_structure):
    with g.name_scope(name or "while") as scope:
        base = scope.rstrip("/")
        for v, s in zip(flat, shapes):
            if not v.shape.is_compatible_with(s):
                raise StagingError(f"while_loop: the initial value {v.name} has shape {v.shape}, which does not "
                                   f"match its shape invariant {s}")
        cfg = FuncGraph(f"{base}_cond", g)
        c_args = _arguments(cfg, flat, shapes, names)
        with cfg.as_default():
            p = cond(*nest.pack_sequence_as(structure, c_args[1:]))
            if maximum_iterations is not None:
                lim = maximum_iterations if isinstance(maximum_iterations, Tensor) else constant(
                    np.int64(maximum_iterations))
                if lim.dtype != dt.int64:
                    lim = cast(lim, dt.int64)
                below = math_ops.less(c_args[0], lim)
                p = below if p is True else (math_ops.logical_and(below, p) if isinstance(p, Tensor)
                                              else below if p else math_ops.logical_and(below, constant(False)))
            if not isinstance(p, Tensor):
                p = constant(bool(p))
            if not p.dtype.is_bool:
                raise StagingError(f"the condition of {base} must return a bool, got {p.dtype} ({p.name})")
            cfg.set_outputs([p])
        bfg = FuncGraph(f"{base}_body", g)
        b_args = _arguments(bfg, flat, shapes, names)
        with bfg.as_default():
            out = body(*nest.pack_sequence_as(structure, b_args[1:]))
            out_flat = body_outputs(base, out, structure, single, len(flat))
            new = [_to_tensor_like(v, like) for v, like in zip(out_flat, b_args[1:])]
            bfg.set_outputs([math_ops.add(b_args[0], np.int64(1))] + new)
        for k, (v, a) in enumerate(zip(bfg.outputs[1:], b_args[1:])):
            if v.dtype != a.dtype:
                raise StagingError(f"{names[k]} enters {base} as {a.dtype} but the body makes it {v.dtype}; cast "
                                   "it so it keeps one dtype")
            covering = a.shape.most_specific_compatible(v.shape)
            if covering != a.shape:
                if relaxable:
                    raise _RelaxShapes(k, covering)
                raise StagingError(f"{names[k]} has shape {a.shape} entering {base} but {v.shape} after one "
                                   "iteration; pass a shape_invariants entry with None for the changing dimensions")
        captured = _union_captures([cfg, bfg])
        cfg.inputs = c_args + [cfg.capture(u) for u in captured]
        bfg.inputs = b_args + [bfg.capture(u) for u in captured]
        bfg.outputs = bfg.outputs + bfg.inputs[len(b_args):]  # captures pass through unchanged
        g.add_function(cfg)
        g.add_function(bfg)
        with g.as_default():
            counter = constant(np.int64(0), name="counter")
        op = g.create_op(while_op, [counter, *flat, *captured],
                         {"cond": cfg.name, "body": bfg.name, "parallel_iterations": int(parallel_iterations)},
                         name="While", control_inputs=_control_captures([cfg, bfg]))
    cfg.caller = bfg.caller = op
    results = list(op.outputs[1:1 + len(flat)])
    res = nest.pack_sequence_as(structure, results)
    if single or (isinstance(structure, list) and len(structure) == 1 and not return_same_structure):
        return res[0]
    return res


def iteration_count(while_op_) -> Tensor:
    """How many times a While op ran its body (its output 0)."""
    return while_op_.outputs[0]


_control_flow.V2 = sys.modules[__name__]  # gc.cond / gc.while_loop dispatch here when v2 is on

__all__ = ["control_flow_v2", "control_flow_v2_enabled", "cond_v2", "iteration_count", "while_loop_v2"]
