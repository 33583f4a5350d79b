"""A mutation tester for graph files: break valid files in seeded random ways and check
that `Graph.from_json` answers each with GraphFileError, or loads a graph that validates,
prints, saves again and runs to a value or a normal graphcore error (under a deadline).

    python tests/graphcore/graph_file_mutations.py [COUNT] [--first SEED]

prints how many mutants were rejected, loaded, and how many broke the rule, by exception.
"""
from __future__ import annotations

import copy
import importlib.util
import json
import os
import random
import sys
import threading
from collections import Counter
from dataclasses import dataclass

import numpy as np

import graphcore as gc
from executor import Session, blas
from graphcore.eager import Runtime
from graphcore.errors import AutographError, GraphFileError
from graphcore.registry import registered_ops

DRAWS = importlib.util.find_spec("graphviz") is not None  # pictures too, where the package is installed
RUN_TIMEOUT = 0.5   # seconds: a mutant may well loop forever
MAX_FEED_ELEMENTS = 10_000


# -- valid files to start from ---------------------------------------------------------------

@dataclass
class Seed:
    name: str
    text: str
    feeds: dict       # tensor name -> value
    fetches: list     # tensor names


def _seed(name: str, g: gc.Graph, feeds: dict, fetches) -> Seed:
    return Seed(name, g.to_json(), {k: np.asarray(v) for k, v in feeds.items()}, [t.name for t in fetches])


def _cond_graph() -> Seed:
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = gc.placeholder(gc.float64, [3], name="y")
        r = gc.cond(x < 2.0, lambda: x + 1.0, lambda: x * x)
        m = gc.constant(np.array([[np.nan, np.inf], [-np.inf, 0.5]], np.float32)) * 1.0
        c = gc.case([(x > 5.0, lambda: y * 2.0), (x > 1.0, lambda: y + x)], default=lambda: y)
        with g.control_dependencies([r]):
            w = gc.identity(y[1:], name="w")
    return _seed("cond", g, {"x:0": 1.5, "y:0": [1.0, 2.0, 3.0]}, [r, m, c, w])


def _while_graph() -> Seed:
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        a, b, i = gc.while_loop(lambda a, b, i: i < n, lambda a, b, i: (b, a + b, i + 1),
                                [np.float64(1), np.float64(1), np.int64(1)], maximum_iterations=50)
    return _seed("while", g, {"n:0": 10}, [a, b, i])


def _nested_graph() -> Seed:
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def outer(k, acc):
            j = gc.while_loop(lambda j: j < k + 2, lambda j: j + 1, [k])
            acc = gc.cond(gc.equal(k % 2, 0), lambda: acc + j, lambda: acc - 1)
            return k + 1, acc

        k, acc = gc.while_loop(lambda k, acc: k < n, outer, [np.int64(0), np.int64(0)], parallel_iterations=3)
    return _seed("nested", g, {"n:0": 4}, [k, acc])


def _gradient_graph() -> Seed:
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        _, y = gc.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, gc.tanh(v * x)), [0, 1.0])
        dx = gc.gradients(y, [x])[0]
    return _seed("gradient", g, {"x:0": 0.7}, [y, dx])


def _autograph_graph() -> Seed:
    import autograph  # noqa: PLC0415 (only this seed needs the converter)

    def collatz(n):
        steps = 0
        while n != 1:
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            steps += 1
        return steps

    cf = autograph.function(collatz).get_concrete_function(np.int64(7))
    return _seed("autograph", cf.graph, {cf.inputs[0].name: np.int64(7)}, [cf.structured_outputs])


