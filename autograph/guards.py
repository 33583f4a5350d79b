"""Guards for `@function`'s trace cache: the Python values a trace depended on.

A trace turns the Python values the function reads (globals, closure variables, items
and attributes of its arguments and of those globals) into graph constants, or lets
them decide the graph's shape (`if DEBUG:`). Called again after such a value changed,
the cached graph would silently compute with the old one, where Python reads the new.
So while a function is traced, a `Recorder` notes each converted function that starts
(transpiler.convert calls `note`) and snapshots the values it can read; the snapshot is
compiled into one generated `check(items)` that a later call runs before it reuses the
graph, and a failed check retraces.

What a function can read is found from its code, not by intercepting each read (which
would rewrite every name and attribute in the converted code): the globals its code
loads (nested bodies included), its closure cells and mutable defaults, the call's
arguments and the bound instance are the roots; from a root the walk follows the items
of lists, tuples and dicts, and on objects, classes and the user's modules the attribute
names the code mentions (attribute loads and string constants). That over-approximates
the reads (a path the trace did not take is guarded too, which can only cost a retrace)
and covers aliases (`cfg = CONFIG; cfg["lr"]`) and helpers given an object (`helper(p)`
reading `q.lr`). A check reads `__dict__` entries, list and dict items and cells only,
never running user code (a property's getter or `__getattr__`), so it has no effects.

Values are taken when the function that can read them starts, before its body runs:
a value the trace changes itself (`self.t += 1` at the top level) fails the next call's
check and retraces, which reads the new value as Python does.
"""
from __future__ import annotations

import builtins
import contextlib
import dis
import functools
import math
import os
import sys
import sysconfig
import threading
import types

import numpy as np

from executor import codegen
from graphcore import source_info

# numpy arrays of up to this many bytes are compared by value (a copy of their bytes);
# larger ones by identity only (comparing them on every call would cost as much as work)
ARRAY_BYTES = 1 << 16
# lists, tuples, dicts and sets of up to this many items have every item guarded; larger
# ones their identity and length (a dict also the items the code names by a constant)
ITEMS = 64
NODES = 2000  # guards per trace; beyond, the walk stops (`Recorder.truncated`)
DEPTH = 8     # attribute / item steps from a root

_PACKAGE_DIRS = tuple(os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep + p + os.sep
                      for p in ("autograph", "graphcore", "executor"))
# objects of these packages are opaque: identity only (a Tensor, a Graph, a Function)
_OPAQUE_MODULES = frozenset({"graphcore", "executor", "autograph", "numpy", "builtins", "threading", "weakref",
                             "ray", "numba"})
_LIBRARY_ROOTS = tuple(p for p in {sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("purelib"),
                                   sysconfig.get_paths().get("platlib")} if p)
_NUMERIC_KINDS = frozenset("biufcmM")
_SCALARS = (int, float, complex, str, bytes, bool, type(None))
_PLAIN_GETATTRIBUTE = frozenset({object.__getattribute__, type.__getattribute__, types.ModuleType.__getattribute__})
_SAFE_RAW = {types.MethodType: ("__self__", "__func__"), functools.partial: ("func", "args", "keywords"),
             type(os.environ): ("_data",)}  # (the environment's own dict: its items, read without effects)


class _Missing:
    """An absent global, dict key or attribute: a guard can expect one."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<absent>"


MISSING = _Missing()
_state = threading.local()  # .stack: the Recorders of the traces under way on this thread


def note(fn) -> None:
    """`fn` (a converted function) is about to run in a trace: its globals, closure and
    the attributes its code names become guards of every trace under way."""
    stack = _state.__dict__.get("stack")
    if stack:
        for recorder in stack:
            recorder.add_function(fn)


@contextlib.contextmanager
def recording(arg_names, arg_values, instance=None, instance_name: str = "self"):
    """Record the guards of one trace; the call's arguments (keyed by the trace cache
    already) and the bound instance are roots."""
    recorder = Recorder(arg_names, arg_values, instance, instance_name)
    stack = _state.__dict__.setdefault("stack", [])
    stack.append(recorder)
    try:
        yield recorder
    finally:
        stack.remove(recorder)


_GLOBAL_LOADS = ("LOAD_GLOBAL", "LOAD_NAME")
_ATTRIBUTE_LOADS = ("LOAD_ATTR", "LOAD_METHOD", "LOAD_SUPER_ATTR")
_NAME_PROBE = """
def probe(o):
    class Probe(probe_base):
        in_class = probe_class_global
        def method(self):
            return super().probe_super_method(), super().probe_super_attr
    return probe_global.probe_attr, o.probe_method()
