"""A precomputed handler per node: Python source generated for one node of a loop, with
its input slots, its kernel and its out-edges baked in, so that running it does no
dictionary lookup, no loop over edges and no call per output (the generic handlers of
executor.py do all three). Each delivery is ExecutorState._activate_nodes written out for
one edge (its kind, slot, consumer and the consumer's pending count known), so the rules
of execution are the same; a consumer with a single input skips its pending count (the
arrival always fires it).

A consumer that fires on this arrival runs inside the handler instead of going through
the ready queue: one with a single input (an op, a NextIteration, a Merge's first live
input), or one whose last input just arrived live (an op, a Switch). Dead tokens are
delivered the same way but their consumers are queued (rare: a loop's last iteration, a
branch not taken). A consumer run on its last input takes that input from the producer's
local, not its slot. Scalar arithmetic and comparisons are written as the operators of
scalar_kernels.py (with the same guards; integer + and - test exactly whether the result
fits, and wrap it around as numpy's ufunc does when it does not: _Source.integer_sum),
identities as nothing. Inlining stops
MAX_DEPTH kernels deep or past MAX_LINES lines; heavy ops are never inlined (they may go
to the pool). Part of the handler of the Add `a + b` of a fibonacci loop:

    else:
        a1_0 = inputs[15]
        a1_1 = inputs[16]
        inputs[15] = inputs[16] = None
        try:
            out2 = ((a1_0 + a1_1) if ... else wrapped5(a1_0, a1_1)) if type(a1_0) is T3 ... else fallback4(a1_0, a1_1)
        except Exception as e:
            state._kernel_error(node, e)          # names the op, its frame and iteration
        ran += 1                                  # NextIteration_1, inline
        k = it.iter_id + 1
        if k <= frame.iteration_count:
            nx5 = frame.iterations[k]
        elif frame.num_outstanding_iterations < frame.max_parallel_iterations:
            nx5 = state._increment_iteration(frame)
        ...                                       # Merge_1 of iteration k, inline, ...
    n = it.outstanding_ops + c - 1                # the node is done (executor._node_done)
    it.outstanding_ops = n
    if not n and not it.outstanding_frame_count:
        state._cleanup(frame, it.iter_id)
    return ran                                    # the nodes run (stats.nodes)

Handlers come in tiers, by how often a node has run. A node of a while frame runs the
generic handler of its kind (wrapped so it counts itself done) for its first QUICK_AFTER
runs; then a quick handler (quick_handler: its slots, kernel and out-edges bound in
closures over code shared by every node of the same shape, made in microseconds; the
consumers it fires in its iteration run inside it, by their runners) until COMPILE_AFTER
runs; then its generated handler. A node of the root frame, which runs once per run, keeps
the generic one: a graph without long loops never pays for compiling source (nor does a
run's memory peak), and a loop run a few hundred times pays only for closures. Only
ExecutorState uses these; TracedExecutorState runs the generic handlers, which record
every step. Kinds generated: ops, Switch, Merge, NextIteration; the others (Enter, Exit,
feeds, _Send/_Recv, the deadline token) keep the generic handler.
"""
from __future__ import annotations

import operator
import os
import re
from collections import Counter

import numpy as np

from . import codegen
from . import node_kinds as P  # (the kinds of node and edge the plan gives)
from .scalar_kernels import _rule, scalar_source

# Runs of a node (from the ready queue or inside a quick handler) before its handler is
# generated (plan.NodeItem.runs counts them): compiling a handler costs about as much as
# running a node a thousand times, so a node that runs fewer times never pays for it
# (AUTOGRAPH_HANDLERS_AFTER sets it: 1 generates every handler of a loop after its first
# run, as the tests do).
COMPILE_AFTER = int(os.environ.get("AUTOGRAPH_HANDLERS_AFTER", "") or 1000)
# Runs before a node gets its quick handler: making one costs a few microseconds (and, once
# per process, compiling the code of each new shape of node: about 0.1 ms) and saves about
# half of what dispatching a node costs, so it pays back within some tens of runs
# (AUTOGRAPH_QUICK_HANDLERS_AFTER sets it).
QUICK_AFTER = int(os.environ.get("AUTOGRAPH_QUICK_HANDLERS_AFTER", "") or 100)

# Set by executor.py: the generic handler of each kind, and the helpers generated code calls.
GENERIC: tuple = ()
HELPERS: dict = {}
_CODE: dict = {}  # source -> its code object


def first_runs(state, node) -> None:
    """Every node's handler until it has run QUICK_AFTER times: the generic one; then the
    node's quick handler (or, past COMPILE_AFTER, its generated one) replaces it."""
    item = node.item
    item.runs += 1
    if item.frame is None or item.frame.parent is None:  # once per run: not worth compiling
        item.fast = generic_handler(item.kind)
    elif item.runs >= COMPILE_AFTER and not node.is_dead:  # (it may have run that often inside quick handlers)
        item.fast = build_handler(item)
    elif item.runs >= QUICK_AFTER:
        item.fast = _quick_when_run if _quick_maker(item) else generic_handler(item.kind)
    if not GENERIC[item.kind](state, node):
        it = node.iteration  # state._node_done, inline (a call is a tenth of what a node costs here)
        n = it.outstanding_ops - 1
        it.outstanding_ops = n
        if not n and not it.outstanding_frame_count:
            state._cleanup(node.frame, it.iter_id)
    return 1


def _quick_when_run(state, node):
    """A node's handler once it has run QUICK_AFTER times: its quick handler (or, past
    COMPILE_AFTER, its generated one), made when it is next run live from the queue, which
    replaces this one. Most nodes of a loop never are again: the quick handlers of the
    others run them inside them, by their runners, and queue them only dead."""
    item = node.item
    if node.is_dead:  # (a loop's last iteration, a branch not taken: not worth making it for)
        if not GENERIC[item.kind](state, node):
            it = node.iteration  # state._node_done, inline
            n = it.outstanding_ops - 1
            it.outstanding_ops = n
            if not n and not it.outstanding_frame_count:
                state._cleanup(node.frame, it.iter_id)
        return 1
    item.fast = handler = build_handler(item) if item.runs >= COMPILE_AFTER else quick_handler(item)
    return handler(state, node)


_quick_when_run.tier = "inlined"  # (run inside others' handlers; dead, by the generic one)
_quick_when_run.source = None


def generic_handler(kind: int):
    """The generic handler of `kind`, counting the node done (unless it waits: _ASYNC)."""
    h = GENERIC[kind]

    def run_generic(state, node):
        if not h(state, node):
            it = node.iteration  # state._node_done, inline
            n = it.outstanding_ops - 1
            it.outstanding_ops = n
            if not n and not it.outstanding_frame_count:
                state._cleanup(node.frame, it.iter_id)
        return 1
    run_generic.source = None
    run_generic.tier = "generic"
    return run_generic


