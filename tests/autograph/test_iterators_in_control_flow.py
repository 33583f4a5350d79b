"""Python iterators and graph control flow, under Control Flow v1, v2 lowered, v2 direct and
jit_compile=True. An iterator's position is Python state no cond or loop carries: advancing,
inside a loop or `if` on a tensor, one made outside it moved it once per trace (twice when the
branch was traced again: `next(it)` gave 2 for 1), whatever the run did. That is refused with a
StagingError naming the file, the line and the iterator's variable; so is advancing one after a
Python for loop over it stopped (`break`) on a tensor (the trace went through all its items: -1
for Python's 2). An iterator made inside the branch or body, or advanced before it, runs as
Python does (compared with plain Python)."""
from __future__ import annotations

import numpy as np
import pytest

from autograph import do_not_convert, function
from autograph.errors import StagingError
from autograph.testing import differential

ENGINES = [
    pytest.param({"control_flow": "v1"}, id="v1"),
    pytest.param({"control_flow": "v2", "functional": "lower"}, id="v2-lowered"),
    pytest.param({"control_flow": "v2", "functional": "direct"}, id="v2-direct"),
    pytest.param({"jit_compile": True}, id="compiled"),
]
XS = [np.float64(1.0), np.float64(-1.0), np.float64(2.0), np.float64(2.5)]


def agree(fn, args, engine):
    plain = differential.call(fn, args)
    converted = differential.call(function(fn, **engine), args)
    kind, detail = differential.compare(plain, converted)
    assert kind == differential.AGREE, f"{kind}: {detail}\nplain: {plain.describe()}\ngraph: {converted.describe()}"


def line_of(fn, text: str) -> int:
    """The line number of the first line of `fn`'s source holding `text`."""
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, s in enumerate(lines) if text in s)


# -- refused: an iterator made outside, advanced inside ----------------------------------------

def next_in_an_if(x):  # the report's case: 2 instead of 1 (the branch is traced twice for its print)
    it = iter([1, 2, 3])
    if x > 0:
        r = next(it)
        print(r)
    else:
        r = 0
    return r


def next_in_an_if_and_after_it(x):  # Python's second next() depends on the branch taken
    it = iter([1, 2, 3])
    if x > 0:
        r = next(it)
    else:
        r = 0
    return r + next(it)


def any_of_a_generator_of_python_items(x):
    gen = (i for i in [0, 1, 2])
    if x > 0:
        r = any(gen)
    else:
        r = False
    return r, next(gen, -1)


@do_not_convert  # (a generator function is called as it is: its generator is Python's)
def counter():
    yield 10
    yield 20


def next_of_a_generator_function(x):
    g = counter()
    if x > 0:
        r = next(g)
    else:
        r = 0
    return r + next(g)


def for_over_an_iterator_in_a_while(x):
    it = iter([1, 2, 3])
    s = 0
    n = x
    while n > 0:
        for v in it:
            s += v
            break
        n -= 1
    return s


def list_of_an_iterator_in_an_if(x):
    it = iter([1, 2, 3])
    if x > 0:
        r = len(list(it))
    else:
        r = 0
    return r, len(list(it))


def zip_with_an_iterator_in_an_if(x):
    it = iter([1, 2, 3])
    r = 0
    if x > 0:
        for a, b in zip(it, [5, 6]):
            r += a * b
    return r, next(it, -1)


def next_in_a_conditional_expression(x):
    it = iter([1, 2, 3])
    r = next(it) if x > 0 else 0
    return r + next(it)


def dunder_next_in_an_if(x):
    it = iter([1, 2, 3])
    if x > 0:
        r = it.__next__()
    else:
        r = 0
    return r + next(it)


def comprehension_over_an_iterator_in_an_if(x):
    it = iter([1, 2, 3])
    if x > 0:
        r = sum([v for v in it])
    else:
        r = 0
    return r + next(it, 0)


def membership_in_an_iterator_in_an_if(x):  # `in` advances it to the item found
    it = iter([1, 2, 3])
    if x > 0:
        r = 2 in it
    else:
        r = False
    return r, next(it, -1)


def next_in_a_while_body(x):
    it = iter(range(100))
    n = x
    total = 0
    while n > 0:
        total += next(it)
        n -= 1
    return total


def next_after_a_loop_that_breaks_on_a_tensor(x):  # the trace went through every item: -1 for Python's 2
    it = iter([1, 2, 3, 4])
    for v in it:
        if x > v:
            break
    return next(it, -1)


def for_after_a_loop_that_breaks_on_a_tensor(x):
    it = iter([1, 2, 3, 4])
    for v in it:
        if x > v:
            break
    s = 0
    for w in it:
        s += w
    return s


def next_of_an_argument_in_an_if(x, it):
    if x > 0:
        return next(it)
    return 0


