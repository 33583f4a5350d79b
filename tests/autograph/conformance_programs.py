"""Programs from the conformance issue (each once returned a different value, printed
different lines or was refused); test_conformance runs each as Python and converted."""
import math

import numpy as np


def first_over(limit):
    k = 0
    total = 0
    while k < limit:
        k += 2
        total += k
        if total > 10:
            return total
    return -1


def echo_until(n):
    j = 0
    while j < n:
        j += 1
        if j == 4:
            print("end", j)
            break
        print("j", j)
    return j


def raise_if_negative(x):
    if x < 0:
        raise ValueError("negative")
    return x + 1


def raise_in_loop(n):
    i = 0
    s = 0
    while i < n:
        if i == 3:
            raise KeyError("three")
        s += i
        i += 1
    return s


def assert_positive(x):
    assert x > 0, "x must be positive"
    return x * 2


def or_operand(a, b):
    return a or b


def and_operand(a, b):
    return a and b


def falls_off(x):
    if x > 0:
        return x


def falls_off_in_loop(n):
    i = 0
    while i < n:
        i += 1
        if i == 5:
            return i * 10


def body_local(n):
    s = 0
    for k in range(n):
        if k % 2 == 0:
            u = k
        else:
            u = -k
        s += u
    return s


def mixed_tuple(a):
    if a > 0:
        return a, 1
    else:
        return -a, a + 2


def weak_return(a):
    if a > 0:
        return 1
    return a


def weak_range(n):
    x = np.int32(0)
    for k in range(n):
        x = x + k
    return x


def weak_counter(x32, n):
    s = 0
    for k in range(n):
        s = s + k
    return x32 + s


def print_python_only(n):
    s = 0
    for i in range(n):
        print("tick")
        s += i
    print("done")
    return s


def matcher(x, k):
    match k:
        case 1 | 2:
            y = x + 1
        case None:
            y = x
        case 5 if x > 0:
            y = x * 10
        case z if z > 7:
            y = x - z
        case _:
            y = -x
    return y


def walrus_in_while(n):
    i = 0
    while (j := i * 2) < n:
        i += 1
    return i, j


def destructure(p):
    match p:
        case (a, b):
            return a + b
    return p


def dict_item_both_branches(a):
    d = {"n": 1}
    if a > 0:
        d["k"] = a
    else:
        d["k"] = -a
    return d["k"] + d["n"], len(d)


def dict_item_one_branch(a):
    d = {}
    if a > 0:
        d["k"] = a
    return len(d)


# -- found by the random program tester (autograph fuzz), shrunk ---------------------

def inner_loop_from_invariant(n, m, xs):
    for v in xs:
        k = 0
        while n >= m and k < 7:
            k += 1
        return (k * 3,)


def guarded_read_in_loop_test(n):
    if n >= 1:
        z = 2.0
    else:
        return (not 0,)
    for i in range(n):
        k = 0
        while i > z and k < n:
            k += 1


def no_return_through_empty_python_loop(n):
    if not n:
        for i in range(3, 1):
            return False


def int_truth(n):
    if n * n:
        return 1
    return 2


def and_operand_in_while_test(n, m):
    k = 0
    while (m and n) and k < 4:
        k += 1
    return k


def python_int_joins_int32_in_loop(n, m):
    d = n
    for i in range(n):
        k = 0
        while (i > 3 and m < 3.0) and k < 4:
            k += 1
            d = k
    return (d,)


def tuple_first_returned_in_nested_loop(x, n):
    k = 0
    while k < n:
        k += 1
        for i in range(n, n + 2):
            if k <= i and x > 0:
                return (x < 0.5, n if x >= n else 1)
    return (True, 0)


def abs_of_counter(n):
    k = 0
    while k < 4:
        k += 1
        acc = abs(k)
        acc += n
        if n == acc:
            continue
        return (acc,)


def cond_on_invariant_in_loop_body(x, y):
    done = not 4 <= x <= 3
    k = 0
    while y > 2 and k < 3:
        k += 1
        if done:
            return (y,)


def python_false_assert_in_untaken_branch(x):
    for i in range(5, 6):
        j = -1
        for j in range(i + 1, 0, -1):
            if i < 7 and x <= 0.0:
                if abs(i) == 1:
                    break
            elif x < 1.5:
                d = i - i // 2
                assert j > d + j, "A2"
        return (abs(j), i)


def undefined_read_in_untaken_branch(y, n):
    if y < -1:
        best = abs(n) // 4
    elif n * -1 == 1:
        return 1
    else:
        return 2
    return best


def prints_before_a_python_raise(xs, d):
    for i in range(2):
        print("L1:", xs, i)
    if d != 4:
        raise ValueError("E2")
    return d


def walrus_with_break_and_continue(n):
    i = 0
    while (j := i * 2) < n and i < 100:
        i += 1
        if i == 3:
            continue
        if j > 6:
            break
    return i, j


def walrus_in_and(x):
    if (y := x * 2) > 0 and y < 10:
        return y
    return -1


