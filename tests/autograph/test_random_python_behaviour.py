"""The random-program generator writes issue 25's classes (text of tensors, sequences repeated
by a tensor count, arguments changed in place, Python-typed results, names first bound in both
branches after an early return in a loop), and a few hundred such programs agree with plain
Python: value, exact type, printed lines, the caller's list and array after the call, exception
type. The long run is `autograph fuzz --n 10000` (see docs/python_conformance.md)."""
from __future__ import annotations

import ast
import re
from collections import defaultdict

import pytest
from _engines import ENGINES

from autograph.testing import differential as diff
from autograph.testing.random_programs import generate

CLASSES = {
    "1 text of a tensor": re.compile(r"str\(\w+\)|f'\{\w+\}'|len\(f'"),
    "2 repetition by a variable count": re.compile(r"\[[^\]]*\] \* [a-z]\w*\b|[a-z]\w* \* \(1, 2\)"),
    "5 list argument changed": re.compile(r"\bys(\.append|\.extend|\.insert|\.pop| \+=|\[-?\d+\] =)"),
    "6 Python-typed conversion": re.compile(r"\bround\(|math\.(floor|ceil|isfinite|isnan|isinf|fabs)\(|\.item\(\)"),
}


def _array_changed_inside_a_block(source: str) -> bool:
    return any(re.match(r"        +xs(\[-?\d+\] \+?=| [+-]=)", line) for line in source.splitlines())


def _bound_in_branches_after_a_return(source: str) -> bool:
    """Class 7: in a loop, `if c: return ...` then `if d: u = a else: u = b`."""
    for loop in ast.walk(ast.parse(source)):
        if isinstance(loop, (ast.For, ast.While)):
            for first, second in zip(loop.body, loop.body[1:]):
                if (isinstance(first, ast.If) and isinstance(first.body[0], ast.Return) and isinstance(second, ast.If)
                        and second.orelse and isinstance(second.body[0], ast.Assign)
                        and isinstance(second.orelse[0], ast.Assign)
                        and ast.unparse(second.body[0].targets[0]) == ast.unparse(second.orelse[0].targets[0])):
                    return True
    return False


@pytest.fixture(scope="module")
def sources():
    return {seed: generate(seed).source for seed in range(300)}


def test_the_generator_writes_each_class(sources):
    found = defaultdict(list)
    for seed, source in sources.items():
        for name, pattern in CLASSES.items():
            if pattern.search(source):
                found[name].append(seed)
        if _array_changed_inside_a_block(source):
            found["5 array argument changed inside a block"].append(seed)
        if _bound_in_branches_after_a_return(source):
            found["7 bound in both branches after a return"].append(seed)
    counts = {name: len(seeds) for name, seeds in found.items()}
    wanted = list(CLASSES) + ["5 array argument changed inside a block", "7 bound in both branches after a return"]
    assert all(counts.get(name, 0) >= 10 for name in wanted), counts


def test_without_the_option_the_programs_are_as_before():
    for seed in range(40):
        source = generate(seed, python_behaviour=False).source
        assert "ys" not in source and "str(" not in source and ".item()" not in source, source


ENGINE_CONFIGS = [(p.id, p.values[0]) for p in ENGINES if not p.marks]  # (numba: when installed, below)
try:
    import numba  # noqa: F401
    ENGINE_CONFIGS.append(("numba", {"jit_compile": "numba"}))
except ImportError:  # the numba backend is optional
    pass


def test_programs_of_the_classes_agree_with_python(sources):
    """Each program under one engine, in turn (default, unoptimized, compiled, two devices, numba)."""
    chosen = [seed for seed, source in sources.items()
              if any(p.search(source) for p in CLASSES.values()) or _array_changed_inside_a_block(source)][:100]
    assert len(chosen) >= 80
    failing = defaultdict(list)
    for k, seed in enumerate(chosen):
        name, engine = ENGINE_CONFIGS[k % len(ENGINE_CONFIGS)]
        outcome = diff.run_program(generate(seed), engine=engine)
        if not outcome.ok:
            failing[f"{name}: {outcome.signature}"].append((seed, outcome.detail))
    assert not failing, "\n".join(f"{len(v)} {k}: seeds {[s for s, _ in v][:10]}\n    {v[0][1][:300]}"
                                  for k, v in failing.items())
