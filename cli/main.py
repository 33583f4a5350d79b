"""The `autograph` command.

    autograph convert FILE[:FUNC]                     the converted source beside the original
    autograph graph FILE:FUNC ARGS... --format dot    the traced graph (text, dot, svg, png, json)
    autograph run FILE:FUNC ARGS... [--check]         run it (and compare with plain Python; --timeout S)
    autograph trace FILE:FUNC ARGS...                 the executor's run, step by step
    autograph grad FILE:FUNC ARGS... --wrt NAME       value and gradient
    autograph demo                                    every sample, converted and plain
    autograph fuzz --n 2000                           random programs, plain vs converted

FILE may also be the name of a sample (`autograph trace fibonacci 2`). ARGS are Python
literals; numbers and lists become numpy values (graph inputs) unless `--static NAME`.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import json
import os
import re
import shutil
import sys
import time
from typing import List, Optional

import typer

from .loading import CliError, ProgramError, Target, example_values, load_target, parse_args, typeable_args
from .render import Column, format_value, result_repr, show_code, show_text, table
from .trace_format import LEGEND, TraceWriter

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Convert Python functions to dataflow graphs, look at them, run them and trace them.")

# commands that take ARGS let `-0.5` through as an argument (a negative number, not an option);
# parse_args refuses any other word that starts with `-`
WITH_ARGS = {"ignore_unknown_options": True}


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

        try:
            v = version("autograph-v1")
        except PackageNotFoundError:  # pragma: no cover (not installed: run from the source tree)
            v = "unknown"
        typer.echo(f"autograph {v}")
        raise typer.Exit()


@app.callback()
def _main(_: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit.")):
    """Convert Python functions to dataflow graphs, look at them, run them and trace them."""

ARGS_HELP = "Arguments as Python literals (27, 3.5, [1, 2, 3], True) or NAME=VALUE."
DTYPE_META = "[float32|float64|int32|int64|bool]"
DTYPE_HELP = "dtype of the numeric arguments (float32, float64, int32, int64, bool), or NAME=DTYPE for one."
STATIC_HELP = "Keep this argument a Python value (part of the trace) instead of a graph input."


# exit codes: what was typed is wrong (as click's own usage errors), or the user's program failed
EXIT_USAGE = 2
EXIT_PROGRAM = 1


def _fail(message: str, code: int = EXIT_USAGE):
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def one_line(e: BaseException) -> str:
    """`ValueError: x must not be positive (raised by the graph at bad.py:7)`: the first line
    of the message, and the user's file:line from the exception's notes if it lacks one."""
    first = str(e).splitlines()[0] if str(e) else ""
    text = f"{type(e).__name__}: {first}" if first else type(e).__name__
    for note in getattr(e, "__notes__", None) or []:
        note = note.strip()
        m = re.search(r"([\w.-]+\.py):(\d+)", note)
        if m and f"{m.group(1)}:{m.group(2)}" not in text:
            return f"{text} ({note})"
    return text


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush into a closed pipe is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test runner's buffer)
        pass


def friendly(fn):
    """Report expected failures in one line (no traceback): exit 2 for what was typed (as
    click's usage errors), 1 for an error of the user's program, 0 on a closed pipe."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except BrokenPipeError:  # `autograph trace ... | head`: the reader has what it wanted
            _quiet_stdout()
            raise typer.Exit(0) from None
        except CliError as e:
            _fail(str(e), e.code)
        except Exception as e:  # noqa: BLE001 (errors of the user's program: one line each)
            _fail(one_line(e), EXIT_PROGRAM)

    return wrapper


def _target_and_args(spec: str, args: list[str], dtype, static) -> tuple[Target, list]:
    """The function and its argument values: those typed, or a sample's first example."""
    target = load_target(spec)
    values = _example(target, args)
    if values is not None:
        return target, values
    return target, parse_args(target.function, args or [], dtype, static)


def _example(target: Target, args) -> list | None:
    """A sample's first example when no arguments were typed (said on stderr)."""
    values = example_values(target, args or [])
    if values is not None and values:
        shown = typeable_args(target.function, values)
        what = " ".join(shown) if shown is not None else "its example"
        typer.echo(f"({target.sample.name} on {what}: the sample's first example)", err=True)
    return values or None


# -- convert ------------------------------------------------------------------------

@app.command()
@friendly
def convert(spec: str = typer.Argument(..., metavar="FILE[:FUNC]", help="The file and function to convert."),
            plain: bool = typer.Option(False, "--plain", help="Uncoloured text, original above converted."),
            width: Optional[int] = typer.Option(None, help="Output width (side by side from 140 columns).")):
    """Show the converted source of a function beside (or above) the original."""
    import autograph  # noqa: PLC0415

    target = load_target(spec)
    py = target.python_function
    try:
        original = inspect.getsource(py)
        line = inspect.getsourcelines(py)[1]
    except (OSError, TypeError):
        original, line = "# (source not available)", 0
    converted = autograph.to_code(py)
    where = f"{os.path.basename(target.path)}:{line}"
    show_code(original, converted, f"original  {where}", f"converted  {target.func_name}", plain, width,
              first_line=line)


# -- graph ----------------------------------------------------------------------------

FORMATS = ("text", "dot", "svg", "png", "json")


ENGINES = ("local", "ray")
DEVICES_HELP = "Partition across N devices (cpu:0 ... cpu:N-1), placing ops by --place unless gc.device did."
PLACE_HELP = ("With --devices: loops (loop bodies on the next device, predicates where the loop is), "
              "round-robin (every op on the next device), depth (loop nesting picks the device).")


@app.command(context_settings=WITH_ARGS)
@friendly
def graph(spec: str = typer.Argument(..., metavar="FILE:FUNC"),
          args: Optional[List[str]] = typer.Argument(None, help=ARGS_HELP),
          format: Optional[str] = typer.Option(  # noqa: A002
              None, "--format", "-f", metavar="[text|dot|svg|png|json]",
              help="The output format (default: from the -o suffix, else text)."),
          output: Optional[str] = typer.Option(None, "--output", "-o", help="Write to this file (needed for png)."),
          dtype: Optional[List[str]] = typer.Option(None, metavar=DTYPE_META, help=DTYPE_HELP),
          static: Optional[List[str]] = typer.Option(None, help=STATIC_HELP),
          depth: Optional[str] = typer.Option(None, "--depth", metavar="N|all",
                                              help="Pictures: draw loops and branches nested N deep as one node "
                                                   "(0: every outermost loop); all: every op. Default: as deep as "
                                                   "fits a screen, said under the picture."),
          effects: bool = typer.Option(False, "--effects", help="Pictures: show the effects token's chain."),
          legend: bool = typer.Option(True, "--legend/--no-legend", help="Pictures: the legend of the primitives."),
          plain: bool = typer.Option(False, "--plain", help="No colours."),
          optimize: Optional[bool] = typer.Option(
              None, "--optimize/--no-optimize", help="The graph after the graph passes (the default: what run and "
              "trace run) with --optimize adding a per-pass table (ops removed/added, time); --no-optimize: as traced."),
          passes: Optional[str] = typer.Option(None, "--passes", metavar="P1,P2",
                                               help="Only these passes (implies --optimize): pruning, licm, "
                                                    "constant_folding, arithmetic, cse, control_flow, "
                                                    "identical_branches, fusion, compile_loops."),
          jit: bool = typer.Option(False, "--jit", help="Compile loops as jit_compile=True does (implies "
                                   "--optimize) and print the Python each compiled loop runs."),
          numba: bool = typer.Option(False, "--numba", help="As --jit, with jit_compile='numba': print the "
                                     "numba code of the loops that compile to it (needs numba)."),
          devices: Optional[int] = typer.Option(None, "--devices", min=1, metavar="N", help=DEVICES_HELP),
          place: str = typer.Option("loops", "--place", metavar="[loops|round-robin|depth]", help=PLACE_HELP),
          v2: bool = typer.Option(False, "--v2", help="Control Flow v2: If/While ops over function graphs, as "
                                  "traced (--passes lower_functional: lowered to the v1 primitives).")):
    """The graph traced for these arguments, as a listing, DOT, SVG, PNG or JSON."""
    if format is None:
        format = format_for_path(output)  # noqa: A001
    if format not in FORMATS:
        raise CliError(f"--format {format}: use one of {', '.join(FORMATS)}")
    target, values = _target_and_args(spec, args, dtype, static)
    if v2:  # a fresh function built with v2 (the target's own may hold a v1 trace)
        import autograph  # noqa: PLC0415

        target = dataclasses.replace(target, function=autograph.function(target.python_function,
                                                                          control_flow="v2"))
        if optimize is None and not passes and not (jit or numba):
            optimize = False  # the functional graph itself, as traced
    jit = jit or numba
    if numba:
        from executor.numba_loop import require_numba  # noqa: PLC0415

        require_numba()
    if optimize is False and (passes or jit):
        raise CliError("--no-optimize shows the graph as traced: leave out --passes, --jit and --numba")
    if optimize is False:
        concrete, traced_ops = _as_traced(target, values), None
        summary = None
    else:
        concrete, traced_ops, summary = _optimized(target, values, passes, jit, numba, table=bool(optimize))
    g = concrete.graph
    typer.echo(_which_graph(target, values, len(g), traced_ops), err=True)
    if summary is not None and (format != "text" or output is not None):
        typer.echo(summary, err=True)  # stdout holds the graph file

    fetches = concrete.outputs
    if devices is not None:  # the partitioned graph: one cluster per device, _Send/_Recv, control loops
        p = _partitioned(g, fetches, devices, place)
        g, fetches = p.graph, p.fetches
        typer.echo(p.summary(), err=True)

    def picture():
        from graphcore.dot import SCREEN_SIZE, collapse_note, fit_depth  # noqa: PLC0415

        if devices is not None:  # by device: every op, in its device's cluster
            if depth not in (None, "all"):
                raise CliError("--depth: a picture by device (--devices) draws every op")
            return g.to_dot(fetches=fetches, show_effects=effects, legend=legend, by_device=True, size=SCREEN_SIZE)
        d = _depth(depth) if depth is not None else fit_depth(g, show_effects=effects)
        how = (f"--depth {d + 1} opens the next level, --depth all draws every op" if depth is None and d is not None
               else "--depth all draws every op")
        note = collapse_note(g, d, how, show_effects=effects)
        return g.to_dot(fetches=fetches, show_effects=effects, depth=d, legend=legend, note=note,
                        size=SCREEN_SIZE if depth is None else None)

    if format in ("svg", "png"):
        data = render_graphviz(picture(), format)
        if output is None:
            if format == "png":
                raise CliError("PNG is binary: give a file with -o graph.png")
            sys.stdout.write(data.decode())
        else:
            with open(output, "wb") as f:
                f.write(data)
            typer.echo(f"wrote {output} ({len(g)} ops)")
        return
    def as_json(x):
        if devices is not None:
            return x.to_json()  # a partitioned graph: its inputs and outputs are per device
        from graphcore.serialization import to_json  # noqa: PLC0415

        return to_json(x, signature=_signature(target, concrete))

    text = {"text": str, "dot": lambda x: picture(), "json": as_json}[format](g)
    if output is not None:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
        typer.echo(f"wrote {output} ({len(g)} ops)")
    else:
        show_text(text, plain or format != "json", "json")
        if summary is not None and format == "text":
            typer.echo("\n" + summary)
        if jit and format == "text":
            _show_compiled_loops(g, plain)


def _depth(text: str) -> Optional[int]:
    """--depth N (N >= 0) or all (None: no collapsing)."""
    if text == "all":
        return None
    if not text.isdigit():
        raise CliError(f"--depth {text}: give a number (0: every outermost loop as one node) or all")
    return int(text)


def _as_traced(target: Target, values: list):
    """The concrete function as traced: a fresh trace when this one ran (and so was optimized)."""
    return _unoptimized(target).get_concrete_function(*values)


def _unoptimized(target: Target):
    """The function with the graph passes off (a fresh Function: the target's own may have
    run, and so optimized its graph in place), built with the target's control flow."""
    import autograph  # noqa: PLC0415

    return autograph.function(target.python_function, optimize=False,
                              control_flow=getattr(target.function, "control_flow", None))


def _optimized(target: Target, values: list, passes: Optional[str], jit: bool, numba: bool, table: bool = False):
    """(concrete function optimized as a call would run it, ops as traced or None when the
    passes are off, the per-pass table when asked for with `table` or `passes`)."""
    from graphcore.passes import DEFAULT_PASSES  # noqa: PLC0415
    from graphcore.passes.manager import PASSES  # noqa: PLC0415

    concrete = target.function.get_concrete_function(*values)
    traced_ops = len(concrete.graph) if concrete.optimize_report is None else concrete.optimize_report.ops_before
    chosen = [p.strip() for p in passes.split(",") if p.strip()] if passes else None
    unknown = [p for p in chosen or () if p not in PASSES]
    if unknown:
        raise CliError(f"--passes: unknown pass {', '.join(unknown)}; the passes are {', '.join(PASSES)}")
    if jit:
        extra = ["compile_loops"] + (["numba_loops"] if numba else [])
        chosen = [p for p in chosen or DEFAULT_PASSES if p not in extra] + extra
    if concrete.optimize_report is not None and chosen is not None:
        raise CliError("this graph was optimized already (the function ran); --passes needs a fresh trace")
    forced = table or chosen is not None
    report = concrete.optimize_report or concrete.optimize(chosen, force=forced)
    if report is None:
        return concrete, None, None
    return concrete, traced_ops, report.table() if forced else None


def _which_graph(target: Target, values: list, ops: int, traced_ops: Optional[int]) -> str:
    """`fibonacci(10): 30 ops, optimized (36 as traced; --no-optimize shows that)`: which graph
    graph and trace show, the same one, as a run runs it."""
    call = f"{target.func_name}({', '.join(format_value(v) for v in values)})"
    if len(call) > 60:
        call = f"{target.func_name}(...)"
    if traced_ops is None:
        return f"{call}: {ops} ops, as traced (not optimized)"
    return f"{call}: {ops} ops, optimized ({traced_ops} as traced; --no-optimize shows that graph)"


def _signature(target: Target, concrete) -> dict:
    """How to call the traced graph, for its file: each graph input by its Placeholder's
    name (the parameter's, `params_0` for an item of a tuple), and the returned tensors."""
    structured = concrete.structured_outputs
    structure = "tuple" if isinstance(structured, tuple) else "list" if isinstance(structured, list) else "value"
    outputs = concrete.outputs
    if structure == "value" and len(outputs) != 1:
        structure = "tuple"
    return {"function": target.func_name, "inputs": [(t.op.name, t) for t in concrete.inputs if t.op in concrete.graph],
            "outputs": outputs, "structure": structure}


def _device_names(n: int) -> list[str]:
    return [f"cpu:{i}" for i in range(n)]


def _place_rule(place: str) -> str:
    from graphcore.placement import SPREADS  # noqa: PLC0415 (the CLI loads the project when a command runs)

    if place not in SPREADS:
        raise CliError(f"--place {place}: use one of {', '.join(SPREADS)}")
    return place


def _partitioned(g, fetches, n: int, place: str):
    """The partitioning of `g` across n devices, ops without a device spread by `place`."""
    from graphcore.partition import partition  # noqa: PLC0415
    from graphcore.placement import spread  # noqa: PLC0415

    spread(g, _device_names(n), _place_rule(place))
    return partition(g, fetches, devices=_device_names(n))


def _show_compiled_loops(g, plain: bool) -> None:
    """The Python source the executor runs for each compiled loop of `g`."""
    from executor.compiled_loop import compiled_loop_kernel  # noqa: PLC0415

    loops = [op for op in g.get_operations() if op.type == "CompiledLoop"]
    if not loops:
        typer.echo("\nno loop was compiled (a loop with a cond, a print or a nested loop inside stays interpreted)")
    for op in loops:
        kernel = compiled_loop_kernel(op)
        refused = getattr(kernel, "numba_refused", None)
        how = "with numba" if getattr(kernel, "backend", None) == "numba" else (
            f"as Python: not numba, {refused}" if refused else "")
        typer.echo(f"\n# {op.name}: the loop at {op.location()}, compiled {how}".rstrip())
        show_text(kernel.source, plain, "python")


# file suffix -> --format, for `-o fib.png` without `-f`
SUFFIX_FORMATS = {".txt": "text", ".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png", ".json": "json"}


def format_for_path(path: Optional[str]) -> str:
    """The format a file name asks for (`fib.png` -> png); text for stdout or no suffix."""
    if path is None:
        return "text"
    suffix = os.path.splitext(path)[1].lower()
    if suffix and suffix not in SUFFIX_FORMATS:
        raise CliError(f"-o {path}: cannot tell the format from {suffix!r}; give --format "
                       f"({', '.join(FORMATS)}) or a file ending in {', '.join(SUFFIX_FORMATS)}")
    return SUFFIX_FORMATS.get(suffix, "text")


def render_graphviz(dot_text: str, fmt: str) -> bytes:
    """Run Graphviz's `dot` on the text (through the graphviz package)."""
    if shutil.which("dot") is None:
        raise CliError(f"rendering {fmt.upper()} needs Graphviz's `dot` program, which is not installed; install "
                       "it (Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz) or use "
                       "--format dot and render the file elsewhere")
    import graphviz  # noqa: PLC0415

    try:
        return graphviz.Source(dot_text).pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        raise CliError("Graphviz's `dot` program was not found; install it with apt-get install graphviz") from None
    except graphviz.CalledProcessError as e:
        raise CliError(f"dot failed: {(e.stderr or b'').decode(errors='replace').strip()}") from None


# -- run --------------------------------------------------------------------------------

@app.command(context_settings=WITH_ARGS)
@friendly
def run(spec: str = typer.Argument(..., metavar="FILE:FUNC"),
        args: Optional[List[str]] = typer.Argument(None, help=ARGS_HELP),
        check: bool = typer.Option(False, "--check", help="Also run the plain Python and compare."),
        dtype: Optional[List[str]] = typer.Option(None, metavar=DTYPE_META, help=DTYPE_HELP),
        static: Optional[List[str]] = typer.Option(None, help=STATIC_HELP),
        timeout: Optional[float] = typer.Option(None, "--timeout", metavar="SECONDS",
                                                help="End the graph run if it takes longer (a loop that never ends)."),
        optimize: bool = typer.Option(True, "--optimize/--no-optimize",
                                      help="Run the graph passes on the traced graph first (the default)."),
        devices: Optional[int] = typer.Option(None, "--devices", min=1, metavar="N", help=DEVICES_HELP),
        place: str = typer.Option("loops", "--place", metavar="[loops|round-robin|depth]", help=PLACE_HELP),
        engine: Optional[str] = typer.Option(None, "--engine", metavar="[local|ray]",
                                   help="With --devices: run the devices on threads here (local) or in Ray actors."),
        jit: bool = typer.Option(False, "--jit", help="Compile loops (jit_compile=True)."),
        numba: bool = typer.Option(False, "--numba", help="Compile loops with numba where exact "
                                   "(jit_compile='numba'; needs numba)."),
        v2: bool = typer.Option(False, "--v2", help="Control Flow v2: if/while on tensors as If/While ops over "
                                "function graphs, lowered to the v1 primitives before running."),
        direct: bool = typer.Option(False, "--direct", help="With --v2: run If/While as ops (no frames, no dead "
                                    "tokens) instead of lowering them.")):
    """Run the converted function on the arguments and print the result."""
    from executor import deadline  # noqa: PLC0415

    from .demo import values_agree  # noqa: PLC0415

    if timeout is not None and not timeout > 0:
        raise CliError(f"--timeout {timeout:g}: give a positive number of seconds")
    if spec.endswith(".json"):
        if check or jit or numba or devices is not None or static:
            raise CliError("a graph file runs as it is: --check, --jit, --numba, --devices and --static need "
                           "the Python function (FILE.py:FUNC)")
        with deadline(timeout) if timeout is not None else contextlib.nullcontext():
            typer.echo(result_repr(_run_graph_file(spec, args or [], dtype)))
        return
    if direct and not v2:
        raise CliError("--direct runs Control Flow v2's If/While ops as ops: give --v2 too")
    if engine is not None and engine not in ENGINES:
        raise CliError(f"--engine {engine}: use one of {', '.join(ENGINES)}")
    if engine is not None and devices is None:
        raise CliError(f"--engine {engine} runs the devices of --devices N: give --devices too")
    engine = engine or "local"
    if not optimize:
        os.environ["AUTOGRAPH_OPTIMIZE"] = "0"  # this process only: the command runs one function
    target, values = _target_and_args(spec, args, dtype, static)
    fn = target.function
    options = {}  # (one new function with all of them: each autograph.function(fn, ...) starts afresh)
    if v2:
        options.update(control_flow="v2", functional="direct" if direct else "lower")
    if jit or numba:
        options["jit_compile"] = "numba" if numba else True
    if devices is not None:
        options.update(devices=_device_names(devices), engine=engine)
    if options:
        import autograph  # noqa: PLC0415

        fn = autograph.function(fn, **options)
    if devices is not None:
        from graphcore.placement import spread  # noqa: PLC0415

        spread(fn.get_concrete_function(*values).graph, _device_names(devices), _place_rule(place))
    t0 = time.perf_counter()
    try:
        with deadline(timeout) if timeout is not None else contextlib.nullcontext():
            result = fn(*values)
    except Exception as e:
        if check:
            typer.echo(_python_on_error(target, values, e))
        raise
    t_graph = time.perf_counter() - t0
    typer.echo(result_repr(result))
    if devices is not None:
        session = fn.get_concrete_function(*values).session
        typer.echo(f"ran across {session.last_partitioning.summary()}; engine {engine}, "
                   f"{session.last_messages} messages", err=True)
    if check:
        t0 = time.perf_counter()
        expected = target.python_function(*values)
        t_py = time.perf_counter() - t0
        ok = values_agree(result, expected)
        typer.echo(f"plain Python: {result_repr(expected)}  ({'agrees' if ok else 'DIFFERS'}; "
                   f"graph {t_graph * 1000:.1f} ms incl. tracing, Python {t_py * 1000:.1f} ms)")
        if not ok:
            raise typer.Exit(1)


def _python_on_error(target: Target, values: list, graph_error: Exception) -> str:
    """--check when the graph raised: whether plain Python raises the same error (type and
    message), another one, or returns a value."""
    try:
        with contextlib.redirect_stdout(sys.stderr):  # (its prints are the graph's too: keep stdout for results)
            expected = target.python_function(*values)
    except Exception as e:  # noqa: BLE001 (the comparison is the point)
        first = str(e).splitlines()[0] if str(e) else ""
        if type(e) is type(graph_error) and first in str(graph_error):
            return f"plain Python raised the same error: {type(e).__name__}: {first}  (agrees)"
        return f"plain Python raised {one_line(e)} instead  (DIFFERS)"
    return f"plain Python returned {result_repr(expected)} without an error  (DIFFERS)"


def _run_graph_file(path: str, args: list[str], dtype) -> object:
    """Run a graph file written by `autograph graph ... -f json`: ARGS fill the inputs its
    signature names (in order, or NAME=VALUE), each read as a literal of the Placeholder's
    dtype; the outputs come back as the function returned them."""
    import numpy as np  # noqa: PLC0415

    import graphcore as gc  # noqa: PLC0415
    from executor import Session  # noqa: PLC0415
    from graphcore.serialization import parse, read_document  # noqa: PLC0415

    from .loading import parse_dtype_options, parse_literal, to_graph_value  # noqa: PLC0415

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror}") from None
    try:
        g = gc.Graph.from_json(text)
        record = read_document(parse(text))
    except gc.GraphFileError as e:
        raise ProgramError(f"{path}: {e}") from None
    sig = record.signature
    if sig is None:
        raise CliError(f"{path} has no signature (which placeholders are inputs, which tensors the result): "
                       "write it with `autograph graph FILE:FUNC ARGS -f json -o FILE.json`")

    def tensor(ref):
        return g.get_tensor_by_name(f"{record.ops[ref.op].name}:{ref.index}")

    inputs = [(name, tensor(ref)) for name, ref in sig.inputs]
    names = [n for n, _ in inputs]
    default_dtype, per_name = parse_dtype_options(dtype)
    given: dict[str, object] = {}
    for k, word in enumerate(args):
        key, sep, rest = word.partition("=")
        if sep and key.isidentifier():
            if key not in names:
                raise CliError(f"{sig.function or path} has no input {key!r}; its inputs are {', '.join(names) or 'none'}")
            name, word = key, rest
        elif k < len(names):
            name = names[k]
        else:
            raise CliError(f"{sig.function or path} takes {len(names)} input(s) ({', '.join(names)}), got {len(args)}")
        if name in given:
            raise CliError(f"input {name} is given twice")
        given[name] = word
    missing = [n for n in names if n not in given]
    if missing:
        raise CliError(f"{sig.function or path} needs input(s) {', '.join(missing)} (its inputs are {', '.join(names)})")
    feeds = {}
    for name, t in inputs:
        want = per_name.get(name, default_dtype) or t.dtype.name
        value = to_graph_value(parse_literal(given[name], f"input {name}"), want, f"input {name}")
        value = np.asarray(value)
        if t.shape.dims is not None and tuple(value.shape) != tuple(t.shape.dims) and None not in t.shape.dims:
            raise CliError(f"input {name}: the graph takes shape {list(t.shape.dims)}, got {list(value.shape)}")
        feeds[t] = value
    results = Session(g).run([tensor(ref) for ref in sig.outputs], feed_dict=feeds)
    if sig.structure == "value":
        return results[0]
    return tuple(results) if sig.structure == "tuple" else list(results)


