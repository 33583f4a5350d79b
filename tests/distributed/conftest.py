import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "autograph"))


@pytest.fixture(scope="module", autouse=True)
def no_device_actor_outlives_its_module():
    """Ray's device actors are shared by a process's sessions: each test module ends them,
    so no module's actors (or their connection) run into the next."""
    yield
    ray_engine = sys.modules.get("executor.distributed.ray_engine")
    if ray_engine is not None:
        ray_engine.shutdown_actors()