def build_handler(item):
    """The handler of `item` (a plan.NodeItem): generated for the kinds above, else generic."""
    if item.kind == P.NORMAL and item.op is not None and callable(item.kernel):
        kind = _Source._op
    elif item.kind == P.SWITCH:
        kind = _Source._switch
    elif item.kind == P.MERGE:
        kind = _Source._merge
    elif item.kind == P.NEXT_ITERATION:
        kind = _Source._next_iteration
    else:
        return generic_handler(item.kind)
    for max_lines in (MAX_LINES, SHORT_MAX_LINES, 0):  # (many consumers) inlining less, or none, or generic
        source, env = kind(_Source(item, max_lines))
        if source.count("\n") <= MAX_HANDLER_LINES:
            break
    else:
        return generic_handler(item.kind)
    env.update(HELPERS)
    code = _CODE.get(source)
    if code is None:  # (the same graph traced again, or planned again, has the same sources)
        if len(_CODE) >= 1024:
            _CODE.clear()
        code = _CODE[source] = codegen.compile_code(source, "handler of", item.name)
    handler = codegen.define(code, env, "handler")
    handler.source = source
    handler.tier = "generated"
    return handler


# -- the quick tier -----------------------------------------------------------------------

# Consumers run inside the quick handlers: a consumer that a live arrival fires (its only
# input, a Merge's first live one, or the last input of an op or Switch, none dead) runs
# inside the delivery, by its runner, instead of being queued, popped, and counted in and out
# of its iteration's outstanding ops (that round trip was about half of what a node cost on
# this tier). Runners stay in their iteration: a NextIteration's value goes to the next
# iteration's Merge through the queue, so each iteration starts from its Merges, popped (the
# same nodes every iteration, which later get generated handlers). They nest at most
# QUICK_BLOCK deep (one Python frame each): a node's level is the longest path to it from
# the start of its iteration (frame_levels), and a consumer runs inside its producer only
# when both are in the same block of QUICK_BLOCK levels, so a chain of runners climbs at most
# that many levels before the next consumer is queued. What is rare or may not run inline (a
# dead token, a heavy op, an Exit or Enter, control edges out, several outputs) is queued.
QUICK_BLOCK = 16


def quick_handler(item):
    """The node's quick handler: the generic handler of its kind for this node alone, with its
    input slots, kernel and out-edges bound in closures (each edge's kind, and whether its
    consumer waits for other inputs, looked at once), counting its runs until COMPILE_AFTER,
    when its generated handler replaces it; the consumers it fires run inside it (runners,
    above). Its code is shared by every node of the same shape (its kind, the kinds of its
    edges: _factory), compiled once per shape in a process; a handler is made in
    microseconds. What is rare (the node dead, a heavy op the pool may take, control edges)
    goes to the generic code, so the rules of execution stay written once. Kinds: ops,
    Switch, Merge, NextIteration; the others keep the generic handler."""
    make = _quick_maker(item)
    if make is None:
        return generic_handler(item.kind)
    handler = make(P, item, generic_handler(item.kind), COMPILE_AFTER)
    handler.source = None
    handler.tier = "quick"
    return handler


def _quick_maker(item):
    """What makes the quick handler of a node of this kind, or None (it keeps the generic one)."""
    kind = item.kind
    if kind == P.NORMAL and item.op is not None and callable(item.kernel):
        return _quick_op
    return {P.SWITCH: _quick_switch, P.MERGE: _quick_merge, P.NEXT_ITERATION: _quick_next_iteration}.get(kind)


def promote(item, node) -> None:
    """A node whose quick handler ran COMPILE_AFTER times gets its generated handler, unless
    another node of its frame got one in this iteration: that one's handler may run this
    node inside it from the next iteration on, and then this one is never built. So only the
    nodes still run from the queue are compiled, one more per iteration (in the order they
    run), rather than every node of the loop at once (most of which end up inlined). A node
    the quick handlers of others run inside them while live, and queue only dead (at its
    loop's end), has no quick handler (_quick_when_run) and is never promoted: it would not
    repay its compiling; a node queued dead in every iteration (a branch not taken) has one
    and is."""
    info = item.frame
    tag = (id(node.frame), node.iteration.iter_id)
    if info.promoted_in != tag:
        info.promoted_in = tag
        item.fast = build_handler(item)


def _quick_op(P, item, generic, full_after):
    """executor._run_op and _propagate_op_outputs for one op."""
    s, n, kernel = item.input_start, item.num_inputs, item.kernel
    heavy, blas = not item.cheap, item.uses_blas
    if item.single_output and not item.control_edges:
        deliver = _deliverer(P, item, item.out_edges[0])
    else:
        deliver = None  # (several outputs or control edges: _propagate_op_outputs)

    def handler(state, node):
        r = item.runs + 1
        item.runs = r
        if r >= full_after:
            promote(item, node)
        if node.is_dead or heavy and state.pool is not None and not (blas and state.blas_spreads):
            return generic(state, node)
        it = node.iteration
        inputs = it.inputs
        try:
            if n == 2:
                a = inputs[s]
                b = inputs[s + 1]
                inputs[s] = inputs[s + 1] = None
                out = kernel(a, b)
            elif n == 1:
                a = inputs[s]
                inputs[s] = None
                out = kernel(a)
            else:
                args = inputs[s:s + n]
                inputs[s:s + n] = [None] * n
                out = kernel(*args)
        except Exception as e:  # noqa: BLE001 (becomes an ExecutionError naming the op)
            state._kernel_error(node, e)
        if deliver is None:
            state._propagate_op_outputs(node, out)
            ran = 1
        else:
            ran = 1 + deliver(state, node.frame, it, out)
        n_ = it.outstanding_ops - 1  # executor._node_done, inline
        it.outstanding_ops = n_
        if not n_ and not it.outstanding_frame_count:
            state._cleanup(node.frame, it.iter_id)
        return ran
    return handler


def _quick_switch(P, item, generic, full_after):
    """executor._run_switch (of a loop: no switch_preds to note) for one Switch."""
    s = item.input_start
    out_false, out_true = item.out_edges
    live_false, live_true = _deliverer(P, item, out_false), _deliverer(P, item, out_true)
    dead_false, dead_true = _dead_deliverer(P, item, out_false), _dead_deliverer(P, item, out_true)
    controls = bool(item.control_edges)

    def handler(state, node):
        r = item.runs + 1
        item.runs = r
        if r >= full_after:
            promote(item, node)
        if node.is_dead:
            return generic(state, node)
        it = node.iteration
        frame = node.frame
        inputs = it.inputs
        value = inputs[s]
        pred = inputs[s + 1]
        inputs[s] = inputs[s + 1] = None
        if pred:
            ran = 1 + dead_false(state, frame, it, value) + live_true(state, frame, it, value)
        else:
            ran = 1 + live_false(state, frame, it, value) + dead_true(state, frame, it, value)
        if controls:
            state._activate_nodes(item, item.control_edges, frame, it, None, False)
        n = it.outstanding_ops - 1
        it.outstanding_ops = n
        if not n and not it.outstanding_frame_count:
            state._cleanup(frame, it.iter_id)
        return ran
    return handler


