"""Python calls (py_function and staged str/json/clock calls) with the graph's ops spread over
two in-process devices: the same values, printed lines and Python calls as on one device (the
calls run in this process, whichever device holds them; their values cross by Send/Recv)."""
from __future__ import annotations

import numpy as np
import pytest

import test_py_function as pf
import test_staged_strings as ss
from placements import PLACEMENTS
from test_partitioned_programs import across_devices

I64, F64 = np.int64, np.float64
CASES = [
    (pf.calls_in_a_loop, (I64(3),)), (pf.calls_in_a_cond, (F64(2.0),)), (pf.calls_in_a_cond, (F64(-2.0),)),
    (pf.raises_inside, (F64(1.0),)),
    (ss.string_methods, (F64(2.5), I64(7))), (ss.prints_and_writes, (F64(1.5), I64(3))),
    (ss.built_in_a_loop, (I64(4),)), (ss.chosen_by_a_cond, (F64(12.25),)), (ss.parse_error, (F64(2.5),)),
    (ss.digits_by_index, (F64(25.75),)), (ss.json_and_math, (F64(2.75), I64(5))),
]


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
@pytest.mark.parametrize("f,args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_python_calls_across_devices(f, args, placement):
    pf.CALLS.clear()
    across_devices(f, args, PLACEMENTS[placement])
    if f is pf.calls_in_a_loop:  # once per iteration on two devices, once per iteration on one
        assert pf.CALLS == [0, 1, 2, 0, 1, 2]
