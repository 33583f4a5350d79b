"""`while_stmt` and `for_stmt`: Python loops on Python values, graph while loops once the
test (or the iterable) is a tensor.

Every state variable of a graph loop becomes a loop variable, by a plan learnt from a
dry run of the body (traced once outside any loop, then rolled back), corrected by the
real body (`_Loop._next` replans when the body, on loop variables, takes a path the dry
run on the values before the loop did not: a variable defined, retyped, opened up as a
tuple, or made strongly typed):

* Python numbers are weak: `x = 1`, then `x = x / 2` in a tensor loop is float64; a
  counter `k = 0; k += 1` stays weak (Tensor.weak) and takes the dtype of the tensors it
  meets; a strong tensor that changes dtype is an error naming the variable and both.
* A variable whose Python type changes with the iterations (`total = 0`, then `total += v`
  of floats: the int 0 until the first iteration runs) carries a kind tag loop variable
  (path_types), learnt like the dtypes (the kinds only grow, so replanning settles).
* A variable first assigned inside the loop starts as zeros (of the dtype and shape
  the body gives it) and carries a 'defined' flag (false until the body runs once), so
  reading it after a loop that ran zero times fails at run time (see maybe_defined).
* A Python list appended to in the loop is staged as a tensor list and stacked after
  the loop; a container whose items are assigned is carried item by item (state.py).
* A value the body leaves as it is stays outside the loop (no loop variable).
* Print / Assert in the test and the body are sequenced through a token loop variable
  (effects); a Python exception raised while tracing the body fails the run only if an
  iteration runs (exceptions.STAGED_EXCEPTIONS).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

import graphcore as gc
from graphcore.errors import StagingError

from . import effects, exceptions, maybe_defined, path_types, side_effects
from .augmented import InPlaceAliasError
from .conditionals import if_stmt, learnt_plans
from .data_structures import copy_containers, unchanged
from .iterables import GraphIterable, as_graph_iterable
from .staging import (Replan, as_test, checkpoint, describe, dry_running, fill_dims, in_dry_run, is_array_value,
                      is_number, is_special, is_tensor, is_value, is_weak, join_dtypes, join_kinds, location, mark_weak,
                      natural_dtype, rollback, runtime_object_pair, same_python_value, to_tensor, truth, zeros)
from .staged_lists import StagedList, list_kinds
from .state import FlatState, ShapeChanged, check_item_targets, is_container, leaves
from .variables import PartialReturn, Undefined, is_undefined, returned_none


def while_stmt(test: Callable, body: Callable, get_state: Callable, set_state: Callable, names: Sequence[str],
               nouts: int, line: int) -> None:
    """`while test(): body()`. Runs as Python while the test is a Python value; once it
    is a tensor, the rest of the loop is a graph while loop."""
    while True:
        mark = checkpoint()
        c = as_test(test())
        if is_tensor(c):
            rollback(mark)
            _graph_while(test, body, get_state, set_state, names, line,
                         site=("while", getattr(body, "__code__", None), line))
            return
        if not c:
            return
        body()


def for_stmt(iterated, extra_test: Callable | None, body: Callable, get_state: Callable, set_state: Callable,
             names: Sequence[str], nouts: int, line: int) -> None:
    """`for x in iterated: body(x)`, stopping when `extra_test()` is false (lowered
    break / return). A GraphIterable (a tensor, `range` with a tensor bound, `enumerate`
    or `zip` of tensors) gives a graph loop; Python iterables run as Python."""
    if is_tensor(iterated) and iterated.dtype is gc.pyobject:  # str(x), s.split(): its items are run-time values
        raise StagingError(
            f"{location(line)}: a for loop over a run-time Python object (a string or list made from a tensor, "
            f"{iterated.op.name}): how many items it has is known only when the graph runs. Loop over "
            f"range(len(s)) and index s[i], or compute the result in one Python call (autograph.py_function)")
    staged = as_graph_iterable(iterated)
    if staged is not None:
        _graph_for(staged, extra_test, body, get_state, set_state, names, line,
                   site=("for", type(staged), getattr(body, "__code__", None), extra_test is None, line))
        return
    side_effects.check_advance(iterated, "this for loop", line)  # (an iterator made outside a loop or if on a tensor)
    it = iter(iterated)
    for x in it:
        if extra_test is not None:
            t = as_test(extra_test())
            if is_tensor(t):
                if it is iterated:  # the user's iterator: how far it goes is decided when the graph runs
                    side_effects.lose_position(it, line)
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
        t = as_test(extra_test())
        if not is_tensor(t) and not t:
            return


def _graph_for(iterable: GraphIterable, extra_test, body, get_state, set_state, names, line, site=None) -> None:
    """A graph while loop over a hidden counter k < length, calling body(item(k))."""
    n = iterable.length()
    n = n if is_tensor(n) and n.dtype == gc.int64 else to_tensor(n, gc.int64)
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
        from .logical import and_  # noqa: PLC0415 (logical builds on conditionals, as we do)

        return and_(lambda: c, extra_test)

    def body2():
        k = box[0]
        body(iterable.item(k))
        box[0] = k + np.int64(1)  # (an int64 step: the counter cannot pass n, so no Python int check)

    _graph_while(test2, body2, get2, set2, list(names) + ["<loop counter>"], line, site=site)


# -- the plan ----------------------------------------------------------------------------
# One entry per (flattened) state variable:
#   ("t", dtype, fill, flagged)  a loop variable; `fill`: the shape of the zeros it starts
#                                as when undefined before the loop; `flagged`: it carries
#                                a defined flag
#   ("list", dtype, shape)       a Python list appended to: a tensor list, a StagedList after
#   ("py", value)                a Python value (or tensor) the loop leaves as it is
#   ("undef",)                   undefined before and after

def _loop_plan(names, init, after, line) -> list:
    plan = []
    for name, a, b in zip(names, init, after):
        if is_undefined(b) and not is_undefined(a):
            raise StagingError(f"{location(line)}: '{name}' becomes undefined inside the loop")
        if isinstance(a, (list, StagedList)):
            plan.append(_list_plan(name, a, b, line))
        elif is_undefined(a):
            plan.append(_undefined_entry(name, b, line))
        elif is_special(name) and returned_none(a) and returned_none(b):
            plan.append(("py", PartialReturn(None)))  # None returned before the loop or inside it
        elif is_special(name) and returned_none(b) and is_value(a):
            plan.append(("t", natural_dtype(a), fill_dims(a), True))  # a value before, None returned inside
        elif is_special(name) and isinstance(a, PartialReturn) and is_value(b):
            plan.append(("t", natural_dtype(b), fill_dims(b), True))  # None returned before, a value inside
        elif a is b and is_tensor(a) and not maybe_defined.needs_flag(a):
            plan.append(("py", a))  # provisional: promoted to a loop variable if the real body changes it
        elif a is not b and runtime_object_pair(a, b):  # `s = ""`, then `s = s + str(i)`: a run-time string
            plan.append(("t", gc.pyobject, None, False))
        elif is_tensor(a) or is_number(a) or (is_array_value(a) and not unchanged(a, b)):
            if not is_value(b):
                raise StagingError(f"{location(line)}: '{name}' is {describe(a)} before the loop but {describe(b)} "
                                   "after one iteration of a loop on a tensor")
            _check_dtype(name, a, b, "before the loop", "after one iteration", line)
            dtype = join_dtypes(name, a, b, "before the loop", "after one iteration", line)
            plan.append(("t", dtype, None, maybe_defined.needs_flag(a) or maybe_defined.needs_flag(b)))
        elif same_python_value(a, b):
            plan.append(("py", a))
        else:
            hint = (" Start it with a number instead of None (e.g. -np.inf, or the first item)."
                    if a is None and is_value(b) else "")
            raise StagingError(
                f"{location(line)}: '{name}' is {describe(a)} that changes inside a loop on a tensor; only "
                "tensors, Python numbers and containers of them can change in a graph loop." + hint)
    return plan


def _undefined_entry(name, value, line):
    """The plan of a variable undefined before the loop that is `value` after the body."""
    if is_undefined(value):
        return ("undef",)
    if is_special(name) and returned_none(value):  # `return` (of None) inside the loop
        return ("py", PartialReturn(None))
    if not is_value(value):
        raise StagingError(f"{location(line)}: '{name}' is undefined before the loop and {describe(value)} after an "
                           "iteration of a loop on a tensor; define it before the loop.")
    return ("t", natural_dtype(value), fill_dims(value), not is_special(name) or maybe_defined.needs_flag(value))


def _list_plan(name, a, b, line):
    if isinstance(b, StagedList):  # appended to by the body, or by a loop inside it
        if b is a:
            return ("py", a)
        if isinstance(a, list) and any(natural_dtype(x) != b.dtype for x in a if is_tensor(x) or is_number(x)):
            raise StagingError(f"{location(line)}: the list '{name}' holds values of another dtype than the "
                               f"{b.dtype} values the loop appends to it; give every element one dtype")
        return ("list", b.dtype, b.shape)
    if isinstance(a, StagedList):
        raise StagingError(f"{location(line)}: '{name}' is a list appended to in an earlier graph loop but "
                           f"{describe(b)} after one iteration of this one; keep it a list")
    if not isinstance(b, list) or len(b) < len(a):
        raise StagingError(f"{location(line)}: '{name}' is a Python list before the loop but "
                           f"{describe(b)} after one iteration of a loop on a tensor")
    if len(b) == len(a):
        return ("py", a)
    if not all(unchanged(x, y) for x, y in zip(a, b)):
        raise StagingError(f"{location(line)}: the Python list '{name}' is both appended to and changed item by "
                           "item inside a loop on a tensor; do one or the other.")
    new = b[len(a)]
    mixed = next((x for x in a if (is_tensor(x) or is_number(x)) and is_value(new)
                  and (natural_dtype(x) == gc.bool_) != (natural_dtype(new) == gc.bool_)), None)
    if mixed is not None:  # (a graph list has one dtype: 0 would become False)
        raise StagingError(f"{location(line)}: the list '{name}' holds {describe(mixed)} before the loop and the loop "
                           f"appends {describe(new)}: a list built in a graph loop has one dtype, so one kind would "
                           f"become the other (0 would become False), where Python's list keeps both. Start it with "
                           f"items of the kind the loop appends, or append int(...) / bool(...) of them.")
    if not is_value(new):
        what = "a function" if callable(new) else "None" if new is None else f"a {type(new).__name__}"
        raise StagingError(f"{location(line)}: '{name}' is appended {what} inside a loop on a tensor: a list built in "
                           "a graph loop holds numbers and arrays, and how many items it gets is known only when the "
                           "graph runs. Build such a list before the loop (over a Python range), or append the "
                           "numbers it would give.")
    return ("list", natural_dtype(new), new.shape if is_tensor(new) else np.shape(new))


def _check_dtype(name, a, b, what_a, what_b, line) -> None:
    if is_tensor(a) and is_tensor(b) and a.dtype != b.dtype and not (is_weak(a) or is_weak(b)):
        raise StagingError(
            f"{location(line)}: '{name}' is {a.dtype} {what_a} but {b.dtype} {what_b}; a loop variable must "
            "keep one dtype. Cast it (graphcore.cast) before or inside the loop.")


def _dry_run(body, get_state, set_state, init) -> tuple[list, int]:
    """Trace the body once outside any loop to learn what it makes of each variable,
    then remove what it built. On the values before the loop the body may take a path
    the real one never does; if that path fails, the plan is left to the real body
    (the loop replans as it learns: see _Loop._next)."""
    mark, changes = checkpoint(), side_effects.outside_changes()
    try:
        set_state(copy_containers(init))
        with dry_running(), effects.chain_scope(None) as chain:
            body()
        after = list(get_state())
    except InPlaceAliasError:  # as in Python's first iteration: the real body would not see the alias
        raise
    except (Replan, StagingError, ArithmeticError, LookupError, TypeError, ValueError):
        after = list(init)
    finally:
        rollback(mark)
        set_state(init)
    side_effects.refuse_if_redone(changes, "a loop")  # (the real body is traced next)
    return after, chain.effects


def _dry_run_plan(body, get_state, set_state, names, init, can_chain, line):
    """The state view, plan, whether to chain effects, and the Python types the body gives
    each variable, learnt from a dry run of the body."""
    after, n_effects = _dry_run(body, get_state, set_state, init)
    state = _open_containers(get_state, set_state, names, init, after, line)
    plan = _loop_plan(state.names, state.flatten(init), state.flatten(after), line)
    kinds = {i: k for i, k in enumerate(map(path_types.kinds_of, state.flatten(after)))
             if plan[i][0] == "t" and isinstance(k, frozenset)}  # what the dry run's body gives them
    return state, plan, can_chain and n_effects > 0, kinds


# Python numbers (and numpy scalars) of these types become loop variables of their natural dtype
_GUESSABLE_NUMBERS = (bool, int, float, np.bool_, np.int32, np.int64, np.float32, np.float64)


def _guessed_plan(names, init) -> list | None:
    """The plan a dry run would most likely give when every variable is a tensor or a Python
    or numpy number (a loop variable of its own dtype each), or None for anything else.
    The body is then traced once, as the loop's body, instead of twice (a dry run, then
    the body), and a loop nested d deep no longer has its body traced 2**d times. The
    guess is checked by that trace (_Loop with `guessed`): a body that changes a
    variable's dtype, strength, Python type or defined flag, leaves a tensor as it is,
    has effects to chain or fails in any way makes the loop plan from a dry run after
    all, so the graph is the one the dry run's plan gives."""
    plan = []
    for name, v in zip(names, init):
        if is_special(name):
            return None
        if is_tensor(v):
            plan.append(("t", v.dtype, None, maybe_defined.needs_flag(v)))
        elif type(v) in _GUESSABLE_NUMBERS and not (type(v) is int and not -2**63 <= v < 2**63):
            plan.append(("t", natural_dtype(v), None, False))
        else:
            return None
    return plan


