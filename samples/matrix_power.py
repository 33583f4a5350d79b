"""Matrix power by repeated squaring: O(log n) matrix products in a graph loop."""
import numpy as np

import autograph
import graphcore as gc


@autograph.function
def matrix_power(m, n):
    result = gc.constant(np.eye(m.shape[0]))
    while n > 0:
        if n % 2 == 1:
            result = result @ m
        m = m @ m
        n = n // 2
    return result


_FIB = np.array([[1.0, 1.0], [1.0, 0.0]])
_ROT = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
EXAMPLES = [(_FIB, np.int64(10)), (_ROT, np.int64(5)), (_FIB, np.int64(0))]
TOLERANCE = 1e-12

if __name__ == "__main__":
    for m, n in EXAMPLES:
        print(f"matrix_power({m.tolist()}, {n}) =\n{matrix_power(m, n)}")