def invariant_minus_itself_in_loop_test(n, xs):
    k = 0
    while n - n > 7 and k < 4:
        k += 1
        for v in xs:
            print('L1:', n)


# -- `return` of None and of Python values on paths chosen at run time ----------------------

def early_bare_return(x):
    if x > 0:
        return
    y = x * 2
    return y


def none_or_value(x):
    if x > 5:
        return
    if x > 0:
        return x
    return x * 3


def returns_none_inside_loop(n):
    s = 0
    for i in range(n):
        if s > 5:
            return
        s += i
    return s


def returns_none_or_index_inside_loop(n):
    i = 0
    while i < n:
        if i == 7:
            return None
        if i * i > 20:
            return i
        i += 1
    return None


def tuple_or_none(x):
    if x > 0:
        return
    return x, x * 2


def same_string_on_every_path(x):
    if x == 1:
        return 'small', x
    return 'small', -x


def searches_then_returns(n):
    i = 0
    while i < n:
        if i > 3:
            return i
        i += 1
    return -1


def calls_search(n):
    return searches_then_returns(n) * 2


def maybe_value(x):
    if x > 0:
        return x


def uses_maybe_value(x):
    r = maybe_value(x)
    return r is None


def string_on_one_path(x):
    if x > 0:
        return 'positive'
    return 'other'


def pops_in_loop(n):
    stack = [1, 2, 3, 4]
    total = 0
    i = 0
    while i < n:
        total += stack.pop()
        i += 1
    return total


def none_or_pair_in_loop(n):
    k = 0
    while k < 5:
        k += 1
        if k > 2:
            return None  # (the loop's first trace, on k = 0, takes the other path)
        if k > n:
            return k, k * 2
    return 0, 0


def none_in_inner_loop_pair_in_outer(n):
    for i in range(n):
        for j in range(i):
            if j > 1:
                return
        if i > 2:
            return i, i * 2
    return -1, -1


def none_from_inner_loop_value_after(n, xs):
    s = 0
    for v in xs:
        s += v
        for i in range(n):
            if i > 0:
                return
        if s > 2:
            return s
    return -1


def none_then_python_int_in_loop_then_argument(n, xs):
    if n < n:
        return
    for v in xs:
        return 4  # a Python int: it takes the argument's int32 below, as on the other path
    return n


# -- closures (found by hand-written probes): a nested function or lambda reads and
# changes the enclosing function's variables when it is called, which liveness does not see

def closure_reads_value_changed_in_if(x):
    c = 1.0
    g = lambda v: v * c  # noqa: E731
    if x > 0:
        c = 2.0  # read only through g: it gave 1.5 for 3.0
    return g(x)


def closure_reads_value_changed_in_loop(n):
    c = 0
    g = lambda: c * 10  # noqa: E731
    for i in range(n):
        c = i
    return g()


def nonlocal_bump_in_loop(n):
    count = 0

    def bump():
        nonlocal count
        count += 1
    for i in range(n):
        bump()  # ran once, while tracing: it gave 1 for 3 calls
    return count


def nonlocal_in_while_helper(x):
    steps = 0

    def step(v):
        nonlocal steps
        steps += 1
        return v / 2
    while x > 1:
        x = step(x)
    return x, steps


def closure_appends_to_outer_list(xs):
    out = []

    def push(v):
        out.append(v)  # rebound as a local of push: UnboundLocalError
    for v in xs:
        push(v * 2)
    return len(out)


# -- a math function that raises, whose value is never read (random programs with a nan
# argument): the graph ran only what the returned values needed, so it gave a value

def unused_floor(x):
    z = math.floor(x)  # noqa: F841 (ValueError for nan, OverflowError for inf)
    return x * 2


def prints_around_sqrt(x):
    print("before")
    r = math.sqrt(x)  # noqa: F841 (ValueError for a negative x, after the first print only)
    print("after")
    return x


# -- lists and arrays another name shares (hand-written probes): a loop or `if` on a tensor
# makes the changed list a new value, which the other name would not see

def appends_through_one_name(xs):
    acc = []
    alias = acc
    for v in xs:
        acc.append(v)  # alias saw 0 items
    return len(alias)


def appends_in_if_through_one_name(x):
    acc = [1.0]
    alias = acc
    if x > 0:
        acc += [x]  # alias saw 1 item
    return len(alias)


def appends_to_a_list_a_dict_holds(xs):
    acc = []
    d = {"vals": acc}
    for v in xs:
        acc.append(v)
    return len(d["vals"])


def changes_array_another_name_shares_in_if(x):
    y = np.zeros(2)
    z = y
    if x > 0:
        y += x  # z stayed zeros (the loop case was refused already)
    return z


def adds_to_a_set_in_loop(xs):
    seen = set()
    for v in xs:
        seen.add(int(v))  # ran once, while tracing: 1 item
    return len(seen)


