"""Running mean and spread of a series, written as numpy users write it: `means[i] = ...`
fills arrays in a loop over a tensor range, `math.sqrt` of a Python-number expression,
spreads above a limit clipped with a bool mask, and a %-formatted line printed when the
graph runs: `autograph run running_stats "[2.0, 4.0, 4.0, 5.0]" 4 0.5 --check` compares the graph with
plain Python."""
import math

import numpy as np

import autograph


@autograph.function
def running_stats(xs, n, limit):
    means = np.zeros_like(xs)
    spreads = np.zeros_like(xs)
    total = 0.0
    squares = 0.0
    for i in range(n):
        total += xs[i]
        squares += xs[i] * xs[i]
        mean = total / (i + 1)
        means[i] = mean
        spreads[i] = math.sqrt(max(squares / (i + 1) - mean * mean, 0.0))
    spreads[spreads > limit] = limit
    print("after %d values: mean %.3f, spread %.3f" % (n, means[n - 1], spreads[n - 1]))
    return means, spreads


EXAMPLES = [(np.array([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]), np.int64(8), np.float64(1.5)),
            (np.array([1.0, -1.0, 3.0]), np.int64(2), np.float64(10.0))]

if __name__ == "__main__":
    for xs, n, limit in EXAMPLES:
        means, spreads = running_stats(xs, n, limit)
        print("means", means, "spreads", spreads)
