"""`python_side_effect`: warns when a statement that changes an object from outside the
function is traced inside graph control flow, where it runs once while the graph is
built instead of each time the graph runs (see converters/side_effects.py); refuses a
call, inside its caller's loop or branch on a tensor, that changes an object passed in
and does not hand that object back (the caller's loop state cannot see the change); and
refuses a change to one of the function's own containers that graph control flow cannot
carry (`seen.add(v)` on a set, a deque's `appendleft`): it would run once per trace.

`check_changing_call` (for conversion.changing_call): a call that changes a list, dict,
set or deque inside an expression (`log.append(k) is None`, `stack.pop() > 0`) runs as Python where Python control flow runs
it; it is refused where nothing carries its change: in the test of a loop on a tensor (the
test's changes are not loop state), in an operand of `and` / `or` or a branch of a
conditional expression decided by a tensor (a cond that gives only the expression's value),
and, for `append` (which only as a statement becomes loop or branch state, converters/
lists.py), anywhere inside a loop or `if` on a tensor. Traced there, the change would happen
once, while the graph is built, not on each evaluation the graph makes.

`check_advance` / `check_call_advances` (for for_stmt, comprehensions, conversion.converted_call):
advancing, inside a loop or `if` on a tensor, a Python iterator made outside it (`next(it)`,
`for v in it`, `any(gen)`) is refused: its position is Python state no cond or loop carries; so
is advancing one again after a Python for loop over it stopped on a tensor (`lose_position`)."""
from __future__ import annotations

import builtins
import collections
import contextlib
import io
import os
import re
import sys
import threading
import warnings

import graphcore as gc
from graphcore import source_info
from graphcore.errors import StagingError
from graphcore.function_graph import control_flow_scope, root_graph
from graphcore.side_tables import SideTable

from . import generator_splits
from .staged_lists import StagedList


_changes_made = threading.local()  # .count: changes to objects from outside made while tracing, .last: the latest


def outside_changes() -> int:
    """How many changes to objects from outside the function traces on this thread have made."""
    return getattr(_changes_made, "count", 0)


def refuse_if_redone(before: int, construct: str) -> None:
    """After a trace of a branch or loop body that is undone to be done again (a replan, a dry
    run that plans a loop): StagingError if it changed an object from outside the function
    (`before`: outside_changes() when it started). Nothing undoes that change, so it would be
    made twice while the graph is built (a list appended to twice), where Python makes it once."""
    if outside_changes() == before:
        return
    what, line, filename = _changes_made.last
    raise StagingError(
        f"{os.path.basename(filename)}:{line}: '{what}' changes an object from outside the function inside {construct} "
        f"on a tensor that has to be traced again (to plan its variables, types or effects): the change is made "
        f"while the graph is built, and nothing can undo it, so it would be made twice, where Python makes it once. "
        f"Make the change outside the {construct.split()[-1].strip('`')}, or keep the value in a local variable and "
        f"return it (e.g. `new_items.append(v)` on a list made in the function, then `log.extend(new_items)` after "
        f"the call).") from None


class SideEffectWarning(UserWarning):
    """A Python side effect inside a loop or `if` on a tensor runs only while tracing."""


_warned = SideTable("side effects warned")  # graph -> {(file, line, what)}
_calls = threading.local()  # .stack: a _Call per active converted call
_uncarried = threading.local()  # .stack: per graph construct being traced, what it is if it carries no state, else None


@contextlib.contextmanager
def uncarried(where: str | None):
    """Code traced inside is `where` (e.g. "the test of a loop on a tensor"): a construct whose
    graph carries none of the changes made in it to Python containers; None: one that carries
    them as its state (a loop's body, an if's branches, a converted function called)."""
    stack = _uncarried.__dict__.setdefault("stack", [])
    stack.append(where)
    try:
        yield
    finally:
        stack.pop()


def _innermost_uncarried() -> str | None:
    stack = _uncarried.__dict__.get("stack")
    return stack[-1] if stack else None


class _Call:
    """A converted function called while a graph is built: the control-flow context it
    was called in (its caller's loop or branch, or None), the construct carrying no state it
    was called in (`uncarried`, or None), and the changes it made, outside any loop or branch
    of its own, to objects passed in: (what, line, file, object)."""

    __slots__ = ("context", "uncarried", "changes")

    def __init__(self, context, where):
        self.context, self.uncarried, self.changes = context, where, []


