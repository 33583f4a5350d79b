"""Op attributes are declared on each op type and a graph file's attributes are checked
against them when it is read: a compiled loop or fused op whose attributes carry code,
a wrong index or a wrong type is a GraphFileError naming the op and attribute, before
any of the engines' code generators sees it."""
import copy
import inspect
import json
import os

import numpy as np
import pytest

import autograph
import graphcore as gc
from graphcore.attr_schema import AttrError
from graphcore.ops.logging_ops import print_op
from graphcore.ops.math_ops import python_arith_op
from graphcore.registry import registered_ops
from samples import available_samples

_NUMPY_KWARGS = {"casting", "dtype", "order", "signature", "subok", "where", "out", "shape", "device"}


def _keyword_attrs(op_def) -> set[str]:
    """The attribute names an op's kernel and shape rule take by keyword: keyword-only
    parameters, and defaulted ones both of them take (inputs with defaults are not attrs)."""
    per_fn = []
    for fn in (op_def.kernel, op_def.shape_fn):
        if fn is None or isinstance(fn, np.ufunc) or not getattr(fn, "__module__", "").startswith(
                ("graphcore", "executor", "autograph")):
            continue
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            continue
        per_fn.append(({p.name for p in params if p.kind == p.KEYWORD_ONLY},
                       {p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD and p.default is not p.empty}))
    names = set().union(*(kw for kw, _ in per_fn)) if per_fn else set()
    if len(per_fn) == 2:
        names |= per_fn[0][1] & per_fn[1][1]
    return names - _NUMPY_KWARGS


@pytest.mark.parametrize("op_type", sorted(registered_ops()))
def test_every_attribute_an_op_takes_is_declared(op_type):
    op_def = registered_ops()[op_type]
    missing = _keyword_attrs(op_def) - set(op_def.attrs or {})
    assert not missing, f"{op_type} takes {sorted(missing)} but does not declare them (define_op(..., attrs=...))"


def _graphs():
    """(name, graph) of what the samples run: traced and optimized, compiled to Python and numba."""
    for s in available_samples():
        for jit in (False, True, "numba"):
            cf = autograph.function(s.python_function, jit_compile=jit).get_concrete_function(*s.examples[0])
            cf.optimize()
            yield f"{s.name}-{jit}", cf.graph


def test_every_graph_the_samples_run_passes_its_schemas_and_loads_back():
    kinds = set()
    for name, g in _graphs():
        for op in g.get_operations():
            op.op_def.check_attrs(op.attrs)
            kinds.add(op.type)
        text = g.to_json()
        assert gc.Graph.from_json(text).to_json() == text, name
    assert {"CompiledLoop", "Fused", "StridedSlice", "Print", "Enter"} <= kinds  # what this test must cover


# -- attack shapes: code where data belongs ---------------------------------------------------

CODE = "0 if __import__('os').system('touch PWNED') is None else 0"


def _jit_doc(backend=True):
    def collatz(n):
        steps = 0
        while n != 1:
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            steps += 1
        return steps

    cf = autograph.function(collatz, jit_compile=backend).get_concrete_function(np.int64(7))
    cf.optimize()
    return json.loads(cf.graph.to_json())


def _fused_doc():
    def f(h, w, b):
        return np.tanh(h @ w + b) * 0.5 + h

    cf = autograph.function(f).get_concrete_function(np.ones((1, 3)), np.eye(3), np.ones(3))
    cf.optimize()
    return json.loads(cf.graph.to_json())


def _op(doc, type_):
    return next((i, o) for i, o in enumerate(doc["ops"]) if o["type"] == type_)


def _steps(attrs, key):
    return attrs[key]["tuple"]


def _load_error(doc, tmp_path, monkeypatch) -> str:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(gc.GraphFileError) as e:
        gc.Graph.from_json(json.dumps(doc))
    assert not os.path.exists("PWNED")
    return str(e.value)


def _tup(*items):
    return {"tuple": list(items)}


@pytest.fixture(scope="module")
def jit_doc():
    return _jit_doc()


def _mutated(doc, change):
    doc = copy.deepcopy(doc)
    i, op = _op(doc, "CompiledLoop")
    change(op["attrs"])
    return doc, i


def _first_step(attrs, key="body_steps", type_=None):
    steps = _steps(attrs, key)
    return next(s["tuple"] for s in steps if type_ is None or s["tuple"][0] == type_)


