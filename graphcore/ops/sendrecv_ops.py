"""_Send and _Recv: the two ends of an edge that crosses devices (graphcore/partition.py
puts them there; the executor gives them their meaning, executor/executor.py).

A _Send takes the value of the edge (or, for a control edge, no value) in some frame and
iteration and hands it to the run's rendezvous under a key: `tensor_name` (the edge's
source, `^op` for a control edge), `send_device`, `recv_device`, and the frame and
iteration it was produced in, which the executor adds. The _Recv with the same
attributes on the other device waits for that key in the same frame and iteration and
outputs the value. A dead token crosses as dead: the receiving device learns that the
branch was not taken. _Recv never blocks a thread: it completes when the value arrives.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..attr_schema import DTYPE, SHAPE, STR
from ..errors import GraphError
from ..registry import CHEAP, define_op
from ..shapes import as_shape

_TRANSPORT = {"tensor_name": STR, "send_device": STR, "recv_device": STR}


def _check_names(tensor_name, send_device, recv_device):
    for what, v in (("tensor_name", tensor_name), ("send_device", send_device), ("recv_device", recv_device)):
        if not isinstance(v, str) or not v:
            raise GraphError(f"_Send/_Recv need a non-empty str {what}, got {v!r:.60}")
    if send_device == recv_device:
        raise GraphError(f"_Send/_Recv of {tensor_name}: send and recv device are both {send_device!r}")


def _send_rule(*value, tensor_name, send_device, recv_device):
    if len(value) > 1:
        raise GraphError("_Send takes one value (or none, for a control edge)")
    _check_names(tensor_name, send_device, recv_device)
    return []


def _recv_rule(*, tensor_name, send_device, recv_device, dtype, shape):
    _check_names(tensor_name, send_device, recv_device)
    return dt.as_dtype(dtype), as_shape(shape)


def _runs_in_executor(*args, **attrs):
    raise GraphError("_Send and _Recv run only inside a partitioned run (Session(graph, devices=[...]))")


send_op = define_op("_Send", shape=_send_rule, kernel=_runs_in_executor, num_outputs=0, cost=CHEAP, stateful=True,
                    attrs=_TRANSPORT, picture={"shape": "rarrow", "style": "filled", "fillcolor": "#caf0f8"})
send_op.not_differentiable("a partition's transport, made after differentiation")
recv_op = define_op("_Recv", own_kind=True, shape=_recv_rule, kernel=_runs_in_executor, cost=CHEAP, stateful=True,
                    attrs={**_TRANSPORT, "dtype": DTYPE, "shape": SHAPE},
                    picture={"shape": "larrow", "style": "filled", "fillcolor": "#caf0f8"})
recv_op.not_differentiable("a partition's transport, made after differentiation")
