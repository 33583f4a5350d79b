"""How many random programs the suite's property tests run.

The default sizes keep the whole suite well under ten minutes on two cores, which is what
CI has. `AUTOGRAPH_TESTS=long python -m pytest -q` runs every property test at its long
size (several times the programs; about an hour): run it after changing the converter, the
optimizer, the gradients or an engine. `autograph fuzz --n N --seed S` runs longer still.
"""
from __future__ import annotations

import os

LONG = os.environ.get("AUTOGRAPH_TESTS", "").strip().lower() == "long"


def seeds(start: int, quick: int, long: int) -> range:
    """Seeds `start`, `start + 1`, ...: `quick` of them by default, `long` under AUTOGRAPH_TESTS=long."""
    if not 0 < quick <= long:
        raise ValueError(f"want 0 < quick <= long, got quick={quick}, long={long}")
    return range(start, start + (long if LONG else quick))