# -- trace --------------------------------------------------------------------------------

@app.command(context_settings=WITH_ARGS)
@friendly
def trace(spec: str = typer.Argument(..., metavar="FILE:FUNC"),
          args: Optional[List[str]] = typer.Argument(None, help=ARGS_HELP),
          pending: bool = typer.Option(True, "--pending/--no-pending", help="Show pending-count changes."),
          limit: Optional[int] = typer.Option(None, "--limit", min=0, metavar="N", help="Show at most N steps."),
          frame: Optional[str] = typer.Option(None, "--frame", metavar="NAME",
                                              help="Only steps in this frame (while, root/while, root/while:3; "
                                                   "wildcards allowed)."),
          op: Optional[str] = typer.Option(None, "--op", metavar="NAME",
                                           help="Only steps of this node or op type (while/Merge, Switch, 'while/*')."),
          format: str = typer.Option("text", "--format", "-f", metavar="[text|json|html]",  # noqa: A002
                                     help="text; json: one event per line, for tools; html: a timeline page, "
                                          "one lane per frame and iteration, values on hover."),
          output: Optional[str] = typer.Option(None, "--output", "-o", metavar="FILE",
                                                help="Write to this file (html: trace.html) instead of the terminal."),
          legend: bool = typer.Option(True, "--legend/--no-legend", help="Text: explain the notation first."),
          dtype: Optional[List[str]] = typer.Option(None, metavar=DTYPE_META, help=DTYPE_HELP),
          static: Optional[List[str]] = typer.Option(None, help=STATIC_HELP),
          optimize: bool = typer.Option(True, "--optimize/--no-optimize",
                                        help="Run the graph after the graph passes (the default, as run does and "
                                             "graph shows) or as traced.")):
    """The executor's run, step by step (one thread, so it is reproducible), streamed as it runs."""
    if format not in ("text", "json", "html"):
        raise CliError(f"--format {format}: use text, json or html")
    if format == "html" and output is None:
        output = "trace.html"  # a page is for a browser, not the terminal
    target, values = _target_and_args(spec, args, dtype, static)
    fn = target.function
    if optimize:
        concrete, traced_ops, _ = _optimized(target, values, None, False, False)
    else:
        fn = _unoptimized(target)
        concrete, traced_ops = fn.get_concrete_function(*values), None
    which = _which_graph(target, values, len(concrete.graph), traced_ops)
    with (open(output, "w", encoding="utf-8") if output is not None else contextlib.nullcontext(sys.stdout)) as out:
        writer = TraceWriter(out.write, graph=concrete.graph, fmt=format, show_pending=pending,
                             limit=limit, frame=frame, op=op, title=f"trace of {which}")
        if format == "text":
            out.write(f"trace of {which}; num_threads=1\n")
            if legend:
                out.write(LEGEND + "\n")
        result = fn.traced_call(*values, trace=writer)
        writer.close(result=format_value(result))
        if format == "text":
            out.write(f"result: {format_value(result)}\n")
        elif format == "json":
            out.write(json.dumps({"event": "result", "value": format_value(result)}) + "\n")
    if output is not None:
        typer.echo(f"wrote {output} ({format}, {writer.summary.steps} steps)")
    missed = writer.unmatched_filters()
    if missed:
        typer.echo(missed, err=True)


