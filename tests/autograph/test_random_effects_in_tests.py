"""The random value programs with effects in their loop tests and in the tests of ifs inside
loops (issue 27): written from a stream of their own, so the option off gives the programs as
they were, and converted they print, assert and return what Python does."""
import difflib
import re

import pytest

from autograph.testing import differential as diff
from autograph.testing.random_programs import generate

EFFECT = re.compile(r"W\d+:|wnote\(|wcheck\d+\(")
ENGINES = [{"control_flow": "v1"}, {"control_flow": "v2"}, {"control_flow": "v2", "functional": "direct"},
           {"jit_compile": True}]


@pytest.fixture(scope="module")
def programs():
    return {seed: (generate(seed), generate(seed, effects_in_tests=False)) for seed in range(200)}


def test_the_generator_writes_effects_in_while_and_if_tests(programs):
    in_while = [s for s, (p, _) in programs.items()
                if any(EFFECT.search(line) for line in p.source.splitlines() if line.strip().startswith("while "))]
    in_if = [s for s, (p, _) in programs.items()
             if any(EFFECT.search(line) for line in p.source.splitlines() if line.strip().startswith("if "))]
    asserts = [s for s, (p, _) in programs.items() if "wcheck" in p.source]
    assert len(in_while) >= 15 and len(in_if) >= 10 and len(asserts) >= 3, (len(in_while), len(in_if), len(asserts))


def test_the_option_only_adds_operands_to_tests_and_their_helpers(programs):
    """Off, no effect is written; on, the same program with operands added to some tests (and
    the helpers they call): nothing else moves, so the other streams drew as before."""
    for seed, (with_effects, without) in programs.items():
        assert not EFFECT.search(without.source), seed
        assert with_effects.args_source() == without.args_source(), seed
        for line in difflib.ndiff(without.source.splitlines(), with_effects.source.splitlines()):
            if line[:2] not in ("- ", "+ "):
                continue
            text = line[2:].strip()
            assert text == "" or text.startswith(("while ", "if ", "elif ", "def wnote", "def wcheck", "print(label",
                                                  "assert a <", "return c", "return True")), (seed, line)


def test_programs_with_effects_in_tests_agree_with_python(programs):
    chosen = [s for s, (p, _) in programs.items() if EFFECT.search(p.source)][:24]
    failing = []
    for k, seed in enumerate(chosen):
        outcome = diff.run_program(programs[seed][0], engine=ENGINES[k % len(ENGINES)])
        if not outcome.ok:
            failing.append(f"seed {seed} {ENGINES[k % len(ENGINES)]}: {outcome.kind}: {outcome.detail[:200]}")
    assert not failing, "\n".join(failing)
