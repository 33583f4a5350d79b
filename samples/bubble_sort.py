"""Bubble sort of a tensor: two nested graph loops; a swap gathers the array through a
permutation that exchanges positions j and j + 1."""
import numpy as np

import autograph
import graphcore as gc


def swapped(values, j):
    """`values` with elements j and j + 1 exchanged."""
    positions = gc.range(gc.size(values))
    order = gc.where(positions == j, j + 1, gc.where(positions == j + 1, j, positions))
    return gc.gather(values, order)


@autograph.function
def bubble_sort(values):
    n = gc.size(values)
    i = 0
    while i < n - 1:
        j = 0
        while j < n - 1 - i:
            if values[j] > values[j + 1]:
                values = swapped(values, j)
            j += 1
        i += 1
    return values


EXAMPLES = [(np.array([5.0, 1.0, 4.0, 2.0, 8.0, 0.5]),), (np.array([3, 2, 1], dtype=np.int64),)]

if __name__ == "__main__":
    for (values,) in EXAMPLES:
        print(f"bubble_sort({values}) = {bubble_sort(values)}")
