"""Differential testing: random programs must give the same values, dtype kinds and printed
lines plain and converted; and tests of the tester itself (generator, comparison, shrinker, CLI).

`test_random_programs_agree` runs 300 fixed seeds in two processes. It fails while the converter
has bugs; its message lists each failure class with its count and seeds. To look at one:
`autograph fuzz --n 1 --seed SEED --out /tmp/one`, then run the file it writes.
"""
from __future__ import annotations

import ast
import contextlib
import copy
import io
import multiprocessing
import os
import subprocess
import sys
from collections import Counter, defaultdict

import numpy as np
import pytest
from typer.testing import CliRunner

from autograph.testing import differential as diff
from autograph.testing.program_facts import constructs, undefined_reads
from autograph.testing.random_programs import Program, _within_limits, generate, raised_by_program
from autograph.testing.shrinker import _candidates, shrink, size

SEEDS = range(300)
SMALL = range(120)


@pytest.fixture(scope="module")
def outcomes():
    """(seed, signature, detail, staged constructs) of every seed, run in two fresh processes
    (spawned: a fork would inherit this process's executor threads)."""
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        return sorted(pool.map(diff.check_seed, SEEDS, chunksize=10))


def test_random_programs_agree(outcomes):
    failing = defaultdict(list)
    for seed, signature, detail, _ in outcomes:
        if signature:
            failing[signature].append(seed)
    lines = [f"{len(seeds):4d}  {signature}\n      seeds {seeds[:12]}{' ...' if len(seeds) > 12 else ''}"
             for signature, seeds in sorted(failing.items(), key=lambda kv: -len(kv[1]))]
    total = sum(len(s) for s in failing.values())
    if failing:
        pytest.fail(f"{total} of {len(outcomes)} programs disagree, in {len(failing)} classes:\n" + "\n".join(lines),
                    pytrace=False)


def test_a_sizeable_fraction_has_tensor_dependent_control_flow(outcomes):
    staged = Counter(c for *_, constructs in outcomes for c in constructs)
    traced = [o for o in outcomes if not o[1].startswith("unexpected_error")]
    assert staged["cond"] >= 0.4 * len(traced), staged
    assert staged["loop"] >= 0.25 * len(traced), staged
    assert staged["print"] >= 0.1 * len(traced), staged


# -- the generator ---------------------------------------------------------------------------------

def test_generator_is_deterministic_per_seed():
    for seed in (0, 1, 17, 123456):
        a, b = generate(seed), generate(seed)
        assert a.source == b.source and a.args_source() == b.args_source()
    assert len({generate(s).source for s in range(30)}) >= 28


def test_generator_does_not_depend_on_string_hashing():
    code = ("from autograph.testing.random_programs import generate\n"
            "print(repr([(generate(s).source, generate(s).args_source()) for s in range(40)]))")
    outputs = set()
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                             cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        outputs.add(run.stdout)
    assert len(outputs) == 1


def test_programs_run_as_plain_python_within_limits():
    for seed in SEEDS:
        program = generate(seed)
        assert 5 <= program.num_lines <= 25, (seed, program.source)
        fn, _ = diff.load_function(program)
        with contextlib.redirect_stdout(io.StringIO()):
            # must not raise, except by its own raise / assert (on copies: it changes its list and array arguments)
            raised_by_program(fn, copy.deepcopy(program.args))
        assert _within_limits(program), seed
        assert not undefined_reads(program.function_node()), (seed, program.source)


def test_undefined_reads_finds_reads_on_paths_that_skip_the_assignment():
    def reads(body):
        return undefined_reads(ast.parse("def f(n):\n" + body).body[0])

    assert reads("    for i in range(n):\n        t = i\n    return t\n") == ["t"]
    assert reads("    if n:\n        t = 1\n    return t\n") == ["t"]
    assert reads("    if n:\n        return 0\n    else:\n        t = 1\n    return t\n") == []
    assert reads("    for i in range(n):\n        if i:\n            continue\n        else:\n            t = 1\n"
                 "        print(t)\n    return n\n") == []
    assert reads("    t = 0\n    while t < n:\n        t += 1\n        u = t\n    return u\n") == ["u"]


def test_generator_covers_the_grammar():
    counts = Counter(c for s in SEEDS for c in constructs(generate(s)))
    wanted = {"If": 0.5, "else": 0.3, "elif": 0.1, "While": 0.2, "for_range": 0.3, "for_array": 0.04,
              "range_step": 0.05, "break_in_loop": 0.1, "continue_in_loop": 0.1, "return_in_loop": 0.1,
              "IfExp": 0.1, "BoolOp": 0.3, "and_or_on_values": 0.03, "Not": 0.1, "AugAssign": 0.2, "print": 0.2,
              "tuple_return": 0.2, "may_fall_off": 0.05, "helper_call": 0.1, "return_none": 0.03,
              "arg int64": 0.3, "arg int32": 0.05, "arg float64": 0.2, "arg int": 0.2, "arg float": 0.05,
              "arg float32": 0.02, "loop_else": 0.1, "enumerate": 0.01, "reversed": 0.05, "keyword_call": 0.05,
              "tuple_unpacking": 0.08, "closure": 0.1, "nonlocal": 0.01, "chained_compare": 0.1, "power": 0.05,
              "slice_or_negative_index": 0.02, "inexact_float": 0.3, "non_finite_arg": 0.02}
    low = {c: f"{counts[c] / len(SEEDS):.0%} < {share:.0%}" for c, share in wanted.items()
           if counts[c] < share * len(SEEDS)}
    assert not low, low


