"""`if_stmt` and `if_exp`: Python's `if` on a Python condition, a graph cond on a tensor.

Converted code hands `if_stmt` both branches as functions and the statement's state
(`get_state` / `set_state`, the variables' names, how many are outputs). On a tensor
every output variable becomes a cond output:

* The condition is Python's truth of the value (`if n:` tests `n != 0`).
* Python numbers are weak: `y = 1` in one branch and a float32 tensor in the other
  gives a float32 output, and an output weak on both sides stays weak (Tensor.weak);
  two different strong dtypes are an error naming the variable.
* A value whose Python type depends on the branch (`r = 1` in one, `r = 2.5` in the other)
  carries a kind tag (path_types): chosen by the predicate after the cond where both
  branches' tags are known outside it, else a cond output; a side its dtype cannot hold
  exactly (an int beyond 2**53 in a float64) fails the run where that branch runs.
* A variable that one branch leaves unassigned is filled with zeros there and carries a
  'defined' flag (see maybe_defined), so reading it fails at run time only when the
  branch that assigns it did not run. A generated return value (`retval_`) needs no flag:
  the `do_return` flag already says whether it is set.
* Python containers are carried element by element (see state.FlatState); a dict may
  gain keys if both branches add them.
* A Python exception raised while tracing a branch (exceptions.STAGED_EXCEPTIONS) is
  staged there: it fails the run only if that branch runs, as in Python.
* The branches are first traced with a provisional plan (the true branch returns its
  values as they are, the false branch decides); when the plan has to change (a weak
  type, an undefined variable, a side effect to sequence) the partial graph is rolled
  back and both branches are traced again with the final plan.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

import graphcore as gc
from graphcore.errors import StagingError
from graphcore.side_tables import SideTable

from . import closure_cells, effects, exceptions, maybe_defined, path_types, side_effects
from .staging import (Replan, as_test, checkpoint, describe, fill_dims, is_python_number, is_special,
                      is_tensor, is_value, is_weak, join_dtypes, location, mark_weak, natural_dtype, quoted, rollback,
                      runtime_object_pair, same_python_value, to_tensor, truth, zeros)
from .data_structures import copy_containers
from .staged_lists import StagedList, branch_kinds
from .state import FlatState, ShapeChanged, adds_keys
from .variables import PartialReturn, Undefined, is_undefined, returned_none


def if_stmt(cond, body: Callable, orelse: Callable, get_state: Callable, set_state: Callable,
            names: Sequence[str], nouts: int, line: int) -> None:
    """`if cond: body() else: orelse()`, staged as a graph cond when `cond` is a tensor."""
    cond = as_test(cond)
    if is_tensor(cond):
        _graph_if(truth(cond), body, orelse, FlatState.of_values(get_state, set_state, names, nouts, "if", line),
                  line, site=(_code_of(body), _code_of(orelse), line))
    elif cond:
        body()
    else:
        orelse()


def if_exp(cond, true_fn: Callable, false_fn: Callable, line: int = 0):
    """`true_fn() if cond else false_fn()`, a graph cond when `cond` is a tensor."""
    cond = as_test(cond)
    if not is_tensor(cond):
        return true_fn() if cond else false_fn()
    cond = truth(cond)
    box = [Undefined("<if expression>", line)]
    # names a call in a branch assigns through `nonlocal`: carried through the cond as an if
    # statement carries them (closure_cells), not changed once per trace of each branch
    cells = closure_cells.assigned_cells(true_fn, false_fn)
    names = ("<if expression>",) + tuple(name for name, _ in cells)

    def get_state():
        return (box[0],) + tuple(closure_cells.read(cell) for _, cell in cells)

    def set_state(v):
        box[0] = v[0]
        for (_, cell), value in zip(cells, v[1:]):
            closure_cells.write(cell, value)

    def run(fn):
        def branch():
            with side_effects.uncarried("an operand of `and` / `or` or a branch of a conditional expression, "
                                        "decided by a tensor"):
                value = fn()
            set_state((value,) + get_state()[1:])
        return branch

    _graph_if(cond, run(true_fn), run(false_fn),
              FlatState.of_values(get_state, set_state, names, len(names), "if", line), line,
              site=(_code_of(true_fn), _code_of(false_fn), line))
    return box[0]


def _code_of(fn):
    return getattr(fn, "__code__", None)


# -- plans learnt earlier in the same trace --------------------------------------------------
# An if (or loop) inside a branch or loop body is traced again each time what encloses it is
# traced again (a replan, a loop's dry run and real body), and each of those traces used to
# learn its plan from scratch: provisional trace, then replan. So the traces of the innermost
# statement doubled per level of nesting. Each graph keeps the last plan each statement site
# settled on, and the next trace of that site starts from it (for an if: checked against the
# plan the branches give, so the graph is the one a replan would build).

_learnt = SideTable("learnt if plans")


def learnt_plans() -> dict:
    """The plans the statements of the graph being built settled on: site -> what was learnt."""
    g = gc.get_default_graph()
    if g is None:
        return {}
    table = _learnt.get(g)
    if table is None:
        table = _learnt[g] = {}
    return table


def _same_entry(a, b, filled: bool) -> bool:
    """Whether plan entries a and b give the same outputs (`filled`: both branches set the
    variable, so the shape of the zeros that would stand for it does not matter)."""
    if a[0] != b[0] or len(a) != len(b):
        return False
    if a[0] in ("py", "partial"):
        return same_python_value(a[1], b[1])
    for k, (x, y) in enumerate(zip(a[1:], b[1:]), 1):
        if k == 2 and a[0] == "t" and filled:
            continue
        if isinstance(x, path_types.Untracked) or isinstance(y, path_types.Untracked):
            if not (isinstance(x, path_types.Untracked) and isinstance(y, path_types.Untracked)
                    and (x.reason, x.name, x.line) == (y.reason, y.name, y.line)):
                return False
        elif x != y:
            return False
    return True


def _applies(plan, vals) -> bool:
    """Whether a branch's values can be given as outputs by `plan` (a guess)."""
    for e, v in zip(plan, vals):
        unset = is_undefined(v) or returned_none(v)
        if e[0] == "t" and (e[2] is None if unset else not is_value(v) or (
                natural_dtype(v) != e[1] and not is_weak(v))):
            return False
        if e[0] == "list" and not _list_like(v):
            return False
    return len(plan) == len(vals)


