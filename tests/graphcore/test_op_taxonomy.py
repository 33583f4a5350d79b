"""The facts op types declare in their define_op blocks (graphcore/registry.py's OpDef):
each is what its consumers (passes, the converter's operators, placement, pictures, the
compiled loops) read, so each is checked here against what the op's kernel really does, and
an op type that lacks a fact a consumer needs fails by name."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import graphcore as gc
from executor import Session
from graphcore.errors import GraphError
from graphcore.passes import licm, optimize
from graphcore.registry import UNDECLARED, define_op, registered_ops, same_as_input

OPS = registered_ops()
DTYPES = (gc.bool_, gc.int32, gc.int64, gc.float32, gc.float64)
# values at the edges of each dtype: where a kernel that can fail would
EDGES = {
    np.bool_: [False, True],
    np.int32: [0, 1, -1, 7, np.iinfo(np.int32).min, np.iinfo(np.int32).max],
    np.int64: [0, 1, -1, 7, np.iinfo(np.int64).min, np.iinfo(np.int64).max],
    np.float32: [0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, np.finfo(np.float32).max, 1e-45],
    np.float64: [0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, np.finfo(np.float64).max, 5e-324],
}


def _arity(d) -> int | None:
    if d.python is not None:
        return d.arity
    if d.ufunc is not None:
        return d.ufunc.nin
    return None


def _accepted(d, arity):
    """The dtypes the op's shape rule accepts (all operands of one dtype)."""
    out = []
    g = gc.Graph()
    with g.as_default():
        for dtype in DTYPES:
            xs = [gc.placeholder(dtype, []) for _ in range(arity)]
            try:
                d.infer(xs, {})
            except GraphError:
                continue
            out.append(dtype)
    return out


def test_every_fact_is_a_known_one():
    with pytest.raises(GraphError, match="unknown facts"):
        define_op("TaxonomyTypo", shape=same_as_input, kernel=None, elementwize=True)


@pytest.mark.parametrize("name", sorted(t for t, d in OPS.items()
                                        if d.elementwise or d.shape_only or d.control_flow or d.fusible))
def test_ops_the_passes_and_try_bodies_read_say_whether_they_can_fail(name):
    """LICM and `try` bodies ask `fails`; an op type that did not say is refused by both."""
    assert "fails" in OPS[name].declared, f"{name} does not declare whether it can fail (define_op(..., fails=))"


@pytest.mark.parametrize("name", sorted(t for t, d in OPS.items() if d.fails is None and _arity(d)))
def test_an_op_that_says_it_cannot_fail_does_not_fail_on_any_edge_value(name):
    """The kernel of an op declaring fails=None raises on no pair of edge values of any dtype its
    shape rule accepts (numpy's warnings are not errors). Sin, Cos, Floor, Ceil, Log1p, Expm1 and
    Sign are among them: loop-invariant motion and try bodies once disagreed about these."""
    d = OPS[name]
    arity = _arity(d)
    dtypes = _accepted(d, arity)
    assert dtypes, f"{name}: its shape rule accepts none of {DTYPES}"
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for dtype in dtypes:
            values = np.asarray(EDGES[dtype.np_dtype.type], dtype=dtype.np_dtype)
            if arity == 1:
                d.kernel(values)
            else:
                a, b = np.meshgrid(values, values)
                d.kernel(a.ravel(), b.ravel())


def test_the_ops_that_can_fail_say_how_and_fail_so():
    assert "negative integer power" in OPS["Pow"].fails
    with pytest.raises(ValueError):
        OPS["Pow"].kernel(np.int64(2), np.int64(-1))
    assert OPS["StridedSlice"].fails and OPS["MatMul"].fails and OPS["Max"].fails
    with pytest.raises(ValueError):
        OPS["Max"].kernel(np.zeros((0,)))


@pytest.mark.parametrize("name", sorted(t for t, d in OPS.items() if d.symbol is not None))
def test_an_op_with_a_python_operator_has_its_python_function(name):
    """The converter's path types compute result types with `python`; messages quote `symbol`."""
    assert OPS[name].python is not None, f"{name} has a symbol but no `python` function"


@pytest.mark.parametrize("name", sorted(t for t, d in OPS.items() if d.ufunc is not None))
def test_an_op_with_a_ufunc_has_the_public_function_numpy_calls(name):
    d = OPS[name]
    assert d.public is not None, f"{name} names np.{d.ufunc.__name__} but no public function (`exported`)"
    assert getattr(gc, d.public.__name__) is d.public  # exported from graphcore


def _samples(dtype):
    with np.errstate(all="ignore"):
        return [dtype(v) for v in EDGES[dtype] if dtype is not np.bool_] or [np.bool_(False), np.bool_(True)]


def _bits(v):
    return type(v), np.asarray(v).tobytes()


