"""Euclid's algorithm for the greatest common divisor."""
import numpy as np

import autograph


@autograph.function
def gcd(a, b):
    while b != 0:
        a, b = b, a % b
    return a


EXAMPLES = [(np.int64(1071), np.int64(462)), (np.int64(17), np.int64(5)), (np.int64(12), np.int64(0))]

if __name__ == "__main__":
    for a, b in EXAMPLES:
        print(f"gcd({a}, {b}) = {gcd(a, b)}")
