"""Finding the user's function (`FILE[:FUNC]`, or a sample's name) and turning the
command-line arguments into its arguments.

Arguments are Python literals read with ast.literal_eval (never eval): numbers become
numpy scalars and lists numpy arrays, so they are graph inputs; `--static NAME` keeps
one a Python value; `--dtype float32` (or `--dtype x=float32`) picks the dtype.
`NAME=VALUE` passes an argument by name.
"""
from __future__ import annotations

import ast
import difflib
import importlib.util
import inspect
import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

import numpy as np

_DTYPES = {"bool": np.bool_, "int32": np.int32, "int64": np.int64, "float32": np.float32, "float64": np.float64}


class CliError(Exception):
    """A user mistake on the command line: reported in one line, exit status 2 (as click's
    usage errors); `code` 1 marks a failure of the user's program found while loading it."""

    code = 2


class ProgramError(CliError):
    """The user's file failed to import (a syntax error, an exception at import): the
    program's fault, not the command line's, so exit status 1."""

    code = 1


@dataclass
class Target:
    """What `FILE[:FUNC]` named: the loaded module, the path and the function (if any)."""

    path: str
    module: ModuleType
    function: Any  # an autograph Function, or a plain function (convert only)
    func_name: str
    sample: Any = None  # the samples.Sample named, when FILE was a sample's name (its EXAMPLES)

    @property
    def python_function(self) -> Callable:
        return getattr(self.function, "python_function", self.function)


def split_spec(spec: str) -> tuple[str, str | None]:
    """`dir/f.py:fn` -> ("dir/f.py", "fn"); `f.py` -> ("f.py", None)."""
    head, sep, tail = spec.rpartition(":")
    if sep and tail.isidentifier() and head:
        return head, tail
    return spec, None


def _find_sample(name: str):
    """The sample called `name` (so `autograph run collatz` works), or None."""
    try:
        from samples import find_sample  # noqa: PLC0415
    except ImportError:
        return None
    return find_sample(name)


def _no_such_file(path: str) -> CliError:
    """`no such sample or file: colatz; did you mean collatz?`: the close sample names (and
    .py files here) for a name that is neither a file nor a sample."""
    try:
        from samples import available_samples  # noqa: PLC0415
        names = [s.name for s in available_samples()] + [s.function for s in available_samples()]
    except ImportError:
        names = []
    here = os.path.dirname(path) or "."
    try:
        files = [os.path.join(os.path.dirname(path), f) for f in os.listdir(here) if f.endswith(".py")]
    except OSError:
        files = []
    close = difflib.get_close_matches(path, list(dict.fromkeys(names)) + files, n=3, cutoff=0.6)
    what = "file" if path.endswith(".py") or os.sep in path else "sample or file"
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return CliError(f"no such {what}: {path}{hint} (`autograph samples` lists the samples)")


def load_module(path: str) -> ModuleType:
    """Import the file at `path` as a fresh module (its directory goes on sys.path so
    it can import its neighbours). Errors become one-line CliErrors."""
    if not os.path.exists(path):
        raise _no_such_file(path)
    if os.path.isdir(path):
        raise CliError(f"{path} is a directory; name a Python file")
    path = os.path.abspath(path)
    name = "_autograph_cli_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise ProgramError(f"{path}:{e.lineno}: syntax error: {e.msg}") from None
    except Exception as e:  # noqa: BLE001 (the user's module failed to import: say so in one line)
        raise ProgramError(f"importing {path} failed: {type(e).__name__}: {e}") from None
    return module


def _is_autograph_function(obj) -> bool:
    return hasattr(obj, "get_concrete_function") and hasattr(obj, "python_function")


