"""Values whose Python type depends on the path a run takes.

`total = 0; for v in x: total += v` is the Python int 0 when x is empty and an np.float64
otherwise; `r = 1 if c > 0 else 2.5` is an int or a float. The graph holds such a value in
one dtype (the join's: float64 here), so its type travels beside it as a *kind*: one of the
codes of graphcore.ops.python_type_ops.TYPES (Python bool, int, float, a numpy scalar type).
Where tracing knows the kind it is a Python int; where only the run knows it, a small int32
tag tensor that each branch of a cond and each iteration of a loop sets, carried as the
defined flags of maybe_defined are (a run-time flag riding along with the value).

* Joins (cond outputs, loop variables) union the kinds of their sides and carry a tag where
  there are several. A side converted to a dtype that cannot hold it exactly (an int beyond
  2**53 in a float64, a Python float in a float32, an int beyond int32) fails the run there
  with InexactTypeError (an OverflowError) naming the variable, instead of rounding.
* Operators: graphcore calls `_observe` for each operator on graph values with the operands
  as written (`r + 1` and `r + 1.0` differ there, not once the 1 is a constant of r's dtype).
  The result's kinds come from tables made by running the very Python and numpy operators on
  a sample of each kind, so they are Python's rules (int + int is an int, int / int a float,
  anything with a float a float, a comparison a bool, numpy's promotion for numpy values). An
  operator for which Python raises on one of the kinds (`r & 1` of a float) is refused while
  tracing; one whose result may be an int the storage does not hold exactly is recomputed,
  on the paths of that kind, the way Python would (PythonArith) and compared.
* Where the type shows (a returned value, print, str / repr / format / f-strings / %,
  type() / isinstance) the value is shown as its kind (`shown`, `returned_kind`, `kinds_of`).
* A value computed from a path-typed one by an op outside the tables is *untracked* where
  an input's kinds differ in dtype (np.full(3, r) of an int-or-float r): showing it is
  refused with advice (float(x) or int(x) make the type explicit; such conversions,
  `python_value` and gradients are anchors whose kind is their own). Where they differ only
  in being Python's or numpy's (a Python bool or an np.bool_), numpy's result is the same.

The kinds of a tensor are found by looking it up, else by walking back through ops that
pass a value through (Identity, and the Switch / Enter that capture outer values into conds
and loops); a graph with no path-typed value costs one dict lookup per operator.
"""
from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass

import numpy as np

import graphcore as gc
from graphcore import source_info
from graphcore.errors import StagingError
from graphcore.ops import math_ops
from graphcore.ops.array_ops import constant_value
from graphcore.ops.python_type_ops import TYPE_DTYPES, TYPE_NAMES, TYPES, InexactTypeError, as_python_type
from graphcore.side_tables import SideTable

from .staged_errors import guard_value
from .tensor_values import to_tensor

PY_BOOL, PY_INT, PY_FLOAT, NP_BOOL, NP_INT32, NP_INT64, NP_FLOAT32, NP_FLOAT64 = range(8)
N_KINDS = len(TYPES)
INTS = frozenset({PY_INT, NP_INT32, NP_INT64})
FLOATS = frozenset({PY_FLOAT, NP_FLOAT32, NP_FLOAT64})
BOOLS = frozenset({PY_BOOL, NP_BOOL})
PYTHON = frozenset({PY_BOOL, PY_INT, PY_FLOAT})
_ERROR = -1  # Python raises for these operands

_NP_KIND = {np.dtype(np.bool_): NP_BOOL, np.dtype(np.int32): NP_INT32, np.dtype(np.int64): NP_INT64,
            np.dtype(np.float32): NP_FLOAT32, np.dtype(np.float64): NP_FLOAT64}
_PY_KIND = {"b": PY_BOOL, "i": PY_INT, "u": PY_INT, "f": PY_FLOAT}


def kind_of_value(v) -> int | None:
    """The kind of a Python or numpy value (None: not a number of a graph dtype)."""
    if isinstance(v, (np.generic, np.ndarray)):
        return _NP_KIND.get(v.dtype)
    if isinstance(v, bool):
        return PY_BOOL
    if isinstance(v, int):
        return PY_INT
    if isinstance(v, float):
        return PY_FLOAT
    return None


def natural(t: gc.Tensor) -> int | None:
    """The kind a tensor stands for on its own: a weak tensor is a Python number, any other
    a numpy value of its dtype."""
    np_dtype = getattr(t.dtype, "np_dtype", None)
    if np_dtype is None:
        return None
    return _PY_KIND.get(np_dtype.kind) if t.weak else _NP_KIND.get(np_dtype)


