"""Graph files: the graph as JSON, a file that loads back (DOT is in dot.py).

JSON: a plain document, no code in it (no pickle, no eval):

    {"format": "autograph-graph", "version": 1,
     "contexts": [{"kind": "while", "name": "while", "outer": null, "parallel_iterations": 10, ...},
                  {"kind": "cond", "name": "cond", "branch": 1, "pred": "Less:0", "outer": null}],
     "ops": [{"name": "x", "type": "Placeholder", "inputs": [], "control_inputs": [],
              "attrs": {"dtype": {"dtype": "float64"}, "shape": {"shape": []}},
              "outputs": [{"dtype": "float64", "shape": []}], "device": "", "context": null,
              "source": {"file": "/home/me/f.py", "line": 3, "function": "f"}}, ...]}

Attribute values keep their Python type through tagged objects: {"ndarray": {...}},
{"scalar": {...}} (numpy scalars), {"tuple": [...]}, {"dtype": ...}, {"shape": ...},
{"float": "nan"}, {"dict": {...}}, {"tensor_list": [...]}. `from_json` checks the file and
raises GraphFileError naming the first problem's location (`ops[12].inputs[1]: ...`).
"""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from . import dtypes as dt
from .errors import GraphError, GraphFileError
from .shapes import TensorShape

FORMAT = "autograph-graph"
VERSION = 1

# -- JSON: writing ------------------------------------------------------------------------

def _encode_float(x: float):
    if math.isfinite(x):
        return x
    return {"float": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}


def _encode_array_data(a: np.ndarray):
    flat = a.ravel().tolist()
    if a.dtype.kind == "f":
        flat = [_encode_float(v) for v in flat]
    return flat