def _collatz(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def _rnn(h, w, b, n):
    i = 0
    while i < n:
        h = np.tanh(h @ w + b) * 0.5 + h
        i += 1
    return h


def _optimized_seed(name: str, fn, args, **options) -> Seed:
    """The graph a call runs (optimized; with `jit_compile`, its loops compiled), as a file."""
    import autograph  # noqa: PLC0415 (only these seeds need the converter)

    cf = autograph.function(fn, **options).get_concrete_function(*args)
    cf.optimize()
    return _seed(name, cf.graph, {t.name: v for t, v in zip(cf.inputs, args)}, cf.outputs)


def _placed_graph() -> Seed:
    """Ops placed on two devices: a Session with devices partitions it (_Send/_Recv)."""
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        with g.device("/cpu:0"):
            x = gc.constant(np.float64(1.5)) * 2.0
        with g.device("/cpu:1"):
            _, y = gc.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * x), [np.int64(0), np.float64(1.0)])
    return _seed("devices", g, {"n:0": 3}, [y])


SEED_NAMES = ["cond", "while", "nested", "gradient", "autograph", "jit", "numba", "fused", "devices"]


def seeds() -> list[Seed]:
    """Valid files of every kind: traced, optimized (fused), compiled loops (Python and
    numba), placed on devices. Each kind's generated code is built from a loaded file."""
    out = [_cond_graph(), _while_graph(), _nested_graph(), _gradient_graph(), _autograph_graph(),
           _optimized_seed("jit", _collatz, (np.int64(7),), jit_compile=True)]
    if importlib.util.find_spec("numba") is not None:
        out.append(_optimized_seed("numba", _collatz, (np.int64(7),), jit_compile="numba"))
    rnn_args = (np.ones((1, 3)), np.eye(3) * 0.1, np.ones(3) * 0.2, np.int64(4))
    return out + [_optimized_seed("fused", _rnn, rnn_args), _placed_graph()]


# -- mutations ------------------------------------------------------------------------------------
# Each takes the parsed document and a Random and changes the document in place. A value
# that json cannot write (a 5,000-digit number, 100,000 nested lists) is put in as a
# marker that `mutate` replaces in the text.

_RAW = "\x00raw{}\x00"


class _Raws:
    def __init__(self):
        self.texts: list[str] = []

    def __call__(self, text: str) -> str:
        self.texts.append(text)
        return _RAW.format(len(self.texts) - 1)


