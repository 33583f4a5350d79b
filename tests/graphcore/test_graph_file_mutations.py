"""Malformed graph files: every one loads (and then validates, prints, saves and runs to a
value or a graphcore error) or raises GraphFileError naming where; none runs code.

Seeded mutants from graph_file_mutations.py (reproduce one with
`python tests/graphcore/graph_file_mutations.py 1 --first NUMBER`), then the cases
the mutation tester first found, each pinned with its message."""
import json

import numpy as np
import pytest

import graphcore as gc
from graph_file_mutations import SEED_NAMES, check, install_audit_hook, mutant, seeds
from graphcore.errors import GraphFileError

MUTANTS_PER_SEED = 120


@pytest.fixture(scope="module")
def seed_graphs():
    all_seeds = seeds()
    install_audit_hook(all_seeds)
    return all_seeds


@pytest.mark.parametrize("name", SEED_NAMES)
def test_seeded_mutants_load_or_raise_graph_file_error(seed_graphs, name):
    if name not in [s.name for s in seed_graphs]:
        pytest.skip(f"no {name} seed here (numba is not installed)")
    k, n = [s.name for s in seed_graphs].index(name), len(seed_graphs)
    kinds, broken = {}, []
    with np.errstate(all="ignore"):  # (np.seterr would leave later tests' numpy silent)
        for number in range(k, n * MUTANTS_PER_SEED, n):
            seed, text, names, threads = mutant(seed_graphs, number)
            out = check(text, seed, threads)
            kinds[out.kind] = kinds.get(out.kind, 0) + 1
            if out.kind == "broken":
                broken.append(f"#{number} {'+'.join(names)}: {out.describe()}")
    assert not broken, "\n".join(broken)
    # the mutants must exercise both paths, or this test could not fail
    loaded = MUTANTS_PER_SEED - kinds.get("rejected", 0)  # then ran, failed to run, or met the deadline
    assert kinds.get("rejected", 0) > MUTANTS_PER_SEED // 2 and loaded >= 5, kinds


def test_the_tester_catches_code_run_while_loading(seed_graphs, monkeypatch):
    import graphcore.serialization

    def parse_by_eval(text):
        return eval(compile("{}", "<file>", "eval"))  # noqa: S307 (what a loader must never do)

    monkeypatch.setattr(graphcore.serialization, "parse", parse_by_eval)
    out = check(seed_graphs[0].text, seed_graphs[0])
    assert out.kind == "broken" and type(out.error).__name__ == "CodeExecuted"


# -- the cases the tester found, one by one -------------------------------------------------------

def _doc(seed_graphs, name="nested"):
    return json.loads(next(s for s in seed_graphs if s.name == name).text)


def _op(doc, type_):
    return next((i, o) for i, o in enumerate(doc["ops"]) if o["type"] == type_)


def _error(doc_or_text) -> str:
    text = doc_or_text if isinstance(doc_or_text, str) else json.dumps(doc_or_text)
    with pytest.raises(GraphFileError) as e:
        gc.Graph.from_json(text)
    return str(e.value)


def test_deep_nesting(seed_graphs):
    text = json.dumps(_doc(seed_graphs)).replace('"device": ""', '"device": ' + "[" * 100_000 + "]" * 100_000, 1)
    assert _error(text) == "lists or objects are nested too deeply for a graph file"
    doc = _doc(seed_graphs)
    i, op = _op(doc, "Const")
    op["attrs"]["value"] = json.loads("[" * 40 + "]" * 40)
    assert _error(doc).startswith(f"ops[{i}].attrs.value[0][0]")
    assert "nest lists, tuples and dicts at most 32 deep" in _error(doc)


