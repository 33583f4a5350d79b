"""Writes docs/python_conformance.md: issue 25's constructs, each run as plain Python and
converted. A supported one is listed when the two agree (value, exact type, printed lines,
the caller's objects after the call, exception type); a refused one with the message the
refusal gives, as it comes out (paths cut to the file name). Nothing here is typed by hand
but the programs, so the page says what the code does now.

    python docs/python_conformance.py docs/python_conformance.md
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import autograph
from autograph.testing import differential

# -- supported: each must agree with Python -----------------------------------------------------


def text_of_a_tensor(x, n):
    s = str(x)
    return len(s), str(n) == "7", s.split("."), s.startswith("-"), s in ("2.5", "3.5"), s.upper(), \
        s.zfill(6), s[0], f"{x}".replace(".", ","), int(str(n))


def written_to_stdout(x):
    sys.stdout.write(str(x) + "\n")
    return x


def repeated_by_a_tensor_count(n):
    return [0] * n, [1, 2] * n, n * [5], (1,) * n, len([7] * n), "ab" * n, sum([1, 2] * n), 3 in [1, 3] * n


@dataclasses.dataclass
class Point:
    x: float
    y: float


def returns_a_dataclass(x):
    return Point(x * 2, x + 1)


def clock_read_per_run(x):
    t0 = time.perf_counter()
    return x + 1, time.perf_counter() >= t0


def environment_read_per_run(x):
    return os.environ.get("AUTOGRAPH_CONFORMANCE_NEVER_SET", "unset"), x


def changes_its_arguments(x, lst, d, n):
    x += 1
    x[0] = 5
    lst.append(n)
    d["k"] = n + 1
    return n


def changes_an_array_argument_in_control_flow(x, n):
    for i in range(n):
        if i % 2 == 0:
            x[i] = -1
    if n > 2:
        return 0
    x *= 2
    return 1


def changes_a_zero_d_array_argument(a, n):
    a += n
    return n


def python_result_types(x, n):
    c = 0
    while c < n:
        c += 1
    return c, int(x), round(x), x.item(), float(n), math.sqrt(abs(x)), not x, 0 < x < 5, x.is_integer()


def returned_list_of_both_kinds(x, n):
    acc = [1.0]
    for i in range(n):
        if x > i:
            acc.append(x)
    return acc


def bound_in_both_branches_after_a_return(a, b):
    for j in range(a):
        if b > 0:
            return b
        if b < a:
            u = a
        else:
            u = b
        u = u + 1
    return a


def negated_path_typed(x):
    h = 3.0
    if x > 1:
        h = x
    return -h


def counted_through_nonlocal_in_a_conditional_expression(x, n):
    c = 0

    def g(v):
        nonlocal c
        c += 1
        return v * 2
    r = (g(x) if x > 0 else 1.0) if n > 1 else 0.0
    return r, c


def nonlocal_assigned_in_an_if_and_a_while(x, n):
    total = np.float64(1.0)
    count = 0

    def add(v):
        nonlocal total, count
        if v > 0:
            total = total + v
        i = 0
        while i < n:
            total = total * 2.0
            count += 1
            i += 1
        return total

    add(x)
    add(-x)
    return total, count


def list_methods_and_json(x, n):
    lst = [x, x + 1, 5.0, x]
    k = lst.count(x) if n > 0 else 0
    return k, lst.index(x + 1), json.dumps(float(x)), n < 2 ** 64


def grad_with_aux(x):
    return x * x, x + 1


def _checked(x, i):
    print("checking", i)
    return x > i


def any_and_all_of_generators_stop_where_python_stops(x):
    return any(_checked(x, i) for i in range(4)), all(_checked(x, -i) for i in (2, 1, 0))


def generators_folded_by_sum_min_max(x):
    return sum(x * i for i in range(3)), sum(x > i for i in range(3)), min(x - i for i in range(3)), \
        max(abs(x - i) for i in [1, 2])


def generators_listed_and_sorted(x):
    return list(x + i for i in (1, 2)), tuple(x * i for i in range(2)), sorted(x * i - i * i for i in range(4))


SUPPORTED = [
    ("1", "`str()` / f-strings of tensors and string operations on the text", text_of_a_tensor,
     (np.float64(-2.5), np.int64(7))),
    ("1", "`sys.stdout.write(str(x))`", written_to_stdout, (np.float64(2.5),)),
    ("2", "lists, tuples and strings repeated by a tensor count", repeated_by_a_tensor_count, (np.int64(3),)),
    ("3", "a returned dataclass holds values", returns_a_dataclass, (np.float64(1.5),)),
    ("4", "`time.perf_counter()` read when the graph runs", clock_read_per_run, (np.float64(1.0),)),
    ("4", "`os.environ.get(...)` read when the graph runs", environment_read_per_run, (np.float64(1.0),)),
    ("5", "`x += 1`, `x[0] = 5`, `lst.append(v)`, `d[k] = v` on arguments", changes_its_arguments,
     (np.array([1.0, 2.0]), [1], {}, np.int64(2))),
    ("5", "an argument array changed in place in a loop and an if on a tensor, after an early return",
     changes_an_array_argument_in_control_flow, (np.array([1.0, 2.0, 3.0]), np.int64(2))),
    ("5", "a 0-d array argument changed in place", changes_a_zero_d_array_argument, (np.array(1.5), np.int64(2))),
    ("6", "Python's int / float / bool where Python returns them", python_result_types,
     (np.float64(2.5), np.int64(3))),
    ("6", "a list of a Python float and appended numpy values keeps each item's type", returned_list_of_both_kinds,
     (np.float64(2.0), np.int64(3))),
    ("7", "names first bound in both branches after an early return in a loop", bound_in_both_branches_after_a_return,
     (np.int64(3), np.int64(-1))),
    ("8", "negation of a path-typed float32", negated_path_typed, (np.float32(2.5),)),
    ("9", "`nonlocal` counters called in conditional expressions", counted_through_nonlocal_in_a_conditional_expression,
     (np.float64(2.0), np.int64(3))),
    ("9", "`nonlocal` names assigned in an `if` and a `while` on a tensor (a `@function`'s own `nonlocal` and "
     "`global` names are read at each call and written back after it: tests/autograph/"
     "test_nonlocal_and_global_values.py)", nonlocal_assigned_in_an_if_and_a_while, (np.float64(2.0), np.int64(2))),
    ("9", "`lst.count`, `lst.index` in tensor control flow, `json.dumps(float(x))`, `n < 2**64`",
     list_methods_and_json, (np.float64(2.0), np.int64(1))),
    ("11", "`any` / `all` of a generator expression of tensors (`_checked(x, i)` prints `checking i` and returns "
     "`x > i`): items after the deciding one never run (their prints, their errors)", any_and_all_of_generators_stop_where_python_stops, (np.float64(0.5),)),
    ("11", "`sum` / `min` / `max` of generator expressions of tensors", generators_folded_by_sum_min_max,
     (np.float64(1.5),)),
    ("11", "`list` / `tuple` / `sorted` of generator expressions of tensors", generators_listed_and_sorted,
     (np.float64(1.5),)),
]

# -- refused: each must raise, its message is quoted -----------------------------------------------


def appends_to_an_argument_in_a_loop(lst, n):
    for i in range(n):
        lst.append(i)
    return n


def sets_a_key_of_an_argument_in_an_if(d, x):
    if x > 0:
        d["k"] = x
    return x


def returns_the_list_from_inside_the_loop(x, n):
    acc = [1.0]
    for i in range(n):
        if x > i:
            acc.append(x)
        else:
            return acc
    return acc


def appends_to_a_list_in_a_dict(x, n):
    res = {"a": [1.0]}
    for i in range(n):
        if x > i:
            res["a"].append(x)
    return res


def run_time_object_meets_a_number(n):
    s = sum([1, 2] * n)
    return s if n > 1 else 0


def two_loops_append_two_kinds(x, n):
    acc = []
    for i in range(n):
        acc.append(x)
    for i in range(n):
        acc.append(i * 1.0)
    return acc


def changed_in_one_branch_rebound_in_the_other(x, n):
    if n > 0:
        x += 1
    else:
        x = x * 2
    return x


def _bump(a):
    a *= 2


def reads_after_a_helper_changed_it(x):
    _bump(x)
    return x.sum()


def appends_lambdas_in_a_tensor_loop(n):
    fs = []
    i = 0
    while i < n:
        fs.append(lambda v: v + 1)
        i += 1
    return len(fs)


def iterates_over_the_text_of_a_tensor(x):
    k = 0
    for c in str(x):
        k += 1
    return k


def grad_of_a_tuple(x):
    return x * x, x + 1


def generator_over_a_tensor(x):
    return any(v > 0 for v in x)


def generator_reused_after_a_staged_any(x):
    g = (x > i for i in range(3))
    found = any(g)
    return found, list(g)


def next_of_an_iterator_made_before_an_if(x):
    it = iter([1, 2, 3])
    if x > 0:
        r = next(it)
    else:
        r = 0
    return r + next(it)


def for_over_an_iterator_made_before_a_while(x):
    it = iter([1, 2, 3])
    s = 0
    while x > 0:
        for v in it:
            s += v
            break
        x -= 1
    return s


def next_after_a_loop_over_it_breaks_on_a_tensor(x):
    it = iter([1, 2, 3, 4])
    for v in it:
        if x > v:
            break
    return next(it, -1)


def inserts_into_a_list_in_an_if(x):
    acc = [3.0, 1.0, 2.0]
    if x > 0:
        acc.insert(0, 9.0)
    return acc[0], len(acc)


def _with_a_log():
    log = []

    def appends_to_a_closure_list_in_an_if_traced_again(x):
        if x > 0:
            log.append(1)
            print("appended")
            r = 1
        else:
            r = 2.5
        return r
    return appends_to_a_closure_list_in_an_if_traced_again


appends_to_a_closure_list_in_an_if_traced_again = _with_a_log()


def _with_items():
    items = []

    def rebuilds_a_nonlocal_list_in_a_loop(n):
        nonlocal items
        i = 0
        while i < n:
            items = items + [i]
            i += 1
        return i
    return rebuilds_a_nonlocal_list_in_a_loop


rebuilds_a_nonlocal_list_in_a_loop = _with_items()


def grad_through_sorted_of_mixed_kinds(x):
    s = sorted([x * 2.0, 1])
    return s[0] * 1.0


REFUSED = [
    ("5", "a list argument appended to in a loop on a tensor", appends_to_an_argument_in_a_loop, ([1], np.int64(2))),
    ("5", "a dict argument changed in an if on a tensor", sets_a_key_of_an_argument_in_an_if, ({}, np.float64(1.0))),
    ("5", "an argument array changed in place in one branch, rebound in the other",
     changed_in_one_branch_rebound_in_the_other, (np.array([1.0, 2.0]), np.int64(1))),
    ("5", "the array read through a name holding its old value after a helper changed it",
     reads_after_a_helper_changed_it, (np.array([1.0, 2.0]),)),
    ("2", "a run-time object (`sum()` of a repeated list) meeting a number in one variable",
     run_time_object_meets_a_number, (np.int64(3),)),
    ("6", "a list two loops append Python numbers and numpy values to, returned", two_loops_append_two_kinds,
     (np.float64(2.0), np.int64(2))),
    ("9", "a list a loop on a tensor appends to, returned from inside the loop", returns_the_list_from_inside_the_loop,
     (np.float64(2.0), np.int64(3))),
    ("9", "a list inside a dict appended to in an if on a tensor", appends_to_a_list_in_a_dict,
     (np.float64(2.0), np.int64(3))),
    ("9", "lambdas appended to a list in a loop on a tensor", appends_lambdas_in_a_tensor_loop, (np.int64(2),)),
    ("1", "iterating over the text of a tensor", iterates_over_the_text_of_a_tensor, (np.float64(2.5),)),
    ("11", "a generator expression over a tensor", generator_over_a_tensor, (np.array([1.0, -2.0]),)),
    ("11", "a generator expression iterated again after `any` stopped in it at run time",
     generator_reused_after_a_staged_any, (np.float64(1.5),)),
    ("12", "a Python iterator made before an `if` on a tensor, advanced inside it", next_of_an_iterator_made_before_an_if,
     (np.float64(1.0),)),
    ("12", "a `for` over a Python iterator made before a `while` on a tensor, inside it",
     for_over_an_iterator_made_before_a_while, (np.float64(2.0),)),
    ("12", "a Python iterator advanced after a `for` over it stopped (`break`) on a tensor",
     next_after_a_loop_over_it_breaks_on_a_tensor, (np.float64(1.5),)),
    ("9", "a list made longer in place (`insert`) in an if on a tensor", inserts_into_a_list_in_an_if,
     (np.float64(1.0),)),
    ("5", "a closure's list appended to in an if on a tensor that is traced again (its print)",
     appends_to_a_closure_list_in_an_if_traced_again, (np.float64(1.0),)),
    ("9", "a `nonlocal` list rebuilt (`items = items + [i]`) in a loop on a tensor",
     rebuilds_a_nonlocal_list_in_a_loop, (np.int64(2),)),
]

# refused by autograph.grad: a gradient that exists but that the graph cannot compute
GRAD_REFUSED = [
    ("10", "`grad` through a run-time Python object (`sorted` of a float and an int, kept as Python's sorted for "
           "the run)", grad_through_sorted_of_mixed_kinds, (np.float64(1.5),)),
]


# -- running -------------------------------------------------------------------------------------

def _source(fn) -> str:
    return inspect.getsource(fn).rstrip()


def _cut_paths(message: str) -> str:
    """Absolute paths and the report's module as the file name alone (the page is read anywhere)."""
    return message.replace(os.path.dirname(os.path.abspath(__file__)) + os.sep, "")