def encode_attr(v, where: str):
    """A Python/numpy attribute value as JSON data with its type kept."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, dt.DType):
        return {"dtype": v.name}
    if isinstance(v, TensorShape):
        return {"shape": None if v.dims is None else list(v.dims)}
    if isinstance(v, np.ndarray):
        if v.dtype.kind not in "biuf":
            raise GraphError(f"{where}: a numpy array of dtype {v.dtype} cannot be saved; use a numeric or "
                             "bool array")
        return {"ndarray": {"dtype": str(v.dtype), "shape": list(v.shape), "data": _encode_array_data(v)}}
    if isinstance(v, np.generic):
        if v.dtype.kind not in "biuf":
            raise GraphError(f"{where}: a numpy value of dtype {v.dtype} cannot be saved")
        item = v.item()
        return {"scalar": {"dtype": str(v.dtype), "value": _encode_float(item) if isinstance(item, float) else item}}
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, float):
        return _encode_float(v)
    if isinstance(v, tuple):
        return {"tuple": [encode_attr(x, f"{where}[{i}]") for i, x in enumerate(v)]}
    if isinstance(v, list):
        return [encode_attr(x, f"{where}[{i}]") for i, x in enumerate(v)]
    if isinstance(v, dict):
        if not all(isinstance(k, str) for k in v):
            raise GraphError(f"{where}: only dicts with str keys can be saved")
        return {"dict": {k: encode_attr(x, f"{where}.{k}") for k, x in v.items()}}
    if type(v).__name__ == "ListValue":
        return {"tensor_list": [encode_attr(x, f"{where}[{i}]") for i, x in enumerate(v.items())]}
    raise GraphError(f"{where}: a value of type {type(v).__name__} cannot be saved in a graph file; attrs must "
                     "be numbers, strings, bools, None, numpy arrays, dtypes, shapes, or tuples/lists of these")


def _tensor_name(t) -> str:
    return f"{t.op.name}:{t.value_index}"


def to_json(graph, indent: int | None = 1) -> str:
    """The graph as a JSON document (see the module docstring); `from_json` loads it."""
    ctx_index: dict[int, int] = {}
    contexts: list[dict] = []

    def ctx_id(ctx):
        if ctx is None:
            return None
        if id(ctx) in ctx_index:
            return ctx_index[id(ctx)]
        outer = ctx_id(ctx.outer)
        entry: dict[str, Any] = {"name": ctx.name, "outer": outer}
        if ctx.is_while:
            entry["kind"] = "while"
            entry["parallel_iterations"] = int(getattr(ctx, "parallel_iterations", 10))
            mi = getattr(ctx, "maximum_iterations", None)
            if mi is not None and hasattr(mi, "op"):
                entry["maximum_iterations"] = {"tensor": _tensor_name(mi)}
            elif mi is not None:
                entry["maximum_iterations"] = int(mi)
            entry["has_counter"] = bool(getattr(ctx, "has_counter", False))
        else:
            entry["kind"] = "cond"
            entry["branch"] = int(ctx.branch)
            entry["pred"] = _tensor_name(ctx.pred) if getattr(ctx, "pred", None) is not None else None
        ctx_index[id(ctx)] = len(contexts)
        contexts.append(entry)
        return ctx_index[id(ctx)]

    ops = []
    for op in graph.get_operations():
        where = f"op {op.name!r} ({op.type}) attr"
        src = op.source
        ops.append({
            "name": op.name,
            "type": op.type,
            "inputs": [_tensor_name(t) for t in op.inputs],
            "control_inputs": [c.name for c in op.control_inputs],
            "attrs": {k: encode_attr(v, f"{where} {k!r}") for k, v in op.attrs.items()},
            "outputs": [{"dtype": t.dtype.name, "shape": None if t.shape.dims is None else list(t.shape.dims)}
                        for t in op.outputs],
            "device": op.device or "",
            "context": ctx_id(op.ctx),
            "source": None if src is None else {"file": src.filename, "line": src.lineno, "function": src.function},
        })
    doc = {"format": FORMAT, "version": VERSION, "contexts": contexts, "ops": ops}
    return json.dumps(doc, indent=indent, allow_nan=False) + "\n"


# -- JSON: reading ------------------------------------------------------------------------

class _Reader:
    """Typed access to the parsed document; every failure names its location."""

    @staticmethod
    def fail(where: str, msg: str):
        raise GraphFileError(f"{where}: {msg}")

    def get(self, obj: dict, key: str, where: str, types, required: bool = True, default=None):
        if key not in obj:
            if required:
                self.fail(where, f"missing key {key!r}")
            return default
        v = obj[key]
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in _as_tuple(types)):
            self.fail(f"{where}.{key}", f"expected {_type_names(types)}, got {_json_type(v)}")
        return v


def _as_tuple(types):
    return types if isinstance(types, tuple) else (types,)


def _type_names(types) -> str:
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer", bool: "true/false",
             float: "a number", type(None): "null"}
    return " or ".join(names.get(t, t.__name__) for t in _as_tuple(types))


def _json_type(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true/false"
    return {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number"}.get(
        type(v), type(v).__name__)


def _decode_dtype(name, where: str) -> dt.DType:
    if not isinstance(name, str):
        raise GraphFileError(f"{where}: expected a dtype name, got {_json_type(name)}")
    try:
        return dt.as_dtype(name)
    except TypeError:
        raise GraphFileError(f"{where}: unknown dtype {name!r}; use one of bool, int32, int64, float32, float64, "
                             "variant") from None


def _decode_shape(v, where: str) -> TensorShape:
    if v is None:
        return TensorShape(None)
    if not isinstance(v, list) or not all(d is None or (isinstance(d, int) and not isinstance(d, bool) and d >= 0)
                                          for d in v):
        raise GraphFileError(f"{where}: a shape is null or a list of non-negative integers and nulls")
    return TensorShape(v)


def _decode_float(v, where: str) -> float:
    if isinstance(v, dict) and set(v) == {"float"} and v["float"] in ("nan", "inf", "-inf"):
        return float(v["float"])
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    raise GraphFileError(f"{where}: expected a number, got {_json_type(v)}")


_NP_KINDS = {"bool": "b", "int8": "i", "int16": "i", "int32": "i", "int64": "i", "uint8": "u", "uint16": "u",
             "uint32": "u", "uint64": "u", "float16": "f", "float32": "f", "float64": "f"}


def _np_dtype(name, where: str) -> np.dtype:
    if name not in _NP_KINDS:
        raise GraphFileError(f"{where}: unsupported numpy dtype {name!r}; use one of {sorted(_NP_KINDS)}")
    return np.dtype(name)


def decode_attr(v, where: str):
    """The inverse of encode_attr; raises GraphFileError naming `where`."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, list):
        return [decode_attr(x, f"{where}[{i}]") for i, x in enumerate(v)]
    if not isinstance(v, dict) or len(v) != 1:
        raise GraphFileError(f"{where}: an attribute object must have exactly one key (ndarray, scalar, tuple, "
                             "dtype, shape, float, dict or tensor_list)")
    (tag, body), = v.items()
    if tag == "float":
        return _decode_float(v, where)
    if tag == "tuple":
        if not isinstance(body, list):
            raise GraphFileError(f"{where}.tuple: expected a list")
        return tuple(decode_attr(x, f"{where}.tuple[{i}]") for i, x in enumerate(body))
    if tag == "dtype":
        return _decode_dtype(body, f"{where}.dtype")
    if tag == "shape":
        return _decode_shape(body, f"{where}.shape")
    if tag == "dict":
        if not isinstance(body, dict):
            raise GraphFileError(f"{where}.dict: expected an object")
        return {k: decode_attr(x, f"{where}.dict.{k}") for k, x in body.items()}
    if tag == "tensor_list":
        from .tensor_list import EMPTY  # noqa: PLC0415

        if not isinstance(body, list):
            raise GraphFileError(f"{where}.tensor_list: expected a list")
        lst = EMPTY
        for i, x in enumerate(body):
            lst = lst.push(decode_attr(x, f"{where}.tensor_list[{i}]"))
        return lst
    if tag == "scalar":
        w = f"{where}.scalar"
        if not isinstance(body, dict) or set(body) != {"dtype", "value"}:
            raise GraphFileError(f"{w}: expected an object with keys 'dtype' and 'value'")
        npd = _np_dtype(body["dtype"], f"{w}.dtype")
        return _decode_elements([body["value"]], npd, f"{w}.value", scalar=True)[0]
    if tag == "ndarray":
        w = f"{where}.ndarray"
        if not isinstance(body, dict) or set(body) != {"dtype", "shape", "data"}:
            raise GraphFileError(f"{w}: expected an object with keys 'dtype', 'shape' and 'data'")
        npd = _np_dtype(body["dtype"], f"{w}.dtype")
        shape = body["shape"]
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                  for d in shape):
            raise GraphFileError(f"{w}.shape: expected a list of non-negative integers")
        data = body["data"]
        if not isinstance(data, list):
            raise GraphFileError(f"{w}.data: expected a flat list of numbers")
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if len(data) != n:
            raise GraphFileError(f"{w}.data: has {len(data)} values but the shape {shape} needs {n}")
        return _decode_elements(data, npd, f"{w}.data").reshape(shape)
    raise GraphFileError(f"{where}: unknown attribute tag {tag!r}")