def test_numbers_too_long_or_too_large(seed_graphs):
    text = json.dumps(_doc(seed_graphs)).replace('"version": 1', '"version": 1' + "0" * 5000)
    assert _error(text) == "line 1 column 42: a number has too many digits for a graph file"
    doc = _doc(seed_graphs)
    doc["version"] = 10 ** 40
    assert _error(doc) == "version: version 10000000... (41 digits) is not supported (this program reads version 1)"
    doc = _doc(seed_graphs)
    doc["ops"][0]["outputs"][0]["shape"] = [2 ** 64]
    assert _error(doc) == ("ops[0].outputs[0].shape: a shape is null or a list of nulls and integers from 0 to "
                           "2**63-1")
    doc = _doc(seed_graphs)
    i, op = _op(doc, "Const")
    op["attrs"]["value"] = {"ndarray": {"dtype": "float64", "shape": [2 ** 64, 0], "data": []}}
    assert _error(doc) == f"ops[{i}].attrs.value.ndarray.shape: expected a list of integers from 0 to 2**63-1"
    op["attrs"]["value"] = {"scalar": {"dtype": "int8", "value": 1000}}
    assert _error(doc) == f"ops[{i}].attrs.value.scalar.value: 1000 does not fit in int8"
    op["attrs"]["value"] = 2 ** 64
    assert _error(doc) == f"ops[{i}].attrs.value: 18446744073709551616 does not fit in 64 bits; integer attrs are int64"
    doc = _doc(seed_graphs)
    doc["contexts"][0]["parallel_iterations"] = 2 ** 64
    assert _error(doc) == "contexts[0].parallel_iterations: 18446744073709551616 is not from 1 to 2147483647"


def test_a_switch_left_with_one_input(seed_graphs):
    doc = _doc(seed_graphs)
    i, op = _op(doc, "Switch")
    del op["inputs"][1]
    msg = _error(doc)
    assert msg.startswith(f"the graph in the file is not valid: op {op['name']!r} (Switch)")
    assert "1 input(s) and attrs [] do not fit the Switch op" in msg


@pytest.mark.parametrize("attr, value, message", [
    ("frame_name", {"ndarray": {"dtype": "int64", "shape": [2], "data": [1, 2]}},
     "frame_name: expected a name (1 to 1000 printable characters, no quotes, backslashes or line breaks), got a "
     "ndarray"),
    ("frame_name", "", "frame_name: expected a name"),
    ("frame_name", "a\nb", "frame_name: expected a name"),
    ("is_constant", {"ndarray": {"dtype": "bool", "shape": [0], "data": []}},
     "is_constant: expected true/false, got a ndarray"),
    ("parallel_iterations", {"shape": [3]}, "parallel_iterations: expected an int64, got a TensorShape"),
    ("parallel_iterations", 0, "parallel_iterations: expected an integer from 1 to 2147483647, got 0"),
    ("is_constnt", True, "is_constnt: a Enter op has no attribute 'is_constnt' (its attributes: frame_name, "
     "is_constant, parallel_iterations)"),
])
def test_enter_attrs_of_the_wrong_type(seed_graphs, attr, value, message):
    """Checked against the Enter op's declared attributes as the file is read."""
    doc = _doc(seed_graphs)
    i, op = _op(doc, "Enter")
    op["attrs"][attr] = value
    msg = _error(doc)
    assert msg.startswith(f"ops[{i}].attrs.{message}"), msg


def test_references_and_contexts(seed_graphs):
    doc = _doc(seed_graphs)
    i, op = _op(doc, "Add")
    op["inputs"][0] = op["inputs"][0].split(":")[0] + ":\u00b2"  # a digit to str.isdigit, not to int()
    assert _error(doc) == f"ops[{i}].inputs[0]: no tensor named {op['inputs'][0]!r}"
    doc = _doc(seed_graphs)
    doc["contexts"].append({"kind": "cond", "name": "unused", "outer": None, "branch": 0, "pred": None})
    assert _error(doc) == (f"contexts[{len(doc['contexts']) - 1}]: no op is in this context or in one inside it; "
                           "remove it")
    doc = _doc(seed_graphs)
    loops = [j for j, c in enumerate(doc["contexts"]) if c["kind"] == "while"]
    doc["contexts"][loops[1]]["name"] = doc["contexts"][loops[0]]["name"]
    assert _error(doc).startswith(f"contexts[{loops[1]}].name: the while frame")
    doc = _doc(seed_graphs)
    doc["contexts"] = [{"kind": "cond", "name": f"c{j}", "outer": j - 1 if j else None, "branch": 1, "pred": None}
                       for j in range(101)]
    doc["ops"][0]["context"] = 100
    assert _error(doc) == "contexts[100].outer: contexts nest more than 100 deep"


def test_bytes_that_are_not_utf8_and_values_that_are_not_text():
    for bad in (b'{"format": "\xff"}', 12):
        with pytest.raises(GraphFileError, match="the graph file is not JSON text"):
            gc.Graph.from_json(bad)