"""


@functools.lru_cache(maxsize=4096)
def _code_info(code: types.CodeType) -> tuple[frozenset, frozenset]:
    """The global names `code` loads and the names and constants it mentions (attribute
    loads, constants: `getattr(o, "lr")` and `CONFIG["lr"]`), nested bodies included."""
    names, mentions = set(), set()
    name_args = _name_args()
    todo = [code]
    while todo:
        c = todo.pop()
        if name_args is None:
            for ins in dis.get_instructions(c):
                if ins.opname in _GLOBAL_LOADS:
                    names.add(ins.argval)
                elif ins.opname in _ATTRIBUTE_LOADS:
                    mentions.add(ins.argval)
        else:
            co_names = c.co_names
            for op, arg in _opcodes(c):
                how = name_args.get(op)
                if how is not None:
                    (names if how[1] else mentions).add(co_names[arg >> how[0]])
        consts = list(c.co_consts)
        while consts:
            k = consts.pop()
            if isinstance(k, types.CodeType):
                todo.append(k)
            elif isinstance(k, (tuple, frozenset)):
                consts.extend(k)
            elif isinstance(k, (str, int)) and not isinstance(k, bool):
                mentions.add(k)
    return frozenset(names), frozenset(mentions)


def _opcodes(code: types.CodeType):
    """(opcode, argument) of each instruction word, EXTENDED_ARG folded in: the bytecode
    read without dis, whose Instruction objects (positions, labels, argument reprs) were
    most of the cost of a first trace's guards."""
    raw = code.co_code
    extended = dis.opmap["EXTENDED_ARG"]
    high = 0
    for i in range(0, len(raw), 2):
        op, arg = raw[i], raw[i + 1] | high
        if op == extended:
            high = arg << 8
            continue
        high = 0
        yield op, arg


@functools.cache
def _name_args() -> dict | None:
    """opcode -> (shift, loads a global?) for the loads _code_info reads: the name is
    co_names[argument >> shift] (the shift differs by opcode and Python version), learned
    once from dis on a probe that uses each of them. None (read with dis) if an opcode of
    this Python is not met in the probe or no shift gives dis's name."""
    wanted = {op: name in _GLOBAL_LOADS for name in _GLOBAL_LOADS + _ATTRIBUTE_LOADS
              if (op := dis.opmap.get(name)) is not None}
    shifts: dict = {}  # opcode -> the shifts that gave dis's name at every use in the probe
    todo = [compile(_NAME_PROBE, "<guards probe>", "exec")]
    while todo:
        c = todo.pop()
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        for ins in dis.get_instructions(c):
            if ins.opcode in wanted:
                fits = {s for s in (0, 1, 2) if ins.arg >> s < len(c.co_names) and c.co_names[ins.arg >> s] == ins.argval}
                shifts[ins.opcode] = shifts.get(ins.opcode, fits) & fits
    if set(shifts) != set(wanted) or not all(shifts.values()):
        return None
    return {op: (min(fits), wanted[op]) for op, fits in shifts.items()}


def _library_file(filename: str) -> bool:
    """This project's packages (grad's wrapper), the standard library, installed packages."""
    return filename.startswith(_PACKAGE_DIRS) or filename.startswith(_LIBRARY_ROOTS) or "site-packages" in filename


def _is_user_module(m: types.ModuleType) -> bool:
    name = (getattr(m, "__name__", None) or "").split(".")[0]
    if name in _OPAQUE_MODULES or name in sys.builtin_module_names:
        return False
    f = getattr(m, "__file__", None)  # (None: made in Python, types.ModuleType("config"))
    return f is None or not (f.startswith(_LIBRARY_ROOTS) or "site-packages" in f)


def _opaque_type(t: type) -> bool:
    return (getattr(t, "__module__", None) or "builtins").split(".")[0] in _OPAQUE_MODULES


def _type_lookup(t: type, name):
    for klass in t.__mro__:
        d = klass.__dict__
        if name in d:
            return klass, d[name]
    return None, None


def _is_data_descriptor(attr) -> bool:
    t = type(attr)
    return hasattr(t, "__set__") or hasattr(t, "__delete__")


def _slot(descr, obj):
    try:
        return descr.__get__(obj, type(obj))
    except AttributeError:
        return MISSING


