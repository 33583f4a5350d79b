"""Binary search in a sorted array: the index of `target`, or -1 when it is absent."""
import numpy as np

import autograph


@autograph.function
def binary_search(sorted_values, target):
    lo = 0
    hi = len(sorted_values)
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_values[mid] < target:
            lo = mid + 1
        else:
            hi = mid
    found = -1
    if lo < len(sorted_values):
        if sorted_values[lo] == target:
            found = lo
    return found


_PRIMES = np.array([2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47], dtype=np.int64)
EXAMPLES = [(_PRIMES, np.int64(31)), (_PRIMES, np.int64(30)), (_PRIMES, np.int64(2)), (_PRIMES, np.int64(99))]

if __name__ == "__main__":
    for values, target in EXAMPLES:
        print(f"binary_search(primes, {target}) = {binary_search(values, target)}")