def _same_plan(a, b, filled) -> bool:
    return len(a) == len(b) and all(_same_entry(x, y, f) for x, y, f in zip(a, b, filled))


# A plan entry per output variable:
#   ("t", dtype, fill, flagged, kinds, tagged)  a cond output; `fill` is the shape of the
#                                zeros a branch that leaves it unassigned gives; `flagged`:
#                                it carries a defined flag; `kinds`: None, or the kinds of a
#                                value whose Python type depends on the branch (path_types);
#                                `tagged`: its tag is a cond output (a branch computes it;
#                                else the tag is chosen after the cond from the branches')
#   ("py", value)                the same Python value after both branches
#   ("undef",)                   undefined after the if (an error only if read)
#   ("partial", value)           the returned value: `value` (a Python value) where a path
#                                returned it, nothing yet elsewhere (see _return_entry)

def _branch_plan(names, true_vals, false_vals, line) -> list:
    plan = []
    for name, a, b in zip(names, true_vals, false_vals):
        if is_special(name) and _partly_returned(a, b):
            plan.append(_return_entry(name, a, b, line))
        elif is_undefined(a) or is_undefined(b):
            defined = b if is_undefined(a) else a
            if is_undefined(defined) or not is_value(defined):
                plan.append(("undef",))
            else:
                # (a returned value carries the flag it has: None was returned where it is false)
                plan.append(("t", natural_dtype(defined), fill_dims(defined),
                             not is_special(name) or maybe_defined.needs_flag(defined)))
        elif not is_tensor(a) and not is_tensor(b) and same_python_value(a, b):
            plan.append(("py", a))
        elif _list_like(a) and _list_like(b):
            plan.append(_list_entry(name, a, b, line))
        elif runtime_object_pair(a, b):  # str(x) in one branch, "neg" in the other: a run-time string
            plan.append(("t", gc.pyobject, None, False))
        elif is_value(a) and is_value(b):
            dtype = join_dtypes(name, a, b, "in the if branch", "in the else branch", line)
            plan.append(("t", dtype, None, maybe_defined.needs_flag(a) or maybe_defined.needs_flag(b)))
        elif not is_tensor(a) and not is_tensor(b) and not is_value(a) and not is_value(b):
            raise path_types.python_choice_error(location(line), name, a, b)  # 'pos' or 'neg': says what to write
        else:
            raise StagingError(
                f"{location(line)}: {quoted(name)} is {describe(a)} in the if branch but {describe(b)} in the else "
                "branch of a condition on a tensor; both branches must give it a tensor (or the same Python value).")
    return plan


