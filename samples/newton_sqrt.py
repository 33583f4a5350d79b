"""Newton's method for the square root, stopping when the step is tiny."""
import numpy as np

import autograph


@autograph.function
def newton_sqrt(x, tolerance=1e-12):
    guess = x / 2.0 + 0.5
    step = guess
    while abs(step) > tolerance * guess:
        new_guess = (guess + x / guess) / 2.0
        step = new_guess - guess
        guess = new_guess
    return guess


EXAMPLES = [(np.float64(2.0),), (np.float64(1e6),), (np.float64(0.25),)]
TOLERANCE = 1e-12

if __name__ == "__main__":
    for (x,) in EXAMPLES:
        print(f"newton_sqrt({x}) = {newton_sqrt(x)}  (numpy: {np.sqrt(x)})")
