"""Loop runners: a while frame whose every iteration is straight-line, run as one generated
Python loop once its Enters arrived, instead of node by node.

In such a frame every iteration runs the same nodes in the same order of data edges: its
Merges (one per loop variable: its Enter, then its NextIteration), the ops of the loop's
test, the LoopCond and the Switches on it, then (the predicate true) the body's ops and
the NextIterations, or (false) the Exits. The frame executor works that out again on every
iteration (input slots, pending and dead counts, an iteration state, the ready queue:
most of what an RNN step costs beside numpy's own few microseconds); here it is worked out
once per frame, and an iteration is the kernel calls alone, with values in locals:

    def loop(state, frame, ready, n0, i, m0, m1, c0, c1):
        while True:
            v2 = (m0 < c0) if type(m0) is T1 and type(c0) is T1 else fallback2(m0, c0)
            if not v2:
                return True, i, (m1,)
            try:
                v3 = kernel3(m1, c1)
            except Exception as e:
                fail(state, frame, ITEM4, i, e)
            ...
            m0, m1 = v5, v3
            i += 1
            if len(ready) != n0:
                return False, i, (m0, m1)

The same kernels run (the handlers' expressions: scalar operators with their guards,
handlers._Source.call) on the same values, so the results are the same, and an op that
fails raises the frame executor's error naming it, its frame and its iteration. A
temporary is let go after its last reader, as plain numpy lets an expression's go.

What it keeps of the frame executor's contract:
  - the deadline and cancellation put a token on the ready queue from another thread: the
    loop looks at the queue's length after each iteration and, if it grew, hands the frame
    back to the frame executor at the next iteration (its loop variables delivered as the
    NextIterations would, its invariants as the Enters), which meets the token as always;
  - Ctrl-C is KeyboardInterrupt in Python code, here as anywhere;
  - RunStats count the nodes of each iteration run (every node of a frame runs once per
    iteration, live or dead) and one iteration in flight.
A run takes the runner only without a trace (a traced run records every node), without
a pool or a transport (nothing else runs while it does), and with every Enter live (else
the Enters are delivered as usual). A plan whose only control flow is such loops of the
root frame runs each as one step of a straight-line run (executor/straight_line.py).

A frame gets its runner once its instances ran RUNNER_AFTER iterations (building one costs
about what a hundred iterations run node by node do), so a short loop never pays for it;
until then the frame executor runs it, iterations side by side (parallel_iterations).
"""
from __future__ import annotations

import os

from graphcore import source_info

from . import codegen
from .handlers import _Source
from .node_kinds import ENTER, EXIT, MERGE, NEXT_ITERATION, NORMAL, SWITCH, TO_MERGE, TO_OP

# Iterations a frame's instances run node by node before it gets its runner
# (AUTOGRAPH_LOOP_RUNNER_AFTER sets it: 0 gives every straight-line loop its runner at once).
RUNNER_AFTER = int(os.environ.get("AUTOGRAPH_LOOP_RUNNER_AFTER", "") or 100)


_TEST = object()  # (the place of the loop's test among the generated lines)


class NotStraightLine(Exception):
    """The frame is not one a runner can run (the reason, for tests and listings)."""


class LoopRunner:
    """One while frame's generated loop, and how its Enters, NextIterations and Exits map to
    the loop's values."""

    __slots__ = ("info", "loop", "source", "var_enters", "invariant_enters", "next_iterations", "exits", "n_nodes")

    def __init__(self, info, loop, source: str, var_enters: dict, invariant_enters: dict, next_iterations: list,
                 exits: list):
        self.info = info
        self.loop = loop
        self.source = source
        self.var_enters = var_enters              # Enter item id -> loop variable number
        self.invariant_enters = invariant_enters  # Enter item id -> (invariant number, Enter item)
        self.next_iterations = next_iterations    # per loop variable, the NextIteration feeding its Merge
        self.exits = exits                        # Exit items, in the order the loop returns their values
        self.n_nodes = len(info.nodes)

    def run(self, state, frame, entered: list) -> bool:
        """Run the frame instance `frame`, whose Enters all arrived (`entered`: (Enter item,
        value, dead) each), to its end: its Exits' values delivered into its parent, the
        frame freed. False (nothing done) if an Enter is dead: the caller delivers them."""
        values = [None] * (len(self.var_enters) + len(self.invariant_enters))
        n_vars = len(self.var_enters)
        for item, value, dead in entered:
            if dead:
                return False
            k = self.var_enters.get(item.id)
            values[k if k is not None else n_vars + self.invariant_enters[item.id][0]] = value
        ready = state.ready
        done, i, out = self.loop(state, frame, ready, len(ready), 0, *values)
        state.stats.nodes += (i + done) * self.n_nodes
        if not done:
            self._hand_back(state, frame, i, out, values[n_vars:])
            return True
        frame.iteration_count = i
        parent, pit = frame.parent, frame.parent_iter
        for item, value in zip(self.exits, out):
            state._activate_nodes(item, item.out_edges[0], parent, pit, value, False)
            if item.control_edges:
                state._activate_nodes(item, item.control_edges, parent, pit, None, False)
        frame.free_iterations.append(frame.iterations.pop(0))
        frame.num_outstanding_iterations = 0
        state._delete_frame(frame)
        return True

    def _hand_back(self, state, frame, i: int, variables: tuple, invariants: list) -> None:
        """The frame executor takes the frame on at iteration `i` (>= 1): its invariants
        delivered as their Enters deliver them, the loop variables as the NextIterations of
        iteration i - 1 do."""
        ist = frame.iterations.pop(0)
        ist.iter_id = i
        frame.iterations[i] = ist
        frame.iteration_count = i
        for (_, item), value in zip(sorted(self.invariant_enters.values(), key=lambda e: e[0]), invariants):
            frame.loop_invariants.append((item, value, False))
            state._activate_nodes(item, item.out_edges[0], frame, ist, value, False)
        for item, value in zip(self.next_iterations, variables):
            state._activate_nodes(item, item.out_edges[0], frame, ist, value, False)