def load_target(spec: str, need_function: bool = True) -> Target:
    """Load `FILE[:FUNC]`. Without FUNC, the file's one @autograph.function is used.

    A plain (undecorated) function is wrapped with autograph.function, so any function
    in a file can be converted and run."""
    path, func_name = split_spec(spec)
    sample = None
    if not os.path.exists(path) and not path.endswith(".py"):
        sample = _find_sample(path)
        if sample is not None:
            path, func_name = sample.path, func_name or sample.function
            if func_name != sample.function:
                sample = None  # another function of the sample's file: its examples are not for it
    module = load_module(path)
    if func_name is None:
        found = [k for k, v in vars(module).items() if _is_autograph_function(v)
                 and getattr(v.python_function, "__module__", None) == module.__name__]
        if len(found) == 1:
            func_name = found[0]
        elif not need_function:
            return Target(path, module, None, "")
        elif not found:
            raise CliError(f"{path} has no @autograph.function; name the function to use as {path}:NAME")
        else:
            raise CliError(f"{path} has several functions ({', '.join(found)}); pick one as {path}:NAME")
    fn = getattr(module, func_name, None)
    if fn is None:
        names = [k for k, v in vars(module).items() if callable(v) and not k.startswith("_")
                 and getattr(v, "__module__", module.__name__) == module.__name__]
        hint = f"; it defines {', '.join(sorted(names))}" if names else ""
        raise CliError(f"{path} has no function named {func_name!r}{hint}")
    if not _is_autograph_function(fn):
        if not inspect.isfunction(fn):
            raise CliError(f"{path}:{func_name} is a {type(fn).__name__}, not a function")
        import autograph  # noqa: PLC0415

        fn = autograph.function(fn)
    return Target(path, module, fn, func_name, sample)


# -- arguments ------------------------------------------------------------------------

def parse_dtype_options(options: list[str] | None) -> tuple[str | None, dict[str, str]]:
    """`["float32"]` -> ("float32", {}); `["x=float32"]` -> (None, {"x": "float32"})."""
    default, per_name = None, {}
    for opt in options or []:
        name, sep, d = opt.rpartition("=")
        if d not in _DTYPES:
            raise CliError(f"--dtype {opt}: unknown dtype {d!r}; use one of {', '.join(_DTYPES)}")
        if sep:
            per_name[name] = d
        else:
            default = d
    return default, per_name


