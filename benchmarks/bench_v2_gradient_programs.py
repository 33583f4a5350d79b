"""Second-order gradient programs under Control Flow v1, v2 lowered and v2 direct: the size
of the graph gc.gradients builds twice (ops of the graph and its functions; for v2 lowered,
ops after lowering) and the seconds of one grads check (value_and_grad, grad of grad,
gc.gradients twice: random_grad_programs.check_function), the best of `repeat`, in CPU
time of this process (the machine is shared: wall time would measure the others).

Not a test: `python benchmarks/bench_v2_gradient_programs.py [seed ...]` (default: the
random grad seeds 58, 129 and 515, whose v2 lowered runs were the slowest)."""
from __future__ import annotations

import sys
import time

import numpy as np

import graphcore as gc
from autograph import function
from autograph.testing import control_flow_modes, random_grad_programs
from graphcore.passes.lower_functional import lowered_copy

SEEDS = (58, 129, 515)


def _ops(g) -> int:
    return len(g) + sum(len(f) for f in g.library.values())


def gradient_graph_ops(seed: int, mode: str) -> int:
    """Ops of the graph of f's first and second derivatives by gc.gradients (lowered for
    v2 lowered, as a Session runs it)."""
    program = random_grad_programs.generate(seed)
    with control_flow_modes._environment(*control_flow_modes.ENV[mode]):
        concrete = function(random_grad_programs._load(program)).get_concrete_function(*program.args)
        inputs = iter(concrete.inputs)
        placeholders = {k: next(inputs) for k, a in enumerate(program.args) if isinstance(a, (np.ndarray, np.generic))}
        fetches = []
        with concrete.graph.as_default():
            for k in program.wrt:
                d1 = gc.gradients(concrete.structured_outputs, [placeholders[k]])[0]
                fetches += [d1, gc.gradients(gc.reduce_sum(d1), [placeholders[k]])[0]]
        g = concrete.graph
        if mode == "v2-lowered":
            return len(lowered_copy(g, [f for f in fetches if f is not None], [], list(placeholders.values()))[0])
        return _ops(g)


def check_seconds(seed: int, mode: str, repeat: int) -> float:
    program = random_grad_programs.generate(seed)
    times = []
    with control_flow_modes._environment(*control_flow_modes.ENV[mode]):
        for _ in range(repeat):
            f = random_grad_programs._load(program)
            t0 = time.process_time()
            problem = random_grad_programs.check_function(f, program.args, program.wrt)
            times.append(time.process_time() - t0)
            if problem:
                raise AssertionError(f"seed {seed} under {mode}: {problem}")
    return min(times)


def main(seeds=SEEDS, repeat: int = 3) -> dict:
    figures = {}
    print(f"{'seed':>6} {'mode':<11} {'graph ops':>10} {'s/check':>8}")
    for seed in seeds:
        for mode in control_flow_modes.ENV:
            ops, seconds = gradient_graph_ops(seed, mode), check_seconds(seed, mode, repeat)
            figures[(seed, mode)] = (ops, seconds)
            print(f"{seed:>6} {mode:<11} {ops:>10} {seconds:>8.2f}", flush=True)
    return figures


if __name__ == "__main__":
    main([int(s) for s in sys.argv[1:]] or SEEDS)