def fail(state, frame, item, i: int, e: Exception):
    """An op of the loop raised in iteration `i`: the frame executor's error, naming it (in a
    straight-line run, without a frame, the kernel's own: the frame executor runs the plan
    again and raises it so: straight_line.py)."""
    if frame is None:
        raise e
    ist = frame.iterations.pop(0)
    ist.iter_id = i
    frame.iterations[i] = ist
    frame.iteration_count = i
    state._kernel_error(ist.tagged[item.local_id], e)


def runner_of(plan, info):
    """The while frame's runner if it has one or is due one now (its instances ran
    RUNNER_AFTER iterations: it is made then, once), else None or False (never: not
    straight-line)."""
    runner = info.runner
    if runner is None and info.iterations_run >= RUNNER_AFTER:
        runner = info.runner = loop_runner(plan, info) or False
    return runner


def loop_runner(plan, info) -> LoopRunner | None:
    """The runner of the while frame `info` of `plan`, or None if the frame is not straight-line."""
    try:
        return _generate(info, *_analyse(plan, info))
    except NotStraightLine:
        return None


def why_not(plan, info) -> str | None:
    """Why the frame can have no runner (None: it can have one); nothing is generated."""
    try:
        _analyse(plan, info)
    except NotStraightLine as e:
        return str(e)
    return None