def _quick_merge(P, item, generic, full_after):
    """executor._run_merge for one Merge: a loop's Merge, the node each iteration starts from,
    in one function made by _factory where it can be (no control edges, no value_index read)."""
    s = item.input_start
    out_value, out_index = item.out_edges
    if not out_index and not item.control_edges:
        kinds, bound = _edge_kinds(P, item, out_value)
        if kinds is not None:
            return _factory(("merge handler",), kinds)(*bound, ITEM=item, S=s, GENERIC=generic, FULL=full_after,
                                                       PROMOTE=promote)
    value_to = _deliverer(P, item, out_value)
    index_to = _deliverer(P, item, out_index) if out_index else None
    controls = bool(item.control_edges)

    def handler(state, node):
        r = item.runs + 1
        item.runs = r
        if r >= full_after:
            promote(item, node)
        if node.is_dead:
            return generic(state, node)
        it = node.iteration
        frame = node.frame
        inputs = it.inputs
        value = inputs[s]
        inputs[s] = None
        ran = 1 + value_to(state, frame, it, value)
        if index_to is not None:
            ran += index_to(state, frame, it, np.int32(inputs[s + 1]))
        if controls:
            state._activate_nodes(item, item.control_edges, frame, it, None, False)
        n = it.outstanding_ops - 1
        it.outstanding_ops = n
        if not n and not it.outstanding_frame_count:
            state._cleanup(frame, it.iter_id)
        return ran
    return handler


def _quick_next_iteration(P, item, generic, full_after):
    """executor._run_next_iteration for one NextIteration (not traced: no "deferred" event)."""
    s = item.input_start
    deliver = _deliverer(P, item, item.out_edges[0])

    def handler(state, node):
        r = item.runs + 1
        item.runs = r
        if r >= full_after:
            promote(item, node)
        it = node.iteration
        frame = node.frame
        inputs = it.inputs
        value = inputs[s]
        inputs[s] = None
        if not node.is_dead:
            k = it.iter_id + 1
            if k <= frame.iteration_count:
                deliver(state, frame, frame.iterations[k], value)
            elif frame.num_outstanding_iterations < frame.max_parallel_iterations:
                deliver(state, frame, state._increment_iteration(frame), value)
            else:
                frame.next_iteration_roots.append((item, value))
        n = it.outstanding_ops - 1
        it.outstanding_ops = n
        if not n and not it.outstanding_frame_count:
            state._cleanup(frame, it.iter_id)
        return 1
    return handler


def frame_levels(P, info) -> list:
    """Per node of a frame (by local id, plan.FrameInfo.levels once made): the longest path to
    it from the start of its iteration (its Merges, and nodes with no producer in the frame),
    a NextIteration's edges (into the next iteration) left out; None for a node on a cycle
    without one (not in a valid graph), which no runner reaches."""
    if info.levels is not None:
        return info.levels
    nodes = info.nodes
    producers = [0] * len(nodes)
    consumers = [[] for _ in nodes]
    for u in nodes:
        if u.kind == P.NEXT_ITERATION:
            continue
        for edges in (*u.out_edges, u.control_edges):
            for dst, lid, _, _, _ in edges:
                if dst is not None and dst.frame is info:
                    consumers[u.local_id].append(lid)
                    producers[lid] += 1
    levels = [0] * len(nodes)
    ready = [k for k, c in enumerate(producers) if not c]
    while ready:
        u = ready.pop()
        for v in consumers[u]:
            levels[v] = max(levels[v], levels[u] + 1)
            producers[v] -= 1
            if not producers[v]:
                ready.append(v)
    info.levels = [None if c else lv for lv, c in zip(levels, producers)]
    return info.levels


def _runner(P, dst, kind: int):
    """The runner of the consumer `dst` (made once: NodeItem.runner), reached by an edge of
    `kind`; None if it is queued instead. It counts the node's runs as its handler would. A
    "value" runner, run(state, frame, it, value), takes the arrival that fires it as its
    argument (a consumer with that single input, or a Merge); a "slots" runner,
    run(state, frame, it), reads every input from its slots (an op or Switch whose last input
    just arrived). Each returns the nodes it ran (itself and the consumers it ran in turn)."""
    run = dst.runner
    if run is not None:
        return run or None
    single = dst.pending_init == 1  # (no control input either)
    if dst.control_edges:
        pass
    elif kind == P.TO_MERGE:
        if dst.kind == P.MERGE and single and not dst.out_edges[1]:
            run = _compiled_runner(P, dst, ("merge",))
    elif kind == P.TO_OP:
        if dst.kind == P.NEXT_ITERATION:
            if single:
                run = _compiled_runner(P, dst, ("next",))
        elif dst.kind == P.SWITCH:
            if not single and dst.frame.parent is not None:  # (a root Switch notes its predicate)
                run = _switch_runner(P, dst)
        elif (dst.kind == P.NORMAL and dst.op is not None and dst.cheap and callable(dst.kernel)
              and dst.single_output):
            if single and dst.num_inputs == 1:
                if _Source.is_identity(dst):
                    run = _compiled_runner(P, dst, ("identity",))
                else:
                    run = _compiled_runner(P, dst, ("value",), K=dst.kernel, LID=dst.local_id)
            elif not single:
                run = _compiled_runner(P, dst, ("slots", dst.num_inputs), K=dst.kernel, LID=dst.local_id,
                                       S=dst.input_start)
    dst.runner = run or False
    return run


def _compiled_runner(P, item, head: tuple, **params):
    """A runner of `item` whose output goes along its first output's edges, made by the
    factory of its head and edge kinds (_factory)."""
    kinds, bound = _edge_kinds(P, item, item.out_edges[0])
    if kinds is None:
        return None
    return _factory(head, kinds)(*bound, ITEM=item, **params)


def _switch_runner(P, item):
    """executor._run_switch of a live Switch of a loop whose inputs both arrived."""
    out_false, out_true = item.out_edges
    kinds_false, bound_false = _edge_kinds(P, item, out_false)
    kinds_true, bound_true = _edge_kinds(P, item, out_true)
    if kinds_false is None or kinds_true is None:
        return None
    return _factory(("switch", kinds_false), kinds_true)(
        *bound_true, *bound_false, ITEM=item, S=item.input_start, DF=_dead_deliverer(P, item, out_false),
        DT=_dead_deliverer(P, item, out_true))