def check_supported(fn, args) -> str:
    """'' when plain and converted agree on every engine-independent count, else what differs."""
    plain = differential.call(fn, args)
    converted = differential.call(autograph.function(fn), args)
    kind, detail = differential.compare(plain, converted)
    return "" if kind == differential.AGREE else f"{kind}: {detail}"


def refusal(fn, args) -> str:
    """The refusal's type and message ('' when the converted call did not raise)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            autograph.function(fn)(*[_fresh(a) for a in args])
    except Exception as e:  # noqa: BLE001 (any refusal is what is reported)
        return f"{type(e).__name__}: {_cut_paths(str(e))}"
    return ""


def grad_refusal(fn, args) -> str:
    """The refusal of autograph.grad(fn) ('' when it gave a gradient)."""
    try:
        autograph.grad(fn)(*args)
    except Exception as e:  # noqa: BLE001 (any refusal is what is reported)
        return f"{type(e).__name__}: {_cut_paths(str(e))}"
    return ""


def _fresh(a):
    return a.copy() if isinstance(a, (np.ndarray, list, dict)) else a


def grad_refusal_and_aux() -> tuple[str, str]:
    try:
        autograph.grad(grad_of_a_tuple)(np.float64(3.0))
        refused = ""
    except Exception as e:  # noqa: BLE001
        refused = f"{type(e).__name__}: {_cut_paths(str(e))}"
    g, aux = autograph.grad(grad_with_aux, has_aux=True)(np.float64(3.0))
    return refused, f"grad(f, has_aux=True)(3.0) gives ({g!r}, {aux!r})"


def report() -> str:
    lines = ["# Converted code and Python: issue 25's constructs", "",
             "Written by `python docs/python_conformance.py docs/python_conformance.md`, which runs",
             "each program below as plain Python and through `@autograph.function` (the default engine; the",
             "tests run them under every engine: tests/autograph/test_python_behaviour_round3.py). A supported",
             "construct is listed only when the two agree in value, exact type, printed lines, the caller's",
             "objects after the call and exception type; a refused one with the message its refusal gives.",
             "The random-program generator writes classes 1, 2, 5, 6 and 7 (autograph/testing/random_programs.py;",
             "`autograph fuzz --n 10000`). The class numbers are the issue's; 11 is generator expressions given",
             "to builtins (tests/autograph/test_generator_expressions.py runs them under every engine); 12 is",
             "Python iterators advanced inside a loop or `if` on a tensor (tests/autograph/",
             "test_iterators_in_control_flow.py).", "", "## Supported", ""]
    failures = []
    for cls, title, fn, args in SUPPORTED:
        problem = check_supported(fn, args)
        if problem:
            failures.append(f"{fn.__name__}: {problem}")
        lines += [f"### {cls}. {title}", "", "```python", _source(fn), "```", "",
                  f"Called with `{', '.join(differential._show(a) if not isinstance(a, (list, dict, np.ndarray)) else repr(a) for a in args)}`: "
                  + ("**differs**: " + problem if problem else "the same as Python."), ""]
    refused_grad, aux = grad_refusal_and_aux()
    lines += ["### 10. `grad` of a function returning a pair, with `has_aux=True`", "", "```python",
              _source(grad_with_aux), "```", "", aux + " (JAX's convention: the first output differentiated).", "",
              "## Refused, with the message", ""]
    for cls, title, fn, args in REFUSED:
        message = refusal(fn, args)
        if not message:
            failures.append(f"{fn.__name__}: not refused")
        lines += [f"### {cls}. {title}", "", "```python", _source(fn), "```", "", "```text",
                  message or "(not refused)", "```", ""]
    lines += ["### 10. `grad` of a function returning a tuple", "", "```python", _source(grad_of_a_tuple), "```", "",
              "```text", refused_grad or "(not refused)", "```", ""]
    for cls, title, fn, args in GRAD_REFUSED:
        message = grad_refusal(fn, args)
        if not message:
            failures.append(f"{fn.__name__}: grad not refused")
        lines += [f"### {cls}. {title}", "", "```python", _source(fn), "```", "", "```text",
                  message or "(not refused)", "```", ""]
    if failures:
        raise SystemExit("conformance report: " + "; ".join(failures))
    return "\n".join(lines)


if __name__ == "__main__":
    text = report()
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(text, encoding="utf-8")
    else:
        print(text)
