"""How many Collatz steps take n to 1: a while loop with an if inside."""
import numpy as np

import autograph


@autograph.function
def collatz(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


EXAMPLES = [(np.int64(27),), (np.int64(1),), (np.int64(97),)]

if __name__ == "__main__":
    for (n,) in EXAMPLES:
        print(f"collatz({n}) = {collatz(n)}")
