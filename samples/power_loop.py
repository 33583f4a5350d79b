"""x ** n by a while loop, and its derivative n * x ** (n - 1) taken through the loop:
`autograph grad power_loop 1.5 5 --wrt x` prints both."""
import numpy as np

import autograph


@autograph.function
def power(x, n):
    y = 1.0
    i = 0
    while i < n:
        y = y * x
        i += 1
    return y


EXAMPLES = [(np.float64(1.5), np.int64(5)), (np.float64(-0.5), np.int64(3)), (np.float64(2.0), np.int64(0))]
TOLERANCE = 1e-12

if __name__ == "__main__":
    value_and_slope = autograph.value_and_grad(power)
    for x, n in EXAMPLES:
        value, slope = value_and_slope(x, n)
        print(f"power({x}, {n}) = {value}  d/dx = {slope}  (closed form: {n * x ** (n - 1) if n else 0.0})")
