"""Early return from a nested search: the first (row, column) holding `target`, or
(-1, -1). The `return` inside two loops becomes loop exits in the graph."""
import numpy as np

import autograph
import graphcore as gc


@autograph.function
def find_in_grid(grid, target):
    rows = gc.shape(grid)[0]
    cols = gc.shape(grid)[1]
    for i in range(rows):
        for j in range(cols):
            if grid[i, j] == target:
                return i, j
    return -1, -1


_GRID = np.array([[3, 8, 1, 9], [4, 7, 7, 2], [6, 0, 5, 7]], dtype=np.int64)
EXAMPLES = [(_GRID, np.int64(7)), (_GRID, np.int64(6)), (_GRID, np.int64(42))]

if __name__ == "__main__":
    for grid, target in EXAMPLES:
        print(f"find_in_grid(grid, {target}) = {find_in_grid(grid, target)}")