def _deliverer(P, item, edges):
    """`deliver(state, frame, it, value)`: a live `value` along `edges` (one output of `item`)
    as ExecutorState._activate_nodes delivers it, written out edge by edge (_factory), the
    consumers it fires run by their runners where they have one; returns how many nodes ran
    so. An edge of another kind (none in practice) leaves the delivery to _activate_nodes."""
    kinds, bound = _edge_kinds(P, item, edges)
    if kinds is None:
        def deliver_generic(state, frame, it, value):
            state._activate_nodes(item, edges, frame, it, value, False)
            return 0
        return deliver_generic
    return _factory(("deliver",), kinds)(*bound, ITEM=item)


def _edge_kinds(P, item, edges):
    """(the kinds of `edges`, an output of `item`, as _factory names them, the values bound per
    edge: local id, slot, index, runner), or (None, None) for edges _factory does not write
    out. A consumer has a runner only in the same block of levels as `item` (frame_levels),
    never in the next iteration (a NextIteration's consumer)."""
    levels = frame_levels(P, item.frame) if item.frame.parent is not None else None
    block = levels[item.local_id] if levels is not None and item.kind != P.NEXT_ITERATION else None
    if block is not None:
        block //= QUICK_BLOCK
    kinds, bound = [], []
    for dst, lid, slot, kind, index in edges:
        run = None
        if block is not None and kind in (P.TO_OP, P.TO_MERGE) and dst.frame is item.frame:
            level = levels[lid]
            if level is not None and level // QUICK_BLOCK == block:
                run = _runner(P, dst, kind)
        if kind == P.TO_OP:  # "one": the consumer's only input (the arrival fires it); "op": it may wait
            kinds.append(("one" if dst.pending_init == 1 else "op") + (">" if run else ""))
        elif kind == P.TO_MERGE:
            kinds.append("merge>" if run else "merge")
        elif kind == P.TO_FETCH:
            kinds.append("fetch")
        else:
            return None, None
        bound += (lid, slot, index, run)
    if len(kinds) > _MAX_WRITTEN_EDGES:
        return None, None
    return tuple(kinds), bound


# Past this many edges a delivery is _activate_nodes' loop (not worth writing out).
_MAX_WRITTEN_EDGES = 8
_QUICK_CODE: dict = {}  # (head, edge kinds) -> the factory of its function


def _factory(head: tuple, kinds: tuple):
    """The function making a runner of this head for a node whose output goes along edges of
    these kinds (ExecutorState._activate_nodes written out for each: _edge_lines), given each
    edge's (local id, slot, index, runner), then by name the node (ITEM) and the head's own
    values; compiled once per (head, kinds) in a process (a loop needs some ten: about 0.1
    ms each). Heads:

      deliver        deliver(state, frame, it, value): the edges alone (a quick handler's delivery)
      merge          a Merge given its first live input        } value runners: the node on
      identity       an Identity or LoopCond given its input   } `value`, then its output
      value          an op given its only input (K its kernel) } along the edges
      next           a NextIteration: the edges in iteration n+1 (started now, or deferred)
      slots, n       an op whose n inputs arrived (slots from S), none dead: a slots runner
      switch, kf     a Switch (a slots runner): true, the dead token along DF and the value along
                     the kinds of this key; false, the value along the edges of kinds kf, then
                     the dead token along DT
      merge handler  handler(state, node): the quick handler of a Merge (_quick_merge)

    A node queued is counted in its iteration's outstanding ops at once, as _activate_nodes
    counts it; the ones run here never are (the node that runs them is not done yet, so its
    iteration stays alive meanwhile)."""
    key = (head, kinds)
    make = _QUICK_CODE.get(key)
    if make is not None:
        return make
    name = head[0]
    params = [f"{x}{k}" for k in range(len(kinds)) for x in ("L", "S", "I", "R")]
    args = {"slots": "state, frame, it", "switch": "state, frame, it",
            "merge handler": "state, node"}.get(name, "state, frame, it, value")
    pre = [] if name == "deliver" else ["ITEM.runs += 1"]
    if name == "value":
        params += ["K", "LID"]
        pre += ["try:", "    value = K(value)", "except Exception as e:", "    state._kernel_error(it.tagged[LID], e)"]
    elif name == "slots":
        n = head[1]
        params += ["K", "LID", "S"]
        slots = [f"inputs[S + {k}]" if k else "inputs[S]" for k in range(n)]
        call = f"K({', '.join(f'a{k}' for k in range(n))})"
        pre += ["inputs = it.inputs"] + [f"a{k} = {slot}" for k, slot in enumerate(slots)]
        pre += [" = ".join(slots) + " = None", "try:", f"    value = {call}",
                "except Exception as e:", "    state._kernel_error(it.tagged[LID], e)",
                " = ".join(f"a{k}" for k in range(n)) + " = None"]  # (see _edge_lines)
    elif name == "next":
        pre += ["k = it.iter_id + 1", "if k <= frame.iteration_count:", "    it = frame.iterations[k]",
                "elif frame.num_outstanding_iterations < frame.max_parallel_iterations:",
                "    it = state._increment_iteration(frame)", "else:",
                "    frame.next_iteration_roots.append((ITEM, value))", "    return 1"]
    elif name == "switch":
        params += [f"F{x}{k}" for k in range(len(head[1])) for x in ("L", "S", "I", "R")] + ["S", "DF", "DT"]
        pre += ["inputs = it.inputs", "value = inputs[S]", "pred = inputs[S + 1]", "inputs[S] = inputs[S + 1] = None"]
    elif name == "merge handler":
        params += ["S", "GENERIC", "FULL", "PROMOTE"]
        pre = ["r = ITEM.runs + 1", "ITEM.runs = r", "if r >= FULL:", "    PROMOTE(ITEM, node)", "if node.is_dead:",
               "    return GENERIC(state, node)", "it = node.iteration", "frame = node.frame", "inputs = it.inputs",
               "value = inputs[S]", "inputs[S] = None"]
    body = ["ran = 0" if name == "deliver" else "ran = 1"]
    if name == "switch":  # (an output without consumers gets no dead token: a loop's counter's Switch)
        true = (["ran += DF(state, frame, it, value)"] if head[1] else []) + _edge_lines(kinds, "", last=True)
        false = _edge_lines(head[1], "F", last=not kinds) + (["ran += DT(state, frame, it, value)"] if kinds else [])
        body += ["if pred:"] + ["    " + line for line in true or ["pass"]]
        body += ["else:"] + ["    " + line for line in false or ["pass"]]
    else:
        body += _edge_lines(kinds, "", last=True)
    if name == "merge handler":  # executor._node_done, inline
        body += ["n = it.outstanding_ops - 1", "it.outstanding_ops = n", "if not n and not it.outstanding_frame_count:",
                 "    state._cleanup(frame, it.iter_id)"]
    body.append("return ran")
    text = "\n".join(body)
    loads = [f"{var} = {expr}" for var, expr in (("inputs", "it.inputs"), ("pending", "it.pending"))
             if re.search(rf"\b{var}\b", text) and f"{var} = {expr}" not in pre]
    params.append("ITEM")
    source = (f"def make({', '.join(params)}):\n    def run({args}):\n"
              + "".join(f"        {line}\n" for line in pre + loads + body) + "    return run\n")
    env: dict = {"push_dead": _push_dead}
    label = " ".join(map(str, head)) + ": " + (" ".join(kinds) or "nothing")
    make = codegen.compile_function(source, "make", env, "quick", label)
    if len(_QUICK_CODE) >= 1024:  # (runners made from the code dropped keep it)
        _QUICK_CODE.clear()
    _QUICK_CODE[key] = make
    make.source = source
    return make