def _with_kinds(plan, kinds, weak, tags, outer, slots) -> list:
    """The plan with each cond output's kinds: the union of what the branches give it,
    where that is not simply the kind of the output's dtype (path_types), and whether its
    tag is a cond output: where a branch computes it (a tag known while tracing, or a
    tensor from outside the if, is chosen by the predicate after the cond instead), and
    where the provisional trace of the true branch gave one (`slots`: so that it fits)."""
    out = []
    for i, e in enumerate(plan):
        if e[0] != "t":
            out.append(e)
            continue
        k = path_types.union(side[i] for side in kinds)
        nat = path_types.natural_of(e[1], all(side[i] for side in weak))
        k = k if path_types.tracked(k, nat) else None
        inside = path_types.needs_tag(k) and any(not _outside(side[i], outer) for side in tags.values())
        out.append(e + (k, inside or i in slots))
    return out


def _outside(tag, outer) -> bool:
    """Whether a side's tag is known outside the cond: a code, or a tensor of an enclosing
    context; `outer`: (the graph the cond is built in, its control-flow context there)."""
    if not is_tensor(tag):
        return True
    graph, outer_ctx = outer
    if not graph.within(tag.graph):
        return False  # made in a branch function of a Control Flow v2 cond (its ctx is None)
    ctx = tag.op.ctx
    return ctx is None or ctx.contains(outer_ctx)


def _partly_returned(a, b) -> bool:
    """Whether a returned value is a Python value (None included) on some paths only, or
    None on one side and a value on the other: `_return_entry` plans it."""
    if isinstance(a, PartialReturn) or isinstance(b, PartialReturn):
        return True
    if is_undefined(a) != is_undefined(b):
        defined = b if is_undefined(a) else a
        return defined is None or not is_value(defined)
    return (a is None) != (b is None)


def _return_entry(name, a, b, line):
    """The plan entry of a function's returned value (`retval_`) where a path returns a
    Python value and another returns nothing yet or something else.

    `return` / `return None` on a path and a tensor or number on another gives a tensor
    whose defined flag is false where None was returned: `retval` then makes the call
    give None there, as Python does. A Python value that a graph cannot carry (a str, an
    object) is kept as PartialReturn while other paths have not returned yet, and refused
    where another path returns something else (`retval` decides at the end)."""
    sides = [v for v in (a, b) if not is_undefined(v)]
    if all(returned_none(v) for v in sides):
        return ("partial", None)
    values = [v for v in sides if not returned_none(v)]
    if len(values) == 1 and is_value(values[0]) and not any(isinstance(v, PartialReturn) and v.value is not None
                                                            for v in sides):
        # None (or nothing yet) on one side, a graph value on the other
        return ("t", natural_dtype(values[0]), fill_dims(values[0]), True)
    kept = [v.value if isinstance(v, PartialReturn) else v for v in sides]
    if all(v is not None and not is_value(v) for v in kept) and all(same_python_value(kept[0], v) for v in kept):
        return ("partial", kept[0])  # the same str or object wherever it was returned so far
    shown = [_shown(v.value if isinstance(v, PartialReturn) else v) for v in (a, b)]
    raise StagingError(
        f"{location(line)}: {quoted(name)} is {shown[0]} on one path and {shown[1]} on another of an if on a "
        "tensor, and which path runs is known only when the graph runs; a graph can return a tensor or a number "
        "(or None on some paths and a tensor on others), or the same Python value on every path of the function. "
        "Return a number (e.g. a code) instead of the Python value, or decide in Python outside the function.")