def _analyse(plan, info) -> tuple:
    """The frame's nodes in order, its values' producers, its body, LoopCond, loop variables,
    Enters and NextIterations (what _generate writes the loop from); NotStraightLine if it
    is not one a runner can run."""
    nodes = info.nodes
    enters = [it for it in plan.items if it.kind == ENTER and it.child_frame is info]
    producers: dict = {}  # (consumer local id, input index) -> (producer item, output index)
    control_from: dict = {}  # consumer local id -> its control producers
    for src in [*enters, *nodes]:
        if src.kind == ENTER and src.frame is info:
            raise NotStraightLine(f"a loop inside it ({src.name})")
        for k, edges in enumerate(src.out_edges):
            for dst, lid, _slot, kind, index in edges:
                if dst is None or dst.frame is not info:
                    continue
                if kind not in (TO_OP, TO_MERGE):
                    raise NotStraightLine(f"an edge of kind {kind} from {src.name}")
                producers[(lid, index)] = (src, k)
        for dst, lid, _slot, _kind, _index in src.control_edges:
            if dst.frame is info:
                if dst.kind != NORMAL or src.kind not in (NORMAL, ENTER):
                    raise NotStraightLine(f"a control edge from {src.name} to {dst.name}")
                control_from.setdefault(lid, []).append(src)

    # loop variables (a Merge of an Enter and a NextIteration each) and invariants
    merges = [n for n in nodes if n.kind == MERGE]
    var_of_merge: dict = {}
    var_enters: dict = {}
    next_iterations = []
    for j, m in enumerate(merges):
        ins = [producers.get((m.local_id, x)) for x in range(m.num_inputs)]
        kinds = sorted((p[0].kind for p in ins if p is not None))
        if m.num_inputs != 2 or m.num_controls or kinds != sorted((ENTER, NEXT_ITERATION)) or m.out_edges[1] \
                or m.control_edges:
            raise NotStraightLine(f"{m.name} is not a loop variable's Merge (an Enter and a NextIteration)")
        enter = next(p[0] for p in ins if p[0].kind == ENTER)
        if enter.is_constant_enter or enter.control_edges or len(enter.out_edges[0]) != 1:
            raise NotStraightLine(f"{enter.name} feeds more than its Merge")
        var_of_merge[m.local_id] = j
        var_enters[enter.id] = j
        next_iterations.append(next(p[0] for p in ins if p[0].kind == NEXT_ITERATION))
    invariant_enters: dict = {}
    for e in enters:
        if e.id in var_enters:
            continue
        if not e.is_constant_enter or e.control_edges:
            raise NotStraightLine(f"{e.name} is neither a loop variable's nor a loop invariant's Enter")
        invariant_enters[e.id] = (len(invariant_enters), e)
    if len(var_enters) + len(invariant_enters) != info.input_count:
        raise NotStraightLine("Enters the plan counts are not all found")

    order = _order(nodes, producers, control_from)
    # regions: an op runs in every iteration (the test's) unless it depends on a Switch's
    # true side (the body's: only while the predicate holds)
    body: set = set()
    loop_cond = None
    for n in order:
        lid = n.local_id
        ins = [producers.get((lid, x)) for x in range(n.num_inputs)]
        if any(p is None for p in ins):
            raise NotStraightLine(f"an input of {n.name} is not found")
        if n.kind == MERGE:
            continue
        srcs = [p for p in ins if p[0].frame is info] + [(c, -1) for c in control_from.get(lid, ())]
        if any(s.kind == NEXT_ITERATION for s, _k in srcs):
            raise NotStraightLine(f"{n.name} reads a NextIteration")
        in_body = any(s.local_id in body or (s.kind == SWITCH and k == 1) for s, k in srcs)
        if any(s.kind == SWITCH and k == 0 for s, k in srcs) and n.kind != EXIT:
            raise NotStraightLine(f"{n.name} reads a Switch's false side (a cond in the loop)")
        if n.kind == EXIT:
            if not (len(ins) == 1 and ins[0][0].kind == SWITCH and ins[0][1] == 0) or n.num_controls:
                raise NotStraightLine(f"{n.name} does not take a Switch's false side")
        elif n.kind == NEXT_ITERATION:
            if not in_body or n.control_edges:
                raise NotStraightLine(f"{n.name} does not take a value of the loop's body")
        elif n.kind == SWITCH:
            if in_body or n.control_edges or n.num_controls:
                raise NotStraightLine(f"{n.name} is inside the loop's body (a cond in the loop)")
        elif n.kind == NORMAL:
            d = n.op.op_def if n.op is not None else None
            if d is None or not callable(n.kernel) or d.stateful or d.uses_runtime or n.op.type == "CompiledLoop":
                raise NotStraightLine(f"{n.name} is stateful or has no plain kernel")
            if n.op.type == "LoopCond":
                if loop_cond is not None or in_body:
                    raise NotStraightLine("more than one LoopCond")
                loop_cond = n
            if in_body:
                body.add(lid)
        else:
            raise NotStraightLine(f"{n.name} is a node of kind {n.kind}")
    if loop_cond is None:
        raise NotStraightLine("no LoopCond")
    for n in nodes:
        if n.kind == SWITCH and producers[(n.local_id, 1)][0] is not loop_cond:
            raise NotStraightLine(f"{n.name} does not switch on the loop's LoopCond")
    return order, producers, body, loop_cond, var_of_merge, var_enters, invariant_enters, next_iterations


def _order(nodes: list, producers: dict, control_from: dict) -> list:
    """The frame's nodes in an order of their data and control edges within an iteration (a
    NextIteration's edge leads into the next one), ties by local id."""
    consumers: dict = {}
    waiting = [0] * len(nodes)
    for (lid, _x), (src, _k) in producers.items():
        if src.frame is nodes[lid].frame and src.kind != NEXT_ITERATION:
            consumers.setdefault(src.local_id, []).append(lid)
            waiting[lid] += 1
    for lid, srcs in control_from.items():
        for src in srcs:
            if src.frame is nodes[lid].frame:
                consumers.setdefault(src.local_id, []).append(lid)
                waiting[lid] += 1
    ready = [lid for lid in range(len(nodes)) if not waiting[lid]]
    order = []
    while ready:
        ready.sort(reverse=True)
        lid = ready.pop()
        order.append(nodes[lid])
        for c in consumers.get(lid, ()):
            waiting[c] -= 1
            if not waiting[c]:
                ready.append(c)
    if len(order) != len(nodes):
        raise NotStraightLine("a cycle without a NextIteration")
    return order