def _push_dead(state, it, lid: int) -> None:
    """Queue the node `lid` of iteration `it` to run dead (a runner's rare path)."""
    t = it.tagged[lid]
    t.is_dead = True
    state.ready_append(t)
    it.outstanding_ops += 1


def _edge_lines(kinds: tuple, p: str, last: bool = False) -> list:
    """Delivering `value` along edges of these kinds into `it` (the edges' values bound as
    {p}L0, {p}S0, {p}I0, {p}R0, ...): executor._activate_nodes written out for each. `last`:
    nothing after reads `value`, so once it is in the last consumer's slot the local lets it
    go before that consumer runs (as a slots runner lets its inputs go once its kernel ran):
    an array the step no longer needs is freed before the next is made, as in plain numpy,
    not held by the runners' frames down the chain (a working set that stays in cache)."""
    body = []
    for k, kind in enumerate(kinds):
        if last and k == len(kinds) - 1 and kind == "op>":
            body += [f"inputs[{p}S{k}] = value", "value = None"]
            kind = "op> stored"
        lid, slot, index, run = f"{p}L{k}", f"{p}S{k}", f"{p}I{k}", f"{p}R{k}"
        queue = [f"t = it.tagged[{lid}]", "t.is_dead = False", "state.ready_append(t)", "it.outstanding_ops += 1"]
        if kind == "one":
            body += [f"inputs[{slot}] = value"] + queue
        elif kind == "one>":
            body += [f"ran += {run}(state, frame, it, value)"]
        elif kind == "op":
            body += [f"inputs[{slot}] = value", f"p = pending[{lid}] - 1", f"pending[{lid}] = p", "if not p:",
                     f"    t = it.tagged[{lid}]", f"    t.is_dead = it.dead_count[{lid}] > 0",
                     "    state.ready_append(t)", "    it.outstanding_ops += 1"]
        elif kind.startswith("op>"):  # its last input, none dead: it runs here; dead (rare), it is queued
            body += [] if kind == "op> stored" else [f"inputs[{slot}] = value"]
            body += [f"p = pending[{lid}] - 1", f"pending[{lid}] = p", "if not p:",
                     f"    if it.dead_count[{lid}]:", f"        push_dead(state, it, {lid})", "    else:",
                     f"        ran += {run}(state, frame, it)"]
        elif kind == "merge":  # the first live input is taken; fires once no control input is pending
            body += [f"p = pending[{lid}]", "if p & 1:", f"    inputs[{slot}] = value",
                     f"    inputs[{slot} + 1] = {index}", f"    pending[{lid}] = p - 1", "    if p == 1:"]
            body += ["        " + line for line in queue]
        elif kind == "merge>":  # (no control input: its first live input fires it)
            body += [f"if pending[{lid}]:", f"    pending[{lid}] = 0", f"    ran += {run}(state, frame, it, value)"]
        else:  # fetch
            body.append(f"state.results[{index}] = value")
    return body


def _dead_deliverer(P, item, edges):
    """`deliver(state, frame, it, value)`: a dead token along `edges`, by _activate_nodes,
    except a loop's way out: one edge to an Exit it alone feeds, which runs here (the
    executor's inline_dead_exits; note_dead_exit), once per iteration of every loop. Returns 0
    (it counts the nodes it runs itself)."""
    if len(edges) == 1:
        dst, lid, slot, kind, index = edges[0]
        if kind == P.TO_OP and dst.kind == P.EXIT and dst.pending_init == 1:
            def dead_exit(state, frame, it, value):
                it.pending[lid] -= 1
                it.dead_count[lid] += 1
                state.stats.nodes += 1
                if it.iter_id == frame.iteration_count:
                    frame.dead_exits.append(dst)
                return 0
            return dead_exit

    def deliver_dead(state, frame, it, value):
        state._activate_nodes(item, edges, frame, it, value, True)
        return 0
    return deliver_dead


# Inlining: a consumer that fires on this arrival alone runs inside its producer's handler,
# at most this many consumers deep and while the handler has fewer lines than MAX_LINES
# (SHORT_MAX_LINES for a node whose handler would be too long so). Long enough for a loop
# like fibonacci's to run an iteration in two handlers: each handler run from the queue costs
# about what a few nodes do.
MAX_DEPTH = 4
MAX_LINES = 200
SHORT_MAX_LINES = 70
# A longer handler (a node with very many consumers) is not worth compiling.
MAX_HANDLER_LINES = 400


class _Ctx:
    """An iteration the generated code delivers into: the expression naming it, and the
    prefix of its locals (`{p}inputs`, `{p}pending`, `{p}dead_count`, `{p}tagged`, and
    `{p}c`, the nodes queued in it)."""

    def __init__(self, p: str, it: str):
        self.p = p
        self.it = it


_WORD = re.compile(r"(?<![.\w])([A-Za-z_]\w*)")


class _Block:
    """An indented block of generated code (with `pass` if nothing went in)."""

    __slots__ = ("src", "start")

    def __init__(self, src: "_Source"):
        self.src = src

    def __enter__(self):
        self.src.indent += 1
        self.start = len(self.src.lines)

    def __exit__(self, *exc):
        if len(self.src.lines) == self.start:
            self.src.emit("pass")
        self.src.indent -= 1