# -- grad ------------------------------------------------------------------------------------

@app.command(context_settings=WITH_ARGS)
@friendly
def grad(spec: str = typer.Argument(..., metavar="FILE:FUNC"),
         args: Optional[List[str]] = typer.Argument(None, help=ARGS_HELP),
         wrt: List[str] = typer.Option(..., "--wrt", help="The argument to differentiate with respect to."),
         dtype: Optional[List[str]] = typer.Option(None, metavar=DTYPE_META, help=DTYPE_HELP),
         static: Optional[List[str]] = typer.Option(None, help=STATIC_HELP)):
    """The function's value and its gradient with respect to --wrt arguments."""
    import autograph  # noqa: PLC0415

    if not hasattr(autograph, "value_and_grad"):
        raise CliError("autograph.value_and_grad is not available yet (the gradients work is in progress)")
    target = load_target(spec)
    names = list(inspect.signature(target.python_function).parameters)
    for w in wrt:
        if w not in names:
            raise CliError(f"--wrt {w}: {target.func_name} has no parameter {w!r}; its parameters are "
                           f"{', '.join(names)}")
    # The differentiated arguments are float64 unless --dtype says otherwise; the others
    # keep their natural dtype (a loop count stays an integer).
    dtype = list(dtype or [])
    if not any("=" not in d for d in dtype):
        dtype += [f"{w}=float64" for w in wrt if not any(d.startswith(f"{w}=") for d in dtype)]
    values = _example(target, args) or parse_args(target.function, args or [], dtype, static)
    argnums = [names.index(w) for w in wrt]
    vg = autograph.value_and_grad(target.function, argnums=argnums if len(argnums) > 1 else argnums[0])
    value, grads = vg(*values)
    typer.echo(f"value: {result_repr(value)}")
    if len(argnums) == 1:
        grads = (grads,)
    for w, gv in zip(wrt, grads):
        typer.echo(f"d/d{w}: {result_repr(gv)}")