def _open_containers(get_state, set_state, names, init, after, line) -> FlatState:
    """Containers are carried item by item, except lists the body appends to."""
    templates = []
    for name, a, b in zip(names, init, after):
        grows = isinstance(a, list) and (isinstance(b, StagedList) or isinstance(b, list) and len(b) > len(a))
        if (is_undefined(a) or (is_special(name) and returned_none(a))) and is_container(b):
            templates.append(b)  # e.g. `return i, j` from inside the loop
        else:
            templates.append(a if is_container(a) and not grows else None)
    return FlatState(get_state, set_state, names, len(names), templates, "loop", line)


# -- what an earlier trace of the same loop learnt ---------------------------------------------
# A loop nested in another is traced in the outer loop's dry run, again in its real body, and
# again in each replan of it, and each time it dry-ran its own body before building it, so the
# innermost body was traced 2**depth times (and each if in it as often). The plan a loop settles
# on is kept per site (conditionals.learnt_plans); where the loop is met again with variables of
# the same kinds (tensor or Python number, dtype, weak, defined flag, path types; no containers),
# it is built with that plan at once, and a body that needs more replans as usual.

def _signature(v):
    """What of a value before the loop its plan depends on; None: not reusable (a container)."""
    if is_undefined(v):
        return ("undef",)
    if isinstance(v, PartialReturn):
        return ("partial",) if v.value is None else None
    if v is None:
        return ("none",)
    if is_tensor(v) or is_number(v):
        k = path_types.kinds_of(v)
        return ("value", is_tensor(v), natural_dtype(v), is_weak(v), maybe_defined.needs_flag(v),
                "untracked" if isinstance(k, path_types.Untracked) else k)
    return None