def _generate(info, order, producers, body, loop_cond, var_of_merge, var_enters, invariant_enters,
              next_iterations) -> LoopRunner:
    writer = _Source(order[0])  # (its expressions of kernels: scalar operators with their guards)
    names: dict = {}  # (producer item id, output index) -> the local holding it
    n_vars = len(var_enters)
    for _num, (j, e) in enumerate(invariant_enters.values()):
        names[(e.id, 0)] = codegen.ident("c", j)
    temps = [0]

    def name_of(src, k: int) -> str:
        if src.kind == MERGE:
            return codegen.ident("m", var_of_merge[src.local_id])
        if src.kind == SWITCH:
            s, sk = producers[(src.local_id, 0)]
            return name_of(s, sk)
        return names[(src.id, k)]

    def fresh() -> str:
        temps[0] += 1
        return codegen.ident("v", temps[0])

    lines: list = []  # (text, reads, op item or None): reads name the locals it reads; _TEST: the test
    cond_ops = [n for n in order if n.kind == NORMAL and n.local_id not in body]
    body_ops = [n for n in order if n.kind == NORMAL and n.local_id in body]

    def op_lines(n) -> None:
        args = [name_of(*producers[(n.local_id, x)]) for x in range(n.num_inputs)]
        expr = writer.call(n, args)
        out = fresh()
        if expr in args:  # an identity: its input itself
            names[(n.id, 0)] = expr
            return
        lines.append((f"try:\n    {out} = {expr}\nexcept Exception as e:\n"
                      f"    fail(state, frame, {writer.name(n, 'ITEM')}, i, e)", set(args), n))
        if n.single_output:
            names[(n.id, 0)] = out
            return
        for k in range(n.num_outputs):
            names[(n.id, k)] = part = fresh()
            lines.append((f"{part} = {out}[{k}]", {out}, None))  # (as the generic handler indexes each)

    for n in cond_ops:
        op_lines(n)
    pred = name_of(loop_cond, 0)
    exits = [n for n in order if n.kind == EXIT]
    exit_values = [name_of(*producers[(x.local_id, 0)]) for x in exits]
    lines.append((_TEST, {pred, *exit_values}, None))
    for n in body_ops:
        op_lines(n)
    nexts = [name_of(*producers[(ni.local_id, 0)]) for ni in next_iterations]

    # let a temporary go after its last reader (the test reads the predicate and the exits' values)
    last_read: dict = {}
    for pos, (text, reads, _n) in enumerate(lines):
        for r in reads:
            last_read[r] = -1 if text is _TEST else pos  # (what the test reads: a bool, or kept values)
    kept = set(nexts)
    free_after: dict = {}
    for r, pos in last_read.items():
        if r.startswith("v") and r not in kept and pos >= 0:
            free_after.setdefault(pos, []).append(r)

    src = codegen.Source()
    vars_ = codegen.args("m", range(n_vars))
    params = ", ".join(["state, frame, ready, n0, i", vars_] + ([codegen.args("c", range(len(invariant_enters)))]
                                                               if invariant_enters else []))
    line_ops: dict = {}
    with src.block(f"def loop({params})"):
        with src.block("while True"):
            for pos, (text, _reads, n) in enumerate(lines):
                if text is _TEST:  # the predicate false: the loop ends with the exits' values
                    with src.block(f"if not {pred}"):
                        src.line(f"return True, i, ({', '.join(exit_values)}{',' if len(exit_values) == 1 else ''})")
                else:
                    if n is not None:
                        line_ops[len(src.lines) + 2] = n  # (the call's line, 1-based: after the `try:`)
                    src.extend(text.split("\n"))
                if pos in free_after:
                    src.line(" = ".join(sorted(free_after[pos])) + " = None")
            src.line(f"{vars_} = {', '.join(nexts)}")
            src.line("i += 1")
            with src.block("if len(ready) != n0"):  # a deadline or a cancellation: hand the frame back
                src.line(f"return False, i, ({vars_}{',' if n_vars == 1 else ''})")
    source = src.text()
    env = writer.env
    env["fail"] = fail
    loop = codegen.compile_function(source, "loop", env, "loop runner of", info.name)
    line_map = {line: (n.op.source.filename, n.op.source.lineno) for line, n in line_ops.items()
                if getattr(n.op, "source", None) is not None}
    if line_map:  # (a kernel's numpy warning is shown at the user's line of its op: warning_sources.py)
        source_info.register_source_map(loop.__code__.co_filename, line_map)
    return LoopRunner(info, loop, source, var_enters, invariant_enters, next_iterations, exits)