# -- the comparison ----------------------------------------------------------------------------------

def _result(value=None, stdout="", error=None):
    r = diff.RunResult(value=value, stdout=stdout)
    if error is not None:
        r.error, r.message, r.exception = type(error).__name__, str(error), error
    return r


@pytest.mark.parametrize("plain, converted, kind", [
    (3, 3, "agree"),
    (np.int64(3), np.int64(3), "agree"),
    (True, True, "agree"),
    (2.5, 2.5 + 1e-13, "agree"),
    (np.float64(2.5), np.float64(2.5 + 1e-13), "agree"),
    (float("nan"), float("nan"), "agree"),
    ((1, 2.0), (1, 2.0), "agree"),
    (3, np.int64(3), "wrong_type"),  # issue 25: `r ** 30` wraps, json.dumps raises
    (3, np.int32(3), "wrong_type"),
    (True, np.True_, "wrong_type"),
    (2.5, np.float64(2.5), "wrong_type"),
    (np.int64(3), 3, "wrong_type"),
    (None, None, "agree"),
    (3, np.int64(4), "wrong_value"),
    (None, np.int64(0), "wrong_value"),
    ((1, 2), (1,), "wrong_value"),
    ((1, 2), [1, 2], "wrong_value"),
    (2.5, np.float64(2.5 + 1e-6), "wrong_value"),
    (3, np.float64(3.0), "wrong_dtype_kind"),
    (1, np.True_, "wrong_dtype_kind"),
    (np.int64(0), False, "wrong_dtype_kind"),
    (np.float32(0.5), np.float64(0.5), "wrong_dtype_kind"),
    (np.array([1, 2], np.int32), np.array([1, 2], np.int64), "wrong_dtype_kind"),
])
def test_compare_values(plain, converted, kind):
    assert diff.compare(_result(plain), _result(converted))[0] == kind


def test_compare_errors_and_output():
    assert diff.compare(_result(1), _result(error=ValueError("x")))[0] == "unexpected_error"
    assert diff.compare(_result(error=ZeroDivisionError("x")), _result(1))[0] == "missed_error"
    assert diff.compare(_result(error=ZeroDivisionError("x")), _result(error=TypeError("y")))[0] == "different_error"
    assert diff.compare(_result(error=NameError("x")), _result(error=NameError("y")))[0] == "agree"
    assert diff.compare(_result(1, "a 1\n"), _result(1, "a 1\na 1\n")) == \
        ("wrong_output", "converted printed 1 line(s) more; first extra: 'a 1'")
    assert diff.compare(_result(1, "a 1\n"), _result(1, "a 1.0\n"))[0] == "wrong_output"


MUTABLE = Program(7, "import numpy as np\n\n\ndef f(n, x):\n    acc = 0\n    for i in range(n):\n"
                     "        if x > i:\n            acc = acc + i\n        print('L1:', n, acc)\n    return acc, x\n",
                  (np.int64(4), np.float64(2.5)))


def _mutated(program: Program, transformer: ast.NodeTransformer) -> Program:
    tree = transformer.visit(ast.parse(program.source))
    return program.with_source(ast.unparse(ast.fix_missing_locations(tree)))