@contextlib.contextmanager
def converted_call_scope():
    g = gc.get_default_graph()
    stack = _calls.__dict__.setdefault("stack", [])
    call = _Call(control_flow_scope(g), _innermost_uncarried() if g is not None else None)
    stack.append(call)
    try:
        with uncarried(None):  # (the function's own loops and ifs carry its own containers)
            yield call
    finally:
        stack.pop()


def _hands_back(result, obj) -> bool:
    """Whether `result` is `obj` or a tuple or list holding it (`return acc`, `return acc, n`);
    never for None (a change through an attribute, which no return hands back)."""
    if obj is None:
        return False
    return result is obj or isinstance(result, (tuple, list)) and any(r is obj for r in result)


def check_call_result(call: _Call, result, fn_name: str) -> None:
    """A function that changed an object passed in, inside its caller's loop or branch on a
    tensor, and does not return that object: the caller's loop state cannot see the change
    (it would happen once, while the graph is built, whatever the loop or branch does at
    run time; `self.steps += 1` in a method called in a loop counted one step, not one per
    iteration). A list, dict or array whose items changed, returned and assigned in the
    caller (`acc = push(acc, v)`), is loop state there; that is allowed (and warned). An
    object's attribute is not, even returned (`m = m.step(x)` counted one step too)."""
    for what, line, filename, obj in call.changes:
        if call.uncarried is not None and obj is not None:
            raise StagingError(
                f"{os.path.basename(filename)}:{line}: '{what}' changes an object passed to {fn_name}, which is "
                f"called in {call.uncarried}: the graph carries no change made there, so it would happen once, "
                f"while the graph is built, not on each evaluation. Call {fn_name} in a statement of its own "
                f"(e.g. in the loop's body, or under an `if` statement).")
        if _hands_back(result, obj):
            continue
        where = (f"{os.path.basename(filename)}:{line}: '{what}' changes an object passed to {fn_name}, which is "
                 "called inside a loop or `if` on a tensor")
        once = ("the caller's loop or branch would see the change once, while the graph is built, not each time "
                "it runs.")
        if obj is None:
            raise StagingError(
                f"{where}, through an attribute: {once} Make the change in the caller's own loop or branch "
                f"(e.g. `m.steps += 1` there), or have {fn_name} return the new value and assign it in the caller.")
        gives = "returns nothing" if result is None else "does not return that object"
        raise StagingError(
            f"{where} and {gives}: {once} Return the object from {fn_name} and assign it in the caller (e.g. "
            "`acc = push(acc, v)`, push ending with `return acc`).")


# methods whose change graph control flow carries as state (converters/lists.py, the items
# of analysis/activity.ITEM_CHANGING_METHODS) on lists and dicts; any other change, and any
# change to a set or a deque, cannot be carried
CARRIED_METHODS = frozenset({"append", "pop", "popitem", "remove", "clear", "insert", "extend", "sort", "reverse",
                             "update", "setdefault"})


def _outside_the_trace(what: str, passed_in: bool, frame) -> str | None:
    """Whose object a change outside any helper's own scope touches, when it is certainly
    an object that lives beyond this trace: "an argument of the traced function" (no
    converted call is active: the caller of the graph owns it) or "a global object" (not a
    parameter, nor a closure variable, which may belong to a function traced right now)."""
    root = re.match(r"[A-Za-z_][A-Za-z0-9_]*", what).group(0)
    if passed_in:
        return None if _calls.__dict__.get("stack") else "an argument of the traced function"
    if frame is not None and root in frame.f_code.co_freevars:
        return None
    return "a global object"


def _refuse_local_change(what: str, line: int, obj) -> None:
    g = gc.get_default_graph()
    if g is None or (control_flow_scope(g) is None and not _in_dry_run()):
        return
    method = what.split("(", 1)[0].rsplit(".", 1)[-1]  # 'acc.extend(...)' -> 'extend'
    if method in CARRIED_METHODS and not isinstance(obj, (set, collections.deque)):
        return  # (a list may be a StagedList by now)
    where = source_info.user_location()
    filename = os.path.basename(where.filename) if where is not None else "<unknown>"
    raise StagingError(
        f"{filename}:{line}: '{what}' changes a {type(obj).__name__} inside a loop or `if` on a tensor, which the "
        "graph cannot carry as state: the change would happen once, while the graph is built (for both branches "
        "of an `if`), not each time the graph runs. Collect the values in a list with .append (or a numpy array) "
        f"and build the {type(obj).__name__} from it after the loop (e.g. `set(np.array(values).tolist())`).")