def parse_literal(text: str, what: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise CliError(f"{what}: cannot read {text!r} as a Python literal (e.g. 27, 3.5, [1, 2, 3], True)") from None


def to_graph_value(value, dtype: str | None, what: str):
    """Numbers -> numpy scalars, lists/tuples of numbers -> numpy arrays (graph inputs);
    anything else (strings, None, dicts) stays Python. A value the dtype cannot hold
    exactly (1.5 as int32, 2**40 as int32) is refused, never truncated or wrapped."""
    npd = _DTYPES[dtype] if dtype else None
    if isinstance(value, (bool, int, float)):
        if npd is None:
            npd = np.bool_ if isinstance(value, bool) else np.int64 if isinstance(value, int) else np.float64
        return _exact(value, npd, what)
    if isinstance(value, (list, tuple)):
        try:
            arr = np.array(value, dtype=npd) if npd is None else _exact_array(value, npd, what)
        except (ValueError, TypeError, OverflowError) as e:
            raise CliError(f"{what}: {value!r} is not a rectangular list of numbers ({e})") from None
        if arr.dtype.kind not in "biuf":
            raise CliError(f"{what}: {value!r} is not a list of numbers")
        if npd is None and arr.dtype.kind == "i":
            arr = arr.astype(np.int64)
        return arr
    return value


def _exact(value, npd, what: str):
    kind = np.dtype(npd).kind
    name = np.dtype(npd).name
    if kind in "iu":
        if isinstance(value, float) and not value.is_integer():
            raise CliError(f"{what}: {value!r} is not a whole number; {name} would truncate it (give a float "
                           f"dtype, or a whole number)")
        info = np.iinfo(npd)
        if not info.min <= value <= info.max:
            raise CliError(f"{what}: {value!r} does not fit in {name} ({info.min}..{info.max}); use int64 or a "
                           f"float dtype")
        return npd(int(value))
    if kind == "f":
        if abs(float(value)) > float(np.finfo(npd).max) and not np.isinf(float(value)):
            raise CliError(f"{what}: {value!r} does not fit in {name}")
        return npd(value)
    return npd(value)


def _exact_array(value, npd, what: str) -> np.ndarray:
    natural = np.array(value)
    if natural.dtype.kind in "biuf":
        for x in natural.reshape(-1).tolist():
            _exact(x, npd, what)
    return natural.astype(npd)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def parse_args(fn, args: list[str], dtype: list[str] | None = None, static: list[str] | None = None) -> list:
    """The positional argument values for `fn` (an autograph Function or a plain function)."""
    py = getattr(fn, "python_function", fn)
    try:
        params = list(inspect.signature(py).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    default_dtype, per_name = parse_dtype_options(dtype)
    static = set(static or [])
    for s in static | set(per_name):
        if names and s not in names:
            raise CliError(f"{py.__name__} has no parameter {s!r}; its parameters are {', '.join(names) or 'none'}")
    keywords: dict[str, Any] = {}
    positional: list = []
    for text in args:
        if text.startswith("-") and not _is_number(text):
            raise CliError(f"no such option: {text} (see --help)")
        key, sep, rest = text.partition("=")
        if sep and key in names:
            name, text = key, rest
            if name in keywords:
                raise CliError(f"argument {name} is given twice")
        elif sep and key.isidentifier() and not key.startswith("_"):
            raise CliError(f"{py.__name__} has no parameter {key!r}; its parameters are {', '.join(names) or 'none'}")
        elif keywords:
            raise CliError(f"argument {text!r} comes after a NAME=VALUE argument; give positional ones first")
        else:
            name = names[len(positional)] if len(positional) < len(names) else f"#{len(positional) + 1}"
        v = parse_literal(text, f"argument {name}")
        if name not in static:
            v = to_graph_value(v, per_name.get(name, default_dtype), f"argument {name}")
        if sep and key in names:
            keywords[name] = v
        else:
            positional.append(v)
    values = keywords
    for n in names[:len(positional)]:
        if n in values:
            raise CliError(f"argument {n} is given twice (by position and as {n}=...)")
    out = list(positional)
    defaults = {p.name: p.default for p in params if p.default is not p.empty}
    for n in names[len(out):]:
        if not values:
            break
        if n in values:
            out.append(values.pop(n))
        elif n in defaults:
            out.append(defaults[n])  # a later argument is given by name: keep this one's default
        else:
            break
    if values:
        missing = [n for n in names[len(out):] if n not in values]
        raise CliError(f"missing argument {missing[0]!r} before {', '.join(values)}")
    required = [p.name for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                                                 p.POSITIONAL_OR_KEYWORD)]
    if params and len(out) < len(required):
        raise CliError(f"{py.__name__} needs {len(required)} argument(s) ({', '.join(required)}), got {len(out)}")
    if params and len(out) > len(names) and not any(p.kind == p.VAR_POSITIONAL for p in params):
        raise CliError(f"{py.__name__} takes {len(names)} argument(s) ({', '.join(names)}), got {len(out)}")
    return out


# -- a sample's example, as arguments one can type --------------------------------------

# an argument longer than this is not worth typing: `samples` says "runs on its example"
TYPEABLE_CHARS = 60


def _literal(v) -> str | None:
    """A value as the literal `parse_args` reads back to it (numpy scalars and small arrays
    of the default dtypes), or None."""
    if isinstance(v, np.ndarray) and v.dtype in (np.int64, np.float64, np.bool_) and v.size:
        text = repr(v.tolist())
    elif isinstance(v, (np.int64, np.float64, np.bool_)):
        text = repr(v.item())
    else:
        return None
    return text if len(text) <= TYPEABLE_CHARS else None


def typeable_args(fn, values) -> list[str] | None:
    """The command-line words that give `fn` exactly these argument values (same dtypes,
    shapes and numbers, checked by reading them back), or None when there are none."""
    texts = [_literal(v) for v in values]
    if any(t is None for t in texts):
        return None
    try:
        back = parse_args(fn, texts)
    except CliError:
        return None
    same = len(back) == len(values) and all(
        type(a) is type(b) and np.asarray(a).dtype == np.asarray(b).dtype
        and np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(back, values))
    return texts if same else None


def example_values(target: Target, args: list[str]) -> list | None:
    """A sample named with no arguments runs on its first example (`autograph run rnn_adam`);
    None when arguments were given, or the target is not a sample, or it takes none."""
    if args or target.sample is None or not target.sample.examples:
        return None
    return list(target.sample.examples[0])