# -- samples ------------------------------------------------------------------------------------

@app.command("samples")
@friendly
def samples_command(plain: bool = typer.Option(False, "--plain", help="Plain text table.")):
    """List the samples: each runs by name on its own first example (`autograph run rnn_adam`),
    or on arguments you type (`autograph run collatz 27`)."""
    from samples import available_samples  # noqa: PLC0415

    rows = [[s.name, _example_text(s), s.description] for s in available_samples()]
    table("the samples: autograph run NAME [ARGS]; graph, trace and grad take them too",
          [Column("name"), Column("its example, as arguments", squeeze=True), Column("what it shows", squeeze=True)],
          rows, plain)


def _example_text(sample) -> str:
    """The first example as words the shell and `parse_args` take back, or a note that the
    sample runs on it when named alone (arrays too big to type, tuples of arrays)."""
    import shlex  # noqa: PLC0415

    if not sample.examples:
        return ""
    words = typeable_args(sample.fn, sample.examples[0])
    return " ".join(shlex.quote(w) for w in words) if words is not None else "(runs on its example)"


# -- demo ---------------------------------------------------------------------------------------

@app.command()
@friendly
def demo(plain: bool = typer.Option(False, "--plain", help="Plain text table."),
         only: Optional[List[str]] = typer.Option(None, "--only", help="Run only these samples.")):
    """Run every sample converted and as plain Python, and compare them in a table."""
    from rich.progress import Progress  # noqa: PLC0415

    from samples import available_samples  # noqa: PLC0415

    from .demo import demo_rows  # noqa: PLC0415
    from .render import console  # noqa: PLC0415

    samples = available_samples()
    if only:
        unknown = set(only) - {s.name for s in samples}
        if unknown:
            raise CliError(f"no sample named {', '.join(sorted(unknown))}; the samples are "
                           f"{', '.join(s.name for s in samples)}")
        samples = [s for s in samples if s.name in only]
    total = sum(len(s.examples) for s in samples)
    con = console(plain)
    with Progress(console=con, transient=True, disable=plain or not con.is_terminal) as progress:
        task = progress.add_task("samples", total=total)

        def step(desc):
            progress.update(task, advance=0 if not progress.tasks[0].description else 1, description=desc)

        rows = demo_rows(samples, progress=step)
        progress.update(task, completed=total)
    cols = [Column("sample"), Column("args", squeeze=True), Column("result", squeeze=True),
            Column("ok"), Column("ops", "right"), Column("graph ms", "right"), Column("py ms", "right")]
    body = [[r.sample, r.args, r.result if not r.error else r.error, "yes" if r.agrees else "NO",
             str(r.ops), f"{r.converted_ms:.2f}", f"{r.plain_ms:.3f}"] for r in rows]
    table("every sample, as a graph and as plain Python", cols, body, plain)
    agree = sum(r.agrees for r in rows)
    typer.echo(f"{agree} of {len(rows)} runs agree")
    if agree != len(rows):
        raise typer.Exit(1)