def _decode_elements(data: list, npd: np.dtype, where: str, scalar: bool = False):
    kind = npd.kind
    vals = []
    for i, x in enumerate(data):
        w = where if scalar else f"{where}[{i}]"
        if kind == "b":
            if not isinstance(x, bool):
                raise GraphFileError(f"{w}: expected true/false, got {_json_type(x)}")
        elif kind in "iu":
            if not isinstance(x, int) or isinstance(x, bool):
                raise GraphFileError(f"{w}: expected an integer, got {_json_type(x)}")
        else:
            x = _decode_float(x, w)
        vals.append(x)
    try:
        arr = np.array(vals, dtype=npd)
    except OverflowError:
        raise GraphFileError(f"{where}: a value does not fit in {npd}") from None
    return arr


def from_json(text: str | bytes):
    """Load a graph written by `to_json`. The file is data only: nothing in it is executed.

    Raises GraphFileError with the location of the first problem, e.g.
    `ops[12].inputs[1]: no tensor named 'foo:0'`; the loaded graph is validated.
    """
    from .control_flow import CondContext, WhileContext  # noqa: PLC0415
    from .graph import Graph  # noqa: PLC0415
    from .registry import get_op_def, registered_ops  # noqa: PLC0415
    from .source_info import SourceLocation  # noqa: PLC0415
    from .validate import find_problems  # noqa: PLC0415

    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise GraphFileError(f"line {e.lineno} column {e.colno}: not valid JSON: {e.msg}") from None
    except (TypeError, UnicodeDecodeError) as e:
        raise GraphFileError(f"the graph file is not JSON text: {e}") from None
    r = _Reader()
    if not isinstance(doc, dict):
        r.fail("<top>", f"expected an object, got {_json_type(doc)}")
    fmt = r.get(doc, "format", "<top>", str)
    if fmt != FORMAT:
        r.fail("format", f"expected {FORMAT!r}, got {fmt!r}; this is not a graph file written by to_json")
    version = r.get(doc, "version", "<top>", int)
    if version != VERSION:
        r.fail("version", f"version {version} is not supported (this program reads version {VERSION})")
    ctx_docs = r.get(doc, "contexts", "<top>", list, required=False, default=[])
    op_docs = r.get(doc, "ops", "<top>", list)

    # first pass: shapes of the document, names of every op and its output count
    known_ops = registered_ops()
    names: dict[str, int] = {}
    n_outputs: dict[str, int] = {}
    for i, od in enumerate(op_docs):
        w = f"ops[{i}]"
        if not isinstance(od, dict):
            r.fail(w, f"expected an object, got {_json_type(od)}")
        name = r.get(od, "name", w, str)
        if not name or ":" in name:
            r.fail(f"{w}.name", f"{name!r} is not a valid op name (non-empty, no ':')")
        if name in names:
            r.fail(f"{w}.name", f"the name {name!r} is already used by ops[{names[name]}]; op names must be unique")
        names[name] = i
        typ = r.get(od, "type", w, str)
        if typ not in known_ops:
            r.fail(f"{w}.type", f"no op type {typ!r} is registered")
        outs = r.get(od, "outputs", w, list)
        n_outputs[name] = len(outs)

    # contexts (built lazily: a cond's predicate may be created later than its first op)
    for j, cd in enumerate(ctx_docs):
        w = f"contexts[{j}]"
        if not isinstance(cd, dict):
            r.fail(w, f"expected an object, got {_json_type(cd)}")
        kind = r.get(cd, "kind", w, str)
        if kind not in ("while", "cond"):
            r.fail(f"{w}.kind", f"expected 'while' or 'cond', got {kind!r}")
        r.get(cd, "name", w, str)
        outer = r.get(cd, "outer", w, (int, type(None)))
        if outer is not None and not 0 <= outer < j:
            r.fail(f"{w}.outer", f"{outer} is not the index of an earlier context")
        if kind == "cond":
            if r.get(cd, "branch", w, int) not in (0, 1):
                r.fail(f"{w}.branch", "expected 0 (false branch) or 1 (true branch)")
            pred = r.get(cd, "pred", w, (str, type(None)), required=False)
            if pred is not None:
                _check_ref(pred, names, n_outputs, f"{w}.pred")
        else:
            pi = r.get(cd, "parallel_iterations", w, int, required=False, default=10)
            if pi < 1:
                r.fail(f"{w}.parallel_iterations", "must be at least 1")
            mi = cd.get("maximum_iterations")
            if isinstance(mi, dict):
                _check_ref(r.get(mi, "tensor", f"{w}.maximum_iterations", str), names, n_outputs,
                           f"{w}.maximum_iterations.tensor")
            elif mi is not None and (not isinstance(mi, int) or isinstance(mi, bool)):
                r.fail(f"{w}.maximum_iterations", "expected an integer, {\"tensor\": name} or null")

    g = Graph()
    contexts: list = [None] * len(ctx_docs)

    def context(j):
        if contexts[j] is None:
            cd = ctx_docs[j]
            outer = context(cd["outer"]) if cd["outer"] is not None else None
            if cd["kind"] == "while":
                c = WhileContext(g, outer, cd["name"], cd.get("parallel_iterations", 10))
                c.has_counter = bool(cd.get("has_counter", False))
                g._while_contexts[c.name] = c
            else:
                c = CondContext(g, outer, cd["name"], None, cd["branch"])
            contexts[j] = c
        return contexts[j]

    created: dict[str, Any] = {}
    late: list = []  # (op, input index, tensor name): inputs made by later ops (loop back edges)
    for i, od in enumerate(op_docs):
        w = f"ops[{i}]"
        name, typ = od["name"], od["type"]
        op_def = get_op_def(typ)
        inputs = r.get(od, "inputs", w, list, required=False, default=[])
        controls = r.get(od, "control_inputs", w, list, required=False, default=[])
        attrs_doc = r.get(od, "attrs", w, dict, required=False, default={})
        device = r.get(od, "device", w, str, required=False, default="")
        ctx_j = r.get(od, "context", w, (int, type(None)), required=False)
        src = r.get(od, "source", w, (dict, type(None)), required=False)
        if op_def.num_outputs is not None and n_outputs[name] != op_def.num_outputs:
            r.fail(f"{w}.outputs", f"a {typ} op has {op_def.num_outputs} output(s), the file lists {n_outputs[name]}")
        specs = []
        for k, o in enumerate(od["outputs"]):
            wo = f"{w}.outputs[{k}]"
            if not isinstance(o, dict):
                r.fail(wo, f"expected an object, got {_json_type(o)}")
            specs.append((_decode_dtype(r.get(o, "dtype", wo, str), f"{wo}.dtype"),
                          _decode_shape(o.get("shape"), f"{wo}.shape")))
        attrs = {k: decode_attr(v, f"{w}.attrs.{k}") for k, v in attrs_doc.items()}
        in_tensors, pending = [], []
        for k, ref in enumerate(inputs):
            wi = f"{w}.inputs[{k}]"
            if not isinstance(ref, str):
                r.fail(wi, f"expected a tensor name like 'add:0', got {_json_type(ref)}")
            op_name, idx = _check_ref(ref, names, n_outputs, wi)
            if op_name in created:
                in_tensors.append(created[op_name].outputs[idx])
            else:
                in_tensors.append(None)
                pending.append((k, ref))
        if pending:
            stand_in = next((t for t in in_tensors if t is not None), None)
            if stand_in is None:
                r.fail(f"{w}.inputs", "every input is made by a later op; list each op after at least one of its "
                                      "inputs (to_json writes them in creation order)")
            in_tensors = [stand_in if t is None else t for t in in_tensors]
        control_ops = []
        for k, cname in enumerate(controls):
            wc = f"{w}.control_inputs[{k}]"
            if not isinstance(cname, str):
                r.fail(wc, f"expected an op name, got {_json_type(cname)}")
            if cname not in names:
                r.fail(wc, f"no op named {cname!r}")
            if cname not in created:
                r.fail(wc, f"{cname!r} is defined later in the file (ops[{names[cname]}]); a control input must "
                           "come before the op that waits for it")
            control_ops.append(created[cname])
        if ctx_j is not None and not 0 <= ctx_j < len(ctx_docs):
            r.fail(f"{w}.context", f"{ctx_j} is not the index of a context (there are {len(ctx_docs)})")
        source = None
        if src is not None:
            source = SourceLocation(r.get(src, "file", f"{w}.source", str), r.get(src, "line", f"{w}.source", int),
                                    r.get(src, "function", f"{w}.source", str, required=False, default=""))
        ctx = context(ctx_j) if ctx_j is not None else None
        with g._control_flow_context(ctx), g.device(device):
            try:
                op = g.create_op(op_def, in_tensors, attrs, name=name, control_inputs=control_ops,
                                 output_specs=specs, source=source, capture=False)
            except GraphError as e:
                raise GraphFileError(f"{w}: {e}") from None
        if op.name != name:
            r.fail(f"{w}.name", f"{name!r} clashes with another op's name (the graph would call it {op.name!r})")
        created[name] = op
        for k, ref in pending:
            late.append((op, k, ref))
    for op, k, ref in late:
        g._update_input(op, k, g.get_tensor_by_name(_normal_ref(ref)))
    for j, c in enumerate(contexts):
        if c is None:
            continue
        cd = ctx_docs[j]
        if cd["kind"] == "cond" and cd.get("pred"):
            c.pred = g.get_tensor_by_name(_normal_ref(cd["pred"]))
        elif cd["kind"] == "while":
            mi = cd.get("maximum_iterations")
            c.maximum_iterations = g.get_tensor_by_name(_normal_ref(mi["tensor"])) if isinstance(mi, dict) else mi
            _restore_while_context(g, c)
    problems = find_problems(g)
    if problems:
        raise GraphFileError(f"the graph in the file is not valid: {problems[0]}")
    return g