def natural_of(dtype, weak: bool) -> int | None:
    """The natural kind of a tensor of `dtype`, weakly typed or not."""
    np_dtype = getattr(dtype, "np_dtype", None)
    if np_dtype is None:
        return None
    return _PY_KIND.get(np_dtype.kind) if weak else _NP_KIND.get(np_dtype)


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def _advice(narrow, dtype, who: str = "It") -> str:
    """What to write instead when kinds `narrow` do not fit `dtype`."""
    if all(k in INTS for k in narrow) and dtype.is_floating:
        how = "float(...) where it is an int, or int(...) where it is a float"
    elif dtype == gc.float32:
        how = "np.float32(...) where it is a Python float or np.float64, or np.float64(...) where it is an np.float32"
    else:
        how = "np.int64(...) where it is an np.int32, or np.int32(...) where it is a Python int"
    return f"{who} must have one type on every path: convert it where it is assigned ({how})."


def describe_kinds(kinds) -> str:
    names = [TYPE_NAMES[k] for k in sorted(kinds)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


# -- the type rules: Python's and numpy's operators run on a sample of each kind ------------

_FIRST = (True, 3, 3.0, np.True_, np.int32(3), np.int64(3), np.float32(3.0), np.float64(3.0))
_SECOND = (True, 2, 2.0, np.True_, np.int32(2), np.int64(2), np.float32(2.0), np.float64(2.0))


def _result_kind(fn, *args) -> int:
    try:
        out = fn(*args)
    except Exception:  # noqa: BLE001 (Python's or numpy's refusal: the kind is an error)
        return _ERROR
    k = kind_of_value(out)
    return _ERROR if k is None else k


def _table(fn, arity: int) -> tuple:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if arity == 1:
            return tuple(_result_kind(fn, a) for a in _FIRST)
        return tuple(tuple(_result_kind(fn, a, b) for b in _SECOND) for a in _FIRST)


# The tables, from the op types' own facts (define_op(..., python=, symbol=, family=, exact=)):
# `python` is what an op computes on scalars as the program wrote it (operator.add for Add).
_OPS = {t: d for t, d in gc.registered_ops().items() if d.python is not None}
_BINARY = {t: _table(d.python, 2) for t, d in _OPS.items() if d.arity == 2}
_UNARY = {t: _table(d.python, 1) for t, d in _OPS.items() if d.arity == 1}
_SYMBOLS = {t: d.symbol for t, d in _OPS.items() if d.symbol is not None}
# ops whose exact result the check recomputes in the kind's own dtype (Python's for Python numbers)
_RECOMPUTED = {t: d for t, d in _OPS.items() if d.family == "arithmetic" and d.arity == 2}
# unary ops that keep an exact int exact (|result| <= |operand|)
_EXACT_UNARY = frozenset(t for t, d in _OPS.items() if "int" in d.exact)
# unary ops whose result a float dtype holds exactly whenever it held the operand exactly (a
# join checked that): -h of a Python float held in a float32 is Python's -h
_EXACT_FLOAT_UNARY = frozenset(t for t, d in _OPS.items() if "float" in d.exact)


def _transparent(d) -> bool:
    """An op that passes its first input through (an outer value captured into a cond or
    loop: Identity, Switch, Enter); Merge, Exit and NextIteration are joins, whose kinds the
    join registered."""
    return d.forwards and (not d.control_flow or d.type in ("Switch", "Enter"))


def _boundary(d) -> bool:
    """An op whose result's kind is its own, whatever its inputs: the walk stops there."""
    return d.own_kind or d.shape_only or (d.control_flow and not _transparent(d))


# -- what is known of each tensor -----------------------------------------------------------

class Untracked:
    """The kinds of a value computed from a path-typed one by an op the tables do not cover."""

    __slots__ = ("reason", "name", "line")

    def __init__(self, reason: str, name: str, line: int):
        self.reason, self.name, self.line = reason, name, line


@dataclass(frozen=True)
class Typed:
    """A path-typed tensor: its possible kinds, its tag (a code, or an int32 tensor that
    holds the code when the graph runs; None when untracked) and, for messages, the
    variable whose type depends on the path and the line of the if or loop that joined it."""

    kinds: "frozenset | Untracked"
    tag: "int | gc.Tensor | None"
    name: str
    line: int


_lock = threading.Lock()
# graph -> {id(tensor): (tensor, Typed | None)}; None marks an anchor: its natural kind, whatever
# its inputs (float(x) of a path-typed x). The tensor is held so that its id stays its own.
_registry = SideTable("path types")
# graph -> {id(tensor): (tensor, Typed | None)}: what the walk found for unregistered tensors
_memo = SideTable("path types memo")
_building = threading.local()  # set while this module builds tags and checks (not observed)


def register(t: gc.Tensor, typed: "Typed | None") -> gc.Tensor:
    with _lock:
        _registry.setdefault(t.graph, {})[id(t)] = (t, typed)
    return t


def anchor(t):
    """Mark `t` as of its own natural kind (an explicit conversion of a path-typed value)."""
    if isinstance(t, gc.Tensor) and _registry.get(t.graph):
        register(t, None)
    return t


def _entry(t) -> "tuple[bool, Typed | None]":
    """(known, what): a registered or already walked tensor's Typed (None: natural)."""
    g = t.graph
    for table in (_registry.get(g), _memo.get(g)):
        if table:
            hit = table.get(id(t))
            if hit is not None and hit[0] is t:
                return True, hit[1]
    return False, None


def info(t) -> "Typed | None":
    """What is known of tensor `t`: its Typed if its kind depends on the path, else None."""
    # (a Control Flow v2 function's captures stand for tensors of the graphs around it)
    if not isinstance(t, gc.Tensor) or not (_registry.get(t.graph) or getattr(t.graph, "captures", None)):
        return None
    known, found = _entry(t)
    if known:
        return found
    memo = _memo.setdefault(t.graph, {})
    stack = [t]
    while stack:  # post-order over the ancestors not known yet (no recursion: chains may be long)
        u = stack[-1]
        if _entry(u)[0]:
            stack.pop()
            continue
        op = u.op
        d = op.op_def
        outer = _captured(u) if op.type == "Placeholder" else None
        if outer is not None:  # what it stands for is known outside
            memo[id(u)] = (u, info(outer))
            stack.pop()
            continue
        if _boundary(d):
            memo[id(u)] = (u, None)
            stack.pop()
            continue
        inputs = op.inputs[:1] if _transparent(d) else op.inputs
        pending = [x for x in inputs if not _entry(x)[0]]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        found = [_entry(x)[1] for x in inputs]
        if _transparent(d):
            memo[id(u)] = (u, found[0] if found else None)
            continue
        # an op outside the tables: its result's type is its own unless an input's kinds differ
        # in dtype (an int held in a float64), not only in being Python's or numpy's
        source = next((f for x, f in zip(inputs, found) if f is not None and _mixed_dtypes(f, x)), None)
        if source is None:
            memo[id(u)] = (u, None)
        else:
            reason = f"{op.type} (at {op.location()})"
            memo[id(u)] = (u, Typed(Untracked(reason, source.name, source.line), None, source.name, source.line))
    return _entry(t)[1]


def _captured(t) -> "gc.Tensor | None":
    """The tensor of an enclosing graph that placeholder `t` of a v2 function captures."""
    return next((o for o, i in getattr(t.graph, "captures", ()) if i is t), None)


def _mixed_dtypes(found: Typed, t) -> bool:
    """Whether some kind `t` may have is of another dtype than `t` (or untracked)."""
    if isinstance(found.kinds, Untracked):
        return True
    return any(TYPE_DTYPES[k] != t.dtype for k in found.kinds)


def kinds_of(v) -> "frozenset | Untracked | None":
    """The kinds value `v` may have when the graph runs (None: not a number)."""
    if isinstance(v, gc.Tensor):
        found = info(v)
        if found is not None:
            return found.kinds
        k = natural(v)
    else:
        k = kind_of_value(v)
    return None if k is None else frozenset({k})


def depends(v) -> bool:
    """Whether `v` is a tensor whose Python type depends on the path (or is untracked)."""
    return info(v) is not None


def tag_of(v) -> "int | gc.Tensor | None":
    """`v`'s kind as a code (known while tracing) or an int32 tensor (known at run time)."""
    if isinstance(v, gc.Tensor):
        found = info(v)
        return found.tag if found is not None else natural(v)
    return kind_of_value(v)


def tag_tensor(tag) -> gc.Tensor:
    return tag if isinstance(tag, gc.Tensor) else gc.constant(np.int32(tag))


def _where() -> str:
    loc = source_info.user_location(skip=2)
    return str(loc) if loc is not None else "<unknown>"


def shown_name(name: str) -> str:
    """A variable as the user knows it (the converter's names for an `a if c else b` and the
    returned value are not)."""
    if name == "<if expression>":
        return "the conditional expression (`a if c else b`)"
    if name.startswith("<"):
        return name[1:-1]
    if name.startswith("retval_"):
        return "the returned value"
    return f"'{name}'"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _plain(name: str) -> str:
    """The name to write in advice (`int(total)`): the variable's, else a stand-in."""
    return name if name.isidentifier() and not name.startswith("retval_") else "x"


def _origin(found: Typed) -> str:
    return f"{shown_name(found.name)} (whose type depends on the path through the if or loop at line {found.line})"


def untracked_error(kinds: Untracked, doing: str) -> StagingError:
    return StagingError(
        f"{_where()}: {doing} a value computed by {kinds.reason} from {shown_name(kinds.name)}, whose type depends on "
        f"the path "
        f"the run takes (an int on one path and a float on another, say: the if or loop at line {kinds.line}); the "
        f"graph does not know the Python type of that op's result. Make the type explicit first: float(...) or "
        f"int(...) of it.")


# -- the operator hook ----------------------------------------------------------------------

def _observe(op_type: str, x, y):
    """graphcore's operator observer (math_ops.set_operand_observer): the result's kinds by
    the tables, a refusal where Python raises on one of the operands' kinds."""
    if getattr(_building, "on", False):
        return None
    if op_type == "Mul" and (isinstance(x, _SEQUENCES) or isinstance(y, _SEQUENCES)):
        _refuse_repetition(x, y)
    t = x if isinstance(x, gc.Tensor) else y
    if not _registry.get(t.graph):
        return None
    found = [f for f in (info(x), info(y) if y is not None else None) if f is not None]
    if not found:
        return None
    kx = kinds_of(x)
    ky = kinds_of(y) if y is not None else None
    bad = next((k for k in (kx, ky) if isinstance(k, Untracked)), None)
    table = _UNARY.get(op_type) if y is None else _BINARY.get(op_type)
    if bad is None and (table is None or kx is None or (y is not None and ky is None)):
        bad = Untracked(f"{op_type} (at {_where()})", found[0].name, found[0].line)
    if bad is not None:
        return lambda out: _register_result(out, Typed(bad, None, bad.name, bad.line))
    if y is None:
        pairs = {(a, None): table[a] for a in kx}
    else:
        pairs = {(a, b): table[a][b] for a in kx for b in ky}
    results = frozenset(pairs.values())
    if _ERROR in results:
        if results == {_ERROR}:
            return None  # an error on every path: the op's own (as plain Python's)
        _refuse_error(op_type, x, y, pairs, found[0])
    if op_type == "Pow" and (kx & (INTS | BOOLS)) and (ky & (INTS | BOOLS)) and not _non_negative(y):
        raise StagingError(
            f"{_where()}: `**` of {_origin(found[0])}, an int on some paths, to a power that may be negative: "
            f"Python gives a float for an int to a negative power (and numpy raises), so the type would be decided "
            f"by the value. Write float({_plain(found[0].name)}) ** ..., or an exponent known to be >= 0.")
    return lambda out: _derived(op_type, out, x, y, pairs, results, found[0])


_SEQUENCES = (list, tuple, str, bytes)
_REPEATS = frozenset({PY_BOOL, PY_INT, NP_INT32, NP_INT64})  # kinds Python repeats a sequence by


def check_repetition_count(seq, n) -> None:
    """Python's TypeError for a sequence repeated by a scalar tensor `n` whose Python type
    (on every path) is not one Python repeats by: a float, a numpy bool."""
    kinds = kinds_of(n)
    if isinstance(kinds, frozenset) and kinds and not kinds & _REPEATS:
        name = TYPE_NAMES[min(kinds)].replace("np.", "numpy.").replace("numpy.bool_", "numpy.bool")
        raise TypeError(f"can't multiply sequence by non-int of type '{name}'")
    if not isinstance(kinds, frozenset) and n.dtype.is_floating:
        raise TypeError(f"can't multiply sequence by non-int of type 'numpy.{n.dtype.np_dtype.name}'")


def _refuse_repetition(x, y) -> None:
    """`[0] * n`, `"ab" * n` with a scalar tensor n: Python repeats the sequence (numpy would
    multiply elementwise, a wrong value). A graph holds no list or str of run-time length, so
    it is refused; where Python raises (a float count), the same TypeError. An array count
    is numpy's elementwise product, as in Python."""
    seq, n = (x, y) if isinstance(x, _SEQUENCES) else (y, x)
    if not isinstance(n, gc.Tensor) or (n.shape.rank or 0) > 0:
        return
    check_repetition_count(seq, n)
    kind = type(seq).__name__
    if isinstance(seq, (str, bytes)):
        instead = "build the text outside the converted function, or print the pieces in a loop"
    else:
        instead = ("write np.full(n, value) (or np.zeros) for an array of that many items, or "
                   "pass the count as a Python int (not a numpy value), so the list is built while tracing")
    raise StagingError(
        f"{_where()}: a {kind} repeated by a count that is a graph tensor (`{kind} * n`): Python makes a {kind} of "
        f"n copies, but n is only known when the graph runs and a graph holds no {kind} of run-time length (numpy "
        f"would multiply elementwise, another value). Instead, {instead}.")


def _non_negative(y) -> bool:
    if isinstance(y, gc.Tensor):
        value = constant_value(y)
        return value is not None and bool(np.all(np.asarray(value) >= 0))
    return isinstance(y, (int, float, np.number)) and y >= 0


def _refuse_error(op_type, x, y, pairs, found: Typed):
    """Python raises for some of the kinds the path-typed operand may have (and not others)."""
    side = 0 if info(x) is not None else 1  # the operand whose type depends on the path
    failing = sorted({pair[side] for pair, r in pairs.items() if r == _ERROR})
    symbol = _SYMBOLS.get(op_type, op_type)
    raise StagingError(
        f"{_where()}: `{symbol}` on {_origin(found)}: it is {describe_kinds(kinds_of((x, y)[side]) or ())} "
        f"depending on the path, and Python raises TypeError for `{symbol}` of {_a(describe_kinds(failing))}, so the "
        f"graph cannot do what Python does on every path. Make the type explicit first: int({_plain(found.name)}) "
        f"or float({_plain(found.name)}).")


def _register_result(out, typed: "Typed | None"):
    if isinstance(out, gc.Tensor):
        register(out, typed)
    return out


def _derived(op_type, out, x, y, pairs, results, found: Typed):
    """Register an operator's result with its kinds (its tag built now, in the context the
    op is in), after the check that an int kind it may have is held exactly. Where the
    result's kind is an operand's (r + 1 of an int or np.int64 r), so is its tag: the same
    tensor, no op (and an if whose branch computes `r = r + 1` chooses the tag outside)."""
    if not isinstance(out, gc.Tensor):
        return out
    _building.on = True
    try:
        if len(results) == 1:
            tag = next(iter(results))
        elif all(r == a for (a, _), r in pairs.items()):
            tag = tag_of(x)
        elif y is not None and all(r == b for (_, b), r in pairs.items()):
            tag = tag_of(y)
        else:
            tag = _lookup(op_type, x, y)
        out = _check_result(op_type, out, x, y, results, tag, found)
    finally:
        _building.on = False
    if results == {natural(out)}:
        return register(out, None)
    return register(out, Typed(results, tag, found.name, found.line))


def _lookup(op_type, x, y) -> gc.Tensor:
    """The result's tag when the graph runs: the table's entry for the operands' tags."""
    if y is None:
        flat = [max(k, 0) for k in _UNARY[op_type]]
        index = tag_tensor(tag_of(x))
    else:
        flat = [max(k, 0) for row in _BINARY[op_type] for k in row]
        tx, ty = tag_of(x), tag_of(y)
        index = gc.add(gc.multiply(tag_tensor(tx), np.int32(N_KINDS)), tag_tensor(ty))
    return gc.gather(gc.constant(np.asarray(flat, dtype=np.int32)), index)


_HOLDS = {  # dtype -> the kinds whose every value it holds exactly
    gc.bool_: BOOLS, gc.int32: BOOLS | {NP_INT32}, gc.int64: BOOLS | INTS,
    gc.float32: BOOLS | {NP_FLOAT32}, gc.float64: BOOLS | {NP_INT32, NP_FLOAT32, PY_FLOAT, NP_FLOAT64}}


def _narrow(dtype, kinds) -> list:
    holds = _HOLDS.get(dtype, frozenset())
    return sorted(k for k in kinds if k not in holds)


def _is(tag, kinds) -> "gc.Tensor | None":
    """A bool tensor: the tag is one of `kinds` (None: it always is)."""
    if not isinstance(tag, gc.Tensor):
        return None if tag in kinds else gc.constant(False)
    table = np.zeros(N_KINDS, dtype=bool)
    table[list(kinds)] = True
    return gc.gather(gc.constant(table), tag)


def _check_result(op_type, out, x, y, results, tag, found: Typed):
    """An operator's result that may be a kind its dtype does not hold exactly (an int in a
    float64: `r * 2` where r is an int on one path and a float on another; a Python int in
    numpy's int64, which wraps around) is checked where the graph runs: on the paths of that
    kind, recomputed in the kind's own dtype (Python's arithmetic for Python numbers, which
    fails beyond int64 as a Python int in a graph does) and compared; a difference fails the run."""
    narrow = _narrow(out.dtype, results)
    if (PY_INT in results and out.dtype == gc.int64 and out.op.type != "PythonArith"
            and op_type in math_ops._PYTHON_OPERATORS):
        narrow.append(PY_INT)  # numpy's int64 wraps around; a Python int does not (PythonArith raises beyond int64)
    if not narrow:
        return out
    symbol = _SYMBOLS.get(op_type, op_type)
    advice = _advice(narrow, out.dtype, _capital(shown_name(found.name)))
    message = (f"{_where()}: `{symbol}` on {_origin(found)} gives {_a(describe_kinds(narrow))} on this run, which "
               f"Python computes exactly, but the graph computes it in {out.dtype} (the type it has on other paths), "
               f"which does not hold this value exactly. {advice}")
    refusal = (f"{_where()}: `{symbol}` on {_origin(found)} may give {_a(describe_kinds(narrow))}, which the graph "
               f"cannot compute exactly in {out.dtype} (the type it has on other paths). {advice}")
    if y is None:
        if op_type in _EXACT_UNARY and all(k in INTS for k in narrow):
            return out  # exact on exact ints (but for -(-2**31) in an int32, where numpy wraps too)
        if op_type in _EXACT_FLOAT_UNARY and out.dtype.is_floating and all(k in FLOATS for k in narrow):
            return out
        if op_type == "Square" and all(k in INTS for k in narrow) and out.dtype.is_floating:
            mask = None if len(results) == 1 else _is(tag, set(narrow))
            return _guard(out, _small(out, mask), message)
        raise StagingError(refusal)
    if op_type in _EXACT_BITWISE and out.dtype.is_integer and all(k in INTS | BOOLS for k in narrow):
        return out  # (operands held exactly: so is their &, |, ^, >>)
    make = _RECOMPUTED.get(op_type) or (math_ops.left_shift_op if op_type == "LeftShift" else None)
    if make is None or out.shape.rank not in (0,):
        raise StagingError(refusal)
    tests = []
    for k in narrow:
        kd = TYPE_DTYPES[k]
        mask = None if len(results) == 1 else _is(tag, {k})
        a, b = _operand(x, kd, mask, 0), _operand(y, kd, mask, 1)
        if k in PYTHON and op_type in math_ops._PYTHON_OPERATORS:
            exact = math_ops.python_arith_op(a, b, op=op_type)
        else:
            exact = make(a, b)
        got = gc.cast(out if mask is None else gc.where(mask, out, gc.zeros_like(out)), kd)
        same = gc.equal(got, exact)
        tests.append(same if mask is None else gc.logical_or(gc.logical_not(mask), same))
    test = tests[0]
    for t in tests[1:]:
        test = gc.logical_and(test, t)
    return _guard(out, test, message)


# binary ops whose result an int dtype holds whenever it holds the operands (a join checked that)
_EXACT_BITWISE = frozenset({"BitwiseAnd", "BitwiseOr", "BitwiseXor", "RightShift"})


def _operand(v, kd, mask, safe):
    """Operand `v` in dtype `kd` where `mask` holds, `safe` elsewhere (no spurious errors on
    the paths the check does not apply to)."""
    if not isinstance(v, gc.Tensor):
        v = gc.constant(np.asarray(v).astype(kd.np_dtype), dtype=kd)
    if mask is not None:
        v = gc.where(mask, v, gc.constant(np.asarray(safe).astype(v.dtype.np_dtype), dtype=v.dtype))
    return v if v.dtype == kd else gc.cast(v, kd)


def _small(out, mask):
    """|out| < 2**53 (a float that holds its int exactly), where `mask` holds."""
    test = gc.less(gc.abs(out), gc.cast(gc.constant(2.0 ** 53), out.dtype))
    return test if mask is None else gc.logical_or(gc.logical_not(mask), test)


def _guard(value, test, message: str):
    """`value`, valid only once an Assert of `test` passed (the run fails with
    InexactTypeError where it does not)."""
    return guard_value(value, test, InexactTypeError(message))


# -- joins ----------------------------------------------------------------------------------

def union(kinds_list) -> "frozenset | Untracked | None":
    """The kinds of a join of values of these kinds (None entries: unassigned sides)."""
    out: set = set()
    for k in kinds_list:
        if isinstance(k, Untracked):
            return k
        if k is not None:
            out |= k
    return frozenset(out) if out else None


def needs_tag(kinds) -> bool:
    return isinstance(kinds, frozenset) and len(kinds) > 1


def tracked(kinds, natural_kind) -> bool:
    """Whether a join of these kinds must be registered (its kind is not its natural one)."""
    return isinstance(kinds, Untracked) or (kinds is not None and kinds != {natural_kind})


def side_tag(v, kinds) -> gc.Tensor:
    """The tag a join's side contributes: its own, or (unassigned) any of the join's kinds."""
    tag = tag_of(v) if v is not None else None
    if tag is None:
        tag = min(kinds) if isinstance(kinds, frozenset) else 0
    return tag_tensor(tag)


def active(graph=None) -> bool:
    """Whether the graph being built has values whose type depends on the path."""
    g = graph if graph is not None else gc.get_default_graph()
    return g is not None and bool(_registry.get(g))


def chosen_tag(pred, tag_true, tag_false, kinds):
    """The tag of an if's output whose branches' tags are known outside it (codes, or
    tensors from before the if): chosen by the predicate, after the cond."""
    tag_true = tag_false if tag_true is None else tag_true
    tag_false = tag_true if tag_false is None else tag_false
    if tag_true is None:
        return min(kinds)
    if not isinstance(tag_true, gc.Tensor) and not isinstance(tag_false, gc.Tensor) and tag_true == tag_false:
        return tag_true
    return gc.where(pred, tag_tensor(tag_true), tag_tensor(tag_false))


def stored(v, converted, name: str, line: int, where: str):
    """`v` converted to a join's dtype (`converted`): where a kind `v` may have is not held
    exactly by that dtype, the run fails with InexactTypeError if the value is not."""
    kinds = kinds_of(v)
    if not isinstance(kinds, frozenset) or not isinstance(converted, gc.Tensor):
        return converted
    if isinstance(v, gc.Tensor) and v.dtype == converted.dtype:
        return converted
    narrow = _narrow(converted.dtype, kinds)
    if not narrow:
        return converted

    def message(value=None) -> str:
        return _inexact_message(value, narrow, converted.dtype, name, line, where)
    _building.on = True
    try:
        if not isinstance(v, gc.Tensor):
            exact = np.asarray(v).astype(converted.dtype.np_dtype).item() == v
            if exact:
                return converted
            return _guard(converted, gc.constant(False), message(v))
        back = gc.equal(gc.cast(converted, v.dtype), v)
        if v.dtype.is_floating:
            back = gc.logical_or(back, gc.not_equal(v, v))  # NaN stays NaN
        if v.shape.rank != 0:
            back = gc.reduce_min(gc.cast(back, gc.int32)) > 0
        mask = None if set(kinds) <= set(narrow) else _is(tag_of(v), set(narrow))
        test = back if mask is None else gc.logical_or(gc.logical_not(mask), back)
        return _guard(converted, test, message())
    finally:
        _building.on = False


def store(v, dtype, name: str, line: int, where: str):
    """`v` converted to a join's `dtype`, checked by `stored`. A Python int the dtype cannot
    hold at all (3000000000 joining an np.int32) is a placeholder 0 whose guard fails the run
    on the path that assigns it (numpy raised OverflowError while tracing, on every path)."""
    if (isinstance(v, int) and not isinstance(v, bool) and dtype.is_integer
            and not np.iinfo(dtype.np_dtype).min <= v <= np.iinfo(dtype.np_dtype).max):
        _building.on = True
        try:
            return _guard(gc.constant(np.zeros((), dtype.np_dtype), dtype=dtype), gc.constant(False),
                          _inexact_message(v, [PY_INT], dtype, name, line, where))
        finally:
            _building.on = False
    return stored(v, to_tensor(v, dtype), name, line, where)


def _inexact_message(value, narrow, dtype, name, line, where) -> str:
    what = shown_name(name)
    shown = f"the {describe_kinds(narrow)} {value!r}" if value is not None else f"{_a(describe_kinds(narrow))}"
    path = f"this path of the {where} at line {line}" if line else "this path"
    return (f"{_where()}: {what} is {shown} on {path}, but the graph holds it as {dtype} (its type "
            f"on another path), which cannot hold that value exactly: the graph "
            f"would {'wrap around' if dtype.is_integer else 'round'} what Python keeps exact. "
            f"{_advice(narrow, dtype, _capital(what))}")


def register_join(t, kinds, tag, name: str, line: int):
    """Record a join's output: its kinds and its tag (a tensor where there are several)."""
    if not isinstance(t, gc.Tensor) or not tracked(kinds, natural(t)):
        return t
    if isinstance(kinds, Untracked):
        return register(t, Typed(kinds, None, name, line))
    return register(t, Typed(kinds, tag if len(kinds) > 1 else next(iter(kinds)), name, line))


def chosen(out, first, steps):
    """`out` = where(c_n, a_n, ... where(c_1, a_1, first)) (max / min keep the winning operand,
    with its own type): its kind is the chosen operand's. `steps`: (c_i, a_i) pairs."""
    values = [first] + [a for _, a in steps]
    kinds = union(kinds_of(v) for v in values)
    if not isinstance(out, gc.Tensor) or not tracked(kinds, natural(out)):
        return out
    found = next((f for f in map(info, values) if f is not None), None)
    name, line = (found.name, found.line) if found is not None else ("the result", 0)
    if isinstance(kinds, Untracked):
        return register(out, Typed(kinds, None, name, line))
    if len(kinds) == 1:
        return register(out, Typed(kinds, next(iter(kinds)), name, line))
    _building.on = True
    try:
        tag = tag_tensor(tag_of(first))
        for c, a in steps:
            tag = gc.where(c, tag_tensor(tag_of(a)), tag)
    finally:
        _building.on = False
    return register(out, Typed(kinds, tag, name, line))


def same_kind(out, source):
    """Record that `out` has `source`'s Python type on every path (round(x, n) keeps it)."""
    found = info(source)
    if found is not None and isinstance(out, gc.Tensor):
        register(out, found)
    return out


# -- where the type shows -------------------------------------------------------------------

def shown(value, doing: str = "formatting"):
    """(tensor, python_number) for a Print op to format `value` as Python shows it: a
    path-typed value becomes an AsPythonType of its tag."""
    found = info(value)
    if found is None:
        return value, bool(getattr(value, "weak", False))
    if isinstance(found.kinds, Untracked):
        raise untracked_error(found.kinds, doing)
    return as_python_type(value, tag_tensor(found.tag), what=shown_name(found.name)), False


# the dtype a Python number is held in: a weak scalar of it is returned as that Python type
_PYTHON_STORAGE = {gc.bool_: PY_BOOL, gc.int64: PY_INT, gc.float64: PY_FLOAT}


def returned_kind(value) -> "int | gc.Tensor | None":
    """The kind a returned tensor is converted to after the run (None: as it is). A weak
    scalar stands for a Python number (a counter from 0, int(x), x.item(), `not x`): it is
    returned as one, as print shows it; in another dtype than Python's it stays numpy's."""
    found = info(value)
    if found is None:
        if getattr(value, "weak", False) and value.shape.rank == 0:
            return _PYTHON_STORAGE.get(value.dtype)
        return None
    if isinstance(found.kinds, Untracked):
        raise untracked_error(found.kinds, "returning")
    return found.tag


def answer(value, question, doing: str):
    """`question(sample)` (a bool) for the kinds `value` may have: a Python bool where it is
    the same for all of them, else a bool tensor chosen by the tag when the graph runs."""
    found = info(value)
    if isinstance(found.kinds, Untracked):
        raise untracked_error(found.kinds, doing)
    answers = {k: bool(question(_FIRST[k])) for k in found.kinds}
    if len(set(answers.values())) == 1:
        return next(iter(answers.values()))
    return _is(found.tag, {k for k, a in answers.items() if a})


def python_type(value):
    """`type(value)`: one type where every path gives the same, else refused (a type is not
    a graph value)."""
    found = info(value)
    if isinstance(found.kinds, Untracked):
        raise untracked_error(found.kinds, "type() of")
    types = {TYPES[k] for k in found.kinds}
    if len(types) == 1:
        return types.pop()
    raise StagingError(
        f"{_where()}: type() of {_origin(found)}: it is {describe_kinds(found.kinds)} depending on the path the run "
        f"takes, and a type is not a value a graph can choose when it runs. Test it with isinstance(x, int) (which "
        f"the graph answers when it runs), or give it one type on every path.")


def refuse_mixed(value, accepted, doing: str, advice: str) -> None:
    """Refuse `value` where it may be of a kind in `accepted` on one path and of another kind
    on another: Python would run the statement on one path and raise on the other."""
    found = info(value)
    if found is None:
        return
    if isinstance(found.kinds, Untracked):
        raise untracked_error(found.kinds, doing)
    good = found.kinds & frozenset(accepted)
    if good and good != found.kinds:
        raise StagingError(
            f"{_where()}: {doing} {_origin(found)}: it is {describe_kinds(good)} on some paths and "
            f"{describe_kinds(found.kinds - good)} on others, and Python raises TypeError for the latter. {advice}")


math_ops.set_operand_observer(_observe)


def python_choice_error(where: str, name: str, a, b, sides=("in the if branch", "in the else branch")) -> StagingError:
    """The refusal of a join of two different Python values that are not numbers (strs,
    None, objects): which one a run gives is known only when the graph runs, and a graph
    value is a number. Says which values, and what to write instead."""
    what = "the conditional expression (`a if c else b`)" if name == "<if expression>" else \
        "the returned value" if name.startswith("retval_") else f"'{name}'"

    def show(v):
        text = repr(v) if isinstance(v, (str, bytes, type(None), bool)) else f"a Python {type(v).__name__}"
        return text if len(text) <= 40 else text[:37] + "..."
    plain = _plain(name)
    return StagingError(
        f"{where}: {_capital(what)} is {show(a)} {sides[0]} and {show(b)} {sides[1]} of an `if` on a tensor: which "
        f"one a run gives is known only when the graph runs, and a graph holds numbers, not Python "
        f"{'strs' if isinstance(a, str) and isinstance(b, str) else 'objects'}. "
        + ("Write an if statement and use the value inside each branch" if name == "<if expression>" else
           "Use it inside each branch")
        + f" (e.g. print({show(a)}) there), or "
        + ("write numbers in it (a code: `1 if ... else 0`)" if name == "<if expression>" else
           f"give {plain} a number on every path (a code: {plain} = 0 / {plain} = 1)")
        + " and turn the code into the value outside the converted function.")


def round_by_kind(x, ndigits: int):
    """`round(x, ndigits)` of a number whose type depends on the path: each kind's own
    rounding (a Python float's exact decimal value, numpy's scaling for numpy floats in their
    own dtype, a Python int's or numpy int's for negative digits), chosen by the tag when the
    graph runs; the result keeps the kind. None where a kind is not a number (a bool)."""
    from graphcore.ops.python_math_ops import python_math  # noqa: PLC0415

    found = info(x)
    if found is None or not isinstance(found.kinds, frozenset) or not found.kinds <= (INTS | FLOATS):
        return None
    kinds = sorted(found.kinds)
    _building.on = True
    try:
        digits = gc.constant(np.int64(ndigits))
        out = None
        for k in kinds:
            mask = None if len(kinds) == 1 else _is(found.tag, {k})
            v = _operand(x, TYPE_DTYPES[k], mask, 0)
            if k in (PY_FLOAT, PY_INT):
                r = python_math("round_digits" if k == PY_FLOAT else "round_int_digits", v, digits)
            else:
                r = gc.round(v, decimals=ndigits)
            r = r if r.dtype == x.dtype else gc.cast(r, x.dtype)
            out = r if out is None else gc.where(mask, r, out)
    finally:
        _building.on = False
    out.weak = bool(x.weak)
    return register(out, found)