class _Node:
    """One value on a path from a root: how to get it from its parent, and its test."""

    __slots__ = ("index", "parent", "get", "text", "test")

    def __init__(self, index, parent, get, text, test):
        self.index, self.parent, self.get, self.text, self.test = index, parent, get, text, test


def _test(value) -> tuple:
    """How a later value is compared with this one: by value for numbers, strings, None,
    small arrays and containers of them; by identity for other objects."""
    t = type(value)
    if value is None or value is MISSING or t is bool or value is Ellipsis:
        return ("is", value)
    if t is float:
        return ("float", value)
    if t in (int, str, bytes, complex, range):
        return ("eq", t, value)
    if isinstance(value, np.generic):
        if value.dtype.kind in _NUMERIC_KINDS:
            return ("bytes", t, value.tobytes())
        return ("is", value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind in _NUMERIC_KINDS and value.nbytes <= ARRAY_BYTES:
            return ("array", t, value.shape, value.dtype, value.tobytes())
        return ("is", value)
    if isinstance(value, tuple):
        return ("tuple", t, len(value)) if len(value) <= ITEMS else ("is", value)
    if t is list:
        return ("list", value, len(value))
    if isinstance(value, dict):
        return ("dict", value, tuple(dict.keys(value)) if len(value) <= ITEMS else None, len(value))
    if isinstance(value, set):
        return ("set", value, frozenset(value) if len(value) <= ITEMS else None, len(value))
    if t is frozenset and len(value) <= ITEMS:
        return ("eq", t, value)
    return ("is", value)


class Recorder:
    """The guards of one trace, as it runs: roots, the names their code mentions, and the
    values found from them (the first found is kept: what the trace read)."""

    def __init__(self, arg_names, arg_values, instance=None, instance_name: str = "self"):
        self._roots: list = []   # (path, get, text, keyed, structural, current value)
        self._root_paths: set = set()
        self._functions: set = set()
        self._pending: list = []
        self.mentions: set = set()
        self._nodes: dict = {}
        self.unguarded: dict = {}  # text -> why: reads a check cannot repeat without effects
        self.truncated = False
        self._walked = False
        # called with each user function (not code made in the trace) as it starts, before
        # its body runs (Function._trace: the `nonlocal` / global names it assigns)
        self.on_function = None
        for i, (name, value) in enumerate(zip(arg_names, arg_values)):
            self._add_root(("arg", i), ("arg", i), name, lambda v=value: v, keyed=True, structural=True)
        if instance is not None:
            self._add_root(("const", id(instance)), ("const", instance), instance_name, lambda: instance,
                           keyed=True, structural=False)

    def _add_root(self, path, get, text, current, keyed: bool, structural: bool) -> bool:
        if path in self._root_paths:
            return False
        self._root_paths.add(path)
        self._roots.append((path, get, text, keyed, structural, current))
        return True

    def add_fed(self, path, get, text: str, value) -> None:
        """A `nonlocal` or global fed to the trace as a graph input (closure_cells): only
        its type, dtype and shape are the trace's; its value is read at each call."""
        if path not in self._nodes:
            self._nodes[path] = _Node(len(self._nodes), None, get, text,
                                      ("kind", type(value), value.dtype, np.shape(value)))

    def add_function(self, fn) -> None:
        """`fn` runs in the trace: the globals it loads, its closure cells and defaults are
        roots, the names it mentions are followed; then the roots are walked again."""
        while True:
            if isinstance(fn, (types.MethodType, staticmethod, classmethod)):
                fn = fn.__func__
            elif isinstance(fn, functools.partial):
                for v in (*fn.args, *fn.keywords.values()):
                    self._add_object_root(v, f"an argument bound by functools.partial of {fn.func!r}")
                fn = fn.func
            elif isinstance(fn, type) and not _opaque_type(fn):  # a class called: its __init__ runs
                fn = _type_lookup(fn, "__init__")[1]
            else:
                break
        if not isinstance(fn, types.FunctionType):
            return
        original = getattr(fn, "__wrapped__", None)
        if isinstance(original, types.FunctionType) and source_info.is_generated(fn.__code__.co_filename):
            # the user's code, not the converted: the same globals and cells, and the names it
            # mentions are the user's (the converted code's `names=('h', ...)` name variables)
            fn = original
        code = fn.__code__
        key = (code, tuple(map(id, fn.__closure__ or ())), id(fn.__globals__))  # (cells are kept by the roots)
        if key in self._functions:
            return
        self._functions.add(key)
        if _library_file(code.co_filename):
            return
        if self.on_function is not None and not source_info.is_generated(code.co_filename):
            self.on_function(fn)
        names, mentions = _code_info(code)
        known, first_new = len(self.mentions), len(self._roots)
        self.mentions |= mentions
        g = fn.__globals__
        for name in names:
            if name in g or name not in builtins.__dict__:
                self._add_root(("global", id(g), name), ("global", g, name), name,
                               lambda g=g, name=name: g.get(name, MISSING), keyed=False, structural=False)
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            if name != "ag__":  # (the converted code's runtime)
                self._add_root(("cell", id(cell)), ("cell", cell), name, lambda c=cell: c.cell_contents,
                               keyed=False, structural=False)
        for v in (*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()):
            self._add_object_root(v, f"a default of {fn.__qualname__}")
        # names mentioned before: walked already from the old roots
        self.walk(0 if len(self.mentions) > known or not self._walked else first_new)

    def _add_object_root(self, value, text: str) -> None:
        if not isinstance(value, _SCALARS):  # (a number held by the function cannot change)
            self._add_root(("const", id(value)), ("const", value), text, lambda: value, keyed=False, structural=False)

    def walk(self, start: int = 0) -> None:
        """Visit the roots from `start` on (values already found keep their first value)."""
        self._walked = True
        visited: set = set()
        for path, get, text, keyed, structural, current in self._roots[start:]:
            try:
                value = current()
            except ValueError:  # an empty cell: nothing the trace could read
                continue
            try:
                self._visit(path, None, get, text, value, keyed, structural, 0, visited)
            except Exception as e:  # noqa: BLE001 (an object whose len() or keys fail): what is found so far stays
                self.unguarded[text] = f"{type(e).__name__} while walking it: {e}"
        while self._pending:  # property getters found by the walk: what they read
            self.add_function(self._pending.pop())

    def _visit(self, path, parent, get, text, value, keyed, structural, depth, visited) -> None:
        node = self._nodes.get(path)
        if node is None:
            if len(self._nodes) >= NODES:
                self.truncated = True
                return
            if structural and isinstance(value, (np.ndarray, np.generic)):
                return  # a graph input, not a constant
            node = self._nodes[path] = _Node(len(self._nodes), parent, get, text,
                                             ("none",) if keyed else _test(value))
        if depth >= DEPTH or isinstance(value, _SCALARS) or isinstance(value, (np.ndarray, np.generic)):
            return
        if node.test[0] in ("is", "list", "dict", "set"):  # one object: its contents are guarded once
            if id(value) in visited:
                return
            visited.add(id(value))
        depth += 1

        def child(step, get, text, v, item: bool):
            self._visit((path, step), node, get, text, v, structural and item, structural and item, depth, visited)

        if isinstance(value, tuple):
            if len(value) <= ITEMS:
                for i, v in enumerate(value):
                    child(("item", i), ("item", i, "seq"), f"{text}[{i}]", v, True)
            return
        if type(value) is list:
            if len(value) <= ITEMS:
                for i, v in enumerate(value):
                    child(("item", i), ("item", i, "seq"), f"{text}[{i}]", v, True)
            return
        if isinstance(value, dict):
            keys = list(dict.keys(value)) if len(value) <= ITEMS else [k for k in self.mentions if k in value] + [
                b for k in self.mentions if isinstance(k, str) and (b := os.fsencode(k)) in value]  # os.environ's
            for k in keys:
                child(("item", k), ("item", k, "dict"), f"{text}[{k!r}]", dict.__getitem__(value, k), True)
            return
        raw = _SAFE_RAW.get(type(value))
        if raw is not None:
            for name in raw:
                child(("raw", name), ("raw", name), f"{text}.{name}", getattr(value, name), False)
            return
        if isinstance(value, types.ModuleType):
            if value is os and "environ" in self.mentions:  # os.environ["X"] read while tracing: a change retraces
                child(("attr", "environ"), ("attr", "environ"), f"{text}.environ", os.environ, False)
            if _is_user_module(value):
                d = value.__dict__
                for name in self.mentions:
                    if isinstance(name, str) and name in d:
                        child(("attr", name), ("attr", name), f"{text}.{name}", d[name], False)
            return
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)) or _opaque_type(type(value)):
            return
        if isinstance(value, type):
            if _opaque_type(value):
                return
            for name in self.mentions:
                if isinstance(name, str):
                    self._attribute(path, node, text, value, name, value.__dict__, child, depth, visited, cls=True)
            return
        t = type(value)
        if t.__getattribute__ not in _PLAIN_GETATTRIBUTE:
            self.unguarded[text] = f"{t.__name__} defines __getattribute__"
            return
        try:
            d = object.__getattribute__(value, "__dict__")
        except AttributeError:
            d = None
        if not isinstance(d, dict):
            d = None
        for name in self.mentions:
            if isinstance(name, str):
                self._attribute(path, node, text, value, name, d, child, depth, visited, cls=False)

    def _attribute(self, path, node, text, value, name, d, child, depth, visited, cls: bool) -> None:
        """Guard `value.name` as Python finds it: a data descriptor of the type, the
        object's own `__dict__`, else the class that defines it."""
        owner, attr = _type_lookup(type(value), name)
        if owner is not None and _is_data_descriptor(attr) and not cls:
            if isinstance(attr, types.MemberDescriptorType):  # a __slots__ entry: read without effects
                child(("slot", name), ("slot", attr), f"{text}.{name}", _slot(attr, value), False)
            elif isinstance(attr, property) and isinstance(attr.fget, types.FunctionType):
                self._pending.append(attr.fget)  # guarded through what its getter reads
            elif name != "__dict__" and name != "__weakref__":
                self.unguarded[f"{text}.{name}"] = f"a {type(attr).__name__} of {owner.__qualname__}"
            return
        if d is not None and name in d:
            child(("attr", name), ("attr", name), f"{text}.{name}", d[name], False)
            return
        look = value.__mro__[1:] if cls else type(value).__mro__
        for klass in look:
            if name in klass.__dict__:
                if _opaque_type(klass):  # object's, a library base class's: fixed
                    return
                if d is not None:  # it must stay the class's: absent from the object
                    child(("attr", name), ("attr", name), f"{text}.{name}", MISSING, False)
                cpath = ("const", id(klass))
                if cpath not in self._nodes:
                    self._nodes[cpath] = _Node(len(self._nodes), None, ("const", klass), klass.__qualname__, ("none",))
                self._visit((cpath, ("attr", name)), self._nodes[cpath], ("attr", name),
                            f"{klass.__qualname__}.{name}", klass.__dict__[name], False, False, depth, visited)
                return
        if d is not None and hasattr(type(value), "__getattr__") and not cls:
            self.unguarded[f"{text}.{name}"] = f"{type(value).__name__} defines __getattr__"

    def compile(self, name: str) -> "Guards | None":
        """The generated check, or None when the trace read nothing that can change."""
        nodes = list(self._nodes.values())
        needed = set()
        for n in nodes:
            if n.test[0] != "none":
                while n is not None and n.index not in needed:
                    needed.add(n.index)
                    n = n.parent
        nodes = [n for n in nodes if n.index in needed]
        return Guards(nodes, name, dict(self.unguarded), self.truncated) if nodes else None


