"""A precomputed handler per node: Python source generated for one node of a plan, with
its input slots, its kernel and its out-edges baked in, so that running it does no
dictionary lookup, no loop over edges and no call per output (the generic handlers of
executor.py do all three). The handler of an Add in a loop, fed by a Switch and an Enter,
feeding a NextIteration:

    def handler(state, node):
        it = node.iteration
        inputs = it.inputs
        tagged = it.tagged
        c = 0
        if node.is_dead:
            ...                                  # the same deliveries, of a dead token
        else:
            a0 = inputs[15]
            a1 = inputs[16]
            inputs[15] = inputs[16] = None
            try:
                out = kernel(a0, a1)
            except Exception as e:
                state._kernel_error(node, e)
            inputs[20] = out                     # NextIteration_1 has one input: it fires
            t = tagged[11]
            t.is_dead = False
            state.ready_append(t)
            c += 1
        n = it.outstanding_ops + c - 1            # the node is done (executor._node_done)
        it.outstanding_ops = n
        if not n and not it.outstanding_frame_count:
            state._cleanup(node.frame, it.iter_id)

Each delivery is executor.ExecutorState._activate_nodes written out for one edge (its
kind, slot, consumer and the consumer's pending count known), so the rules are the same;
a consumer with a single input skips its pending count (the arrival always fires it).

A node of a while frame runs the generic handler of its kind (wrapped so it counts itself
done) for its first runs, and gets its own generated handler once it has run COMPILE_AFTER
times; a node of the root frame, which runs once per run, keeps the generic one: a graph
without loops never pays for compiling source (nor does a run's memory peak). Only
ExecutorState uses these; TracedExecutorState runs the generic handlers, which record
every step. Op kinds generated: ops, Switch, Merge, NextIteration; the others (Enter,
Exit, feeds, _Send/_Recv, the deadline token) keep the generic handler.
"""
from __future__ import annotations

import re

import numpy as np

# Runs of a node before its handler is generated (plan.NodeItem.runs counts them).
COMPILE_AFTER = 3

# Set by executor.py: the generic handler of each kind, and the helpers generated code calls.
GENERIC: tuple = ()
HELPERS: dict = {}


def first_runs(state, node) -> None:
    """Every node's handler until it has run COMPILE_AFTER times: the generic one; then the
    node's own (generated, or the generic one wrapped) replaces it."""
    item = node.item
    item.runs += 1
    if item.frame is None or item.frame.parent is None:  # once per run: not worth compiling
        item.fast = generic_handler(item.kind)
    elif item.runs >= COMPILE_AFTER:
        item.fast = build_handler(item)
    if not GENERIC[item.kind](state, node):
        state._node_done(node.frame, node.iteration)
    return 1


def generic_handler(kind: int):
    """The generic handler of `kind`, counting the node done (unless it waits: _ASYNC)."""
    h = GENERIC[kind]

    def run_generic(state, node):
        if not h(state, node):
            state._node_done(node.frame, node.iteration)
        return 1
    run_generic.source = None
    return run_generic


def build_handler(item):
    """The handler of `item` (a plan.NodeItem): generated for the kinds above, else generic."""
    from . import plan as P  # noqa: PLC0415 (plan imports this module)
    if item.kind == P.NORMAL and item.op is not None and callable(item.kernel):
        gen = _Source(item)._op()
    elif item.kind == P.SWITCH:
        gen = _Source(item)._switch()
    elif item.kind == P.MERGE:
        gen = _Source(item)._merge()
    elif item.kind == P.NEXT_ITERATION:
        gen = _Source(item)._next_iteration()
    else:
        return generic_handler(item.kind)
    source, env = gen
    env.update(HELPERS)
    exec(compile(source, f"<handler of {item.name}>", "exec"), env)  # noqa: S102 (our own source)
    handler = env["handler"]
    handler.source = source
    return handler


# Inlining: a consumer that fires on this arrival alone runs inside its producer's handler,
# at most this many consumers deep and while the handler has fewer lines than MAX_LINES.
MAX_DEPTH = 4
MAX_LINES = 300


class _Ctx:
    """An iteration the generated code delivers into: the expression naming it, and the
    prefix of its locals (`{p}inputs`, `{p}pending`, `{p}dead_count`, `{p}tagged`, and
    `{p}c`, the nodes queued in it)."""

    def __init__(self, p: str, it: str):
        self.p = p
        self.it = it


