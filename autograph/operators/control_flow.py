"""`if_stmt`, `while_stmt`, `for_stmt` and `if_exp`: Python semantics when the condition
or iterable is a Python value, a graph cond / while loop when it is a tensor.

Converted code hands each operator its body functions and the statement's state
(`get_state` / `set_state`, with the variables' names for error messages). Graph
versions make every state variable a cond output or loop variable:

* Python numbers are weak: they take the dtype the tensors give them (`x = 1`, then
  `x = x / 2` in a tensor loop is float64); two different tensor dtypes are an error
  naming the variable and both dtypes.
* A variable that one branch leaves undefined stays `Undefined` after the cond (an
  error only if read); one undefined before a loop starts as zeros of the dtype and
  shape the body gives it (so `return` works from inside nested tensor loops).
* A Python list appended to in a tensor loop is staged as a tensor list and stacked
  after the loop.
* Branches and loop bodies are traced first with a provisional plan; when the plan has
  to change (a weak type, an undefined variable, a side effect to sequence) the partial
  graph is rolled back and traced again.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

import graphcore as gc
from graphcore.errors import StagingError

from . import effects
from .staging import (Replan, checkpoint, describe, is_number, is_special, is_tensor, is_weak, join_dtypes,
                      location, natural_dtype, rollback, to_tensor, zeros_like_spec)
from .variables import Undefined, is_undefined

State = tuple


# -- if ------------------------------------------------------------------------------

def if_stmt(cond, body: Callable, orelse: Callable, get_state: Callable, set_state: Callable,
            names: Sequence[str], nouts: int, line: int) -> None:
    """`if cond: body() else: orelse()`, staged as a graph cond when `cond` is a tensor."""
    if is_tensor(cond):
        _graph_if(cond, body, orelse, get_state, set_state, names, nouts, line)
    elif cond:
        body()
    else:
        orelse()


def _branch_plan(names, true_vals, false_vals, line) -> list:
    """Per output: ('t', dtype) a cond output, ('py', v) the same Python value on both
    sides, ('undef',) undefined after the cond, ('zeros', t) a return value one side sets."""
    plan = []
    for name, a, b in zip(names, true_vals, false_vals):
        if is_undefined(a) or is_undefined(b):
            defined = b if is_undefined(a) else a
            if is_special(name) and not is_undefined(defined) and (is_tensor(defined) or is_number(defined)):
                plan.append(("zeros", natural_dtype(defined), defined))
            else:
                plan.append(("undef",))
        elif not is_tensor(a) and not is_tensor(b) and (a is b or (type(a) is type(b) and _same(a, b))):
            plan.append(("py", a))
        elif (is_tensor(a) or is_number(a)) and (is_tensor(b) or is_number(b)):
            plan.append(("t", join_dtypes(name, a, b, "in the if branch", "in the else branch", line)))
        else:
            raise StagingError(
                f"{location(line)}: '{name}' is {describe(a)} in the if branch but {describe(b)} in the else "
                "branch of a condition on a tensor; both branches must give it a tensor (or the same Python value).")
    return plan


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 (arrays and odd objects: treat as different)
        return False


def _apply_branch(plan, vals):
    out = []
    for entry, v in zip(plan, vals):
        if entry[0] == "t":
            out.append(to_tensor(v, entry[1]))
        elif entry[0] == "zeros":
            out.append(zeros_like_spec(to_tensor(entry[2], entry[1])) if is_undefined(v) else to_tensor(v, entry[1]))
    return out


def _provisional(vals):
    return [gc.constant(v) if is_weak(v) else v for v in vals]


def _fits(plan, provisional) -> bool:
    return all(e[0] == "t" and is_tensor(v) and v.dtype == e[1] for e, v in zip(plan, provisional))


def _graph_if(cond, body, orelse, get_state, set_state, names, nouts, line) -> None:
    init = tuple(get_state())
    out_names = list(names[:nouts])
    outer = effects.current()
    can_chain = outer is not None and outer.token is not None
    plan, use_token = None, False
    for _ in range(4):
        mark = checkpoint()
        seen: dict = {}

        def make(fn, branch, plan=plan, use_token=use_token, seen=seen):
            def run():
                set_state(init)
                token = gc.identity(outer.token) if use_token else None
                with effects.chain_scope(token) as chain:
                    fn()
                vals = list(get_state())[:nouts]
                seen[branch] = (vals, chain.effects)
                tail = [chain.token] if use_token else []
                if plan is not None:
                    return _apply_branch(plan, vals) + tail
                if branch == 1:
                    return _provisional(vals) + tail
                new_plan = _branch_plan(out_names, seen[1][0], vals, line)
                wants_token = can_chain and not use_token and (seen[1][1] + chain.effects) > 0
                if wants_token or not _fits(new_plan, _provisional_cache[0]):
                    raise Replan((new_plan, use_token or wants_token))
                return _apply_branch(new_plan, vals) + tail
            return run

        _provisional_cache = [None]
        true_fn = make(body, 1)

        def true_wrapped(true_fn=true_fn):
            out = true_fn()
            _provisional_cache[0] = out[:len(out) - (1 if use_token else 0)]
            return out

        try:
            outs = gc.cond(cond, true_wrapped, make(orelse, 0))
        except Replan as r:
            rollback(mark)
            plan, use_token = r.plan
            continue
        if plan is None:
            plan = _branch_plan(out_names, seen[1][0], seen[0][0], line)
        break
    else:  # pragma: no cover
        raise StagingError(f"{location(line)}: could not stage the if statement")
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    result, k = [], 0
    for name, entry in zip(out_names, plan):
        if entry[0] in ("t", "zeros"):
            result.append(outs[k])
            k += 1
        elif entry[0] == "py":
            result.append(entry[1])
        else:
            result.append(Undefined(name, line))
    if outer is not None:
        outer.effects += seen[1][1] + seen[0][1]
        if use_token:
            outer.token = outs[k]
    set_state(tuple(result) + init[nouts:])


def if_exp(cond, true_fn: Callable, false_fn: Callable, line: int = 0):
    """`true_fn() if cond else false_fn()`, a graph cond when `cond` is a tensor."""
    if not is_tensor(cond):
        return true_fn() if cond else false_fn()
    box = [Undefined("<if expression>", line)]

    def get_state():
        return (box[0],)

    def set_state(v):
        box[0] = v[0]

    def run(fn):
        return lambda: set_state((fn(),))

    _graph_if(cond, run(true_fn), run(false_fn), get_state, set_state, ("<if expression>",), 1, line)
    return box[0]


# -- while -----------------------------------------------------------------------------

def while_stmt(test: Callable, body: Callable, get_state: Callable, set_state: Callable, names: Sequence[str],
               nouts: int, line: int) -> None:
    """`while test(): body()`. Runs as Python while the test is a Python value; once it
    is a tensor, the rest of the loop is a graph while loop."""
    while True:
        mark = checkpoint()
        c = test()
        if is_tensor(c):
            rollback(mark)
            _graph_while(test, body, get_state, set_state, names, line)
            return
        if not c:
            return
        body()


def _loop_plan(names, init, after, line) -> list:
    """Per state variable: ('t', dtype), ('zeros', dtype, example), ('list', elem_dtype, shape),
    ('py', value) or ('undef',)."""
    plan = []
    for name, a, b in zip(names, init, after):
        if is_undefined(b) and not is_undefined(a):
            raise StagingError(f"{location(line)}: '{name}' becomes undefined inside the loop")
        if isinstance(a, list):
            if not isinstance(b, list) or len(b) < len(a):
                raise StagingError(f"{location(line)}: '{name}' is a Python list before the loop but "
                                   f"{describe(b)} after one iteration of a loop on a tensor")
            if len(b) == len(a):
                plan.append(("py", a))
                continue
            new = b[len(a):]
            dtype = natural_dtype(new[0])
            shape = new[0].shape if is_tensor(new[0]) else np.shape(new[0])
            plan.append(("list", dtype, shape))
        elif is_undefined(a):
            if is_undefined(b):
                plan.append(("undef",))
            elif is_tensor(b) or is_number(b):
                plan.append(("zeros", natural_dtype(b), b))
            else:
                raise StagingError(
                    f"{location(line)}: '{name}' is undefined before the loop and {describe(b)} after one "
                    "iteration of a loop on a tensor; define it before the loop.")
        elif is_tensor(a) or is_number(a):
            if not (is_tensor(b) or is_number(b)):
                raise StagingError(f"{location(line)}: '{name}' is {describe(a)} before the loop but {describe(b)} "
                                   "after one iteration of a loop on a tensor")
            if is_tensor(a) and is_tensor(b) and a.dtype != b.dtype:
                raise StagingError(
                    f"{location(line)}: '{name}' is {a.dtype} before the loop but {b.dtype} after one iteration; a "
                    "loop variable must keep one dtype. Cast it (graphcore.cast) before or inside the loop.")
            plan.append(("t", join_dtypes(name, a, b, "before the loop", "after one iteration", line)))
        elif a is b:
            plan.append(("py", a))
        else:
            raise StagingError(
                f"{location(line)}: '{name}' is {describe(a)} that changes inside a loop on a tensor; only "
                "tensors, Python numbers and lists can change in a graph loop.")
    return plan


def _dry_run(body, get_state, set_state, init) -> tuple[list, int]:
    """Trace the body once outside any loop to learn what it makes of each variable,
    then remove what it built."""
    mark = checkpoint()
    dry = tuple(list(v) if isinstance(v, list) else v for v in init)
    try:
        set_state(dry)
        with effects.chain_scope(None) as chain:
            body()
        after = list(get_state())
    finally:
        rollback(mark)
        set_state(init)
    return after, chain.effects


def _graph_while(test, body, get_state, set_state, names, line) -> None:
    init = tuple(get_state())
    names = list(names)
    outer = effects.current()
    can_chain = outer is not None and outer.token is not None
    n_effects = 0
    if all(is_tensor(v) for v in init):
        plan = [("t", v.dtype) for v in init]
        use_token = False
    else:
        after, n_effects = _dry_run(body, get_state, set_state, init)
        plan = _loop_plan(names, init, after, line)
        use_token = can_chain and n_effects > 0
    for _ in range(3):
        mark = checkpoint()
        try:
            outs, body_effects = _build_while(test, body, get_state, set_state, names, init, plan, use_token,
                                              can_chain, line)
        except Replan:
            rollback(mark)
            use_token = True
            continue
        break
    else:  # pragma: no cover
        raise StagingError(f"{location(line)}: could not stage the loop")
    if outer is not None:
        outer.effects += body_effects
        if use_token:
            outer.token = outs[-1]


def _build_while(test, body, get_state, set_state, names, init, plan, use_token, can_chain, line):
    loop_init, var_names = [], []
    for name, entry, v in zip(names, plan, init):
        kind = entry[0]
        if kind == "t":
            loop_init.append(to_tensor(v, entry[1]))
        elif kind == "zeros":
            loop_init.append(zeros_like_spec(to_tensor(entry[2], entry[1])) if is_tensor(entry[2])
                             else to_tensor(0, entry[1]))
        elif kind == "list":
            lst = gc.tensor_list_new(entry[1])
            for e in v:
                lst = gc.tensor_list_push_back(lst, to_tensor(e, entry[1]))
            loop_init.append(lst)
        else:
            continue
        var_names.append(f"'{name}'")
    if use_token:
        loop_init.append(effects.current().token)
        var_names.append("the side-effect token")
    if not loop_init:
        loop_init.append(gc.constant(np.int32(0)))
        var_names.append("a dummy loop variable")
    n_vars = len(loop_init)
    counted = [0]

    def assemble(vals) -> State:
        out, k = [], 0
        for name, entry in zip(names, plan):
            if entry[0] in ("t", "zeros", "list"):
                out.append(vals[k])
                k += 1
            elif entry[0] == "py":
                out.append(entry[1])
            else:
                out.append(Undefined(name, line))
        return tuple(out)

    def cond_fn(*vals):
        set_state(assemble(vals))
        c = test()
        return c if is_tensor(c) else gc.constant(bool(c))

    def body_fn(*vals):
        set_state(assemble(vals))
        token = vals[-1] if use_token else None
        with effects.chain_scope(token) as chain:
            body()
        counted[0] = chain.effects
        if chain.effects and can_chain and not use_token:
            raise Replan(None)
        after = get_state()
        new = []
        for name, entry, v in zip(names, plan, after):
            kind = entry[0]
            if kind in ("t", "zeros"):
                if is_undefined(v):
                    raise StagingError(f"{location(line)}: '{name}' becomes undefined inside the loop")
                if is_tensor(v) and v.dtype != entry[1] and v.dtype.is_numeric and not is_weak(v):
                    raise StagingError(
                        f"{location(line)}: '{name}' is {entry[1]} before the loop but {v.dtype} after an "
                        "iteration; a loop variable must keep one dtype. Cast it (graphcore.cast).")
                new.append(to_tensor(v, entry[1]) if not is_tensor(v) else v)
            elif kind == "list":
                new.append(v)
            elif kind == "py" and v is not entry[1] and not (isinstance(entry[1], list) and v == entry[1]):
                raise StagingError(f"{location(line)}: '{name}' is {describe(entry[1])} that changes inside a loop "
                                   "on a tensor; only tensors, Python numbers and lists can change in a graph loop.")
        if use_token:
            new.append(chain.token)
        while len(new) < n_vars:
            new.append(vals[len(new)])
        return new

    outs = gc.while_loop(cond_fn, body_fn, loop_init, loop_var_names=var_names, return_same_structure=True)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    final = list(assemble(outs))
    for i, entry in enumerate(plan):
        if entry[0] == "list":
            final[i] = gc.tensor_list_stack(final[i], entry[1])
    set_state(tuple(final))
    return outs, counted[0]


# -- for -------------------------------------------------------------------------------

class TensorRange:
    """`range(...)` with a tensor bound: iterated by a graph loop."""

    def __init__(self, start, limit, delta):
        self.start, self.limit, self.delta = start, limit, delta


class TensorEnumerate:
    """`enumerate(t)` of a tensor: a graph loop yielding (index, row)."""

    def __init__(self, tensor, start=0):
        self.tensor, self.start = tensor, start


def for_stmt(iterated, extra_test: Callable | None, body: Callable, get_state: Callable, set_state: Callable,
             names: Sequence[str], nouts: int, line: int) -> None:
    """`for x in iterated: body(x)` (stopping when `extra_test()` is false, for lowered
    break / return). A tensor, `range` with a tensor bound, or `enumerate` of a tensor
    gives a graph loop; Python iterables are unrolled as Python."""
    if is_tensor(iterated):
        n = gc.shape(iterated)[0]
        _graph_for(n, lambda k: iterated[k], extra_test, body, get_state, set_state, names, line)
        return
    if isinstance(iterated, TensorRange):
        dtype = gc.int64
        start, limit, delta = (to_tensor(v, dtype) for v in (iterated.start, iterated.limit, iterated.delta))
        n = gc.maximum((limit - start + delta - gc.sign(delta)) // delta, to_tensor(0, dtype))
        _graph_for(n, lambda k: start + k * delta, extra_test, body, get_state, set_state, names, line)
        return
    if isinstance(iterated, TensorEnumerate):
        t, s = iterated.tensor, iterated.start
        n = gc.shape(t)[0]
        _graph_for(n, lambda k: (k + s, t[k]), extra_test, body, get_state, set_state, names, line)
        return
    it = iter(iterated)
    for x in it:
        if extra_test is not None:
            t = extra_test()
            if is_tensor(t):
                _py_for_under_tensor_test(x, it, t, extra_test, body, get_state, set_state, names, line)
                return
            if not t:
                break
        body(x)


def _py_for_under_tensor_test(x, it, t, extra_test, body, get_state, set_state, names, line) -> None:
    """A Python loop whose break / return flag became a tensor: each remaining iteration
    runs inside a graph cond on the flag."""
    n = len(names)
    while True:
        if_stmt(t, lambda x=x: body(x), lambda: None, get_state, set_state, names, n, line)
        try:
            x = next(it)
        except StopIteration:
            return
        t = extra_test()
        if not is_tensor(t) and not t:
            return


def _graph_for(n, item: Callable, extra_test, body, get_state, set_state, names, line) -> None:
    n = to_tensor(n, gc.int64) if not (is_tensor(n) and n.dtype == gc.int64) else n
    box = [to_tensor(0, gc.int64)]

    def get2():
        return tuple(get_state()) + (box[0],)

    def set2(vals):
        set_state(tuple(vals[:-1]))
        box[0] = vals[-1]

    def test2():
        c = box[0] < n
        if extra_test is None:
            return c
        from .logical import and_  # noqa: PLC0415

        return and_(lambda: c, extra_test)

    def body2():
        k = box[0]
        body(item(k))
        box[0] = k + 1

    _graph_while(test2, body2, get2, set2, list(names) + ["<loop counter>"], line)