_HELPERS = {"M": MISSING, "_type": type, "_len": len, "_copysign": math.copysign, "_dget": dict.get,
            "_dkeys": dict.keys, "_tuple": tuple, "_slot": _slot, "_float": float}


class Guards:
    """The compiled guards of one trace: `check(items)` is True when every value the
    trace depended on is as it was (the call's `items`: (name, value) per argument)."""

    def __init__(self, nodes: list, name: str, unguarded: dict, truncated: bool):
        self.nodes = nodes
        self.unguarded = unguarded
        self.truncated = truncated
        self._name = name
        self.check = self._build(explain=False)
        self._explain = None

    def _build(self, explain: bool):
        consts: dict = {}

        def k(obj) -> str:
            key = f"k{len(consts)}"
            consts[key] = obj
            return key

        body, dicts = [], set()
        for n in self.nodes:
            if explain:
                body.append(f"at = {n.index}")
            v = f"v{n.index}"
            p = f"v{n.parent.index}" if n.parent is not None else None
            g = n.get
            if g[0] == "arg":
                expr = f"items[{int(g[1])}][1]"
            elif g[0] == "global":
                expr = f"{k(g[1])}.get({k(g[2])}, M)"
            elif g[0] == "cell":
                expr = f"{k(g[1])}.cell_contents"
            elif g[0] == "const":
                expr = k(g[1])
            elif g[0] == "item":
                expr = f"_dget({p}, {k(g[1])}, M)" if g[2] == "dict" else f"{p}[{int(g[1])}]"
            elif g[0] == "attr":
                if p not in dicts:
                    dicts.add(p)
                    body.append(f"d{p} = {p}.__dict__")
                expr = f"d{p}.get({k(g[1])}, M)"
            elif g[0] == "slot":
                expr = f"_slot({k(g[1])}, {p})"
            else:  # "raw": a C-level attribute of a bound method or partial, in _SAFE_RAW
                expr = f"{p}.{g[1]}"
            body.append(f"{v} = {expr}")
            cond = self._condition(n.test, v, k)
            if cond is not None:
                body.append(f"if not ({cond}): return {f'({n.index}, {v})' if explain else 'False'}")
        names = ", ".join([*_HELPERS, *consts])
        fail = "(at, None)" if explain else "False"
        src = "\n".join([f"def make({names}):", "    def check(items):",
                         *(["        at = -1"] if explain else []), "        try:",
                         *(f"            {line}" for line in body),
                         "        except Exception:", f"            return {fail}",
                         f"        return {'None' if explain else 'True'}", "    return check"])
        make = codegen.compile_function(src + "\n", "make", {}, "guards of", self._name)  # (names, no user text)
        return make(*_HELPERS.values(), *consts.values())

    @staticmethod
    def _condition(test, v, k) -> str | None:
        kind = test[0]
        if kind == "none":
            return None
        if kind == "is":
            return f"{v} is {k(test[1])}"
        if kind == "float":
            x = test[1]
            if x != x:
                return f"_type({v}) is _float and {v} != {v}"
            if x == 0.0:  # -0.0 == 0.0, but 1 / x and copysign tell them apart
                return f"_type({v}) is _float and {v} == 0.0 and _copysign(1.0, {v}) == {math.copysign(1.0, x)!r}"
            return f"_type({v}) is _float and {v} == {k(x)}"
        if kind == "eq":
            return f"_type({v}) is {k(test[1])} and {v} == {k(test[2])}"
        if kind == "bytes":  # a numpy scalar: its bits (nan equals nan, -0.0 is not 0.0)
            return f"_type({v}) is {k(test[1])} and {v}.tobytes() == {k(test[2])}"
        if kind == "array":
            return (f"_type({v}) is {k(test[1])} and {v}.shape == {k(test[2])} and {v}.dtype == {k(test[3])} "
                    f"and {v}.tobytes() == {k(test[4])}")
        if kind == "kind":  # a fed value: its type, dtype and shape
            return f"_type({v}) is {k(test[1])} and {v}.dtype == {k(test[2])} and {v}.shape == {k(test[3])}"
        if kind == "tuple":
            return f"_type({v}) is {k(test[1])} and _len({v}) == {int(test[2])}"
        if kind == "list":
            return f"{v} is {k(test[1])} and _len({v}) == {int(test[2])}"
        if kind == "dict":
            if test[2] is not None:
                return f"{v} is {k(test[1])} and _tuple(_dkeys({v})) == {k(test[2])}"
            return f"{v} is {k(test[1])} and _len({v}) == {int(test[3])}"
        if kind == "set":
            if test[2] is not None:
                return f"{v} is {k(test[1])} and {v} == {k(test[2])}"
            return f"{v} is {k(test[1])} and _len({v}) == {int(test[3])}"
        raise AssertionError(kind)

    def explain(self, items) -> tuple[str, object] | None:
        """The first guard that fails for these arguments, as (what, its value now)."""
        if self._explain is None:
            self._explain = self._build(explain=True)
        hit = self._explain(items)
        if hit is None:
            return None
        index, value = hit
        node = next((n for n in self.nodes if n.index == index), None)
        return (node.text if node is not None else "?"), value

    def describe(self) -> list[str]:
        """One line per guard (for debugging: what a change of retraces)."""
        out = []
        for n in self.nodes:
            t = n.test
            if t[0] == "none":
                continue
            if t[0] == "is":
                what = "is absent" if t[1] is MISSING else f"is {_short(t[1])}"
            elif t[0] in ("float", "eq"):
                what = f"== {_short(t[-1])}"
            elif t[0] == "bytes":
                what = f"== {_short(np.frombuffer(t[2], dtype=np.dtype(t[1]))[0])}"
            elif t[0] == "array":
                what = f"== the {t[3]}{list(t[2])} array it held"
            elif t[0] == "tuple":
                what = f"is a {t[1].__name__} of {t[2]}"
            elif t[0] == "kind":
                what = f"is a {t[1].__name__} of {t[2]}{list(t[3])} (fed at each call)"
            else:
                what = f"is the same {t[0]}, unchanged"
            out.append(f"{n.text} {what}")
        return out


def _short(v) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."
