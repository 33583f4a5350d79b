"""`@function(engine_options=...)` takes the Ray engine's options as Session does: checked when
the function is made, and given to the Session its traced graph runs in."""
import numpy as np
import pytest

import autograph
from graphcore.errors import GraphError


def _double(x):
    return x * 2.0


def test_bad_engine_options_are_refused_when_the_function_is_made():
    with pytest.raises(GraphError, match="unknown engine_options \\['adress'\\]"):
        autograph.function(_double, devices=["cpu:0", "cpu:1"], engine="ray", engine_options={"adress": "x:1"})
    with pytest.raises(GraphError, match="are for engine='ray'"):
        autograph.function(_double, engine_options={"address": "10.0.0.5:6379"})
    with pytest.raises(GraphError, match="must be a Ray cluster address"):
        autograph.function(engine="ray", devices=["cpu:0"], engine_options={"address": " "})(_double)


def test_the_options_reach_the_session_of_every_trace():
    f = autograph.function(_double, devices=["/task:0/cpu:0", "/task:1/cpu:0"], engine="ray",
                           engine_options={"address": "10.0.0.5:6379", "task_resources": {1: "gpu_box"}})
    concrete = f.get_concrete_function(np.float64(1.5))  # (traced only: no Ray cluster is started)
    options = concrete.session.engine_options
    assert options.address == "10.0.0.5:6379"
    assert f.get_concrete_function(np.float32(1.5)).session.engine_options == options
