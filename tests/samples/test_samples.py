"""Every sample is a test: the converted function gives what the plain Python gives
(results and printed output), and its traced graph is valid."""
import contextlib
import io

import numpy as np
import pytest

from cli.demo import values_agree
from samples import SAMPLES, available_samples

CASES = [pytest.param(s, args, id=f"{s.name}-{i}") for s in available_samples() for i, args in enumerate(s.examples)]


def _run(fn, args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = fn(*args)
    return result, out.getvalue()


@pytest.mark.parametrize("sample, args", CASES)
def test_converted_equals_plain_python(sample, args):
    converted, printed_graph = _run(sample.fn, args)
    plain, printed_py = _run(sample.python_function, args)
    assert values_agree(converted, plain, sample.tolerance), (converted, plain)
    assert printed_graph == printed_py


@pytest.mark.parametrize("sample", available_samples(), ids=lambda s: s.name)
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


# -- the training samples learn ------------------------------------------------------------

def test_softmax_regression_reaches_95_percent_training_accuracy():
    from samples import softmax_regression as m

    acc, loss = m.train(m.X, m.Y, np.int64(50))
    assert acc >= 0.95
    _, loss_at_start = m.train(m.X, m.Y, np.int64(0))
    assert loss_at_start == pytest.approx(np.log(3.0))  # zero weights: uniform predictions
    assert loss < 0.2 * loss_at_start


def test_rnn_adam_lowers_its_loss_tenfold():
    from samples import rnn_adam as m

    first, final = m.train(*m.EXAMPLES[0])
    assert first / final >= 10.0


def test_training_loops_are_graph_loops():
    from samples import rnn_adam, softmax_regression

    for sample, args in [(softmax_regression, (softmax_regression.X, softmax_regression.Y, np.int64(3))),
                         (rnn_adam, rnn_adam.EXAMPLES[0])]:
        g = sample.train.get_concrete_function(*args).graph
        frames = {op.attrs["frame_name"] for op in g.get_operations() if op.type == "Enter"}
        # softmax: the training loop; RNN: the training loop, the time loop, and the
        # backward time loop of the gradient built inside the training loop
        assert len(frames) >= (1 if sample is softmax_regression else 3), frames


def test_power_loop_gradient_is_the_closed_form():
    import autograph
    from samples import power_loop as m

    for x, n in m.EXAMPLES:
        value, slope = autograph.value_and_grad(m.power)(x, n)
        assert value == pytest.approx(x ** n) and slope == pytest.approx(n * x ** (n - 1) if n else 0.0)
