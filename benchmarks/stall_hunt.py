"""Hunt for rare stalls: random programs run plain and converted, one after another, with a
watchdog that dumps every thread's stack when one takes 20x the usual time (not a test).

    python benchmarks/stall_hunt.py [--n 2000] [--seed 50000000] [--kind values|arrays]
                                    [--factor 20] [--floor 2.0] [--log stalls.txt]

Run two at once on a loaded machine to look for what a long fuzz run once showed (3 of
2,300 programs over 10 s, not reproduced alone). Each stall's seed, time and the stacks
of every thread at the moment it crossed the line go to --log; rerun one seed alone with
`autograph fuzz --n 1 --seed SEED` to tell the machine from the program.
"""
from __future__ import annotations

import argparse
import faulthandler
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from autograph.testing.differential import run_program  # noqa: E402


def _generator(kind: str):
    if kind == "arrays":
        from autograph.testing.random_array_programs import generate  # noqa: PLC0415
    else:
        from autograph.testing.random_programs import generate  # noqa: PLC0415
    return generate


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=50_000_000)
    ap.add_argument("--kind", choices=("values", "arrays"), default="values")
    ap.add_argument("--factor", type=float, default=20.0, help="a stall: this many times the median program")
    ap.add_argument("--floor", type=float, default=2.0, help="seconds below which nothing is a stall")
    ap.add_argument("--log", default="stalls.txt")
    ap.add_argument("--probe", type=int, default=None,
                    help="a seed run again every --every programs: its times show whether the process slows down")
    ap.add_argument("--every", type=int, default=100)
    args = ap.parse_args(argv)
    if args.n < 1 or args.factor <= 1 or args.floor <= 0:
        ap.error("--n must be >= 1, --factor > 1 and --floor > 0")
    generate = _generator(args.kind)
    probe_times: list[tuple[int, float]] = []
    times: list[float] = []
    stalls, wrong = [], []
    t_all = time.perf_counter()
    with open(args.log, "a") as log:
        log.write(f"# stall hunt, pid {os.getpid()}, seeds {args.seed}..{args.seed + args.n - 1}, "
                  f"load {os.getloadavg()[0]:.1f}\n")
        for k, seed in enumerate(range(args.seed, args.seed + args.n)):
            if args.probe is not None and k % args.every == 0:
                t0 = time.perf_counter()
                run_program(generate(args.probe))
                probe_times.append((k, time.perf_counter() - t0))
                log.write(f"## probe after {k} programs: {probe_times[-1][1]:.2f} s\n")
            usual = statistics.median(times[-200:]) if len(times) >= 20 else 0.1
            limit = max(args.floor, args.factor * usual)
            program = generate(seed)
            log.write(f"## seed {seed}: limit {limit:.2f} s\n")
            log.flush()
            faulthandler.dump_traceback_later(limit, repeat=False, file=log, exit=False)
            t0 = time.perf_counter()
            try:
                outcome = run_program(program)
            finally:
                faulthandler.cancel_dump_traceback_later()
            took = time.perf_counter() - t0
            times.append(took)
            if not outcome.ok:
                wrong.append((seed, outcome.signature))
            if took > limit:
                stalls.append((seed, took, usual))
                log.write(f"## STALL seed {seed}: {took:.2f} s (median {usual * 1e3:.0f} ms), load "
                          f"{os.getloadavg()[0]:.1f}\n")
                log.flush()
    total = time.perf_counter() - t_all
    print(f"{args.n} {args.kind} programs in {total:.0f} s (median {statistics.median(times) * 1e3:.0f} ms, "
          f"max {max(times):.2f} s); {len(wrong)} disagreed with Python; {len(stalls)} stall(s) over "
          f"{args.factor:g}x the median (stacks in {args.log})")
    if probe_times:
        print("probe seed", args.probe, "after k programs:", ", ".join(f"{k}: {t:.2f} s" for k, t in probe_times))
    for seed, signature in wrong:
        print(f"  seed {seed} disagreed: {signature}")
    for seed, took, usual in stalls:
        print(f"  seed {seed}: {took:.2f} s, median then {usual * 1e3:.0f} ms")
    return 1 if stalls else 0


if __name__ == "__main__":
    sys.exit(main())
