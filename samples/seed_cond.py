"""The cond from the seed talk: `tf.cond(x < y, lambda: tf.add(x, z), lambda: tf.square(y))`,
written as a plain Python `if`."""
import numpy as np

import autograph


@autograph.function
def choose(x, y):
    z = 2.0
    if x < y:
        r = x + z
    else:
        r = y * y
    return r


EXAMPLES = [(np.float64(1.0), np.float64(3.0)), (np.float64(5.0), np.float64(3.0))]

if __name__ == "__main__":
    for args in EXAMPLES:
        print(f"choose{tuple(float(a) for a in args)} = {choose(*args)}")