def _reused(site, get_state, set_state, names, init, can_chain, line):
    """The state view, plan (and what goes with them) an earlier trace of this loop settled
    on, if the values `init` before the loop are of the same kinds as then; else None."""
    if site is None:
        return None
    got = learnt_plans().get((site, tuple(names), can_chain))
    if got is None:
        return None
    templates, sig, plan, strong, kinds, use_token, summary = got
    state = FlatState(get_state, set_state, names, len(names), templates, "loop", line)
    try:
        flat = state.flatten(init)
    except ShapeChanged:
        return None
    if [_signature(v) for v in flat] != sig:
        return None
    plan = [("py", flat[i]) if e[0] == "py" and e[1] is None and is_tensor(flat[i]) else e
            for i, e in enumerate(plan)]
    return state, plan, set(strong), dict(kinds), use_token, summary


def _skeleton(template):
    """A container's structure without its values (the table must not keep the graph's tensors
    alive: it is keyed weakly by the graph)."""
    if isinstance(template, dict):
        return {k: _skeleton(v) for k, v in template.items()}
    if isinstance(template, (list, tuple)):
        items = [_skeleton(v) for v in template]
        return type(template)(*items) if hasattr(template, "_fields") else type(template)(items)
    return None


def _learn(site, names, can_chain, state, init, plan, strong, kinds, use_token, loop) -> None:
    """Keep the plan this loop settled on for its next trace (not for lists appended to),
    with the shapes its loop variables leave with and the effects its body has."""
    if site is None or any(e[0] == "list" for e in plan) or loop.summary is not None:
        return
    sig = [_signature(v) for v in state.flatten(init)]
    if any(x is None for x in sig):
        return
    plan = [("py", None) if e[0] == "py" and is_tensor(e[1]) else e for e in plan]  # (remapped when reused)
    learnt_plans()[(site, tuple(names), can_chain)] = (
        list(map(_skeleton, state.templates)), sig, plan, frozenset(strong), dict(kinds), use_token,
        (loop.out_shapes, loop.effects))


