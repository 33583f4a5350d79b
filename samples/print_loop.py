"""Printing inside a loop: in the graph, print becomes a Print op that runs once per
iteration, in order."""
import numpy as np

import autograph


@autograph.function
def doubling(x, n):
    i = 0
    while i < n:
        print("step", i, "value", x)
        x = x * 2
        i += 1
    return x


EXAMPLES = [(np.int64(3), np.int64(4)), (np.float64(0.5), np.int64(2))]

if __name__ == "__main__":
    for x, n in EXAMPLES:
        print(f"doubling({x}, {n}) = {doubling(x, n)}")