REFUSED = [
    (next_in_an_if, "r = next(it)", "it"),
    (next_in_an_if_and_after_it, "r = next(it)", "it"),
    (any_of_a_generator_of_python_items, "r = any(gen)", "gen"),
    (next_of_a_generator_function, "r = next(g)", "g"),
    (for_over_an_iterator_in_a_while, "for v in it:", "it"),
    (list_of_an_iterator_in_an_if, "r = len(list(it))", "it"),
    (zip_with_an_iterator_in_an_if, "for a, b in zip(it, [5, 6])", "it"),
    (next_in_a_conditional_expression, "r = next(it) if x > 0 else 0", "it"),
    (dunder_next_in_an_if, "r = it.__next__()", "it"),
    (comprehension_over_an_iterator_in_an_if, "r = sum([v for v in it])", "it"),
    (next_in_a_while_body, "total += next(it)", "it"),
    (membership_in_an_iterator_in_an_if, "r = 2 in it", "it"),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fn,text,name", REFUSED, ids=[f.__name__ for f, _, _ in REFUSED])
def test_advancing_an_iterator_made_outside_is_refused(fn, text, name, engine):
    for x in XS:
        fn(float(x))  # plain Python runs it
    where = f"test_iterators_in_control_flow.py:{line_of(fn, text)}:"
    with pytest.raises(StagingError) as info:
        function(fn, **engine)(np.float64(1.0))
    message = str(info.value)
    assert where in message and f"Python iterator '{name}'" in message, message
    assert "Advance it before the loop or `if`" in message and "make the iterator inside it" in message, message


AFTER_A_STAGED_STOP = [(next_after_a_loop_that_breaks_on_a_tensor, "return next(it, -1)"),
                       (for_after_a_loop_that_breaks_on_a_tensor, "for w in it:")]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fn,text", AFTER_A_STAGED_STOP, ids=[f.__name__ for f, _ in AFTER_A_STAGED_STOP])
def test_advancing_an_iterator_after_a_loop_stopped_on_a_tensor_is_refused(fn, text, engine):
    for x in XS:
        fn(float(x))
    where = f"test_iterators_in_control_flow.py:{line_of(fn, text)}:"
    loop = f"after the for loop at line {line_of(fn, 'for v in it:')} over it"
    with pytest.raises(StagingError) as info:
        function(fn, **engine)(np.float64(1.0))
    message = str(info.value)
    assert where in message and "Python iterator 'it'" in message and loop in message, message
    assert "items = list(it)" in message, message


@pytest.mark.parametrize("engine", ENGINES)
def test_an_iterator_passed_in_is_refused_inside_an_if(engine):
    with pytest.raises(StagingError, match="Python iterator 'it'"):
        function(next_of_an_argument_in_an_if, **engine)(np.float64(1.0), iter([4, 5]))


# -- Python's values: made inside, or advanced before ------------------------------------------

def made_inside_the_branch(x):
    if x > 0:
        it = iter([1, 2, 3])
        r = next(it)
        print(r)
        r += next(it)
    else:
        r = 0
    return r


def made_inside_a_while_body(x):
    s = 0
    n = x
    while n > 0:
        it = iter([1, 2, 3])
        s += next(it) + next(it)
        n -= 1
    return s


def advanced_before_the_if(x):  # what the refusal says to write
    it = iter([1, 2, 3])
    first = next(it)
    if x > 0:
        r = first
        print(r)
    else:
        r = 0
    return r + next(it)


def indexed_array_instead(x):  # the other rewrite: the items an array, a counter for the position
    items = np.array([1, 2, 3])
    k = 0
    if x > 0:
        r = items[k]
        k += 1
    else:
        r = np.int64(0)
    return r + items[k]


def generator_made_in_the_branch(x):
    if x > 0:
        gen = (i for i in [0, 1, 2])
        r = any(gen)
        s = next(gen, -1)
    else:
        r, s = False, -2
    return r, s


def enumerate_and_zip_made_in_a_loop_body(x):
    total = 0.0
    n = x
    while n > 0:
        for i, (a, b) in enumerate(zip([1.0, 2.0], [3.0, 4.0])):
            total += i + a * b * n
        n -= 1
    return total


def iterator_at_the_top_level(x):
    it = iter([1, 2, 3])
    a = next(it)
    if a > 0:  # a Python condition: Python's if
        b = next(it)
    else:
        b = 0
    return a + b + x


def zip_in_a_loop_that_breaks_on_a_tensor(x):  # the loop's own iterator: nothing advances it afterwards
    s = 0
    for a, b in zip([1, 2, 3], [4, 5, 6]):
        if x > a:
            break
        s += b
    return s


def listed_before_a_loop_that_breaks_on_a_tensor(x):  # the rewrite: a list and a counter
    items = [1, 2, 3, 4]
    k = 0
    for v in items:
        k += 1
        if x > v:
            break
    rest = 0
    for i in range(4):
        if i >= k:
            rest += items[i]
    return rest


WORKS = [zip_in_a_loop_that_breaks_on_a_tensor, listed_before_a_loop_that_breaks_on_a_tensor, made_inside_the_branch, made_inside_a_while_body, advanced_before_the_if, indexed_array_instead,
         generator_made_in_the_branch, enumerate_and_zip_made_in_a_loop_body, iterator_at_the_top_level]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fn", WORKS, ids=[f.__name__ for f in WORKS])
def test_iterators_made_inside_or_advanced_before_agree_with_python(fn, engine):
    for x in XS:
        agree(fn, (x,), engine)