class _PlusToMinus(ast.NodeTransformer):
    """A broken converter: a + b computes a - b (`k += 1` is left alone, so loops still stop)."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        node.op = ast.Sub() if isinstance(node.op, ast.Add) else node.op
        return node


def _against(program: Program, mutant: Program) -> diff.Outcome:
    """Compare plain `program` with plain `mutant` standing in for a broken converter."""
    fn, _ = diff.load_function(program)
    bad, _ = diff.load_function(mutant)
    plain, converted = diff.call(fn, program.args), diff.call(bad, program.args)
    return diff.Outcome(program, *diff.compare(plain, converted), plain, converted)


def test_the_comparison_detects_a_wrongly_converted_function():
    assert diff.run_program(MUTABLE).ok  # the real converter gets this one right
    outcome = _against(MUTABLE, _mutated(MUTABLE, _PlusToMinus()))
    assert outcome.kind == "wrong_value"
    assert outcome.signature == "wrong_value: plain int, converted int"
    assert outcome.detail == "result[0]: plain 3 (int), converted -3 (int)"


def test_signatures_ignore_names_numbers_and_places():
    a = diff.normalize_message("<fuzz seed 3 #1>:12: 'acc' is int64 in the if branch but int32 (cond_2/Merge:0)")
    b = diff.normalize_message("<fuzz seed 9 #4>:7: 'total' is int64 in the if branch but int32 (while/Add_1:0)")
    assert a == b == "'_' is int64 in the if branch but int32"
    assert diff.normalize_message("Add: needs 3 values") == diff.normalize_message("Mul: needs 12 values")


# -- the shrinker -------------------------------------------------------------------------------------

def _failure_against_mutant(program: Program) -> str:
    try:
        return _against(program, _mutated(program, _PlusToMinus())).signature
    except SyntaxError:
        return "syntax"


def test_the_shrinker_reduces_a_failing_program():
    program = next(p for p in map(generate, range(200))
                   if p.num_lines >= 15 and _failure_against_mutant(p).startswith("wrong_value"))
    target = _failure_against_mutant(program)
    small = shrink(program, _failure_against_mutant, max_checks=2000)
    assert _failure_against_mutant(small) == target
    assert small.num_lines <= 5 and size(small)[0] < size(program)[0] / 3, small.source
    assert any(isinstance(n, ast.Add) for n in ast.walk(ast.parse(small.source))), small.source


def test_the_shrinker_leaves_while_tests_and_counters_alone():
    program = next(p for p in map(generate, range(200)) if p.source.count("while ") >= 2 and p.num_lines >= 16)
    loops = lambda p: [(ast.unparse(n.test), ast.unparse(n.body[0]))  # noqa: E731
                       for n in ast.walk(p.function_node()) if isinstance(n, ast.While)]
    original = set(loops(program))
    candidates = list(_candidates(program))
    assert len(candidates) > 20
    for candidate in candidates:
        assert set(loops(candidate)) <= original, candidate.source


def test_the_shrinker_keeps_a_passing_program():
    assert shrink(MUTABLE, lambda p: "") is MUTABLE


# -- the command -------------------------------------------------------------------------------------

def test_fuzz_command_writes_runnable_repros(tmp_path):
    from cli.main import app  # noqa: PLC0415

    result = CliRunner().invoke(app, ["fuzz", "--n", "4", "--seed", "0", "--out", str(tmp_path), "--jobs", "1",
                                      "--no-shrink", "--plain"])
    assert "4 values programs" in result.output, result.output
    files = sorted(tmp_path.glob("*/seed_*.py"))
    assert result.exit_code == (1 if files else 0), result.output
    for path in files:
        run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
        assert run.returncode == 1 and "verdict:" in run.stdout, run.stdout + run.stderr


def test_fuzz_grads_reports_what_run_seed_returns(tmp_path, monkeypatch):
    import types  # noqa: PLC0415

    from cli.main import app  # noqa: PLC0415

    fake = types.ModuleType("autograph.testing.random_grad_programs")
    fake.run_seed = lambda seed: f"d/dx differs at seed {seed}: 1.5 vs 2.5" if seed % 2 else None
    fake.program_source = lambda seed: f"def f(x):\n    return x * {seed}\n"
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    result = CliRunner().invoke(app, ["fuzz", "--kind", "grads", "--n", "4", "--seed", "10", "--jobs", "1",
                                      "--plain", "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "2 agree, 2 fail in 1 classes" in result.output
    files = sorted(p.name for p in tmp_path.glob("*/seed_*.py"))
    assert files == ["seed_11.py", "seed_13.py"]
    assert "return x * 11" in next(tmp_path.glob("*/seed_11.py")).read_text()


def test_generator_writes_names_bound_in_branches_after_an_early_return_in_a_loop():
    """Issue 25's nonlocal class: `for ...: if c: return v` then `if d: u = a else: u = b`, u read."""
    def has_it(source):
        for loop in ast.walk(ast.parse(source)):
            if not isinstance(loop, (ast.For, ast.While)):
                continue
            body = loop.body
            for first, second in zip(body, body[1:]):
                if (isinstance(first, ast.If) and isinstance(first.body[0], (ast.Return, ast.Break, ast.Continue))
                        and isinstance(second, ast.If) and second.orelse
                        and isinstance(second.body[0], ast.Assign) and isinstance(second.orelse[0], ast.Assign)
                        and second.body[0].targets[0].id == second.orelse[0].targets[0].id):
                    return True
        return False
    found = [s for s in range(300) if has_it(generate(s).source)]
    assert len(found) >= 15, found
    for seed in found[:6]:
        _, signature, detail, _ = diff.check_seed(seed)
        assert not signature, (seed, signature, detail)


def test_compare_sees_the_arguments_changed_in_place():
    plain, converted = diff.RunResult(value=1), diff.RunResult(value=1)
    plain.args_after, converted.args_after = (np.array([2.0, 3.0]),), (np.array([1.0, 3.0]),)
    assert diff.compare(plain, converted)[0] == "wrong_side_effect"
    converted.args_after = (np.array([2.0, 3.0]),)
    assert diff.compare(plain, converted)[0] == "agree"


def test_generator_writes_in_place_argument_changes_and_python_repetitions():
    sources = [generate(s).source for s in range(300)]
    in_place = [s for s in sources if any(f"xs{op}" in s for op in ("[0] =", " += ", " -= ", " *= "))
                or "xs[-" in s and "] = " in s]
    assert len(in_place) >= 8
    assert sum("len([0] * " in s or "len((1, 2) * " in s or "len([7, 8, 9] * " in s for s in sources) >= 20
