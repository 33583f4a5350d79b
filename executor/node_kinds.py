"""The kinds of node and of edge in an execution plan: a leaf module, read by the plan that
assigns them and by the handlers that run them (each imported the other's constants)."""
from __future__ import annotations

# node kinds the propagation rules treat specially
NORMAL, SWITCH, MERGE, ENTER, EXIT, NEXT_ITERATION, FEED = range(7)
# (7 is the executor's deadline token) the two ends of an edge between devices
SEND, RECV = 8, 9
# edge kinds: how an arrival counts at its consumer (executor.activate_nodes reads them)
TO_OP, TO_MERGE, CONTROL_TO_OP, CONTROL_TO_MERGE, TO_FETCH = range(5)
# the op types whose nodes have a kind of their own: the control-flow primitives, whose
# dead-token rules are the executor's, and the transport between devices
KIND_OF_TYPE = {"Switch": SWITCH, "Merge": MERGE, "Enter": ENTER, "Exit": EXIT, "NextIteration": NEXT_ITERATION,
                "_Send": SEND, "_Recv": RECV}
KIND_NAMES = {NORMAL: "op", SWITCH: "Switch", MERGE: "Merge", ENTER: "Enter", EXIT: "Exit",
              NEXT_ITERATION: "NextIteration", FEED: "Feed", SEND: "_Send", RECV: "_Recv"}