_BENCHES = ("executor", "autograph", "gradients", "workloads")  # what `all` runs
_MORE_BENCHES = ("optimizer", "baselines", "devices")          # by name: slower, or optional systems


@app.command()
@friendly
def bench(which: str = typer.Argument("all", help="executor | autograph | gradients | workloads | all, or "
                                                  "optimizer | baselines | devices"),
          quick: bool = typer.Option(False, "--quick", help="Fewer repeats and iterations (a smoke run)."),
          json_path: Optional[str] = typer.Option(None, "--json", metavar="FILE",
                                                  help="Also write every benchmark's figures to FILE as JSON.")):
    """Run the benchmarks and print their figures (not part of the tests).

    executor: cost per loop iteration of the Fibonacci loop (samples/fibonacci.py); autograph: first and
    steady call of a nested function; gradients: a 100-step RNN, forward vs backward;
    workloads: fib_loop, collatz, nested loops (interpreted, jit, numba), call overhead,
    first call, RNN forward and parallel branches, each beside plain numpy. By name:
    optimizer (ops and time per sample), baselines (tf.function and jax.jit side by side,
    where installed), devices (a loop across devices in process and on Ray)."""
    names = _BENCHES if which == "all" else (which,)
    for name in names:
        if name not in _BENCHES + _MORE_BENCHES:
            _fail(f"no benchmark named {name}; choose one of {', '.join(_BENCHES + _MORE_BENCHES)} or all")
    # one progress line per benchmark on stderr, before its figures: the benchmarks print as
    # they go, and a live bar redrawn between their lines would leave stale copies of itself
    figures = {}
    t0 = time.perf_counter()
    for k, name in enumerate(names):
        typer.echo(f"[{k + 1}/{len(names)}] bench {name}", err=True)
        figures[name] = _run_bench(name, quick)
        typer.echo("")
    typer.echo(f"[{len(names)}/{len(names)}] done in {time.perf_counter() - t0:.0f} s", err=True)
    if json_path is not None:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=1, default=_json_value)
        typer.echo(f"wrote {json_path}")