def _changed_argument_container(what: str, line: int, filename: str, obj) -> StagingError:
    """The refusal of a change to the caller's list or dict inside graph control flow (Python
    changes the caller's object; the graph writes back only changes made outside it)."""
    name = re.match(r"[A-Za-z_][A-Za-z0-9_]*", what).group(0)
    kind = "dict" if isinstance(obj, dict) else "list"
    collect = ("`new_items = []` before it, `new_items.append(v)` inside, return new_items and write "
               f"`{name}.extend(new_items)` after the call" if kind == "list" else
               f"`updates = {{}}` before it, `updates[k] = v` inside, return updates and write `{name}.update(updates)` "
               "after the call")
    return StagingError(
        f"{os.path.basename(filename)}:{line}: '{what}' changes the caller's {kind} '{name}' inside a loop or `if` on "
        f"a tensor (the statements after a `return` or `raise` under an `if` on a tensor count as inside it). Python "
        f"changes the caller's {kind} there on the paths the run takes; the graph writes back to a {kind} argument "
        f"only the changes made outside graph control flow. Collect the new items in a local instead: {collect}; "
        f"or make the change after the loop or if.")


_CONTAINERS = (list, dict, set, collections.deque, StagedList)


def check_changing_call(method, what: str, line: int, own: bool) -> bool:
    """For `ag__.changing_call` (conversion.py): whether `method` is a container's, whose
    change must be carried; raises StagingError where nothing carries it (the module
    docstring). `own`: the object is a container the innermost enclosing loop or `if` makes
    itself (a fresh one each iteration), so a loop or branch on a tensor need not carry it."""
    obj = getattr(method, "__self__", None)
    if not isinstance(obj, _CONTAINERS):
        return False
    g = gc.get_default_graph()
    if g is not None:
        where = _innermost_uncarried()
        if where is None and not own and method.__name__ == "append" and \
                (control_flow_scope(g) is not None or _in_dry_run()):
            where = "a loop or `if` on a tensor, inside an expression (only an `append` statement makes the list " \
                    "loop or branch state)"
        if where is not None:
            raise _uncarried_change(what, line, obj, where)
    if isinstance(obj, StagedList):  # (a list a graph loop appended to: no Python method changes it)
        raise _uncarried_change(what, line, obj, "an expression, on a list a loop on a tensor appended to")
    return True


def _uncarried_change(what: str, line: int, obj, where: str) -> StagingError:
    here = source_info.user_location()
    filename = os.path.basename(here.filename) if here is not None else "<unknown>"
    kind = "list" if isinstance(obj, StagedList) else type(obj).__name__
    return StagingError(
        f"{filename}:{line}: '{what}' changes a {kind} in {where}. The graph carries no change made there: it would "
        f"happen once, while the graph is built, not each time Python would make it. Make the change a statement of "
        f"its own (`{what}` in the loop's body or under an `if` statement; for a loop's "
        f"test, before the loop and again at the end of its body) and test what it gave afterwards.")


_dry_run_check = []  # staging.in_dry_run, once imported


def _in_dry_run() -> bool:
    if not _dry_run_check:  # (staging imports effects; keep this module light: imported on first use)
        from .staging import in_dry_run  # noqa: PLC0415

        _dry_run_check.append(in_dry_run)
    return _dry_run_check[0]()