def _shown(v) -> str:
    text = describe(v)
    return text if v is None or is_value(v) or is_undefined(v) else f"{text} {v!r}"[:80]


def _list_like(v) -> bool:
    return isinstance(v, (list, StagedList))


def _list_entry(name, a, b, line):
    """("list", dtype, shape): a list one branch appends to (a Python list there, or a
    list a graph loop appended to) becomes a tensor list in both branches."""
    kinds = set()
    for v in (a, b):
        if isinstance(v, StagedList):
            kinds.add((v.dtype, tuple(v.shape) if v.shape is not None else None))
        else:
            for x in v:
                if not is_value(x):
                    raise StagingError(f"{location(line)}: the list '{name}' changes in one branch of a condition on "
                                       f"a tensor and holds {describe(x)}; only lists of tensors, numbers and "
                                       f"numpy arrays can")
                shape = tuple(x.shape.dims) if is_tensor(x) and x.shape.dims is not None else np.shape(x)
                kinds.add((natural_dtype(x), shape))
    if len({d for d, _ in kinds}) != 1 or len({s for _, s in kinds}) != 1:
        raise StagingError(f"{location(line)}: the list '{name}' changes in one branch of a condition on a tensor, "
                           "so it becomes a list in the graph, whose elements need one dtype and shape; they are "
                           + ", ".join(sorted(f"{d}{list(s) if s is not None else ''}" for d, s in kinds)))
    (dtype, shape), = kinds
    head, appended = branch_kinds((a, b))  # which items are Python numbers (returned as Python's)
    return ("list", dtype, list(shape) if shape is not None else None, (appended, head))


def _list_handle(entry, v):
    if isinstance(v, StagedList):
        return v.handle
    lst = gc.tensor_list_new(entry[1])
    for x in v:
        lst = gc.tensor_list_push_back(lst, to_tensor(x, entry[1]), element_dtype=entry[1])
    return lst


def _branch_outputs(plan, vals, names, line) -> list:
    """The cond outputs of one branch: the values, then the defined flags, then the tags of
    the values whose Python type depends on the branch (path_types)."""
    values, flags, tags = [], [], []
    for name, entry, v in zip(names, plan, vals):
        if entry[0] == "list":
            values.append(_list_handle(entry, v))
            continue
        if entry[0] != "t":
            continue
        unset = is_undefined(v) or returned_none(v)
        values.append(zeros(entry[2], entry[1]) if unset else
                      path_types.store(v, entry[1], name, line, "if"))
        if entry[3]:
            flags.append(gc.constant(False) if returned_none(v) else maybe_defined.flag_of(v))
        if entry[5]:
            tags.append(path_types.side_tag(None if unset else v, entry[4]))
    return values + flags + tags


def _appended(template, value) -> bool:
    """A list that a branch appended to (or a graph loop in it did)."""
    if not isinstance(template, list):
        return False
    return isinstance(value, StagedList) or (isinstance(value, list) and len(value) > len(template))


def _fits(plan, provisional, slots) -> bool:
    """Whether the true branch's provisional outputs (and tags, `slots`) already match the plan."""
    return all(e[0] == "t" and not e[3] and e[5] == (i in slots) and is_tensor(v) and v.dtype == e[1]
               for i, (e, v) in enumerate(zip(plan, provisional)))