ATTACKS = {
    "exits": (lambda a: a.update(exits=_tup(CODE)), "exits[0]: expected an int64, got the string"),
    "nexts": (lambda a: a.update(nexts=_tup(CODE, 0)), "nexts[0]: expected an int64"),
    "pred": (lambda a: a.update(pred=CODE), "pred: expected an int64"),
    "n_vars": (lambda a: a.update(n_vars=_tup(CODE)), "n_vars: expected an int64"),
    "step inputs": (lambda a: _first_step(a).__setitem__(1, _tup(CODE)), "body_steps[0][1][0]: expected an int64"),
    "merge inputs": (lambda a: _first_step(a, type_="Merge").__setitem__(1, _tup(0, CODE, 1)),
                     "expected an int64, got the string"),
    "guard": (lambda a: _first_step(a).__setitem__(6, _tup(_tup(CODE, True))), "body_steps[0][6][0][0]: expected"),
    "step type": (lambda a: _first_step(a).__setitem__(0, CODE), "body_steps[0][0]: no op type"),
    "step name": (lambda a: _first_step(a).__setitem__(3, "x\n" + CODE), "body_steps[0][3]: expected a name"),
    "step attrs": (lambda a: _first_step(a).__setitem__(2, {"dict": {"op": CODE}}),
                   "body_steps[0][2].op: a"),
    "step dtype": (lambda a: _first_step(a).__setitem__(5, CODE), "body_steps[0][5]: expected a dtype"),
    "dtypes": (lambda a: a.update(dtypes=_tup(CODE)), "dtypes[0]: expected a dtype"),
    "shapes": (lambda a: a.update(shapes=_tup(CODE)), "shapes[0]: expected a shape"),
    "backend": (lambda a: a.update(backend=CODE), "backend: expected one of"),
    "nested containers": (lambda a: a.update(exits=_tup(_tup(_tup(CODE)))), "exits[0]: expected an int64"),
    "unknown attribute": (lambda a: a.update(source=CODE), "source: a CompiledLoop op has no attribute 'source'"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_code_in_a_compiled_loop_attribute_is_refused_at_load(jit_doc, attack, tmp_path, monkeypatch):
    change, message = ATTACKS[attack]
    doc, i = _mutated(jit_doc, change)
    msg = _load_error(doc, tmp_path, monkeypatch)
    assert msg.startswith(f"ops[{i}].attrs.") and message in msg, msg


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(exits=_tup(5)), "exits[0]: 5 is not one of the 2 loop variables"),
    (lambda a: a.update(pred=999), "pred: refers to value 999, but only"),
    (lambda a: a.update(nexts=_tup(999, 0)), "nexts[0]: refers to value 999"),
    (lambda a: a.update(nexts=_tup()), "nexts: 0 next values for 2 loop variables"),
    (lambda a: a.update(n_vars=7), "n_vars: 7 loop variables, but the op has 5 inputs"),
    (lambda a: _first_step(a).__setitem__(1, _tup(10 ** 6)), "refers to value 1000000"),
    (lambda a: _first_step(a).__setitem__(5, {"dtype": "bool"}), "the step makes"),
])
def test_a_compiled_loop_whose_indices_do_not_fit_is_refused_at_load(jit_doc, change, message, tmp_path,
                                                                       monkeypatch):
    doc, i = _mutated(jit_doc, change)
    msg = _load_error(doc, tmp_path, monkeypatch)
    assert msg.startswith(f"ops[{i}].attrs.") and message in msg, msg


def test_the_numba_backend_is_checked_the_same_way(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    doc, i = _mutated(_jit_doc("numba"), lambda a: a.update(exits=_tup(CODE)))
    assert _load_error(doc, tmp_path, monkeypatch).startswith(f"ops[{i}].attrs.exits[0]: expected an int64")


@pytest.mark.parametrize("change, message", [
    (lambda steps: steps[0]["tuple"].__setitem__(1, _tup(CODE)), "steps[0][1][0]: expected an int64"),
    (lambda steps: steps[0]["tuple"].__setitem__(0, "Print"), "steps[0][0]: a Print op cannot be a step"),
    (lambda steps: steps[0]["tuple"].__setitem__(1, _tup(0, 0, 0)), "the MatMul step cannot be built"),
    (lambda steps: steps[-1]["tuple"].__setitem__(1, _tup(99)), "refers to value 99"),
    (lambda steps: steps.clear(), "steps: a Fused op has at least one step"),
])
def test_a_fused_op_is_checked_at_load(change, message, tmp_path, monkeypatch):
    doc = _fused_doc()
    i, op = _op(doc, "Fused")
    change(_steps(op["attrs"], "steps"))
    msg = _load_error(doc, tmp_path, monkeypatch)
    assert msg.startswith(f"ops[{i}].attrs.") and message in msg, msg


@pytest.mark.parametrize("op_type, attr, value, message", [
    ("PythonArith", "op", "__import__", "op: expected one of"),
    ("Print", "stream", "file:../../etc/passwd", "stream: expected 'stdout', 'stderr' or 'file:<n>'"),
    ("Print", "template", _tup(_tup("!r", "x", False)), "template[0][0]: expected one of"),
    ("Const", "value", "1", "value: expected a number, bool or numeric array"),
    ("Cast", "dtype", "float64", "dtype: expected a dtype"),
])
def test_other_attributes_are_checked_at_load(op_type, attr, value, message, tmp_path, monkeypatch):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = gc.cast(x, gc.int64) if op_type == "Cast" else x + 1.0
        print_op(y, template=("y=", None), stream="stdout")
        python_arith_op(gc.constant(1), gc.constant(2), op="Add")
    doc = json.loads(g.to_json())
    i, op = _op(doc, op_type)
    op["attrs"][attr] = value
    msg = _load_error(doc, tmp_path, monkeypatch)
    assert msg.startswith(f"ops[{i}].attrs.{message}"), msg


def test_a_check_names_where_inside_the_value_it_failed():
    with pytest.raises(AttrError) as e:
        registered_ops()["StridedSlice"].check_attrs({"spec": (("slice", None, ("c", "1"), None),)})
    assert str(e.value) == "spec[0][2][1]: expected an int64, got the string '1'"
