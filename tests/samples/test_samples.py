"""Every sample is a test: the converted function gives what the plain Python gives
(results and printed output), and its traced graph is valid."""
import contextlib
import io

import pytest

from cli.demo import values_agree
from samples import SAMPLES, available_samples

# Samples that show a known autograph limitation (reported); they pass once it is fixed.
CASES = [pytest.param(s, args, id=f"{s.name}-{i}") for s in available_samples() for i, args in enumerate(s.examples)]


def _run(fn, args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = fn(*args)
    return result, out.getvalue()


@pytest.mark.parametrize("sample, args", CASES)
def test_converted_equals_plain_python(sample, args):
    missing = sample.missing()
    if missing:
        pytest.skip(f"needs autograph.{', '.join(missing)}")
    converted, printed_graph = _run(sample.fn, args)
    plain, printed_py = _run(sample.python_function, args)
    assert values_agree(converted, plain, sample.tolerance), (converted, plain)
    assert printed_graph == printed_py


@pytest.mark.parametrize("sample", [s for s in available_samples() if not s.missing()], ids=lambda s: s.name)
def test_traced_graph_is_valid_and_round_trips(sample):
    import graphcore as gc

    g = sample.fn.get_concrete_function(*sample.examples[0]).graph
    g.validate()
    assert str(gc.Graph.from_json(g.to_json())) == str(g)


def test_registry_is_consistent():
    names = [s.name for s in SAMPLES]
    assert len(names) == len(set(names))
    for s in available_samples():
        assert s.examples, s.name
        assert callable(s.python_function)
        assert s.module.__doc__, f"{s.name} needs a docstring saying what it shows"


def test_print_loop_prints_every_iteration():
    from samples import find_sample

    s = find_sample("print_loop")
    import numpy as np

    _, printed = _run(s.fn, (np.int64(3), np.int64(3)))
    assert printed == "step 0 value 3\nstep 1 value 6\nstep 2 value 12\n"