def _with_value(fn: Callable, state: FlatState, index: int, value) -> Callable:
    """`fn` run with state variable `index` set to `value` first."""
    def run():
        vals = list(state.get())
        vals[index] = value
        state.set(tuple(vals))
        fn()
    return run


class _Branches:
    """Traces the two branches of one attempt. Without a plan, the true branch returns its
    values as they are and the false branch computes the plan, raising Replan when the
    true branch has to be traced again."""

    def __init__(self, state: FlatState, init, plan, use_token: bool, line: int, whole_lists=frozenset(),
                 guess=None):
        self.state, self.init, self.plan, self.use_token, self.line = state, init, plan, use_token, line
        self.guess = guess  # the plan this site settled on before (plan is None then): checked, not trusted
        self.whole_lists = whole_lists  # variables (lists appended to) carried as one value
        self.outer = effects.current()
        self.effects = 0
        self.true_vals: list = []
        self.provisional: list = []
        self.weak: list = []  # per branch traced: which outputs are weak (or unassigned) there
        self.kinds: list = []  # per branch traced: the outputs' kinds there (path_types; None: unassigned)
        self.tags: dict = {}  # taken (True / False) -> the outputs' tags there (a code or a tensor; None: unset)
        self.slots: frozenset = frozenset()  # outputs the provisional true branch gave a tag for
        g = gc.get_default_graph()
        self.outer_ctx = (g, g.control_flow_context)  # (where the cond is built: see _outside)

    def trace(self, fn: Callable, taken: bool) -> Callable:
        def run():
            self.state.set(copy_containers(self.init))  # a list carried whole: each branch appends to its own
            token = gc.identity(self.outer.token) if self.use_token else None
            with effects.chain_scope(token) as chain, side_effects.uncarried(None):
                try:
                    fn()
                except exceptions.STAGED_EXCEPTIONS as e:  # Python raises it only if this branch runs
                    exceptions.stage_exception(e)
            vals = list(self.state.get())[:self.state.nouts]
            unset = [is_undefined(v) or (is_special(name) and returned_none(v)) for name, v in
                     zip(self.state.names, vals)]
            self.weak.append([is_weak(v) or u for v, u in zip(vals, unset)])
            self.kinds.append([None if u else path_types.kinds_of(v) for v, u in zip(vals, unset)])
            self.tags[taken] = [None if u else path_types.tag_of(v) for v, u in zip(vals, unset)]
            self.effects += chain.effects
            tail = [chain.token] if self.use_token else []
            if self.plan is None and self.guess is not None and taken and not _applies(self.guess, vals):
                self.guess = None  # (it cannot be: a provisional trace, as without one)
            if self.plan is None and self.guess is not None:
                return self._guessed(vals, taken) + tail
            if self.plan is None and taken:
                self.true_vals = vals
                self.provisional = [gc.constant(v) if is_python_number(v) else v.handle if isinstance(v, StagedList)
                                    else v for v in vals]
                # a tag known only at run time is given as an output in case the plan needs it (the other branch
                # computes its own): else the plan would not fit and both branches be traced again, the ifs nested
                # in them again in each
                self.slots = frozenset(i for i, t in enumerate(self.tags[True]) if is_tensor(t))
                tags = [path_types.side_tag(vals[i], None) for i in sorted(self.slots)]
                return self.provisional + tags + tail
            if self.plan is None:
                learnt = self.state.learn(self.true_vals, vals, keep_whole=self.whole_lists)
                if learnt is not None:
                    raise Replan(("state", learnt))
                plan = _with_kinds(_branch_plan(self.state.names, self.true_vals, vals, self.line), self.kinds,
                                   self.weak, self.tags, self.outer_ctx, self.slots)
                can_chain = self.outer is not None and self.outer.token is not None
                wants_token = can_chain and not self.use_token and self.effects > 0
                if wants_token or not _fits(plan, self.provisional, self.slots):
                    raise Replan((plan, self.use_token or wants_token))
                self.plan = plan
            inside = [i for i, e in enumerate(self.plan) if e[0] == "t" and path_types.needs_tag(e[4]) and not e[5]
                      and not _outside(self.tags[taken][i], self.outer_ctx)]
            if inside:  # a tag this trace computes in the branch: a cond output after all
                raise Replan(([e[:5] + (True,) if i in inside else e for i, e in enumerate(self.plan)],
                              self.use_token))
            return _branch_outputs(self.plan, vals, self.state.names, self.line) + tail
        return run

    def _guessed(self, vals, taken: bool) -> list:
        """A branch's outputs by the guessed plan. After the false branch, the plan the two
        branches give (as a provisional trace would compute it, with the tags a later trace
        would add) must be the guess, else Replan with that plan (as after a provisional trace)."""
        if taken:
            self.true_vals = vals
            try:
                return _branch_outputs(self.guess, vals, self.state.names, self.line)
            except (TypeError, ValueError, StagingError, ArithmeticError):
                raise Replan((None, False)) from None  # a provisional trace next, as without a guess
        learnt = self.state.learn(self.true_vals, vals, keep_whole=self.whole_lists)
        if learnt is not None:
            raise Replan(("state", learnt))
        slots = frozenset(i for i, t in enumerate(self.tags[True]) if is_tensor(t))
        plan = _with_kinds(_branch_plan(self.state.names, self.true_vals, vals, self.line), self.kinds, self.weak,
                           self.tags, self.outer_ctx, slots)
        inside = {i for side in (True, False) for i, e in enumerate(plan)
                  if e[0] == "t" and path_types.needs_tag(e[4]) and not e[5]
                  and not _outside(self.tags[side][i], self.outer_ctx)}
        plan = [e[:5] + (True,) if i in inside else e for i, e in enumerate(plan)]
        wants_token = self.outer is not None and self.outer.token is not None and self.effects > 0
        set_ = [not any(is_undefined(v) or returned_none(v) for v in pair) for pair in zip(self.true_vals, vals)]
        if wants_token != self.use_token or not _same_plan(plan, self.guess, set_):
            raise Replan((plan, wants_token))
        self.plan = plan
        return _branch_outputs(plan, vals, self.state.names, self.line)


