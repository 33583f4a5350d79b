"""What a `nonlocal` accumulator costs per call next to the same function taking the value as
an argument and returning it (the caller keeping it): the nonlocal is read (fed) at each call
and written back after the run. Best of repeated rounds, the two interleaved (the machine may
be shared).

    python benchmarks/bench_nonlocal_state.py
"""
import time

import numpy as np

from autograph import function

CALLS = 2000
ROUNDS = 5


def make_accumulator():
    total = np.float64(0.0)

    def add(x):
        nonlocal total
        total = total + x
        return total
    return add


def add_to(total, x):
    return total + x


def main() -> None:
    through_nonlocal = function(make_accumulator())
    through_argument = function(add_to)
    x, total = np.float64(1.0), np.float64(0.0)
    through_nonlocal(x)
    through_argument(total, x)
    best_nonlocal = best_argument = float("inf")
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(CALLS):
            through_nonlocal(x)
        best_nonlocal = min(best_nonlocal, time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(CALLS):
            total = through_argument(total, x)
        best_argument = min(best_argument, time.perf_counter() - t0)
    print(f"nonlocal accumulator: {best_nonlocal / CALLS * 1e6:.1f} us/call")
    print(f"value as an argument: {best_argument / CALLS * 1e6:.1f} us/call")
    print(f"ratio: {best_nonlocal / best_argument:.2f}")


if __name__ == "__main__":
    main()