def _graph_while(test, body, get_state, set_state, names, line, site=None) -> None:
    init = tuple(get_state())
    outer = effects.current()
    can_chain = outer is not None and outer.token is not None
    use_token = False
    summary = None
    reused = None if all(is_tensor(v) for v in init) else _reused(site, get_state, set_state, names, init,
                                                                    can_chain, line)
    guessed = False  # the plan is guessed from the values before the loop (see _guessed_plan)
    if all(is_tensor(v) for v in init):
        state = FlatState(get_state, set_state, names, len(names), [None] * len(init), "loop", line)
        plan = [("t", v.dtype, None, maybe_defined.needs_flag(v)) for v in init]
    elif reused is not None:
        check_item_targets(names, init, "loop", line)
        state, plan, strong_learnt, kinds, use_token, summary = reused
    else:
        check_item_targets(names, init, "loop", line)
        plan = _guessed_plan(names, init)
        if plan is not None:
            guessed = True
            state = FlatState(get_state, set_state, names, len(names), [None] * len(init), "loop", line)
            kinds = {}
        else:
            state, plan, use_token, kinds = _dry_run_plan(body, get_state, set_state, names, init, can_chain, line)
    strong: set[int] = set()  # variables weak before the loop that the body makes strongly typed
    if all(is_tensor(v) for v in init):
        kinds = {}
    elif reused is not None:
        strong = strong_learnt
    # In a dry run (of an enclosing loop), a loop whose plan is known is not traced again: its
    # variables leave it as that plan makes them (the real trace of the enclosing loop builds it).
    # Else each enclosing level's dry run traced it, and the traces grew with depth squared.
    summary = summary if reused is not None and in_dry_run() else None
    for _ in range(3 + 5 * len(plan)):
        mark, changes = checkpoint(), side_effects.outside_changes()
        loop = _Loop(test, body, state, plan, use_token, line, strong, kinds, summary, guessed)
        try:
            loop.build()
        except BaseException as e:
            rollback(mark)  # no half-built loop left behind, nor variables bound to its tensors
            if isinstance(e, Exception) and side_effects.outside_changes() != changes:
                set_state(init)
                side_effects.refuse_if_redone(changes, "a loop")  # (it would be traced again)
            if guessed and isinstance(e, Exception):  # the guess did not hold: plan as for any other loop
                guessed = False
                set_state(init)
                state, plan, use_token, kinds = _dry_run_plan(body, get_state, set_state, names, init, can_chain,
                                                              line)
                continue
            if summary is not None:  # (it did not fit here: build it)
                summary = None
                set_state(init)
                continue
            if not isinstance(e, Replan):
                set_state(init)
                raise
            r = e
            set_state(init)  # the failed build left the variables bound to rolled-back tensors
            if r.plan is None:
                use_token = True
            elif r.plan[0] == "open":
                _, i, value = r.plan
                state = state.open_leaf(i, value)
                new = [_undefined_entry(state.names[i + k], x, line) for k, x in enumerate(leaves(value))]
                if plan[i][0] == "py" and returned_none(plan[i][1]):  # None was returned before: flagged
                    new = [(e[0], e[1], e[2], True) if e[0] == "t" else e for e in new]
                plan[i:i + 1] = new
                strong = {j + len(new) - 1 if j > i else j for j in strong}
                kinds = {j + len(new) - 1 if j > i else j: k for j, k in kinds.items() if j != i}
            elif r.plan[0] == "partial":  # the real body returns None where the dry run did not return
                plan[r.plan[1]] = ("py", r.plan[2])
            elif r.plan[0] == "strong":
                strong.add(r.plan[1])
            elif r.plan[0] == "kinds":  # the body gives a variable a Python type it did not have (path_types)
                kinds[r.plan[1]] = r.plan[2]
            elif r.plan[0] == "promote":  # a tensor the dry run left alone changes in the real body
                i = r.plan[1]
                plan[i] = ("t", plan[i][1].dtype, None, False)
            else:  # the real body gives a variable another dtype, or defines it, unlike the dry run
                _, i, dtype, flagged, *fill = r.plan
                plan[i] = ("t", dtype, fill[0] if fill else plan[i][2] if plan[i][0] == "t" else None, flagged)
            continue
        break
    else:  # pragma: no cover
        raise StagingError(f"{location(line)}: could not stage the loop")
    _learn(site, names, can_chain, state, init, plan, strong, kinds, use_token, loop)
    if outer is not None:
        outer.effects += loop.effects  # (the test's too: a loop whose only effect is a print in its test
                                       # must still have its token fetched, and an enclosing loop chain it)
        if use_token:
            outer.token = loop.token_out


