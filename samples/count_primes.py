"""Count the primes below n by trial division: a for loop over a tensor range, a
while loop inside it, and a break."""
import numpy as np

import autograph


@autograph.function
def count_primes(n):
    count = 0
    for k in range(2, n):
        is_prime = True
        d = 2
        while d * d <= k:
            if k % d == 0:
                is_prime = False
                break
            d += 1
        if is_prime:
            count += 1
    return count


EXAMPLES = [(np.int64(30),), (np.int64(100),), (np.int64(2),)]

if __name__ == "__main__":
    for (n,) in EXAMPLES:
        print(f"count_primes({n}) = {count_primes(n)}")