def _slots(node, out):
    """Every (container, key) in the document."""
    if isinstance(node, dict):
        for k, v in node.items():
            out.append((node, k))
            _slots(v, out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.append((node, i))
            _slots(v, out)
    return out


def _ops(doc) -> list:
    ops = doc.get("ops") if isinstance(doc, dict) else None
    return [o for o in ops if isinstance(o, dict)] if isinstance(ops, list) else []


def _op_names(doc) -> list[str]:
    return [o["name"] for o in _ops(doc) if isinstance(o.get("name"), str)] or ["x"]


def _any_slot(doc, rng):
    slots = _slots(doc, [])
    return rng.choice(slots) if slots else None


def _op_slot(doc, rng, key=None):
    """A slot inside a random op (inside its `key` when given)."""
    ops = _ops(doc)
    if not ops:
        return None
    op = rng.choice(ops)
    root = op.get(key) if key else op
    slots = _slots(root, []) if key and isinstance(root, (dict, list)) else []
    if key and not slots:
        return (op, key)
    return rng.choice(slots or [(op, k) for k in op])


OTHER_VALUES = [None, True, False, 0, -1, 1, 1.5, -0.0, "", "x", "Add:0", [], {}, [1, 2], [[]], {"a": 1},
                {"tensor": "x:0"}, [None], ["x:0", "x:0"]]
HUGE_NUMBERS = ["18446744073709551616", "9223372036854775808", "-9223372036854775809", "1" * 5000, "1e309",
                "-1e309", "NaN", "Infinity", "-Infinity", "2147483648", "4294967296", "-1", "1e-400", "1.0"]
BAD_DTYPES = ["float128", "complex64", "str", "object", "int8", "uint64", "", "Float32", "variant", "bool",
              "float16", "V8", "<f8", "f8", "datetime64", "O", "U3", "S1", None, 3, ["float64"]]
BAD_REFS = ["nope:0", "{op}:99", "{op}:-1", "{op}:", ":0", "{op}:1e3", "{op}:0:0", "{op}", "", "{op}:²",
            "{op}:٣", "{op}: 0", "{op}:+0", "{op}:00", "{op}:" + "9" * 30, "{op}:0\n", "{op} :0"]
BAD_NAMES = ["", "a:b", "a b", "x" * 10000, "../x", "while/Merge", "while", "Add", "ñ", "\u0000", "a/", "/a",
             "_", "-x", "x:0"]
CODE = ["__import__('os').system('echo pwned')", "os.system", "eval", "exec('1')", "lambda: 0",
        "!!python/object/apply:os.system", "numpy.load"]


def _bad_attr_values(rng) -> list:
    big = 2 ** 64
    return [
        {"ndarray": {"dtype": "float64", "shape": [2], "data": [1.0]}},
        {"ndarray": {"dtype": "float64", "shape": [big], "data": []}},
        {"ndarray": {"dtype": "float64", "shape": [big, 0], "data": []}},
        {"ndarray": {"dtype": "float64", "shape": [0, big], "data": []}},
        {"ndarray": {"dtype": "int8", "shape": [1], "data": [1000]}},
        {"ndarray": {"dtype": "bool", "shape": [1], "data": [1]}},
        {"ndarray": {"dtype": "float64", "shape": [1], "data": [[1.0]]}},
        {"ndarray": {"dtype": "float64", "shape": -1, "data": []}},
        {"ndarray": {"dtype": "float64", "shape": [1], "data": ["1"]}},
        {"ndarray": {"dtype": "float64", "shape": [1], "data": [{"float": "nan"}]}},
        {"ndarray": {"dtype": "int64", "shape": [1], "data": [big]}},
        {"ndarray": {"dtype": "object", "shape": [1], "data": [1]}},
        {"ndarray": {"dtype": "float64", "shape": [1, 1], "data": [1.0], "extra": 1}},
        {"ndarray": []},
        {"scalar": {"dtype": "int8", "value": 1000}},
        {"scalar": {"dtype": "float32", "value": 1e300}},
        {"scalar": {"dtype": "uint8", "value": -1}},
        {"scalar": {"dtype": "int64", "value": "1"}},
        {"scalar": {"dtype": "float64"}},
        {"scalar": 1},
        {"tuple": 3}, {"tuple": [{"tuple": {}}]}, {"tuple": []}, {"tuple": [1, "a", None]},
        {"dict": []}, {"dict": {"a": {"dtype": "nope"}}}, {"dict": {}},
        {"tensor_list": {}}, {"tensor_list": [1, {"ndarray": 1}]}, {"tensor_list": []},
        {"float": "NaN"}, {"float": 1}, {"float": "inf"},
        {"shape": [-1]}, {"shape": [big]}, {"shape": "3"}, {"shape": [1.5]}, {"shape": [True]}, {"shape": None},
        {"dtype": "nope"}, {"dtype": 1}, {"dtype": "float64"}, {"dtype": "int32"}, {"dtype": "variant"},
        {}, {"a": 1, "b": 2}, {"unknown": 1}, ["a", {"dtype": "int32"}], [[[]]],
        {"ndarray": {"dtype": "bool", "shape": [2], "data": [True, False]}},
        {"ndarray": {"dtype": "float64", "shape": [2, 2], "data": [1.0, 2.0, 3.0, 4.0]}},
        {"ndarray": {"dtype": "int64", "shape": [0], "data": []}},
        rng.choice(OTHER_VALUES), rng.choice(CODE), big, -big, 10 ** 30, -1, 0, 2, 1e308,
    ]


def m_delete_key(doc, rng, raw):
    dicts = [c for c, _ in _slots(doc, []) if isinstance(c, dict)] + [doc]
    d = rng.choice([d for d in dicts if isinstance(d, dict) and d] or [{}])
    if d:
        del d[rng.choice(list(d))]


def m_change_type(doc, rng, raw):
    s = _op_slot(doc, rng) if rng.random() < 0.7 else _any_slot(doc, rng)
    if s:
        s[0][s[1]] = copy.deepcopy(rng.choice(OTHER_VALUES))


def m_huge_number(doc, rng, raw):
    s = _op_slot(doc, rng, rng.choice(["outputs", "attrs", "inputs", None])) if rng.random() < 0.7 \
        else _any_slot(doc, rng)
    if s:
        s[0][s[1]] = raw(rng.choice(HUGE_NUMBERS))


def m_deep_nesting(doc, rng, raw):
    s = _any_slot(doc, rng)
    if s:
        n = rng.choice([50, 1000, 100_000])
        text = "[" * n + "]" * n if rng.random() < 0.6 else '{"a": ' * n + "1" + "}" * n
        if rng.random() < 0.3:
            text = '{"tuple": ' * n + "[]" + "}" * n
        s[0][s[1]] = raw(text)


def m_wrong_arity(doc, rng, raw):
    ops = _ops(doc)
    if not ops:
        return
    op = rng.choice(ops)
    key = rng.choice(["inputs", "inputs", "outputs", "control_inputs"])
    lst = op.get(key)
    if not isinstance(lst, list):
        return
    how = rng.choice(["drop", "add", "clear", "double"])
    if how == "drop" and lst:
        del lst[rng.randrange(len(lst))]
    elif how == "add":
        lst.append(copy.deepcopy(rng.choice(lst)) if lst else f"{rng.choice(_op_names(doc))}:0")
    elif how == "clear":
        lst.clear()
    else:
        lst.extend(copy.deepcopy(lst))


def m_swap_inputs(doc, rng, raw):
    ops = [o for o in _ops(doc) if isinstance(o.get("inputs"), list) and o["inputs"]]
    if len(ops) < 1:
        return
    a = rng.choice(ops)
    if len(a["inputs"]) > 1 and rng.random() < 0.5:
        a["inputs"].reverse()
    else:
        b = rng.choice(ops)
        a["inputs"], b["inputs"] = b["inputs"], a["inputs"]


def m_bad_dtype(doc, rng, raw):
    ops = _ops(doc)
    if not ops:
        return
    op = rng.choice(ops)
    outs = op.get("outputs")
    bad = rng.choice(BAD_DTYPES)
    if isinstance(outs, list) and outs and isinstance(outs[0], dict) and rng.random() < 0.5:
        rng.choice(outs)["dtype"] = bad
        return
    for c, k in _slots(op, []):
        if k == "dtype":
            c[k] = bad
            return


def m_bad_attr(doc, rng, raw):
    ops = [o for o in _ops(doc) if isinstance(o.get("attrs"), dict)]
    if not ops:
        return
    # the control-flow primitives' attrs are what the executor reads most
    cf = [o for o in ops if o.get("type") in ("Enter", "Merge", "Switch", "Exit", "NextIteration")]
    op = rng.choice(cf if cf and rng.random() < 0.5 else ops)
    attrs = op["attrs"]
    how = rng.random()
    if how < 0.1 and attrs:
        del attrs[rng.choice(list(attrs))]
    elif how < 0.2:
        attrs[rng.choice(["frame_name", "is_constant", "parallel_iterations", "extra", "dtype", "value"])] = \
            copy.deepcopy(rng.choice(_bad_attr_values(rng)))
    elif attrs:
        attrs[rng.choice(list(attrs))] = copy.deepcopy(rng.choice(_bad_attr_values(rng)))


def m_bad_ref(doc, rng, raw):
    ops = _ops(doc)
    if not ops:
        return
    ref = rng.choice(BAD_REFS).format(op=rng.choice(_op_names(doc)))
    op = rng.choice(ops)
    where = rng.random()
    if where < 0.6 and isinstance(op.get("inputs"), list) and op["inputs"]:
        op["inputs"][rng.randrange(len(op["inputs"]))] = ref
    elif where < 0.8 and isinstance(op.get("control_inputs"), list):
        op["control_inputs"].append(ref.split(":")[0] if rng.random() < 0.5 else ref)
    else:
        ctxs = [c for c in doc.get("contexts") or [] if isinstance(c, dict)]
        if ctxs:
            c = rng.choice(ctxs)
            if "pred" in c:
                c["pred"] = ref
            else:
                c["maximum_iterations"] = {"tensor": ref}


def m_cycle(doc, rng, raw):
    """An edge from an op to itself or to an earlier op: a cycle that is no loop."""
    ops = _ops(doc)
    if len(ops) < 2:
        return
    i = rng.randrange(len(ops))
    j = rng.randrange(i, len(ops))
    src = ops[j]
    outs = src.get("outputs")
    n = len(outs) if isinstance(outs, list) and outs else 1
    if rng.random() < 0.7 and isinstance(ops[i].get("inputs"), list) and ops[i]["inputs"]:
        ops[i]["inputs"][rng.randrange(len(ops[i]["inputs"]))] = f"{src.get('name')}:{rng.randrange(n)}"
    elif isinstance(ops[i].get("control_inputs"), list):
        ops[i]["control_inputs"].append(src.get("name"))


def m_names(doc, rng, raw):
    ops = _ops(doc)
    if not ops:
        return
    op = rng.choice(ops)
    op["name"] = rng.choice(_op_names(doc)) if rng.random() < 0.5 else rng.choice(BAD_NAMES)


def m_context(doc, rng, raw):
    ctxs = doc.get("contexts") if isinstance(doc, dict) else None
    n = len(ctxs) if isinstance(ctxs, list) else 0
    if rng.random() < 0.5 or not n:
        ops = _ops(doc)
        if ops:
            rng.choice(ops)["context"] = rng.choice([None, -1, n, n + 5, 0, rng.randrange(max(n, 1)), "0", 0.0])
        return
    c = ctxs[rng.randrange(n)]
    if not isinstance(c, dict):
        return
    key, values = rng.choice([
        ("kind", ["while", "cond", "loop", None]), ("outer", [None, -1, 0, n - 1, n, "0"]),
        ("branch", [0, 1, 2, -1, True, None]), ("parallel_iterations", [0, -1, 1, 2 ** 64, 10 ** 9, "10", None]),
        ("maximum_iterations", [None, -1, 0, 1, 2 ** 64, "5", {"tensor": 3}, {}, {"tensor": "n:0", "x": 1}]),
        ("has_counter", [True, False, "yes", 1, None]), ("name", ["", "while", "cond", None, 3]),
        ("pred", [None, "x:0", 3, ""])])
    c[key] = copy.deepcopy(rng.choice(values))


def m_reorder(doc, rng, raw):
    ops = doc.get("ops") if isinstance(doc, dict) else None
    if isinstance(ops, list) and len(ops) > 1:
        op = ops.pop(rng.randrange(len(ops)))
        ops.insert(rng.randrange(len(ops) + 1), op)
    if rng.random() < 0.2 and isinstance(ops, list):
        rng.shuffle(ops)


def m_delete_op(doc, rng, raw):
    ops = doc.get("ops") if isinstance(doc, dict) else None
    if isinstance(ops, list) and ops:
        del ops[rng.randrange(len(ops))]


def m_duplicate_op(doc, rng, raw):
    ops = doc.get("ops") if isinstance(doc, dict) else None
    if isinstance(ops, list) and ops:
        op = copy.deepcopy(rng.choice(ops))
        if isinstance(op, dict) and rng.random() < 0.5:
            op["name"] = f"{op.get('name')}_copy"
        ops.insert(rng.randrange(len(ops) + 1), op)


_TYPES = sorted(registered_ops())
_CONTROL_FLOW = ["Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond", "Identity"]


def m_op_type(doc, rng, raw):
    ops = _ops(doc)
    if ops:
        rng.choice(ops)["type"] = rng.choice(_CONTROL_FLOW if rng.random() < 0.5 else _TYPES + ["Nope", ""])


def m_code_strings(doc, rng, raw):
    strings = [(c, k) for c, k in _slots(doc, []) if isinstance(c[k], str)]
    if strings:
        c, k = rng.choice(strings)
        c[k] = rng.choice(CODE)


def m_source(doc, rng, raw):
    ops = _ops(doc)
    if ops:
        rng.choice(ops)["source"] = copy.deepcopy(rng.choice([
            {"file": 3, "line": 1}, {"file": "f.py", "line": "1"}, {"file": "f.py", "line": 2 ** 64},
            {"file": "f.py"}, {"file": "f.py", "line": 1, "function": None}, [], "f.py:1", None]))


def m_top_level(doc, rng, raw):
    if not isinstance(doc, dict):
        return
    key, values = rng.choice([
        ("version", [2, 0, "1", 1.0, True, None, raw("1" * 5000)]),
        ("format", ["autograph-graph ", "", None, 1]), ("ops", [{}, None, [], [[]], [None]]),
        ("contexts", [{}, None, [None], [[]], [{}]]), ("extra", [1])])
    doc[key] = values if isinstance(values, str) else copy.deepcopy(rng.choice(values))


MUTATIONS = [m_delete_key, m_change_type, m_huge_number, m_deep_nesting, m_wrong_arity, m_swap_inputs, m_bad_dtype,
             m_bad_attr, m_bad_attr, m_bad_ref, m_cycle, m_names, m_context, m_reorder, m_delete_op,
             m_duplicate_op, m_op_type, m_code_strings, m_source, m_top_level]


def mutate(text: str, rng: random.Random) -> tuple[str | bytes, list[str]]:
    """1 to 3 random mutations of the document; sometimes the text itself is cut or garbled."""
    doc = json.loads(text)
    raws = _Raws()
    names = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        m = rng.choice(MUTATIONS)
        names.append(m.__name__[2:])
        m(doc, rng, raws)
    out = json.dumps(doc)
    for i, raw in enumerate(raws.texts):
        out = out.replace(json.dumps(_RAW.format(i)), raw)
    r = rng.random()
    if r < 0.03:
        names.append("truncate")
        return out[:rng.randrange(len(out))], names
    if r < 0.05:
        names.append("garbage bytes")
        data = bytearray(out.encode())
        for _ in range(rng.randint(1, 5)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data), names
    return out, names


# -- the rule ------------------------------------------------------------------------------------

class CodeExecuted(BaseException):
    """Raised by the audit hook when loading a file would run code or touch the system."""


_loading = threading.local()
_FORBIDDEN = ("exec", "compile", "pickle.find_class", "os.system", "subprocess.Popen", "os.exec", "os.posix_spawn",
              "os.spawn", "ctypes.dlopen", "open", "socket.connect", "marshal.loads")
_hook_installed = False


# while a loaded graph runs: the engines compile code of their own (compiled loops, fused
# kernels, handlers) and import modules lazily, but nothing may reach the system
_FORBIDDEN_AT_RUN = tuple(e for e in _FORBIDDEN if e not in ("exec", "compile", "open", "marshal.loads"))


def _audit(event: str, args) -> None:
    if getattr(_loading, "active", False) and event in _FORBIDDEN:
        _loading.active = False
        raise CodeExecuted(f"loading a graph file raised the audit event {event!r} {args!r:.200}")
    if getattr(_loading, "running", False) and event.startswith(_FORBIDDEN_AT_RUN):
        _loading.running = False
        raise CodeExecuted(f"running a loaded graph raised the audit event {event!r} {args!r:.200}")


def install_audit_hook(seeds_: list[Seed]) -> None:
    """Load each seed once (the loader's lazy imports read .pyc files), then watch every
    later load. Python keeps an audit hook for the life of the process: install it once."""
    global _hook_installed
    if not _hook_installed:
        for seed in seeds_:
            gc.Graph.from_json(seed.text)
        blas.threads()  # (threadpoolctl opens the BLAS library once, on first use)
        sys.addaudithook(_audit)
        _hook_installed = True


@dataclass
class Outcome:
    kind: str            # "rejected", "ran", "run error", "deadline", "broken"
    stage: str = ""      # for "broken": load, validate, print, save, run
    error: BaseException | None = None

    def describe(self) -> str:
        e = self.error
        return f"{self.kind} at {self.stage}: {type(e).__name__}: {str(e)[:300]}" if e else self.kind


def load(text):
    """Graph.from_json under the audit hook (see install_audit_hook)."""
    _loading.active = True
    try:
        return gc.Graph.from_json(text)
    finally:
        _loading.active = False


def _feeds(g: gc.Graph, seed: Seed) -> dict | None:
    feeds = {}
    for op in g.get_operations():
        if op.type != "Placeholder" or len(op.outputs) != 1:
            continue
        t = op.outputs[0]
        if t.name in seed.feeds:
            feeds[t] = seed.feeds[t.name]
            continue
        np_dtype = t.dtype.np_dtype
        dims = t.shape.dims
        shape = [2 if d is None else d for d in dims] if dims is not None else []
        if np_dtype is None or int(np.prod(shape, dtype=np.float64)) > MAX_FEED_ELEMENTS:
            return None
        feeds[t] = np.full(shape, 2, np_dtype)
    return feeds


def check(text, seed: Seed, threads: int = 1) -> Outcome:
    """What became of one mutated file; "broken" breaks the rule."""
    try:
        g = load(text)
    except GraphFileError:
        return Outcome("rejected")
    except (Exception, RecursionError, CodeExecuted) as e:  # noqa: BLE001 (what the tester reports)
        return Outcome("broken", "load", e)
    stage = "validate"
    try:
        g.validate()
        stage = "print"
        str(g)
        if DRAWS:
            g.to_dot()
        stage = "save"
        load(g.to_json())
    except (Exception, CodeExecuted) as e:  # noqa: BLE001
        return Outcome("broken", stage, e)
    fetches = [n for n in seed.fetches if _has_tensor(g, n)]
    feeds = _feeds(g, seed)
    if not fetches or feeds is None:
        return Outcome("ran")
    devices = sorted({op.device for op in g.get_operations() if op.device}) or None
    _loading.running = True
    try:
        Session(g, num_threads=threads, runtime=Runtime(), devices=devices).run(fetches, feeds, timeout=RUN_TIMEOUT)
    except gc.DeadlineExceededError:
        return Outcome("deadline")
    except AutographError:
        return Outcome("run error")
    except (Exception, CodeExecuted) as e:  # noqa: BLE001
        return Outcome("broken", "run", e)
    finally:
        _loading.running = False
    return Outcome("ran")


def _has_tensor(g: gc.Graph, name: str) -> bool:
    try:
        g.get_tensor_by_name(name)
    except gc.GraphError:
        return False
    return True


def mutant(seeds_: list[Seed], number: int) -> tuple[Seed, str | bytes, list[str], int]:
    """Mutant `number`: its seed graph, text, mutation names and thread count (all from `number`)."""
    rng = random.Random(number)
    seed = seeds_[number % len(seeds_)]
    text, names = mutate(seed.text, rng)
    return seed, text, names, rng.choice([1, 1, 2])


def main(argv=None) -> None:
    import argparse  # noqa: PLC0415
    import contextlib  # noqa: PLC0415
    import time  # noqa: PLC0415

    ap = argparse.ArgumentParser()
    ap.add_argument("count", type=int, nargs="?", default=5000)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--show", type=int, default=5, help="examples to print per exception type")
    args = ap.parse_args(argv)
    np.seterr(all="ignore")
    all_seeds = seeds()
    install_audit_hook(all_seeds)
    kinds: Counter = Counter()
    broken: dict[str, list] = {}
    t0 = time.perf_counter()
    with open(os.devnull, "w") as null:
        for number in range(args.first, args.first + args.count):
            seed, text, names, threads = mutant(all_seeds, number)
            with contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
                out = check(text, seed, threads)
            kinds[out.kind] += 1
            if out.kind == "broken":
                key = f"{out.stage}: {type(out.error).__name__}"
                broken.setdefault(key, []).append((number, seed.name, names, out))
    took = time.perf_counter() - t0
    print(f"{args.count} mutants in {took:.1f} s: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    for key, cases in sorted(broken.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(cases):5d}  {key}")
        for number, seed_name, names, out in cases[:args.show]:
            print(f"         #{number} {seed_name} {'+'.join(names)}: {str(out.error)[:160]!r}")


if __name__ == "__main__":
    main()
