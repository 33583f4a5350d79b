"""Programs a user would write, each runnable on its own and each also a test case.

Every sample is a plain module with one `@autograph.function`, a `__main__` block that
runs it, and a module-level `EXAMPLES`: a list of argument tuples (numpy values, so
they become graph inputs). Optional module attributes:

  TOLERANCE   relative tolerance when comparing the graph's result with plain Python
              (default: exact for integers and bools, 1e-9 for floats).

`SAMPLES` lists them in order; `Sample.python_function` is the undecorated original,
which the demo and the tests run as plain Python to check the graph's result.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any, Callable

_HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class Sample:
    """One sample: `name` is its module in this package, `function` the decorated function."""

    name: str
    function: str
    description: str

    @property
    def module(self):
        return importlib.import_module(f"{__name__}.{self.name}")

    @property
    def path(self) -> str:
        return os.path.join(_HERE, f"{self.name}.py")

    @property
    def fn(self):
        """The @autograph.function."""
        return getattr(self.module, self.function)

    @property
    def python_function(self) -> Callable:
        """The plain-Python original."""
        return self.fn.python_function

    @property
    def examples(self) -> list[tuple]:
        return list(self.module.EXAMPLES)

    @property
    def tolerance(self) -> float | None:
        return getattr(self.module, "TOLERANCE", None)


SAMPLES: list[Sample] = [
    Sample("seed_cond", "choose", "the seed's cond: x + z if x < y else y * y"),
    Sample("count_to_ten", "count_to_ten", "the seed's loop: while i < 10: i += 1"),
    Sample("fibonacci", "fibonacci", "the seed's Fibonacci while loop"),
    Sample("collatz", "collatz", "Collatz steps: a while loop with an if inside"),
    Sample("gcd", "gcd", "Euclid's greatest common divisor"),
    Sample("newton_sqrt", "newton_sqrt", "Newton's method for the square root"),
    Sample("binary_search", "binary_search", "binary search in a sorted array"),
    Sample("bubble_sort", "bubble_sort", "bubble sort of a tensor: nested loops and swaps"),
    Sample("count_primes", "count_primes", "count primes by trial division, with break"),
    Sample("matrix_power", "matrix_power", "matrix power by repeated squaring"),
    Sample("nested_search", "find_in_grid", "early return from a nested search"),
    Sample("print_loop", "doubling", "print inside a loop"),
    Sample("power_loop", "power", "x ** n by a while loop (and, with `autograph grad`, its derivative)"),
    Sample("running_stats", "running_stats", "running mean and spread: items filled in a loop, math.sqrt, a mask"),
    Sample("softmax_regression", "train", "softmax regression trained by gradient descent"),
    Sample("rnn_adam", "train", "a small RNN trained with Adam"),
]


def find_sample(name: str) -> Sample | None:
    """The sample called `name` (its module name or its function name)."""
    for s in SAMPLES:
        if name in (s.name, s.function) and os.path.exists(s.path):
            return s
    return None


def available_samples() -> list[Sample]:
    """The samples whose files exist (some need work that is still in progress)."""
    return [s for s in SAMPLES if os.path.exists(s.path)]


def run_example(sample: Sample, args: tuple, converted: bool = True) -> Any:
    """Run one example, converted (graph) or as plain Python."""
    return (sample.fn if converted else sample.python_function)(*args)
