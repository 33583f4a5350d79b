"""Golden tests: the converted source of if, while, for, break, continue and return.
Regenerate with `UPDATE_GOLDEN=1 pytest tests/autograph/test_golden.py` and review the diff."""
import os
import pathlib

import pytest

import golden_functions as gf
from autograph import to_code

GOLDEN = pathlib.Path(__file__).parent / "golden"
CASES = ["golden_if", "golden_while", "golden_for", "golden_break", "golden_continue", "golden_return"]


@pytest.mark.parametrize("name", CASES)
def test_to_code_golden(name):
    code = to_code(getattr(gf, name))
    path = GOLDEN / f"{name}.py.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(code)
    assert code == path.read_text()
    compile(code, name, "exec")  # the generated code is valid Python
