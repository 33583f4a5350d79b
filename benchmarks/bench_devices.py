"""Graphs across devices (Session(graph, devices=[...]), executor/distributed/).

    python benchmarks/bench_devices.py [--iterations 1000] [--repeat 3] [--no-ray]

loop_across_devices: a while loop of --iterations iterations whose predicate runs on
cpu:0 and whose body (x = x * 0.5 + 1.0) runs on cpu:1, so every iteration sends x to
cpu:1, x back to cpu:0 and the predicate to cpu:1's control loop: the minimum is 3
values ("messages") per iteration. Printed: time per iteration on one device, on two in
process (threads) and on two Ray actors, and values per iteration against that minimum
(on Ray, also the messages they went in between the actors).

ray_messages: the same loop on two Ray actors, each value its own message between the
actors against the values crossing in one iteration sent together (what the engine
does: 2 messages per iteration, the predicate and x in one, x back in the other); the
two sessions take turns, so a busy moment slows both alike. Printed: time per
iteration and messages per iteration of each, and the time saved per message.

parallel_branches: 8 independent chains of matmuls, all on one Ray actor, then 4 on each
of two actors (BLAS on 1 thread in each actor): the speed-up of two workers over one.
Times are the best of --repeat runs after a warm-up run.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import graphcore as gc  # noqa: E402
from executor import Session  # noqa: E402

DEVICES = ["cpu:0", "cpu:1"]
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def best(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def loop_graph():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def body(i, x):
            with gc.device("cpu:1"):
                y = x * 0.5 + 1.0
            return i + 1, y
        _, x = gc.while_loop(lambda i, x: i < n, body, [gc.constant(np.int64(0)), gc.constant(0.0)])
    return g, n, x


def loop_across_devices(iterations: int, repeat: int, ray: bool) -> dict:
    g, n, x = loop_graph()
    feeds = {n: iterations}
    one = Session(g, num_threads=1)
    want = one.run(x, feeds)
    rows = [("one device", one)]
    rows.append(("2 devices, in process", Session(g, devices=DEVICES)))
    if ray:
        rows.append(("2 devices, Ray actors", Session(g, devices=DEVICES, engine="ray")))
    print(f"loop_across_devices: {iterations} iterations, predicate on cpu:0, body on cpu:1")
    base, out = None, {}
    for label, s in rows:
        assert s.run(x, feeds) == want
        t = best(lambda: s.run(x, feeds), repeat) / iterations
        base = base or t
        extra = ""
        if s.devices is not None:
            per = s.last_messages / iterations
            extra = f"  {per:.2f} messages per iteration (minimum 3: the predicate, x there and back)"
            if s.engine_name == "ray":  # what went between the actors: the values of an iteration together
                extra += f", sent in {s._engine.last_batches / iterations:.2f} between the actors"
        print(f"  {label:24s} {t * 1e6:9.1f} us per iteration  {t / base:7.1f}x one device{extra}")
        out[label] = {"us_per_iteration": t * 1e6,
                      "messages_per_iteration": s.last_messages / iterations if s.devices else 0}
    return out


def ray_messages(iterations: int, repeat: int) -> dict:
    g, n, x = loop_graph()
    feeds = {n: iterations}
    want = Session(g, num_threads=1).run(x, feeds)
    sessions = {"one value per message": Session(g, devices=DEVICES, engine="ray"),
                "values of an iteration together": Session(g, devices=DEVICES, engine="ray")}
    for label, s in sessions.items():
        assert s.run(x, feeds) == want  # (warm-up: starts the actors, loads the part)
        s._engine.batch_messages = label != "one value per message"
    times, per = {k: float("inf") for k in sessions}, {}
    for _ in range(max(repeat, 5)):
        for label, s in sessions.items():
            t0 = time.perf_counter()
            assert s.run(x, feeds) == want
            times[label] = min(times[label], (time.perf_counter() - t0) / iterations)
            per[label] = s._engine.last_batches / iterations
    print(f"ray_messages: the loop on two Ray actors, {iterations} iterations")
    for label in sessions:
        print(f"  {label:32s} {times[label] * 1e6:8.1f} us per iteration  {per[label]:.2f} messages per iteration")
    a, b = sessions
    saved = (times[a] - times[b]) / max(per[a] - per[b], 1e-9)
    print(f"  {times[a] / times[b]:.2f}x faster; {saved * 1e6:.0f} us saved per message not sent")
    return {label: {"us_per_iteration": times[label] * 1e6, "messages_per_iteration": per[label]}
            for label in sessions} | {"us_saved_per_message": saved * 1e6}


def branches_graph(n: int, depth: int, chains: int, split: bool):
    g = gc.Graph()
    with g.as_default():
        w = gc.placeholder(gc.float64, [n, n], name="w")
        starts = [gc.placeholder(gc.float64, [n, n], name=f"a{k}") for k in range(chains)]
        sums = []
        for k, x in enumerate(starts):
            with gc.device(DEVICES[k * 2 // chains] if split else DEVICES[0]):
                for _ in range(depth):
                    x = gc.matmul(x, w)
                sums.append(gc.reduce_sum(x))
        out = gc.add_n(sums)
    return g, w, starts, out


def parallel_branches(n: int, depth: int, repeat: int) -> dict:
    rng = np.random.default_rng(1)
    chains = 8
    w = rng.normal(size=(n, n)) / np.sqrt(n)
    starts = [rng.normal(size=(n, n)) for _ in range(chains)]
    runs = []
    for split, devices in ((False, DEVICES[:1]), (True, DEVICES)):
        g, wp, sp, out = branches_graph(n, depth, chains, split)
        s = Session(g, devices=devices, engine="ray")
        feeds = {wp: w, **dict(zip(sp, starts))}
        s.run(out, feeds)  # (warm-up: loads the parts into the actors)
        runs.append(lambda s=s, out=out, feeds=feeds: s.run(out, feeds))
    times = [float("inf")] * len(runs)
    for _ in range(max(repeat, 5)):  # taking turns, so that a busy moment slows both alike
        for k, run in enumerate(runs):
            t0 = time.perf_counter()
            run()
            times[k] = min(times[k], time.perf_counter() - t0)
    print(f"parallel_branches: {chains} chains of {depth} matmuls {n}x{n} on Ray actors, BLAS on 1 thread each")
    print(f"  one worker {times[0] * 1e3:8.1f} ms   two workers {times[1] * 1e3:8.1f} ms   "
          f"speed-up {times[0] / times[1]:.2f}x ({os.cpu_count()} cores)")
    return {"one_worker_s": times[0], "two_workers_s": times[1], "speed_up": times[0] / times[1]}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-ray", action="store_true", help="in process only")
    args = ap.parse_args(argv)
    use_ray = not args.no_ray
    if use_ray:
        try:
            import ray  # noqa: PLC0415
        except ImportError:
            print("Ray is not installed (pip install -e '.[distributed]'): in process only")
            use_ray = False
        else:
            os.environ.update(ONE_THREAD)  # the actors' BLAS on one thread each
            if not ray.is_initialized():
                ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
                         runtime_env={"env_vars": ONE_THREAD})
    figures = {"loop_across_devices": loop_across_devices(args.iterations, args.repeat, use_ray)}
    if use_ray:
        figures["ray_messages"] = ray_messages(args.iterations, args.repeat)
        figures["parallel_branches"] = parallel_branches(256, 20, args.repeat)
    return figures


if __name__ == "__main__":
    main()