class _Loop:
    """Builds one graph while loop for a plan: loop variables are the planned values, then
    the defined flags, then the effect token (if any)."""

    def __init__(self, test, body, state: FlatState, plan, use_token: bool, line: int, strong: set[int],
                 kinds: dict, summary=None, guessed: bool = False):
        self.test, self.body, self.state, self.plan = test, body, state, plan
        self.guessed = guessed  # a plan guessed without a dry run (_guessed_plan): checked strictly
        self.entered: tuple = ()  # the state the body started from (set by build)
        self.summary = summary  # (loop variable shapes, body effects): build without tracing test or body
        self.out_shapes: list = []
        self.strong = strong
        self.learnt = kinds  # variable -> kinds the body was seen to give it (path_types)
        self.kinds: dict = {}  # variable -> its kinds, where they are not its dtype's (set by build)
        self.all_kinds: dict = {}  # variable -> its kinds (set by build)
        self.tagged: list = []  # variables whose kind is known only at run time: a tag loop variable each
        self.weak: set[int] = set()  # loop variables weak before the loop, kept weak by the body
        self.use_token, self.line = use_token, line
        self.carried = [i for i, e in enumerate(plan) if e[0] in ("t", "list")]
        self.flagged = [i for i, e in enumerate(plan) if e[0] == "t" and e[3]]
        self.effects = 0  # the effects the test and the body make (counted, or chained to the token)
        self.token_out = None
        self.init = None
        self.list_python: dict = {}  # list variable -> (appended, head): which items are Python numbers

    def _initial(self, init) -> tuple[list, list]:
        values, names = [], []
        for i in self.carried:
            entry, v = self.plan[i], init[i]
            if entry[0] == "list" and isinstance(v, StagedList):
                values.append(v.handle)
                self.list_python[i] = (v.python, v.head)
            elif entry[0] == "list":
                self.list_python[i] = tuple(reversed(list_kinds(v)))
                lst = gc.tensor_list_new(entry[1])
                for e in v:
                    lst = gc.tensor_list_push_back(lst, to_tensor(e, entry[1]))
                values.append(lst)
            elif is_undefined(v) or isinstance(v, PartialReturn):  # (PartialReturn: None returned before)
                values.append(zeros(entry[2], entry[1]))
            else:
                values.append(path_types.store(v, entry[1], self.state.names[i], self.line, "loop"))
            names.append(f"'{self.state.names[i]}'")
        for i in self.flagged:
            values.append(maybe_defined.flag_of(init[i]))
            names.append(f"whether '{self.state.names[i]}' is defined")
        for i in self.tagged:
            v = init[i]
            values.append(path_types.side_tag(None if is_undefined(v) or isinstance(v, PartialReturn) else v,
                                              self.kinds[i]))
            names.append(f"the Python type of '{self.state.names[i]}'")
        if self.use_token:
            values.append(effects.current().token)
            names.append("the side-effect token")
        if not values:
            values.append(gc.constant(np.int32(0)))
            names.append("a dummy loop variable")
        return values, names

    def _assemble(self, vals) -> tuple:
        """The state (flat) for loop variable values `vals`."""
        mark_weak([vals[k] for k, i in enumerate(self.carried) if i in self.weak], [True] * len(self.weak))
        out = []
        slot = {i: k for k, i in enumerate(self.carried)}
        flag = {i: len(self.carried) + k for k, i in enumerate(self.flagged)}
        tag = {i: len(self.carried) + len(self.flagged) + k for k, i in enumerate(self.tagged)}
        for i, k in self.kinds.items():  # (weak before the loop, strong after an iteration: an int, then a float)
            path_types.register_join(vals[slot[i]], k, vals[tag[i]] if i in tag else None, self.state.names[i],
                                     self.line)
        for i, (name, entry) in enumerate(zip(self.state.names, self.plan)):
            if i in slot and entry[0] == "list":
                out.append(StagedList(vals[slot[i]], entry[1], entry[2], *self.list_python.get(i, (None, ()))))
            elif i in slot:
                v = vals[slot[i]]
                out.append(maybe_defined.mark(v, vals[flag[i]], name, self.line) if i in flag else v)
            elif entry[0] == "py":
                out.append(entry[1])
            else:
                before = self.init[i] if self.init is not None else None
                out.append(before if is_undefined(before) else Undefined(name, self.line))
        return tuple(out)

    def _next(self, after) -> list:
        """The loop variables' next values from the state after the body. The plan came
        from a dry run on the values before the loop, where a test on a Python number may
        have taken a path the real body (on loop variables) does not: a value the real
        body gives that the plan did not expect replans the loop (`Replan`)."""
        new, flags, tags = [], [], {}
        for i, (name, entry, v) in enumerate(zip(self.state.names, self.plan, after)):
            kind = entry[0]
            if kind == "t":
                if is_special(name) and returned_none(v):  # `return` (of None) on this path
                    fill = entry[2] if entry[2] is not None else fill_dims(self.init[i])
                    if not entry[3]:
                        raise Replan(("retype", i, entry[1], True, fill))
                    new.append(zeros(fill, entry[1]))
                    flags.append(maybe_defined.flag_of(v if v is not None else Undefined(name)))
                    if i in self.tagged:
                        tags[i] = path_types.side_tag(None, self.kinds[i])
                    continue
                if is_undefined(v):
                    raise StagingError(f"{location(self.line)}: '{name}' becomes undefined inside the loop")
                if not entry[3] and is_special(name) and maybe_defined.needs_flag(v):
                    # the real body returns None on a path the dry run did not take
                    raise Replan(("retype", i, entry[1], True, entry[2]))
                if self.guessed and (is_tensor(self.init[i]) and v is self.entered[i] or not is_value(v)
                                     or natural_dtype(v) != entry[1] or not entry[3] and maybe_defined.needs_flag(v)):
                    raise Replan(("guess", i))  # a tensor left as it is, retyped or flagged: a dry run plans it
                if is_value(v) and natural_dtype(v) != entry[1]:
                    self._check_kind(i, name, entry, v)
                if i in self.weak and not is_weak(v):
                    raise Replan(("strong", i))
                self._check_kinds(i, v)
                new.append(path_types.store(v, entry[1], name, self.line, "loop"))  # a weak value
                if entry[3]:                                                                 # takes the dtype
                    flags.append(maybe_defined.flag_of(v))
                if i in self.tagged:
                    tags[i] = path_types.side_tag(v, self.kinds[i])
            elif kind == "list":
                if not isinstance(v, StagedList):
                    raise StagingError(f"{location(self.line)}: '{name}' is a list appended to in a loop on a tensor "
                                       f"but {describe(v)} after an iteration; keep it the same list")
                self.list_python[i] = (v.python, v.head)  # (the body's list: the entry's items, then its own)
                new.append(v.handle)
            elif kind == "undef" and not is_undefined(v):
                if is_special(name) and returned_none(v):
                    raise Replan(("partial", i, PartialReturn(None)))
                if is_container(v):  # e.g. `return a, b` inside the loop, not reached in the dry run
                    raise Replan(("open", i, v))
                if not is_value(v):
                    raise StagingError(
                        f"{location(self.line)}: '{name}' is undefined before the loop and {describe(v)} after an "
                        "iteration of a loop on a tensor; define it before the loop.")
                raise Replan(("retype", i, natural_dtype(v), not is_special(name) or maybe_defined.needs_flag(v),
                              fill_dims(v)))
            elif kind == "py" and is_tensor(entry[1]) and v is not entry[1]:
                raise Replan(("promote", i))
            elif kind == "py" and is_special(name) and returned_none(entry[1]) and is_container(v):
                raise Replan(("open", i, v))  # e.g. `return a, b` on the real body's other paths
            elif kind == "py" and is_special(name) and returned_none(entry[1]) and is_value(v):
                # None returned in the dry run, a value on the real body's other paths
                raise Replan(("retype", i, natural_dtype(v), True, fill_dims(v)))
            elif kind == "py" and not same_python_value(v, entry[1]) and not (
                    is_special(name) and returned_none(v) and returned_none(entry[1])):
                if is_value(v) and (is_number(entry[1]) or is_array_value(entry[1])):
                    dtype = join_dtypes(name, entry[1], v, "before the loop", "after an iteration", self.line)
                    raise Replan(("retype", i, dtype, maybe_defined.needs_flag(v)))
                raise StagingError(f"{location(self.line)}: '{name}' is {describe(entry[1])} that changes inside a "
                                   "loop on a tensor; only tensors, Python numbers and containers of them can "
                                   "change in a graph loop.")
        return new + flags + [tags[i] for i in self.tagged]

    def _check_kinds(self, i: int, v) -> None:
        """Replan when the body gives variable i a Python type the plan did not expect (the
        kinds only grow, so this settles; see path_types)."""
        got = path_types.kinds_of(v)
        planned = self.all_kinds.get(i)
        if isinstance(got, path_types.Untracked):
            if not isinstance(planned, path_types.Untracked):
                raise Replan(("kinds", i, got))
        elif got is not None and not isinstance(planned, path_types.Untracked) and not got <= (planned or got):
            raise Replan(("kinds", i, planned | got))

    def _check_kind(self, i: int, name: str, entry, v) -> None:
        """The body gives loop variable i a value of another dtype than planned: fine if
        it joins the planned dtype (a weak value is cast to it); else replan with the
        joined dtype when the variable held a Python number (or nothing) before the loop,
        else refuse."""
        joined = join_kinds(entry[1], i in self.weak, natural_dtype(v), is_weak(v), strong_promote=False)
        if joined == entry[1]:
            return
        start = self.init[i]
        if is_undefined(start) or is_weak(start):
            raise Replan(("retype", i, joined or natural_dtype(v), entry[3]))
        raise StagingError(
            f"{location(self.line)}: '{name}' is {entry[1]} before the loop but {natural_dtype(v)} after an "
            "iteration; a loop variable must keep one dtype. Cast it (graphcore.cast).")

    def build(self) -> None:
        state = self.state
        init = self.init = state.get()
        self.weak = {i for i in self.carried if self.plan[i][0] == "t" and i not in self.strong
                     and (is_weak(init[i]) or is_undefined(init[i])
                          or (is_special(self.state.names[i]) and returned_none(init[i])))}
        self.kinds, self.all_kinds = {}, {}
        for i in self.carried:
            entry = self.plan[i]
            if entry[0] != "t":
                continue
            natural = path_types.natural_of(entry[1], i in self.weak)
            k = path_types.union([self.learnt.get(i), path_types.kinds_of(init[i])])
            self.all_kinds[i] = k if k is not None else frozenset({natural}) if natural is not None else None
            if path_types.tracked(k, natural):
                self.kinds[i] = k
        self.tagged = [i for i in self.carried if path_types.needs_tag(self.kinds.get(i))]
        loop_init, var_names = self._initial(init)
        n_vars = len(loop_init)
        can_chain = effects.current() is not None and effects.current().token is not None

        token_at = len(self.carried) + len(self.flagged) + len(self.tagged)
        test_token = []  # the token after the test's effects (a guarded read, a print in the test)
        test_effects, body_effects = [0], [0]  # (counted by the last trace of each)

        def cond_fn(*vals):
            state.set(self._assemble(vals))
            # (without a token: an effect in the test hangs on a loop variable, then the loop is built again
            # with a token when there is one to chain to)
            with effects.chain_scope(vals[token_at] if self.use_token else None,
                                     None if self.use_token else lambda: gc.identity(vals[0])) as chain, \
                    side_effects.uncarried("the test of a loop on a tensor"):
                c = as_test(self.test())
                c = truth(c) if is_tensor(c) else gc.constant(bool(c))
            test_effects[0] = chain.effects
            if chain.effects and can_chain and not self.use_token:
                raise Replan(None)
            if chain.effects and self.use_token:
                test_token.append(chain.token)
                # the predicate waits for the test's effects, and so does the token leaving the loop
                # (its Switch waits for the predicate): an effect after the loop comes after the last
                # evaluation of the test, which the body's token never sees
                with gc.get_default_graph().control_dependencies([chain.token.op]):
                    c = gc.identity(c)
            return c

        def body_fn(*vals):
            self.entered = self._assemble(vals)
            state.set(self.entered)
            # an Identity, so effects that depend on the token hang on its live output, not on
            # the whole Switch (whose control edge also fires on the iteration that exits); the
            # body's effects come after the test's
            token = None
            if self.use_token:
                # (under Control Flow v2 the test is a function of its own, which the While
                # runs in full before each call of the body: nothing to wait for here)
                here = gc.get_default_graph()
                with here.control_dependencies([t.op for t in test_token if here.within(t.graph)]):
                    token = gc.identity(vals[token_at])
            with effects.chain_scope(token) as chain, side_effects.uncarried(None):
                try:
                    self.body()
                except exceptions.STAGED_EXCEPTIONS as e:  # Python raises it only if an iteration runs
                    exceptions.stage_exception(e)
            body_effects[0] = chain.effects
            if chain.effects and can_chain and not self.use_token:
                raise Replan(None)
            new = list(self._next(state.get()))
            if self.use_token:
                new.append(chain.token)
            return new + list(vals[len(new):n_vars])

        shapes = None
        if self.summary is not None:
            shapes, self.effects = self.summary
            if len(shapes) != n_vars:
                raise StagingError("the loop variables are not those of the summary")
            cond_fn, body_fn = (lambda *vals: gc.constant(True)), (lambda *vals: list(vals))
        outs = gc.while_loop(cond_fn, body_fn, loop_init, loop_var_names=var_names, return_same_structure=True,
                             shape_invariants=shapes)
        if self.summary is None:
            self.effects = test_effects[0] + body_effects[0]
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        self.out_shapes = [o.shape for o in outs]
        state.set(self._assemble(outs))
        if self.use_token:
            self.token_out = outs[len(self.carried) + len(self.flagged) + len(self.tagged)]