def python_side_effect(what: str, passed_in: bool | None, line: int, obj=None) -> None:
    """Note a statement that changes `obj` (`what`, at the user's `line`): an object from
    outside (`passed_in`: a parameter's), after the statement; or, with `passed_in` None,
    one of the function's own containers, before the statement (`_refuse_local_change`)."""
    if passed_in is None:
        _refuse_local_change(what, line, obj)
        return
    g = gc.get_default_graph()
    if control_flow_scope(g) is None and not (g is not None and _in_dry_run()):
        return  # Python control flow, or the function's top level: runs as Python would
    if isinstance(obj, gc.Tensor):
        return  # an array argument changed in place: written back, or refused, by operators/arguments.py
    where = source_info.user_location()
    filename = where.filename if where is not None else "<unknown>"
    stack = _calls.__dict__.get("stack")
    if passed_in and stack and control_flow_scope(g) is stack[-1].context:
        stack[-1].changes.append((what, line, filename, obj))  # in the caller's loop or branch: see check_call_result
    else:
        owner = _outside_the_trace(what, passed_in, sys._getframe(1))
        if owner is not None and passed_in and isinstance(obj, (list, dict, StagedList)):
            raise _changed_argument_container(what, line, filename, obj)
        if owner is not None:
            raise StagingError(
                f"{os.path.basename(filename)}:{line}: '{what}' changes {owner} inside a loop or `if` on a tensor. "
                "The graph cannot change a Python object each time it runs: the change would happen once, while the "
                "graph is built, and leave the object holding a graph tensor (a second call would start again from "
                "the traced value). Keep the value in a local variable and return it (e.g. `count = self.count` "
                "before the loop, `count += 1` in it, return count and assign it after the call), or keep it in a "
                "graphcore.Variable.")
        if not passed_in:  # a closure's object, changed now, while tracing; no loop or branch carries it
            _changes_made.count = outside_changes() + 1  # (see refuse_if_redone)
            _changes_made.last = (what, line, filename)
    seen = _warned.setdefault(g, set())
    if (filename, line, what) in seen:
        return
    seen.add((filename, line, what))
    owner = "an object passed to the function" if passed_in else "an object from outside the function"
    warnings.warn_explicit(
        f"{os.path.basename(filename)}:{line}: '{what}' changes {owner} inside a loop or `if` on a tensor. Python "
        "side effects there run while the graph is built, not each time the graph runs: the change happens once "
        "per trace (not once per iteration, nor only when the branch is taken), and the object may be left holding "
        "graph tensors. Return the value from the function instead, or keep it in a graphcore.Variable.",
        SideEffectWarning, filename, line)


# -- Python iterators advanced inside graph control flow ----------------------------------------
#
# A Python iterator's position is Python state that no cond or loop carries: advanced while a
# branch or loop body is traced, it moves once per trace (twice when the branch is traced again),
# whatever the run does, where Python moves it only when and as often as the run takes that path.
# So advancing, inside a loop or `if` on a tensor, an iterator made outside it is refused; one
# made inside it (a fresh one each trace, as Python makes a fresh one on each pass) is Python's.

_iterators_made = SideTable("python iterators made")  # root graph -> {id(iterator): (iterator, scope made in)}
_iterators_lost = SideTable("python iterators lost")  # root graph -> {id(iterator): (iterator, line of the loop)}
_DRY_RUN = "the dry run of a loop body"

# builtins that look at an iterator without advancing it (`iter(it)` returns `it` itself)
_NOT_ADVANCING = frozenset({builtins.isinstance, builtins.type, builtins.id, builtins.print, builtins.repr,
                            builtins.str, builtins.iter, builtins.hasattr, builtins.getattr, builtins.callable,
                            builtins.hash, builtins.len})


# an iterator's own methods that advance or end it
_ADVANCING_METHODS = frozenset({"__next__", "send", "throw", "close"})


def is_python_iterator(value) -> bool:
    kind = type(value)
    return hasattr(kind, "__next__") and hasattr(kind, "__iter__") and not isinstance(value, gc.Tensor)


def _traced_scope(g):
    """The loop or branch on a tensor code is traced in now (None: none, Python runs it as it is)."""
    scope = control_flow_scope(g)
    return _DRY_RUN if scope is None and _in_dry_run() else scope


def checks_calls() -> bool:
    """Whether calls must be checked for iterators they advance: code is traced inside a loop or
    `if` on a tensor now, or this trace has an iterator whose position is left to the run."""
    g = gc.get_default_graph()
    return g is not None and (_traced_scope(g) is not None or _iterators_lost.get(root_graph(g)) is not None)


def note_made(value, args: tuple = ()):
    """Remember the loop or branch on a tensor a Python iterator returned by a call in converted
    code was made in (not an argument handed back: `iter(it)` is `it`, made where `it` was); one
    made outside any needs no record (it is refused wherever it is advanced in one). Returns `value`."""
    if not is_python_iterator(value) or builtins.any(value is a for a in args):
        return value
    g = gc.get_default_graph()
    scope = _traced_scope(g) if g is not None else None
    if scope is not None:
        _iterators_made.setdefault(root_graph(g), {}).setdefault(id(value), (value, scope))
    return value


def _made_elsewhere(it, g) -> bool:
    """Whether `it` was made outside the loop or branch on a tensor traced now (or where this
    trace cannot tell: an argument, a global, an attribute)."""
    made = _iterators_made.get(root_graph(g), {}).get(id(it))
    return made is None or made[0] is not it or made[1] is not _traced_scope(g)


