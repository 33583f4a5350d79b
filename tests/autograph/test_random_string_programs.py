"""Random programs of string operations on the text of tensors (issue 25 class 1): each run as
plain Python and converted, on the same numbers, must give the same values of the same types,
print the same and raise the same exception type. A step is a string method, an index, a
slice, a concatenation, a repetition, len / int / float of the text, a comparison, `in`, an
f-string or a branch on a tensor; programs are registered with linecache, as the fuzzer's."""
from __future__ import annotations

import linecache
import random

import numpy as np
import pytest

from _engines import ENGINES, agree

# each seed under one engine, in turn: default, unoptimized, compiled, two devices, numba
ENGINE_CYCLE = [p.values[0] for p in ENGINES if not p.marks]
try:
    import numba  # noqa: F401
    ENGINE_CYCLE.append({"jit_compile": "numba"})
except ImportError:  # the numba backend is optional
    pass

_STEPS = [
    "s = s.upper()", "s = s.lower()", "s = s.strip('-')", "s = s.replace('.', ',')", "s = s.zfill({k})",
    "s = s.rjust({k}, '*')", "s = s[{i}:]", "s = s[:{k}]", "s = s + str(n)", "s = str(len(s)) + s",
    "s = s * {r}", "s = '-'.join(s.split('.'))", "s = s.center({k})", "s = f'<{{s}}|{{x:.2f}}>'",
    "s = s.title()", "s = s.swapcase()", "s = repr(s)", "s = s.partition('.')[0] or s",
    "k = len(s)", "k = s.find('5')", "k = s.count('1') + int(s.isdigit())", "b = s.startswith('-')",
    "b = '2' in s", "b = s == str(x)", "print(s, len(s))", "print(f'{{s!r:>12}}')",
    "k = int(str(n)) + len(s)", "b = float(str(x)) == x",
    "if x > 0:\n        s = s + 'p'\n    else:\n        s = 'neg' + s",
    "if len(s) > {k}:\n        s = s[:{k}]",
]


def _program(seed: int) -> str:
    rng = random.Random(seed)
    lines = ["def f(x, n):", "    s = str(x) if n % 2 else str(n)", "    k = 0", "    b = False"]
    for _ in range(rng.randint(2, 7)):
        step = rng.choice(_STEPS).format(k=rng.randint(0, 12), i=rng.randint(-3, 3), r=rng.randint(0, 2))
        lines.append("    " + step)
    lines.append("    return s, k, b")
    return "\n".join(lines) + "\n"


def _load(source: str, seed: int):
    filename = f"<string program {seed}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"__name__": f"string_program_{seed}"}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (generated test programs)
    return namespace["f"]


@pytest.mark.parametrize("block", range(4))
def test_random_string_programs(block):
    failures = []
    for seed in range(block * 40, block * 40 + 40):
        source = _program(seed)
        fn = _load(source, seed)
        xs = np.random.default_rng(seed).choice([2.5, -13.75, 0.1, 1e21, -0.0, 7.0, np.nan])
        for args in ((np.float64(xs), np.int64(seed * 7 - 100)), (np.float64(-xs), np.int64(seed))):
            try:
                agree(fn, args, ENGINE_CYCLE[seed % len(ENGINE_CYCLE)])
            except AssertionError as e:
                failures.append(f"seed {seed} {args}:\n{source}{str(e)[:400]}")
    assert not failures, "\n\n".join(failures[:3]) + f"\n({len(failures)} failures)"