@pytest.mark.parametrize("name", sorted(t for t, d in OPS.items() if d.expr is not None))
def test_the_scalar_expression_gives_the_kernels_value(name):
    """`expr` (the form compiled loops write) gives the kernel's very value on float64 scalars
    (comparisons and logic: on bools too), NaNs and infinities included."""
    d = OPS[name]
    arity = _arity(d) or d.expr.count("{1}") + 1
    fn = eval("lambda a, b=None: " + d.expr.format("a", "b"), {"np": np})  # noqa: S307 (the op's own form)
    dtype = np.bool_ if d.family == "logical" else np.float64
    values = [dtype(v) for v in EDGES[dtype]]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for a in values:
            for b in (values if arity == 2 else [None]):
                args = (a,) if b is None else (a, b)
                if name == "FloorDiv" or name == "Mod":
                    if b == 0:
                        continue  # (Python raises ZeroDivisionError: the loops guard the divisor)
                want, got = d.kernel(*args), fn(*args)
                assert np.asarray(got).tobytes() == np.asarray(want).tobytes() and bool(got) == bool(want), \
                    (name, args, got, want)


@pytest.mark.parametrize("name", sorted(t for t, d in OPS.items() if d.numba is not None and d.family == "math"))
def test_the_numba_form_gives_numpys_bits(name):
    """Only math functions whose numba form is numpy's bits are declared (numba's exp, tanh,
    sinh... are libm's, an ulp apart from numpy's on some values)."""
    numba = pytest.importorskip("numba")
    d = OPS[name]
    arity = d.arity
    src = "def f(a, b):\n    return " + d.numba.format("a", "b") + "\n"
    ns = {"np": np}
    exec(src, ns)  # noqa: S102 (the op's own form)
    f = numba.njit(ns["f"])
    rng = np.random.default_rng(0)
    xs = np.concatenate([rng.normal(size=3000) * 3, rng.normal(size=500) * 300, [0.0, -0.0, np.inf, -np.inf, np.nan]])
    ys = np.roll(xs, 1)
    with np.errstate(all="ignore"):
        for a, b in zip(xs, ys):
            want = d.kernel(a) if arity == 1 else d.kernel(a, b)
            got = f(a, b)
            assert np.float64(got).tobytes() == np.float64(want).tobytes() or (np.isnan(got) and np.isnan(want))


@pytest.mark.parametrize("name", sorted(t for t, d in OPS.items() if d.unit is not None))
def test_a_unit_leaves_every_integer_unchanged(name):
    d = OPS[name]
    x = np.asarray(EDGES[np.int64], dtype=np.int64)
    u = np.int64(d.unit)
    assert np.array_equal(d.kernel(x, u), x)
    if d.commutative:
        assert np.array_equal(d.kernel(u, x), x)


@pytest.mark.parametrize("name", sorted(t for t, d in OPS.items() if d.commutative))
def test_commutative_ops_commute(name):
    d = OPS[name]
    dtype = np.bool_ if d.family == "logical" else np.int64
    a, b = np.meshgrid(np.asarray(EDGES[dtype], dtype=dtype), np.asarray(EDGES[dtype], dtype=dtype))
    with np.errstate(all="ignore"):
        assert np.array_equal(d.kernel(a, b), d.kernel(b, a))


@pytest.mark.parametrize("name", sorted(t for t, d in OPS.items() if d.involution))
def test_involutions_undo_themselves(name):
    d = OPS[name]
    dtype = np.bool_ if d.family == "logical" else np.int64
    x = np.asarray(EDGES[dtype], dtype=dtype)
    assert np.array_equal(d.kernel(d.kernel(x)), x)


@pytest.mark.parametrize("name", sorted(t for t, d in OPS.items() if d.view))
def test_views_are_views(name):
    """augmented.py follows in-place changes through ops declared `view`."""
    x = np.arange(6.0).reshape(2, 3)
    d = OPS[name]
    args = {"Reshape": (x, np.asarray([3, 2])), "Transpose": (x,), "ExpandDims": (x,), "Squeeze": (x[None],),
            "StridedSlice": (x,)}[name]
    attrs = {"ExpandDims": {"axis": 0}, "Squeeze": {"axis": 0},
             "StridedSlice": {"spec": (("index", ("c", 0)),)}}.get(name, {})
    try:
        out = d.kernel(*args, **attrs)
    except TypeError:
        pytest.skip(f"{name}'s kernel takes other arguments")
    assert np.shares_memory(out, args[0])


def _loop_with(build):
    """A graph with a while loop whose body builds build(invariant) each iteration."""
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        _, out = gc.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v + build(x)),
                               [gc.constant(np.int64(0)), gc.zeros_like(x)])
    return g, x, out


