"""The Fibonacci loop, the smallest while loop with loop variables that feed each other:

    r1, r2, r3 = tf.while_loop(lambda a, b, i: i < 2, lambda a, b, i: (b, a + b, i + 1), [1, 1, 1])

`fibonacci(n)` returns the n-th Fibonacci number (1, 1, 2, 3, 5, ...); n = 2 runs the
loop body exactly once, as in the walk-through: `autograph trace fibonacci 2`."""
import numpy as np

import autograph


@autograph.function
def fibonacci(n):
    a, b, i = 1, 1, 1
    while i < n:
        a, b, i = b, a + b, i + 1
    return a


EXAMPLES = [(np.int64(2),), (np.int64(10),), (np.int64(50),)]

if __name__ == "__main__":
    for (n,) in EXAMPLES:
        print(f"fibonacci({n}) = {fibonacci(n)}")