class _Source:
    """The source of one node's handler, and the names it uses."""

    def __init__(self, item, max_lines: int = MAX_LINES):
        self.P = P
        self.max_depth = MAX_DEPTH if max_lines else 0
        self.max_lines = max_lines
        self.item = item
        self.env: dict = {"ITEM": item, "np": np}
        self.lines: list[str] = []
        self.indent = 1
        self.n_names = 0

    # -- building blocks ---------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def name(self, obj, prefix: str) -> str:
        """A global of the handler bound to `obj`."""
        self.n_names += 1
        key = f"{prefix}{self.n_names}"
        self.env[key] = obj
        return key

    def source(self) -> tuple[str, dict]:
        """The function's source (without the locals it never reads) and its globals."""
        used = Counter(_WORD.findall("\n".join(self.lines)))
        kept = []
        for line in self.lines:
            target, _, value = line.strip().partition(" = ")
            if (value.startswith(("it.", "nx")) and target.endswith(("pending", "dead_count", "tagged"))
                    or target in ("frame", "append")) and used[target] == 1:  # only where it is set
                continue
            kept.append(line)
        return "def handler(state, node):\n" + "\n".join(kept) + "\n", self.env

    def block(self) -> "_Block":
        """`with self.block():` indents what is emitted inside."""
        return _Block(self)

    def iteration_locals(self, ctx: _Ctx) -> None:
        p, it = ctx.p, ctx.it
        self.emit(f"{p}inputs = {it}.inputs")
        self.emit(f"{p}pending = {it}.pending")
        self.emit(f"{p}dead_count = {it}.dead_count")
        self.emit(f"{p}tagged = {it}.tagged")
        self.emit(f"{p}c = 0")

    def push(self, ctx: _Ctx, lid: int, dead: str) -> None:
        """Queue the consumer `lid` of the iteration, dead or not."""
        p = ctx.p
        self.emit(f"t = {p}tagged[{lid}]")
        self.emit(f"t.is_dead = {dead}")
        self.emit("append(t)")
        self.emit(f"{p}c += 1")

    def threshold(self, dst, it: str) -> str:
        """executor._merge_threshold as an expression."""
        if dst.merge_back == 0:
            return str(dst.num_inputs)
        return f"({dst.merge_fwd} if {it}.iter_id == 0 else {dst.merge_back})"

    def inlined(self, dst, kind: int, dead: bool, depth: int) -> bool:
        """Does the consumer `dst` run here, inside this handler, on this arrival, which is its
        only one (pending_init 1)?"""
        P = self.P
        if dst.pending_init != 1 or not self.max_depth:
            return False
        if kind == P.TO_OP and not dead and self.runs_inline(dst) and self.is_identity(dst):
            return True  # (one line, whatever the depth)
        if depth >= self.max_depth or len(self.lines) >= self.max_lines:
            return False
        if kind == P.TO_OP:
            if dst.kind == P.NEXT_ITERATION:
                return dst.num_inputs == 1  # (a dead one: nothing to do)
            return self.runs_inline(dst) and dst.num_inputs == 1 and not dead  # (dead: rare, queued)
        return kind == P.TO_MERGE and not dead

    def inlined_last(self, dst, depth: int) -> bool:
        """Does the consumer `dst`, which waits for several arrivals, run here when this one
        is its last?"""
        P = self.P
        if depth >= self.max_depth or len(self.lines) >= self.max_lines:
            return False
        return self.runs_inline(dst) or (dst.kind == P.SWITCH and dst.frame.parent is not None)

    def runs_inline(self, dst) -> bool:
        """An op that may run inside another's handler: a cheap one with a kernel."""
        return (dst.kind == self.P.NORMAL and dst.op is not None and dst.cheap and callable(dst.kernel)
                and dst.num_outputs >= 1)

    def fresh(self, prefix: str) -> str:
        """A new local name."""
        self.n_names += 1
        return f"{prefix}{self.n_names}"

    @staticmethod
    def is_identity(item) -> bool:
        op = item.op
        return op.type in ("Identity", "LoopCond") and item.kernel is op.op_def.kernel

    def call(self, item, args: list[str]) -> str:
        """The expression that runs `item`'s kernel on `args`: a call, or (an identity, a scalar
        operator of scalar_kernels.py with its guard) the expression itself."""
        op = item.op
        k = item.kernel
        if self.is_identity(item) and len(args) == 1:
            return args[0]
        if getattr(k, "__module__", "") == "executor.scalar_kernels" and not op.attrs and len(args) <= 2:
            dtypes = [x.dtype.np_dtype for x in op.inputs]
            fallback = self.name(op.op_def.kernel, "fallback")
            rule = _rule(op.type, dtypes)
            if rule is not None and rule[2] == "bounded" and rule[0] in _WRAPPING:
                return self.integer_sum(rule[0], rule[1], args, fallback)
            src = scalar_source(op.type, dtypes, args, fallback, "T")
            if src is not None:
                expr, T = src
                if rule is not None and rule[3] is not None:  # bounds as numpy scalars: compared faster
                    bound = rule[3]
                    expr = expr.replace(f"{-bound} < ", f"{self.name(T(-bound), 'LOW')} < ").replace(
                        f" < {bound}", f" < {self.name(T(bound), 'HIGH')}")
                return expr.replace("is T", f"is {self.name(T, 'T')}")
        return f"{self.name(k, 'kernel')}({', '.join(args)})"

    def integer_sum(self, fast, T, args: list[str], fallback: str) -> str:
        """`x + y` or `x - y` on two numpy integer scalars of type T as the operator where the
        result fits (tested exactly, without overflowing), else wrapped around as numpy's ufunc
        wraps it (_wrapped_sum, by Python integers); anything else (an array, a Python number)
        goes to the op's own kernel, `fallback`."""
        x, y = args
        info = np.iinfo(T)
        t, zero = self.name(T, "T"), self.name(T(0), "ZERO")
        low, high = self.name(T(info.min), "LOW"), self.name(T(info.max), "HIGH")
        wrap = self.name(_wrapped_sum(fast, T), "wrapped")
        if fast is operator.add:  # x + y <= max iff x <= max - y (y >= 0); >= min iff x >= min - y (y < 0)
            expr, fits = f"{x} + {y}", f"({x} <= {high} - {y} if {y} >= {zero} else {x} >= {low} - {y})"
        else:  # x - y >= min iff x >= min + y (y >= 0); <= max iff x <= max + y (y < 0)
            expr, fits = f"{x} - {y}", f"({x} >= {low} + {y} if {y} >= {zero} else {x} <= {high} + {y})"
        return (f"(({expr}) if {fits} else {wrap}({x}, {y})) if type({x}) is {t} and type({y}) is {t} "
                f"else {fallback}({x}, {y})")

    def deliver(self, edges, value: str, dead: bool, ctx: _Ctx, depth: int) -> None:
        """_activate_nodes of `edges` in the iteration `ctx`: `value`, or a dead token. A
        consumer that fires on this arrival may run here (inlined) instead of being queued."""
        P = self.P
        p, it = ctx.p, ctx.it
        for dst, lid, slot, kind, index in edges:
            if kind in (P.TO_OP, P.TO_MERGE) and self.inlined(dst, kind, dead, depth):
                self.inline(dst, lid, index, value, dead, ctx, depth)
            elif kind == P.TO_FETCH:
                if dead:
                    self.emit(f"state.dead_results[{index}] = True")
                else:
                    self.emit(f"state.results[{index}] = {value}")
            elif kind == P.TO_OP:
                single = dst.pending_init == 1  # its only input: the arrival fires it
                if dead:
                    if not single:
                        self.emit(f"p = {p}pending[{lid}] - 1")
                        self.emit(f"{p}pending[{lid}] = p")
                    self.emit(f"{p}dead_count[{lid}] += 1")
                    if not single:
                        self.emit("if not p:")
                        self.indent += 1
                    if dst.kind == P.EXIT:  # runs here (inline_dead_exits), instead of being queued
                        self.emit("ran += 1")
                        self.emit(f"if {it}.iter_id == frame.iteration_count:")  # executor._note_dead_exit
                        self.emit(f"    frame.dead_exits.append({self.name(dst, 'DST')})")
                    else:
                        self.push(ctx, lid, "True")
                    if not single:
                        self.indent -= 1
                elif not single and self.inlined_last(dst, depth):
                    # live, it runs here, taking this value from `value` rather than its slot;
                    # dead (rare), it is queued
                    self.emit(f"p = {p}pending[{lid}] - 1")
                    self.emit(f"{p}pending[{lid}] = p")
                    self.emit(f"if not p and not {p}dead_count[{lid}]:")
                    with self.block():
                        self.inline_last(dst, lid, ctx, depth, {slot: value})
                    self.emit("else:")
                    with self.block():
                        self.emit(f"{p}inputs[{slot}] = {value}")
                        self.emit("if not p:")
                        with self.block():
                            self.push(ctx, lid, "True")
                else:
                    self.emit(f"{p}inputs[{slot}] = {value}")
                    if single:
                        self.push(ctx, lid, "False")
                    else:
                        self.emit(f"p = {p}pending[{lid}] - 1")
                        self.emit(f"{p}pending[{lid}] = p")
                        self.emit("if not p:")
                        with self.block():
                            self.push(ctx, lid, f"{p}dead_count[{lid}] > 0")
            elif kind == P.TO_MERGE:
                if dead:
                    self.emit(f"dc = {p}dead_count[{lid}] + 1")
                    self.emit(f"{p}dead_count[{lid}] = dc")
                    self.emit(f"if {p}pending[{lid}] == 1 and dc == {self.threshold(dst, it)}:")
                    with self.block():
                        self.push(ctx, lid, "True")
                else:
                    self.emit(f"p = {p}pending[{lid}]")
                    self.emit("if p & 1:")  # else a live input was taken already
                    with self.block():
                        self.emit(f"{p}inputs[{slot}] = {value}")
                        self.emit(f"{p}inputs[{slot + 1}] = {index}")
                        self.emit(f"{p}pending[{lid}] = p - 1")
                        self.emit("if p == 1:")
                        with self.block():
                            self.push(ctx, lid, "False")
            elif kind == P.CONTROL_TO_OP:
                self.emit(f"p = {p}pending[{lid}] - 1")
                self.emit(f"{p}pending[{lid}] = p")
                if dead:
                    self.emit(f"{p}dead_count[{lid}] += 1")
                self.emit("if not p:")
                with self.block():
                    self.push(ctx, lid, f"{p}dead_count[{lid}] > 0")
            else:  # CONTROL_TO_MERGE
                self.emit(f"p = {p}pending[{lid}] - 2")
                self.emit(f"{p}pending[{lid}] = p")
                self.emit("if p == 0:")
                with self.block():
                    self.push(ctx, lid, "False")
                self.emit(f"elif p == 1 and {p}dead_count[{lid}] == {self.threshold(dst, it)}:")
                with self.block():
                    self.push(ctx, lid, "True")

    def deliver_outputs(self, item, out: str, dead: bool, ctx: _Ctx, depth: int) -> None:
        """_propagate_op_outputs: an op's outputs (`out` from its kernel) and its control edges."""
        if dead:
            for edges in item.out_edges[:item.num_outputs]:
                self.deliver(edges, "None", True, ctx, depth)
        elif item.single_output:
            self.deliver(item.out_edges[0], out, False, ctx, depth)
        else:
            for k, edges in enumerate(item.out_edges[:item.num_outputs]):
                o = self.fresh("o")
                self.emit(f"{o} = {out}[{k}]")  # (as the generic handler, which indexes every output)
                self.deliver(edges, o, False, ctx, depth)
        self.deliver(item.control_edges, "None", dead, ctx, depth)

    def inline(self, dst, lid: int, index: int, value: str, dead: bool, ctx: _Ctx, depth: int) -> None:
        """The consumer `dst` (local id `lid` in `ctx`), fired by this arrival alone, run here."""
        P = self.P
        p = ctx.p
        if dst.kind == P.MERGE:  # a live input: (value, its index)
            self.emit(f"if {p}pending[{lid}] & 1:")
            with self.block():
                self.emit(f"{p}pending[{lid}] = 0")
                self.emit("ran += 1")
                out_value, out_index = dst.out_edges
                self.deliver(out_value, value, False, ctx, depth)
                if out_index:
                    self.deliver(out_index, self.name(np.int32(index), "INDEX"), False, ctx, depth)
                self.deliver(dst.control_edges, "None", False, ctx, depth)
            return
        self.emit("ran += 1")
        if dst.kind == P.NEXT_ITERATION:
            if not dead:
                self.next_iteration(dst, value, ctx, depth)
            return
        depth += not self.is_identity(dst)
        out = self.fresh("out")
        self.run_kernel(dst, [value], out, f"{p}tagged[{lid}]")
        self.deliver_outputs(dst, out, False, ctx, depth)

    def run_kernel(self, item, args: list[str], out: str, node: str) -> None:
        """`out` = the kernel of `item` on `args`; an error names the op (`node`: its tagged node)."""
        call = self.call(item, args)
        if call in args:  # an identity cannot fail
            self.emit(f"{out} = {call}")
            return
        self.emit("try:")
        self.emit(f"    {out} = {call}")
        self.emit("except Exception as e:")
        self.emit(f"    state._kernel_error({node}, e)")

    def inline_last(self, dst, lid: int, ctx: _Ctx, depth: int, known: dict) -> None:
        """The consumer `dst`, whose last input just arrived and none dead, run here (`known`:
        slot -> the expression of the value that arrived there, not stored)."""
        self.emit("ran += 1")
        depth += 1
        node = f"{ctx.p}tagged[{lid}]"
        if dst.kind == self.P.SWITCH:
            self.switch_body(dst, ctx, depth, "False", known)
        else:
            self.op_body(dst, ctx, depth, node, "False", known)

    def op_body(self, item, ctx: _Ctx, depth: int, node: str, dead: str, known: dict | None = None) -> None:
        """executor._run_op on the op's input slots in `ctx`; `node` names its tagged node;
        `known`: slots whose value is that expression instead (inline_last)."""
        if dead != "False":
            self.emit(f"if {dead}:")
            with self.block():
                self.deliver_outputs(item, "None", True, ctx, MAX_DEPTH)
            if dead == "True":
                return
            self.emit("else:")
            self.indent += 1
        if not item.cheap:  # (only a top-level op: an inlined one is cheap) _run_op's test, baked in
            spreads = " and not state.blas_spreads" if item.uses_blas else ""
            self.emit(f"if state.pool is not None{spreads}:")
            self.emit("    state._run_heavy_op(node)")
            self.emit("    return 1")
        n, s = item.num_inputs, item.input_start
        known = known or {}
        a = self.fresh("a")
        args = [known.get(s + k, f"{a}_{k}") for k in range(n)]
        taken = [k for k in range(n) if s + k not in known]
        for k in taken:
            self.emit(f"{args[k]} = {ctx.p}inputs[{s + k}]")
        if taken:
            self.emit(" = ".join(f"{ctx.p}inputs[{s + k}]" for k in taken) + " = None")
        out = self.fresh("out")
        self.run_kernel(item, args, out, node)
        self.deliver_outputs(item, out, False, ctx, depth)
        if dead != "False":
            self.emit("pass")
            self.indent -= 1

    def switch_body(self, item, ctx: _Ctx, depth: int, dead: str, known: dict | None = None) -> None:
        """executor._run_switch on its slots in `ctx`: both outputs carry d; the one p did not
        choose is dead (`known`: as op_body's)."""
        out_false, out_true = item.out_edges
        s = item.input_start
        p = ctx.p
        if dead != "False":
            self.emit(f"if {dead}:")
            with self.block():
                self.deliver(out_false, "None", True, ctx, MAX_DEPTH)
                self.deliver(out_true, "None", True, ctx, MAX_DEPTH)
                self.deliver(item.control_edges, "None", True, ctx, MAX_DEPTH)
            if dead == "True":
                return
            self.emit("else:")
            self.indent += 1
        known = known or {}
        value, pred = known.get(s, self.fresh("v")), known.get(s + 1, self.fresh("pr"))
        taken = [k for k in (s, s + 1) if k not in known]
        for k, name in ((s, value), (s + 1, pred)):
            if k not in known:
                self.emit(f"{name} = {p}inputs[{k}]")
        if taken:
            self.emit(" = ".join(f"{p}inputs[{k}]" for k in taken) + " = None")
        if item.frame.parent is None:
            self.emit(f"state.switch_preds[{item.id}] = bool({pred})")
        self.emit(f"if {pred}:")
        with self.block():
            self.deliver(out_false, value, True, ctx, depth)
            self.deliver(out_true, value, False, ctx, depth)
        self.emit("else:")
        with self.block():
            self.deliver(out_false, value, False, ctx, depth)
            self.deliver(out_true, value, True, ctx, depth)
        self.deliver(item.control_edges, "None", False, ctx, depth)
        if dead != "False":
            self.emit("pass")
            self.indent -= 1

    def next_iteration(self, item, value: str, ctx: _Ctx, depth: int) -> None:
        """executor._run_next_iteration, live: `value` goes to iteration n+1 (started now
        unless parallel_iterations are in flight: then it waits)."""
        nx = self.fresh("nx")
        self.emit(f"k = {ctx.it}.iter_id + 1")
        self.emit("if k <= frame.iteration_count:")
        self.emit(f"    {nx} = frame.iterations[k]")
        self.emit("elif frame.num_outstanding_iterations < frame.max_parallel_iterations:")
        self.emit(f"    {nx} = state._increment_iteration(frame)")
        self.emit("else:")
        self.emit(f"    {nx} = None")
        self.emit(f"    frame.next_iteration_roots.append(({self.name(item, 'DST')}, {value}))")
        self.emit(f"if {nx} is not None:")
        with self.block():
            nctx = _Ctx(self.fresh("n") + "_", nx)
            self.iteration_locals(nctx)
            self.deliver(item.out_edges[0], value, False, nctx, depth)
            self.emit(f"{nx}.outstanding_ops += {nctx.p}c")

    def begin(self) -> _Ctx:
        self.emit("it = node.iteration")
        self.emit("frame = node.frame")
        self.emit("append = state.ready_append")
        self.emit("ran = 1")
        ctx = _Ctx("", "it")
        self.iteration_locals(ctx)
        return ctx

    def done(self) -> tuple[str, dict]:
        """The node is done in its iteration (executor._node_done, with its pushes counted);
        the handler returns how many nodes it ran."""
        self.emit("n = it.outstanding_ops + c - 1")
        self.emit("it.outstanding_ops = n")
        self.emit("if not n and not it.outstanding_frame_count:")
        self.emit("    state._cleanup(frame, it.iter_id)")
        self.emit("return ran")
        return self.source()

    # -- the kinds ---------------------------------------------------------------------
    def _op(self):
        """executor._run_op (and _propagate_op_outputs)."""
        ctx = self.begin()
        self.op_body(self.item, ctx, 0, "node", "node.is_dead")
        return self.done()

    def _switch(self):
        """executor._run_switch."""
        ctx = self.begin()
        self.switch_body(self.item, ctx, 0, "node.is_dead")
        return self.done()

    def _merge(self):
        """executor._run_merge."""
        item = self.item
        out_value, out_index = item.out_edges
        s = item.input_start
        ctx = self.begin()
        self.emit("if node.is_dead:")
        with self.block():
            self.deliver(out_value, "None", True, ctx, 0)
            self.deliver(out_index, "None", True, ctx, 0)
            self.deliver(item.control_edges, "None", True, ctx, 0)
        self.emit("else:")
        with self.block():
            self.emit(f"value = inputs[{s}]")
            self.emit(f"inputs[{s}] = None")
            self.deliver(out_value, "value", False, ctx, 0)
            if out_index:
                self.emit(f"index = np.int32(inputs[{s + 1}])")
                self.deliver(out_index, "index", False, ctx, 0)
            self.deliver(item.control_edges, "None", False, ctx, 0)
        return self.done()

    def _next_iteration(self):
        """executor._run_next_iteration; a dead value ends the loop: nothing is sent."""
        item = self.item
        s = item.input_start
        ctx = self.begin()
        self.emit(f"value = inputs[{s}]")
        self.emit(f"inputs[{s}] = None")
        self.emit("if not node.is_dead:")
        with self.block():
            self.next_iteration(item, "value", ctx, 0)
        return self.done()


# integer + and - the generated code writes out (_Source.integer_sum)
_WRAPPING = (operator.add, operator.sub)


def _wrapped_sum(fast, T):
    """x + y (or x - y) of two numpy integer scalars of type T that overflows: wrapped around
    to T's range, as numpy's ufunc gives it (and without the warning of numpy's operator)."""
    bits = np.iinfo(T).bits
    half, whole = 2 ** (bits - 1), 2 ** bits

    def wrapped(x, y):
        return T((fast(int(x), int(y)) + half) % whole - half)
    return wrapped