def test_licm_moves_what_cannot_fail_and_keeps_what_may():
    movable = licm.movable_types()
    for name in ("Sin", "Cos", "Floor", "Ceil", "Log1p", "Expm1", "Sign", "Sinh", "Hypot", "Shape"):
        assert name in movable, name
    assert "Pow" not in movable and "StridedSlice" not in movable
    g, x, out = _loop_with(gc.sinh)
    assert [op.ctx for op in g.get_operations() if op.type == "Sinh"][0] is not None
    out = optimize(g, [out], skip=["fusion"], validate=True).fetches[0]
    sinh_ops = [op for op in g.get_operations() if op.type == "Sinh"]
    assert sinh_ops and all(op.ctx is None for op in sinh_ops)  # hoisted out of the loop
    v = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(Session(g).run(out, {x: v}), 3 * np.sinh(v))


def test_an_op_type_that_does_not_say_it_cannot_fail_is_neither_moved_nor_allowed_in_try():
    od = define_op("TaxonomyUndeclared", shape=same_as_input, kernel=np.negative, elementwise=True)
    assert od.fails == UNDECLARED and od.can_fail
    assert "TaxonomyUndeclared" not in licm.movable_types()
    from autograph.operators.exceptions import try_body  # noqa: PLC0415
    from graphcore.errors import StagingError  # noqa: PLC0415
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [])
        with pytest.raises(StagingError, match="TaxonomyUndeclared .* can fail"):
            with try_body(1):
                od(x)
        with try_body(2):  # Sin, Floor, Sign...: cannot fail, allowed
            gc.sign(gc.floor(gc.sin(x)) + gc.sinh(x))


def test_a_new_op_block_is_all_it_takes_numpy_functions_compiled_loops_and_the_converter():
    """Sinh, Cosh, Arctan and Hypot were added as one block each: numpy's functions on graph
    tensors build them, @function converts programs that call them, a jit-compiled loop takes
    them, and the values are numpy's."""
    from autograph import function  # noqa: PLC0415

    def program(x, n):
        total = x * 0.0
        i = 0
        while i < n:
            total = total + np.sinh(x) * np.cosh(x) - np.arctan(x) + np.hypot(x, total)
            i += 1
        return total

    x, n = np.array([0.25, -1.5, 2.0]), np.int64(3)
    want = program(x, n)
    for jit in (False, True):
        f = function(program, jit_compile=jit)
        np.testing.assert_allclose(f(x, n), want, rtol=1e-13)
    ops = f.get_concrete_function(x, n).graph.get_operations()  # (f: the jit-compiled one, optimized)
    (loop,) = [op for op in ops if op.type == "CompiledLoop"]
    assert "Hypot" in repr(loop.attrs)  # a step of the compiled loop
    assert {"Sinh", "Cosh", "Arctan"} <= {op.type for op in ops}  # invariants: moved out of the loop


# The literal collections of op types allowed outside OpDef, each with its reason (at most four).
ALLOWED_OP_TYPE_TABLES = {
    # the node kinds the executor special-cases (the five primitives, LoopCond, _Send/_Recv): the
    # plan's own vocabulary, which maps each of those types to a kind of node, not a fact of an op
    "executor/node_kinds.py": "the executor's node kinds",
}


def literal_op_type_collections(root=None) -> list[str]:
    """`file:line: [names]` of every literal set, list, tuple or dict (its keys) naming five or
    more registered op types in graphcore, executor, autograph or cli (tests, samples and
    benchmarks left out, as issue 26 counted them)."""
    import ast  # noqa: PLC0415
    import pathlib  # noqa: PLC0415

    root = pathlib.Path(root) if root is not None else pathlib.Path(__file__).resolve().parents[2]
    found = []
    for package in ("graphcore", "executor", "autograph", "cli"):
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
                    elts = node.elts
                elif isinstance(node, ast.Dict):
                    elts = [k for k in node.keys if k is not None]
                else:
                    continue
                names = [e.value for e in elts if isinstance(e, ast.Constant) and e.value in OPS]
                if len(names) >= 5:
                    found.append(f"{rel}:{node.lineno}: {names[:6]}")
    return found


def test_no_module_keeps_its_own_list_of_op_types():
    """A literal collection naming five or more op types outside OpDef is a copy of a fact
    that will drift from its op's block: ask OpDef instead. Only the tables of
    ALLOWED_OP_TYPE_TABLES are left, each for the reason given there."""
    found = [f for f in literal_op_type_collections() if f.split(":")[0] not in ALLOWED_OP_TYPE_TABLES]
    assert found == []
    assert len(ALLOWED_OP_TYPE_TABLES) <= 4


if __name__ == "__main__":  # the figure: python tests/graphcore/test_op_taxonomy.py [repository root]
    import sys

    found = literal_op_type_collections(sys.argv[1] if len(sys.argv) > 1 else None)
    print("\n".join(found))
    print(f"{len(found)} literal collections of five or more op types in {len({f.split(':')[0] for f in found})} "
          f"files (allowed: {', '.join(ALLOWED_OP_TYPE_TABLES)})")
