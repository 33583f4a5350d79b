"""Reading a graph file, first half: JSON text -> a checked GraphFile of plain records.

Every field is checked for its type and range, every name a reference uses is
resolved to an index, and attribute values are decoded, before any op is built; a
problem raises GraphFileError naming its place in the document (`ops[12].inputs[1]:
no tensor named 'foo:0'`). Nothing in the file is executed.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass

from .. import dtypes as dt
from ..attr_schema import NAME, AttrError
from ..errors import GraphFileError
from ..registry import OpDef, registered_ops
from ..shapes import TensorShape
from ..source_info import SourceLocation
from .attr_values import INT64_MAX, decode_attr, decode_dtype, decode_shape, int_text, is_int, json_type

FORMAT = "autograph-graph"
VERSION = 1
MAX_PARALLEL_ITERATIONS = 2 ** 31 - 1
MAX_CONTEXT_DEPTH = 100  # conds and loops inside each other (printers and exporters recurse on it)


@dataclass(frozen=True)
class TensorRef:
    """Output `index` of the op at `op` in GraphFile.ops."""

    op: int
    index: int


@dataclass(frozen=True)
class ContextRecord:
    """A cond branch or a while frame; `outer` is the index of the context around it."""

    where: str
    kind: str                                       # "while" or "cond"
    name: str
    outer: int | None
    branch: int = 1                                 # cond: 1 the true branch, 0 the false one
    pred: TensorRef | None = None                   # cond
    parallel_iterations: int = 10                   # while
    maximum_iterations: int | TensorRef | None = None
    has_counter: bool = False


@dataclass(frozen=True)
class OpRecord:
    where: str                                      # "ops[12]"
    name: str
    op_def: OpDef
    inputs: tuple[TensorRef, ...]
    control_inputs: tuple[int, ...]                 # indices of earlier ops
    attrs: dict
    outputs: tuple[tuple[dt.DType, TensorShape], ...]
    device: str
    context: int | None
    source: SourceLocation | None


@dataclass(frozen=True)
class SignatureRecord:
    """What a file written from a traced function says about calling it: the inputs (a
    name for each, the Placeholder's output fed) and the outputs, in order; `structure`
    is how the function returned them ("value", "tuple" or "list")."""

    inputs: tuple[tuple[str, TensorRef], ...]
    outputs: tuple[TensorRef, ...]
    function: str = ""
    structure: str = "value"


@dataclass(frozen=True)
class FunctionRecord:
    """A function of the library (Control Flow v2's branches, conditions and bodies): its
    ops and contexts as a graph's, its inputs (Placeholder outputs) and outputs."""

    where: str                                      # "functions[2]"
    name: str
    contexts: tuple[ContextRecord, ...]
    ops: tuple[OpRecord, ...]
    inputs: tuple[TensorRef, ...]
    outputs: tuple[TensorRef, ...]


@dataclass(frozen=True)
class GraphFile:
    contexts: tuple[ContextRecord, ...]
    ops: tuple[OpRecord, ...]
    signature: SignatureRecord | None = None        # the top-level "signature", when written
    functions: tuple[FunctionRecord, ...] = ()      # the library the ops call (If, While)


# -- step 1: text -> JSON values ------------------------------------------------------------------

def parse(text: str | bytes):
    """The JSON values in `text`; GraphFileError if it is not JSON a graph file could hold."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise GraphFileError(f"line {e.lineno} column {e.colno}: not valid JSON: {e.msg}") from None
    except RecursionError:
        raise GraphFileError("lists or objects are nested too deeply for a graph file") from None
    except (TypeError, UnicodeDecodeError) as e:
        raise GraphFileError(f"the graph file is not JSON text: {e}") from None
    except ValueError:  # an integer longer than Python converts (sys.get_int_max_str_digits)
        raise GraphFileError(f"{_long_number_position(text)}: a number has too many digits for a graph "
                             "file") from None


def _long_number_position(text) -> str:
    limit = getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 4300
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    m = re.search(r"[0-9]{%d,}" % (limit + 1), text)
    if m is None:
        return "the file"
    line = text.count("\n", 0, m.start()) + 1
    return f"line {line} column {m.start() - text.rfind(chr(10), 0, m.start())}"


# -- step 2: JSON values -> checked records ----------------------------------------------------------

_REQUIRED = object()


def _field(obj: dict, key: str, where: str, types, default=_REQUIRED):
    """obj[key], checked to be one of `types` (an int is never a bool here)."""
    if key not in obj:
        if default is _REQUIRED:
            raise GraphFileError(f"{where}: missing key {key!r}")
        return default
    v = obj[key]
    types = types if isinstance(types, tuple) else (types,)
    if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
        raise GraphFileError(f"{where}.{key}: expected {_type_names(types)}, got {json_type(v)}")
    return v


def _type_names(types: tuple) -> str:
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer", bool: "true/false",
             float: "a number", type(None): "null"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def _object(v, where: str) -> dict:
    if not isinstance(v, dict):
        raise GraphFileError(f"{where}: expected an object, got {json_type(v)}")
    return v


def _checked(check, value, where: str):
    try:
        check(value, where)
    except AttrError as e:
        raise GraphFileError(str(e)) from None
    return value


def _int_in(v: int, where: str, lo: int, hi: int, what: str) -> int:
    if not lo <= v <= hi:
        raise GraphFileError(f"{where}: {int_text(v)} is not {what}")
    return v


class _Names:
    """Op names -> (index, output count), from a first pass over the ops."""

    def __init__(self, op_docs: list, prefix: str = ""):
        known = registered_ops()
        self.index: dict[str, int] = {}
        self.n_outputs: list[int] = []
        self.op_defs: list[OpDef] = []
        for i, od in enumerate(op_docs):
            w = f"{prefix}ops[{i}]"
            _object(od, w)
            name = _field(od, "name", w, str)
            if ":" in name:
                raise GraphFileError(f"{w}.name: {name!r} is not a valid op name (non-empty, no ':')")
            _checked(NAME, name, f"{w}.name")
            if name in self.index:
                raise GraphFileError(f"{w}.name: the name {name!r} is already used by ops[{self.index[name]}]; "
                                     "op names must be unique")
            self.index[name] = i
            typ = _field(od, "type", w, str)
            if typ not in known:
                raise GraphFileError(f"{w}.type: no op type {typ!r} is registered")
            self.op_defs.append(known[typ])
            self.n_outputs.append(len(_field(od, "outputs", w, list)))

    def tensor(self, ref, where: str) -> TensorRef:
        """'add:1' (or 'add', output 0) as a TensorRef."""
        if not isinstance(ref, str):
            raise GraphFileError(f"{where}: expected a tensor name like 'add:0', got {json_type(ref)}")
        op_name, sep, idx = ref.rpartition(":")
        if not sep:
            op_name, idx = ref, "0"
        i = self.index.get(op_name)
        if i is None or not re.fullmatch(r"[0-9]{1,9}", idx) or int(idx) >= self.n_outputs[i]:
            raise GraphFileError(f"{where}: no tensor named {ref!r}")
        return TensorRef(i, int(idx))


def read_document(doc) -> GraphFile:
    """Check the document's structure and decode it into records."""
    _object(doc, "<top>")
    fmt = _field(doc, "format", "<top>", str)
    if fmt != FORMAT:
        raise GraphFileError(f"format: expected {FORMAT!r}, got {fmt!r}; this is not a graph file written by "
                             "to_json")
    version = _field(doc, "version", "<top>", int)
    if version != VERSION:
        raise GraphFileError(f"version: version {int_text(version)} is not supported (this program reads "
                             f"version {VERSION})")
    ctx_docs = _field(doc, "contexts", "<top>", list, default=[])
    op_docs = _field(doc, "ops", "<top>", list)
    names = _Names(op_docs)
    contexts = tuple(_read_context(j, cd, names) for j, cd in enumerate(ctx_docs))
    ops = tuple(_read_op(i, od, names, len(contexts)) for i, od in enumerate(op_docs))
    _check_contexts(contexts, ops)
    signature = _read_signature(doc["signature"], names) if doc.get("signature") is not None else None
    fn_docs = _field(doc, "functions", "<top>", list, default=[])
    functions, seen = [], {}
    for j, fd in enumerate(fn_docs):
        fn = _read_function(j, fd)
        if fn.name in seen:
            raise GraphFileError(f"{fn.where}.name: the function {fn.name!r} is already functions[{seen[fn.name]}]")
        seen[fn.name] = j
        functions.append(fn)
    return GraphFile(contexts, ops, signature, tuple(functions))


MAX_FUNCTIONS = 10_000


def _read_function(j: int, fd) -> FunctionRecord:
    """One function of the library: a name, ops and contexts read as a graph's (names are
    the function's own), inputs that are its Placeholders' outputs (each once), outputs."""
    w = f"functions[{j}]"
    if j >= MAX_FUNCTIONS:
        raise GraphFileError(f"{w}: a graph file holds at most {MAX_FUNCTIONS} functions")
    _object(fd, w)
    name = _field(fd, "name", w, str)
    _checked(NAME, name, f"{w}.name")
    op_docs = _field(fd, "ops", w, list)
    names = _Names(op_docs, prefix=f"{w}.")
    ctx_docs = _field(fd, "contexts", w, list, default=[])
    contexts = tuple(_read_context(k, cd, names, prefix=f"{w}.") for k, cd in enumerate(ctx_docs))
    ops = tuple(_read_op(i, od, names, len(contexts), prefix=f"{w}.") for i, od in enumerate(op_docs))
    _check_contexts(contexts, ops)
    inputs = []
    for k, ref in enumerate(_field(fd, "inputs", w, list)):
        t = names.tensor(ref, f"{w}.inputs[{k}]")
        if names.op_defs[t.op].type != "Placeholder" or t in inputs:
            raise GraphFileError(f"{w}.inputs[{k}]: {ref!r} is not a Placeholder's output listed once")
        inputs.append(t)
    outputs = tuple(names.tensor(ref, f"{w}.outputs[{k}]") for k, ref in enumerate(_field(fd, "outputs", w, list)))
    return FunctionRecord(w, name, contexts, ops, tuple(inputs), outputs)


_SIGNATURE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")
STRUCTURES = ("value", "tuple", "list")


def _read_signature(sd, names: _Names) -> SignatureRecord:
    """The top-level "signature": names (identifiers, unique) of Placeholder outputs, and
    output tensors that are in the file. Data only: names are matched, never run."""
    w = "signature"
    _object(sd, w)
    inputs, fed = [], set()
    for k, entry in enumerate(_field(sd, "inputs", w, list)):
        we = f"{w}.inputs[{k}]"
        _object(entry, we)
        name = _field(entry, "name", we, str)
        if not _SIGNATURE_NAME.fullmatch(name) or name in dict(inputs):
            raise GraphFileError(f"{we}.name: {name!r} is not a new input name (a Python identifier)")
        ref = names.tensor(_field(entry, "tensor", we, str), f"{we}.tensor")
        if names.op_defs[ref.op].type != "Placeholder" or ref in fed:
            raise GraphFileError(f"{we}.tensor: {entry['tensor']!r} is not a Placeholder's output fed once")
        fed.add(ref)
        inputs.append((name, ref))
    outputs = tuple(names.tensor(t, f"{w}.outputs[{k}]") for k, t in enumerate(_field(sd, "outputs", w, list)))
    function = _field(sd, "function", w, str, default="")
    structure = _field(sd, "structure", w, str, default="value")
    if structure not in STRUCTURES or (structure == "value" and len(outputs) != 1):
        raise GraphFileError(f"{w}.structure: {structure!r} is not one of {', '.join(STRUCTURES)} "
                             f"(value: one output)")
    return SignatureRecord(tuple(inputs), outputs, function, structure)


def _read_context(j: int, cd, names: _Names, prefix: str = "") -> ContextRecord:
    w = f"{prefix}contexts[{j}]"
    _object(cd, w)
    kind = _field(cd, "kind", w, str)
    if kind not in ("while", "cond"):
        raise GraphFileError(f"{w}.kind: expected 'while' or 'cond', got {kind!r}")
    name = _field(cd, "name", w, str)
    if name or kind == "while":
        _checked(NAME, name, f"{w}.name")
    outer = _field(cd, "outer", w, (int, type(None)))
    if outer is not None and not 0 <= outer < j:
        raise GraphFileError(f"{w}.outer: {int_text(outer)} is not the index of an earlier context")
    if kind == "cond":
        branch = _field(cd, "branch", w, int)
        if branch not in (0, 1):
            raise GraphFileError(f"{w}.branch: expected 0 (false branch) or 1 (true branch)")
        pred = _field(cd, "pred", w, (str, type(None)), default=None)
        return ContextRecord(w, kind, name, outer, branch=branch,
                             pred=None if pred is None else names.tensor(pred, f"{w}.pred"))
    if not name:
        raise GraphFileError(f"{w}.name: a while frame needs a name")
    pi = _int_in(_field(cd, "parallel_iterations", w, int, default=10), f"{w}.parallel_iterations", 1,
                 MAX_PARALLEL_ITERATIONS, f"from 1 to {MAX_PARALLEL_ITERATIONS}")
    mi = cd.get("maximum_iterations")
    if isinstance(mi, dict):
        mi = names.tensor(_field(mi, "tensor", f"{w}.maximum_iterations", str), f"{w}.maximum_iterations.tensor")
    elif is_int(mi):
        _int_in(mi, f"{w}.maximum_iterations", 0, INT64_MAX, "from 0 to 2**63-1")
    elif mi is not None:
        raise GraphFileError(f"{w}.maximum_iterations: expected an integer, {{\"tensor\": name}} or null")
    has_counter = _field(cd, "has_counter", w, bool, default=False)
    return ContextRecord(w, kind, name, outer, parallel_iterations=pi, maximum_iterations=mi,
                         has_counter=has_counter)


def _read_op(i: int, od: dict, names: _Names, n_contexts: int, prefix: str = "") -> OpRecord:
    w = f"{prefix}ops[{i}]"
    op_def = names.op_defs[i]
    outputs = tuple(_read_output(o, f"{w}.outputs[{k}]") for k, o in enumerate(od["outputs"]))
    if op_def.num_outputs is not None and len(outputs) != op_def.num_outputs:
        raise GraphFileError(f"{w}.outputs: a {op_def.type} op has {op_def.num_outputs} output(s), the file lists "
                             f"{len(outputs)}")
    inputs = tuple(names.tensor(ref, f"{w}.inputs[{k}]")
                   for k, ref in enumerate(_field(od, "inputs", w, list, default=[])))
    controls = []
    for k, cname in enumerate(_field(od, "control_inputs", w, list, default=[])):
        wc = f"{w}.control_inputs[{k}]"
        if not isinstance(cname, str):
            raise GraphFileError(f"{wc}: expected an op name, got {json_type(cname)}")
        j = names.index.get(cname)
        if j is None:
            raise GraphFileError(f"{wc}: no op named {cname!r}")
        if j >= i:
            raise GraphFileError(f"{wc}: {cname!r} is defined later in the file (ops[{j}]); a control input must "
                                 "come before the op that waits for it")
        controls.append(j)
    attrs = {k: decode_attr(v, f"{w}.attrs.{k}") for k, v in _field(od, "attrs", w, dict, default={}).items()}
    try:
        op_def.check_attrs(attrs)
    except AttrError as e:
        raise GraphFileError(f"{w}.attrs.{e}") from None
    device = _field(od, "device", w, str, default="")
    ctx = _field(od, "context", w, (int, type(None)), default=None)
    if ctx is not None and not 0 <= ctx < n_contexts:
        raise GraphFileError(f"{w}.context: {int_text(ctx)} is not the index of a context (there are {n_contexts})")
    src = _field(od, "source", w, (dict, type(None)), default=None)
    source = None
    if src is not None:
        ws = f"{w}.source"
        line = _int_in(_field(src, "line", ws, int), f"{ws}.line", 0, 2 ** 31 - 1, "a line number")
        source = SourceLocation(_field(src, "file", ws, str), line, _field(src, "function", ws, str, default=""))
    return OpRecord(w, od["name"], op_def, inputs, tuple(controls), attrs, outputs, device, ctx, source)


def _read_output(o, where: str) -> tuple[dt.DType, TensorShape]:
    _object(o, where)
    return decode_dtype(_field(o, "dtype", where, str), f"{where}.dtype"), decode_shape(o.get("shape"),
                                                                                        f"{where}.shape")


def _check_contexts(contexts: tuple[ContextRecord, ...], ops: tuple[OpRecord, ...]) -> None:
    """Contexts nest at most MAX_CONTEXT_DEPTH deep, each holds an op (or a context that
    does), and while frames have distinct names."""
    depth: list[int] = []
    for c in contexts:
        depth.append(1 if c.outer is None else depth[c.outer] + 1)
        if depth[-1] > MAX_CONTEXT_DEPTH:
            raise GraphFileError(f"{c.where}.outer: contexts nest more than {MAX_CONTEXT_DEPTH} deep")
    used = [False] * len(contexts)
    for op in ops:
        j = op.context
        while j is not None and not used[j]:
            used[j] = True
            j = contexts[j].outer
    frames: dict[str, int] = {}
    for j, c in enumerate(contexts):
        if not used[j]:
            raise GraphFileError(f"{c.where}: no op is in this context or in one inside it; remove it")
        if c.kind == "while":
            if c.name in frames:
                raise GraphFileError(f"{c.where}.name: the while frame {c.name!r} is already contexts"
                                     f"[{frames[c.name]}]; each loop has its own frame name")
            frames[c.name] = j
