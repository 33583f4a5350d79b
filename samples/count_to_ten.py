"""The loop from the seed talk: `tf.while_loop(lambda i: i < 10, lambda i: i + 1, [0])`."""
import numpy as np

import autograph


@autograph.function
def count_to_ten(i):
    while i < 10:
        i += 1
    return i


EXAMPLES = [(np.int64(0),), (np.int64(7),), (np.int64(12),)]

if __name__ == "__main__":
    for (i,) in EXAMPLES:
        print(f"count_to_ten({i}) = {count_to_ten(i)}")
