"""One random program under each way of running control flow: v1 (Switch/Merge/Enter/
Exit/NextIteration), v2 lowered (If/While inlined into those before running) and v2
direct (If/While run as ops), optionally each also compiled or on two devices; they must
give the same results as one another, not only each close to Python's.

`check(kind, seed, options)` -> (verdict, detail). The verdicts:

    agreed        every mode gives what plain Python gives (value, exact type, printed lines,
                  exception type), and the modes' values are identical (bit for bit)
    refused-both  every mode raises the same error where Python does not (a construct the
                  converter refuses in all of them: not a disagreement between them)
    wrong-all     every mode differs from Python in the same way (a converter bug, not a
                  difference between the control flows)
    refused-v2    v1 agrees with Python and both v2 modes refuse the program with the same
                  StagingError (something v2 does not build); never a wrong value
    disagree      the modes differ from one another (the detail says how)

The kinds: "values" (random_programs), "arrays" (random_array_programs), "grads"
(random_grad_programs: value, first and second order by autograph.grad and gc.gradients,
against finite differences; the modes are switched by AUTOGRAPH_CONTROL_FLOW and
AUTOGRAPH_FUNCTIONAL, and `options` (--jit, --devices) reach every one of those
computations: random_grad_programs.check_function).

    python -m autograph.testing.control_flow_modes --kind values --seed 0 --n 1000 [--jit|--devices]
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import copy
import io
import json
import linecache
import os
import sys
import time

import numpy as np

from . import differential
from .time_limit import time_limit

MODES = {
    "v1": {"control_flow": "v1"},
    "v2-lowered": {"control_flow": "v2", "functional": "lower"},
    "v2-direct": {"control_flow": "v2", "functional": "direct"},
}
ENV = {"v1": ("v1", "lower"), "v2-lowered": ("v2", "lower"), "v2-direct": ("v2", "direct")}
TIMEOUT = 20.0


def _generate(kind: str, seed: int):
    if kind == "values":
        from .random_programs import generate  # noqa: PLC0415
    elif kind == "arrays":
        from .random_array_programs import generate  # noqa: PLC0415
    else:
        raise ValueError(f"kind must be values, arrays or grads, got {kind!r}")
    return generate(seed)


def _same_bits(a, b) -> bool:
    """Identical results: same structure, types and values (nan equal to nan)."""
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(_same_bits(x, y) for x, y in zip(a, b)))
    if type(a) is not type(b):
        return False
    if isinstance(a, (np.ndarray, np.generic)):
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if isinstance(a, float):
        return a == b or (a != a and b != b)
    return a == b


def check(kind: str, seed: int, options: dict | None = None) -> tuple[str, str]:
    """The verdict and detail of the program of `seed` under every mode (see the module)."""
    if kind == "grads":
        return _check_grads(seed, options)

    program = _generate(kind, seed)
    fn, filename = differential.load_function(program)
    try:
        plain = differential.call(fn, program.args, TIMEOUT)
        runs = {}
        for mode, flags in MODES.items():
            differential._forget_conversion(fn)
            runs[mode] = differential.call(_converted(fn, {**flags, **(options or {})}, program.args), program.args,
                                           TIMEOUT)
    finally:
        linecache.cache.pop(filename, None)
        differential._forget_conversion(fn)
    verdicts = {m: differential.compare(plain, r) for m, r in runs.items()}
    if all(k == differential.AGREE for k, _ in verdicts.values()):
        first = next(iter(runs.values()))
        for m, r in runs.items():
            if not _same_bits(first.value, r.value) or first.stdout != r.stdout:
                return "disagree", f"{m} returned {r.value!r}, v1 {first.value!r} (each close to Python's)"
        return "agreed", ""
    kinds = {k for k, _ in verdicts.values()}
    v2 = [runs[m] for m in MODES if m != "v1"]
    if verdicts["v1"][0] == differential.AGREE and all(r.error == "StagingError" for r in v2) \
            and len({r.message for r in v2}) == 1:
        return "refused-v2", v2[0].message
    if len(kinds) == 1:
        errors = {(r.error, r.message) for r in runs.values()}
        values_same = all(_same_bits(runs["v1"].value, r.value) and runs["v1"].stdout == r.stdout
                          for r in runs.values())
        if kinds == {"unexpected_error"} and len({e for e, _ in errors}) == 1:
            return "refused-both", f"{runs['v1'].error}: {runs['v1'].message}"
        if values_same and len({e for e, _ in errors}) == 1:
            return "wrong-all", f"{verdicts['v1'][0]}: {verdicts['v1'][1]}"
    return "disagree", "; ".join(f"{m}: {k}{(' ' + d) if d else ''}" for m, (k, d) in verdicts.items())


def _converted(fn, options: dict, args):
    """`autograph.function(fn, **options)`; on devices, its traced graph's ops spread over
    them round-robin (If/While ops as ops in v2 direct), so that every mode's run crosses
    devices (left alone, every op would sit on the first)."""
    import autograph  # noqa: PLC0415
    from graphcore.placement import spread  # noqa: PLC0415

    f = autograph.function(fn, **options)
    if options.get("devices"):
        try:
            with time_limit(TIMEOUT), contextlib.redirect_stdout(io.StringIO()):
                graph = f.get_concrete_function(*copy.deepcopy(args)).graph
            spread(graph, options["devices"], "round-robin", keep_given=False)
        except Exception:  # noqa: BLE001 (tracing raises what the call raises again: it is compared there)
            pass
    return f


@contextlib.contextmanager
def _environment(control_flow: str, functional: str):
    saved = {k: os.environ.get(k) for k in ("AUTOGRAPH_CONTROL_FLOW", "AUTOGRAPH_FUNCTIONAL")}
    os.environ["AUTOGRAPH_CONTROL_FLOW"], os.environ["AUTOGRAPH_FUNCTIONAL"] = control_flow, functional
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _check_grads(seed: int, options: dict | None = None) -> tuple[str, str]:
    from . import random_grad_programs as rgp  # noqa: PLC0415

    program = rgp.generate(seed)
    found = {}
    for mode, (control_flow, functional) in ENV.items():
        with _environment(control_flow, functional):
            found[mode] = rgp.check_function(rgp._load(program), program.args, program.wrt, options)
    if all(p is None for p in found.values()):
        return "agreed", ""
    if len(set(found.values())) == 1:
        return "wrong-all", found["v1"]
    return "disagree", "; ".join(f"{m}: {p or 'agrees'}" for m, p in found.items())


def main(argv=None) -> int:
    global TIMEOUT  # noqa: PLW0603 (--time-limit sets it for this process)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kind", default="values", choices=["values", "arrays", "grads"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--jit", action="store_true", help="every mode with jit_compile=True")
    ap.add_argument("--devices", action="store_true", help="every mode on two devices (cpu:0, cpu:1), ops spread "
                    "over them round-robin")
    ap.add_argument("--log", help="a JSON line per program that does not agree")
    ap.add_argument("--time-limit", type=float, help=f"seconds one run may take before it counts as a hang "
                    f"(default {TIMEOUT:g} for a program, and for grads 10 per computation; raise it on a busy "
                    "machine)")
    a = ap.parse_args(argv)
    if a.time_limit:
        from . import random_grad_programs  # noqa: PLC0415

        TIMEOUT = random_grad_programs.TIME_LIMIT = a.time_limit
    options = {}
    if a.jit:
        options["jit_compile"] = True
    if a.devices:
        options["devices"] = ["cpu:0", "cpu:1"]
    counts: collections.Counter = collections.Counter()
    log = open(a.log, "a") if a.log else None  # noqa: SIM115
    t0 = time.perf_counter()
    for seed in range(a.seed, a.seed + a.n):
        try:
            verdict, detail = check(a.kind, seed, options)
        except Exception as e:  # noqa: BLE001 (the tester's own failure is a finding too)
            verdict, detail = "disagree", f"the check raised {type(e).__name__}: {e}"
        counts[verdict] += 1
        if (seed - a.seed + 1) % 100 == 0:  # (a run cut short still says how far it got)
            print(f"after {seed - a.seed + 1} programs: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())),
                  flush=True)
        if verdict != "agreed":
            line = json.dumps({"seed": seed, "verdict": verdict, "detail": detail[:500]})
            print(line, flush=True)
            if log:
                log.write(line + "\n")
                log.flush()
    print(f"kind={a.kind} options={options} seeds {a.seed}..{a.seed + a.n - 1}: programs {a.n}, "
          + ", ".join(f"{v} {counts[v]}" for v in ("agreed", "refused-both", "refused-v2", "wrong-all", "disagree"))
          + f" ({time.perf_counter() - t0:.0f} s)", flush=True)
    return 1 if counts["disagree"] else 0


if __name__ == "__main__":
    sys.exit(main())