def lose_position(it, line: int) -> None:
    """`it`, a Python iterator, is iterated by the for loop at `line`, which stops on a tensor
    (`break` / `return` on one): how far it goes is decided when the graph runs, so it cannot
    be advanced again in this trace (the trace went through all its items)."""
    g = gc.get_default_graph()
    if g is not None and is_python_iterator(it):
        _iterators_lost.setdefault(root_graph(g), {})[id(it)] = (it, line)


def check_advance(it, what: str, line: int | None = None) -> None:
    """StagingError when `what` (a call, a for loop) advances `it`, a Python iterator made
    outside the loop or `if` on a tensor being traced, inside it, or one whose position a for
    loop stopping on a tensor left to the run (see above)."""
    g = gc.get_default_graph()
    if g is None or not is_python_iterator(it):
        return
    lost = _iterators_lost.get(root_graph(g), {}).get(id(it))
    if lost is not None and lost[0] is it:
        raise _advanced_after_a_staged_stop(it, what, line, lost[1])
    if _traced_scope(g) is None or not _made_elsewhere(it, g):
        return
    filename, line = _user_line(line)
    name = _name_of(it)
    shown = f"'{name}'" if name is not None else f"(a {type(it).__name__})"
    raise StagingError(
        f"{filename}:{line}: {what} advances the Python iterator {shown}, made outside this loop or `if` on a tensor, "
        f"inside it. A Python iterator's position is Python state the graph cannot carry: it would move once while "
        f"the graph is built (again each time the branch or body is traced), whatever the run does, where Python "
        f"moves it only when the run takes this path. Advance it before the loop or `if` (e.g. `first = next(it)` "
        f"there), make the iterator inside it, or make the items an array and index it (`items = np.array([...])`, "
        f"`items[k]` with a counter k).")


def _user_line(line: int | None) -> tuple[str, int | None]:
    here = source_info.user_location()
    filename = os.path.basename(here.filename) if here is not None else "<unknown>"
    return filename, (here.lineno if line is None and here is not None else line)


def _advanced_after_a_staged_stop(it, what: str, line: int | None, loop_line: int) -> StagingError:
    filename, line = _user_line(line)
    name = _name_of(it)
    shown = f"'{name}'" if name is not None else f"(a {type(it).__name__})"
    return StagingError(
        f"{filename}:{line}: {what} advances the Python iterator {shown} after the for loop at line {loop_line} over "
        f"it, which stops (a `break` or `return`) on a tensor: how far that loop advanced it is known only when the "
        f"graph runs (the trace went through all its items). Make a list of its items before the loop "
        f"(`items = list(it)`) and loop over the list, keeping the position in a counter, or make a new iterator "
        f"for this use.")


def check_call_advances(f, args: tuple, kwargs: dict | None) -> None:
    """For a call converted code makes to Python (not to converted code, whose own calls are
    checked): refused if it may advance a Python iterator made outside the loop or `if` on a
    tensor being traced (`next(it)`, `list(it)`, `zip(it, ys)`, `it.send(v)`)."""
    try:
        if f in _NOT_ADVANCING:
            return
    except TypeError:  # unhashable callable
        pass
    if f in (builtins.any, builtins.all) and builtins.len(args) == 1 and _split_generator(args[0]):
        return  # any / all of a generator expression: short_circuit.py decides
    owner = getattr(f, "__self__", None)  # (`it.__next__()`, `gen.send(v)`; not a file's `write`)
    owner = owner if getattr(f, "__name__", None) in _ADVANCING_METHODS else None
    for value in (owner, *args, *(kwargs or {}).values()):
        if isinstance(value, io.IOBase) and f is not builtins.next:
            continue  # a file handed to a call is written to (json.dump(v, f)), not iterated
        if is_python_iterator(value):
            check_advance(value, f"{getattr(f, '__name__', 'a call')}()")


def _split_generator(value) -> bool:
    return generator_splits.split_of(value) is not None


def _name_of(obj) -> str | None:
    """The user's name for `obj`: a local or closure variable of the innermost user frame binding it."""
    f = sys._getframe(2)
    while f is not None:
        if not f.f_code.co_filename.startswith(_PROJECT_DIRS):
            for name, value in f.f_locals.items():
                if value is obj and not name.startswith("ag__"):
                    return name
        f = f.f_back
    return None


_PROJECT_DIRS = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), p)
                      + os.sep for p in ("graphcore", "executor", "autograph"))