def _run_bench(name: str, quick: bool):
    """Run one benchmark; its figures (what its main returns), or None."""
    if name == "executor":
        from benchmarks import bench_executor  # noqa: PLC0415
        return bench_executor.main(["--iterations", "1000", "--repeat", "1"] if quick else [])
    if name == "autograph":
        from benchmarks import bench_autograph  # noqa: PLC0415
        return bench_autograph.main(n=4, repeats=3) if quick else bench_autograph.main()
    if name == "gradients":
        from benchmarks import bench_gradients  # noqa: PLC0415
        return bench_gradients.main(["--steps", "10", "--hidden", "16", "--inputs", "16", "--repeat", "1"]
                                    if quick else [])
    if name == "optimizer":
        from benchmarks import bench_optimizer  # noqa: PLC0415
        return bench_optimizer.main(quick=quick)
    if name == "baselines":
        from benchmarks import bench_baselines  # noqa: PLC0415
        return bench_baselines.main(["--quick"] if quick else [])
    if name == "devices":
        from benchmarks import bench_devices  # noqa: PLC0415
        return bench_devices.main(["--iterations", "100", "--repeat", "1", "--no-ray"] if quick else [])
    from benchmarks import bench_workloads  # noqa: PLC0415
    return bench_workloads.main(["--quick"] if quick else [])


def _json_value(v):
    """numpy scalars and anything else a benchmark returns, as JSON values."""
    if hasattr(v, "item"):
        return v.item()
    return str(v)


from .fuzz import fuzz as _fuzz  # noqa: E402

app.command("fuzz")(friendly(_fuzz))


def main() -> None:  # pragma: no cover (console-script entry)
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