def _through_identities(t):
    while t.op.type == "Identity" and t.op.inputs:
        t = t.op.inputs[0]
    return t


def _returned_in_else(cond, names, init) -> int | None:
    """The index of the `do_return` flag that the converter's `if not do_return:` tests,
    if `cond` is that test: in the else branch it is known to be True. Knowing it there
    keeps it a Python True after the if when the if branch returns too, so a function
    that returns on every path (a loop that may return, then a final `return`) is known
    to return at trace time, and its callers can use its result."""
    negated = _through_identities(cond)
    if negated.op.type != "LogicalNot":
        return None
    tested = _through_identities(negated.op.inputs[0])
    for i, (name, v) in enumerate(zip(names, init)):
        if name.startswith("do_return") and is_tensor(v) and _through_identities(v) is tested:
            return i
    return None


def _grown_in_place(name: str, line: int) -> StagingError:
    """A list made longer in place (`insert`) in a branch: carried item by
    item and written back in place, so it must keep its length (the insert was lost, or the
    other branch's kept)."""
    return StagingError(
        f"{location(line)}: the list '{name}' gets longer inside an `if` on a tensor through a change in place "
        f"(`insert`), which the graph cannot carry: the list is changed item by item there and "
        f"must keep its length. Build the new list and assign it (`{name} = [v] + {name}`, `{name} = {name} + [v]`), "
        f"or add items with `{name}.append(v)` statements.")


