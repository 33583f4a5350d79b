"""Guards of comprehensions, which always run as Python: a tensor iterable or condition
is rejected with a ConversionError at the user's line and column."""
from __future__ import annotations

from ..errors import ConversionError
from .iterables import GraphIterable
from .staging import is_tensor

_ITER_ADVICE = ("a comprehension over a tensor (or range, zip or enumerate of one) cannot be converted: comprehensions run as Python and the tensor's "
                "rows are only known when the graph runs. Write a for loop that appends to a list (it becomes a "
                "graph loop), or use graphcore.map_fn.")
_TEST_ADVICE = ("a comprehension's condition is a tensor, which cannot be converted: comprehensions run as Python "
                "and the condition is only known when the graph runs. Write a for loop with an if statement that "
                "appends to a list, or select with graphcore.where.")


def _python_only(value, origin: tuple, advice: str):
    if is_tensor(value) or isinstance(value, GraphIterable):  # a tensor, range(tensor), zip/enumerate of them
        raise ConversionError(advice, *origin)
    return value


def comprehension_iter(iterable, origin: tuple):
    """The iterable of a comprehension, if it is a Python value."""
    return _python_only(iterable, origin, _ITER_ADVICE)


def comprehension_test(test, origin: tuple):
    """An `if` condition of a comprehension, if it is a Python value."""
    return _python_only(test, origin, _TEST_ADVICE)