class _Source:
    """The source of one node's handler, and the names it uses."""

    def __init__(self, item):
        from . import plan as P  # noqa: PLC0415
        self.P = P
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
        body = "\n".join(self.lines)
        kept = []
        for line in self.lines:
            target, _, value = line.strip().partition(" = ")
            if (value.startswith(("it.", "nx")) and target.endswith(("pending", "dead_count", "tagged"))
                    or target in ("frame", "append")) \
                    and len(re.findall(rf"(?<![.\w]){target}\b", body)) == 1:  # only where it is set
                continue
            kept.append(line)
        return "def handler(state, node):\n" + "\n".join(kept) + "\n", self.env

    def block(self):
        """`with self.block():` indents what is emitted inside."""
        src = self

        class _Block:
            def __enter__(self):
                src.indent += 1

            def __exit__(self, *exc):
                src.lines.append("    " * src.indent + "pass")
                src.indent -= 1
        return _Block()

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
        """Does the consumer `dst` run here, inside this handler, on this arrival?"""
        P = self.P
        if depth >= MAX_DEPTH or len(self.lines) >= MAX_LINES or dst.pending_init != 1:
            return False
        if kind == P.TO_OP:
            if dst.kind == P.NEXT_ITERATION:
                return dst.num_inputs == 1
            return (dst.kind == P.NORMAL and dst.op is not None and dst.cheap and callable(dst.kernel)
                    and dst.num_inputs == 1 and dst.num_outputs >= 1)
        return kind == P.TO_MERGE and not dead

    def deliver(self, edges, value: str, dead: bool, ctx: _Ctx, depth: int) -> None:
        """_activate_nodes of `edges` in the iteration `ctx`: `value`, or a dead token. A
        consumer that fires on this arrival alone may run here (inlined) instead of being
        queued."""
        P = self.P
        p, it = ctx.p, ctx.it
        for dst, lid, slot, kind, index in edges:
            if kind in (P.TO_OP, P.TO_MERGE) and self.inlined(dst, kind, dead, depth):
                self.inline(dst, lid, index, value, dead, ctx, depth + 1)
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
                        self.emit(f"note_dead_exit({self.name(dst, 'DST')}, frame, {it})")
                    else:
                        self.push(ctx, lid, "True")
                    if not single:
                        self.indent -= 1
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
                o = f"o{depth}_{k}"
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
        if dead:
            self.deliver_outputs(dst, "None", True, ctx, depth)
            return
        out = f"out{depth}"
        self.emit("try:")
        self.emit(f"    {out} = {self.name(dst.kernel, 'kernel')}({value})")
        self.emit("except Exception as e:")
        self.emit(f"    state._kernel_error({p}tagged[{lid}], e)")
        self.deliver_outputs(dst, out, False, ctx, depth)

    def next_iteration(self, item, value: str, ctx: _Ctx, depth: int) -> None:
        """executor._run_next_iteration, live: `value` goes to iteration n+1 (started now
        unless parallel_iterations are in flight: then it waits)."""
        nx = f"nx{depth}"
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
            nctx = _Ctx(f"n{depth}_", nx)
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
        item = self.item
        ctx = self.begin()
        self.emit("if node.is_dead:")
        with self.block():
            self.deliver_outputs(item, "None", True, ctx, 0)
        self.emit("else:")
        with self.block():
            if not item.cheap:  # _run_op's test, the plan's part of it baked in
                spreads = " and not state.blas_spreads" if item.uses_blas else ""
                self.emit(f"if state.pool is not None{spreads}:")
                self.emit("    state._run_heavy_op(node)")
                self.emit("    return 1")
            self.env["kernel"] = item.kernel
            n, s = item.num_inputs, item.input_start
            args = [f"a{k}" for k in range(n)]
            for k, a in enumerate(args):
                self.emit(f"{a} = inputs[{s + k}]")
            if n:
                self.emit(" = ".join(f"inputs[{s + k}]" for k in range(n)) + " = None")
            self.emit("try:")
            self.emit(f"    out = kernel({', '.join(args)})")
            self.emit("except Exception as e:")
            self.emit("    state._kernel_error(node, e)")
            self.deliver_outputs(item, "out", False, ctx, 0)
        return self.done()

    def _switch(self):
        """executor._run_switch."""
        item = self.item
        out_false, out_true = item.out_edges
        s = item.input_start
        ctx = self.begin()
        self.emit("if node.is_dead:")
        with self.block():
            self.deliver(out_false, "None", True, ctx, 0)
            self.deliver(out_true, "None", True, ctx, 0)
            self.deliver(item.control_edges, "None", True, ctx, 0)
        self.emit("else:")
        with self.block():
            self.emit(f"value = inputs[{s}]")
            self.emit(f"pred = bool(inputs[{s + 1}])")
            self.emit(f"inputs[{s}] = inputs[{s + 1}] = None")
            if item.frame.parent is None:
                self.emit(f"state.switch_preds[{item.id}] = pred")
            self.emit("if pred:")
            with self.block():
                self.deliver(out_false, "value", True, ctx, 0)
                self.deliver(out_true, "value", False, ctx, 0)
            self.emit("else:")
            with self.block():
                self.deliver(out_false, "value", False, ctx, 0)
                self.deliver(out_true, "value", True, ctx, 0)
            self.deliver(item.control_edges, "None", False, ctx, 0)
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