def list_plus_equals_and_extend_in_loop(xs):
    acc = []
    for v in xs:
        acc += [v * 2]  # TypeError: StagedList += list
        acc.extend([v, -v])  # refused: a Python list after an iteration
    alias = acc
    return len(alias), np.array(acc)


# -- numpy's array constructors (hand-written probes): a Python number in np.stack is an
# array of its own dtype first, not weakly typed as in arithmetic

def stack_with_python_float(x):
    return np.stack([x, 0.5])  # float64 in numpy; the graph gave float32 for a float32 x


def stack_with_python_int(n):
    return np.stack([n, 2])  # int64 in numpy; the graph gave int32 for an int32 n


def arrays_of_lists_holding_tensors(x, n):
    a = np.array([[x, 0.5], [1, 2]])  # TypeError: the graph tensor cannot become a numpy array
    return a, np.mean([n, n + 1]), np.max([x, 0.5]), np.concatenate([a[0], [0.25]])


def counts_nan_and_infinite(xs):
    c = 0
    for v in xs:
        if np.isnan(v):  # TypeError: numpy's isnan cannot run on the graph tensor
            c += 1
        elif not np.isfinite(v):
            c += 10
    print(repr(np.isinf(xs[0])) if len(xs) else "empty")
    return c, np.isinf(xs), np.fabs(xs)


def containers_made_in_the_body(xs):
    c = 0
    for v in xs:
        seen = set()  # made in each iteration: its changes are Python's, not refused
        seen.add(1)
        parts = []
        alias = parts
        parts.append("a")
        parts += [v]
        c += len(seen) + len(alias)
    return c


def float_index_where_the_path_runs(xs, x):
    if x > 5:
        return xs[x]  # numpy's IndexError when this path runs (a GraphError while tracing, on every path)
    return xs[0]


# -- conversions that raise, whose value is never read (probes with nan / inf arguments)

def unused_int(x):
    k = int(x)  # noqa: F841 (ValueError for nan, OverflowError for inf: the graph gave x)
    return x


def int_in_loop_prints_around(xs):
    total = 0
    for v in xs:
        print("at", v)
        k = int(v)  # noqa: F841 (raises after the print of that element)
        total += 1
    return total


# -- a Python str chosen at run time (probes): refused, saying which values and what to write
# (the message said "'msg' is a Python str in the if branch but a Python str in the else branch")

def label_by_if_expression(v):
    label = "big" if v > 1 else "small"
    print(label)
    return label


def message_by_if_statement(x):
    if x > 0:
        msg = "pos"
    else:
        msg = "neg"
    return msg


# -- a format spec with a tensor in a nested field (probe): the run failed with "Invalid format
# specifier '<Tensor w:0 ...>.2f'"

def nested_spec_with_a_tensor(x, w):
    print(f"{x:{w}.2f}|{3.5:>{w}}|{x!r:>{w + 2}}")
    print("{:{}}|{x:{w}}".format(x, w, x=x, w=w))
    print("{0:{1}.{2}f}".format(x, w, 3))
    if x > 100:
        raise ValueError(f"too big: {x:{w}.1f}")
    return x


# -- max / min / sum of a Python list holding tensors (probe): "Decorate the function with
# @autograph.function" (Python's max compared the tensors as bools)

def extremes_of_a_list(x, n):
    a = max([x, x * 2, 0.5])
    b = min([x, x * 2, 0.5])
    c = sum([x, x * 2, 0.5])
    d = max((n, 3))
    e = max([x, float("nan")]), max([float("nan"), x]), min([x, -x], key=abs), max([x])
    g = max([n, 2, n + 1], default=7), max(v * 2 for v in [n, 1])
    return a, b, c, d, e, g, sum([n, n]), sum([x], 1)


# -- a Python int an np.int32 join cannot hold (probe): numpy's OverflowError while tracing,
# on every path; now InexactTypeError on the path that assigns it only

def big_python_int_joins_int32(n):
    y = n
    if n < 0:
        y = 3000000000
    z = n if n > -5 else 3000000000
    return y, z


def big_python_int_joins_int32_in_loop(n):
    y = n
    k = 0
    while k < n:
        y = 3000000000
        k += 1
    return y


# -- round(x, n) of a value that is a Python float or an np.float64 depending on the path
# (probe): refused; each path's rounding is computed now and the tag chooses

def round_of_a_path_typed_value(c, xv, n32):
    r = 2.675 if c > 0 else xv
    s = 12345 if c > 1 else n32
    print(round(r, 2), round(s, -2), round(3.0 if c > 0 else xv, 1))
    return round(r, 2), round(s, -2), round(r * 2, 1), round(3.0 if c > 0 else xv, 1)


# -- bool() / float() of arrays numpy refuses (probes): the graph gave a value

def unused_bool_of_a_slice(xs, k):
    b = bool(xs[:k])  # noqa: F841 (ValueError unless the slice has one element: never read)
    return k


def float_of_a_one_element_array(xs):
    return float(xs[:1])  # TypeError in numpy 2.3 on: only 0-d arrays convert
