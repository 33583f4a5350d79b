"""Ways the tests put a traced graph's ops on two devices, besides gc.device in the code:
graphcore.placement.spread's rules, over every op."""
from __future__ import annotations

import functools

from graphcore.placement import spread

DEVICES = ["cpu:0", "cpu:1"]

PLACEMENTS = {
    "round_robin": functools.partial(spread, devices=DEVICES, how="round-robin", keep_given=False),
    "loop_bodies_elsewhere": functools.partial(spread, devices=DEVICES, how="loops", keep_given=False),
    "outer_and_inner": functools.partial(spread, devices=DEVICES, how="depth", keep_given=False),
}
