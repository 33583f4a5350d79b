"""Random numpy programs (autograph/testing/random_array_programs.py) give the same values,
dtypes and structure plain and converted. To look at a failing seed:
`autograph fuzz --kind arrays --n 1 --seed SEED --out /tmp/one`, then run the file it writes."""
from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest

from autograph.testing import random_array_programs as rap

SEEDS = range(400)


@pytest.fixture(scope="module")
def outcomes():
    return [rap.check_seed(s) for s in SEEDS]


def test_random_array_programs_agree(outcomes):
    failing = defaultdict(list)
    for seed, signature, _detail, _ in outcomes:
        if signature:
            failing[signature].append(seed)
    if failing:
        lines = [f"{len(s):4d}  {sig}\n      seeds {s[:12]}" for sig, s in sorted(failing.items(), key=lambda kv: -len(kv[1]))]
        pytest.fail(f"{sum(map(len, failing.values()))} of {len(outcomes)} array programs disagree:\n" + "\n".join(lines),
                    pytrace=False)


def test_the_programs_stage_what_they_are_about(outcomes):
    staged = Counter(c for *_, constructs in outcomes for c in constructs)
    assert staged["cond"] >= 0.4 * len(outcomes), staged
    assert staged["loop"] >= 0.3 * len(outcomes), staged
    sources = [rap.generate(s).source for s in range(100)]
    for feature in ("np.sum(", "np.where(", ".append(", "np.stack(", "for e", "np.dot(", "np.argmax(", "print(",
                    "* 0.1", "np.sqrt(", "[::2]", "[-2:]"):
        assert sum(feature in src for src in sources) >= 5, feature
    float32 = sum(rap.generate(s).args[0].dtype == np.float32 for s in range(100))
    assert 15 <= float32 <= 60


def test_the_generator_is_deterministic():
    assert rap.generate(17).source == rap.generate(17).source
    assert rap.generate(17).source != rap.generate(18).source