def _graph_if(cond, body, orelse, state: FlatState, line: int, site=None) -> None:
    raw_init = state.get_raw()
    init = tuple(state.get())
    returned = _returned_in_else(cond, state.names, init)
    if returned is not None:
        orelse = _with_value(orelse, state, returned, True)
    plan, use_token = None, False
    reshaped: set[int] = set()
    whole_lists: set[int] = set()
    key = (site, tuple(state.names), state.nouts) if site is not None else None
    guess, use_token = learnt_plans().get(key, (None, False)) if key is not None else (None, False)
    chain = effects.current()
    use_token = use_token and chain is not None and chain.token is not None  # (no token to sequence on here)
    for _ in range(6 + 2 * len(init)):
        mark, changes = checkpoint(), side_effects.outside_changes()
        branches = _Branches(state, init, plan, use_token, line, frozenset(whole_lists), guess)
        guess = None  # (only the first attempt: a replan knows better)
        try:
            outs = gc.cond(cond, branches.trace(body, True), branches.trace(orelse, False))
        except ShapeChanged as r:  # a dict gains keys: fine if the other branch adds them too
            rollback(mark)
            state.set_raw(raw_init)
            side_effects.refuse_if_redone(changes, "an `if`")
            template = state.templates[r.index]
            grown = state.in_place(r.index) if isinstance(template, list) else None
            if grown is not None:  # (its items are written back one by one: a longer list was lost)
                raise _grown_in_place(grown, line) from None
            if r.index in reshaped or not (adds_keys(template, r.value) or _appended(template, r.value)):
                raise StagingError(str(r)) from None
            reshaped.add(r.index)
            # a dict that gains keys is carried with them; a list appended to is carried whole
            if isinstance(template, list):
                whole_lists.add(r.index)
            state = state.with_shape(r.index, None if isinstance(template, list) else copy_containers(r.value))
            init = state.initial()
            plan, use_token = None, False
            continue
        except Replan as r:
            rollback(mark)
            state.set_raw(raw_init)  # undo what the failed trace bound
            side_effects.refuse_if_redone(changes, "an `if`")
            if r.plan[0] == "state":  # open up containers one branch assigns: trace again
                state = r.plan[1]
                init = tuple(state.get())
                plan, use_token = None, False
            else:
                plan, use_token = r.plan
            continue
        except BaseException:  # no half-built cond left behind, nor variables bound to its tensors
            rollback(mark)
            state.set_raw(raw_init)
            raise
        break
    else:  # pragma: no cover
        raise StagingError(f"{location(line)}: could not stage the if statement")
    plan = branches.plan
    if key is not None and not reshaped and key[1] == tuple(state.names):
        learnt_plans()[key] = (plan, use_token)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    n_values = sum(1 for e in plan if e[0] in ("t", "list"))
    weak = [all(w) for w in zip(*branches.weak)]
    mark_weak(outs[:n_values], [w and e[0] == "t" for w, e in zip(weak, plan) if e[0] in ("t", "list")])
    n_flags = sum(1 for e in plan if e[0] == "t" and e[3])
    flags = iter(outs[n_values:])
    tags = iter(outs[n_values + n_flags:])
    values = iter(outs[:n_values])
    result = []
    for index, (name, entry, before) in enumerate(zip(state.names, plan, init)):
        if entry[0] == "list":
            result.append(StagedList(next(values), entry[1], entry[2], *entry[3]))
        elif entry[0] == "t":
            v = next(values)
            tag = None
            if entry[5]:
                tag = next(tags)
            elif path_types.needs_tag(entry[4]):  # chosen by the predicate from the branches' tags
                tag = path_types.chosen_tag(cond, branches.tags[True][index], branches.tags[False][index], entry[4])
            path_types.register_join(v, entry[4], tag, name, line)
            result.append(maybe_defined.mark(v, next(flags), name, line) if entry[3] else v)
        elif entry[0] == "py":
            result.append(entry[1])
        elif entry[0] == "partial":
            result.append(PartialReturn(entry[1]))
        else:
            result.append(before if is_undefined(before) else Undefined(name, line))  # keeps "no return yet"
    outer = branches.outer
    if outer is not None:
        outer.effects += branches.effects
        if use_token:
            outer.token = outs[-1]
    state.set(tuple(result) + init[state.nouts:])