def _normal_ref(ref: str) -> str:
    return ref if ":" in ref else f"{ref}:0"


def _check_ref(ref: str, names: dict, n_outputs: dict, where: str) -> tuple[str, int]:
    op_name, sep, idx = ref.rpartition(":")
    if not sep:
        op_name, idx = ref, "0"
    if op_name not in names or not idx.isdigit() or int(idx) >= n_outputs[op_name]:
        raise GraphFileError(f"{where}: no tensor named {ref!r}")
    return op_name, int(idx)


def _restore_while_context(g, c) -> None:
    """Fill a loaded WhileContext's lists from the ops built in it, as while_loop does."""
    ops = [op for op in g.get_operations() if op.ctx is c]
    c.enters = [op for op in ops if op.type == "Enter"]
    c.loop_merges = [op for op in ops if op.type == "Merge" and any(t.op.type == "NextIteration" for t in op.inputs)]
    c.next_iterations = [op for op in ops if op.type == "NextIteration"]
    loop_conds = [op for op in ops if op.type == "LoopCond"]
    c.loop_cond = loop_conds[0] if loop_conds else None
    c.switches = [op for op in ops if op.type == "Switch" and c.loop_cond is not None
                  and op.inputs[1] is c.loop_cond.outputs[0]]
    c.first_switch_true = c.switches[0].outputs[1] if c.switches else None
    c.exits = [cons for s in c.switches for cons in s.outputs[0].consumers() if cons.type == "Exit"]
