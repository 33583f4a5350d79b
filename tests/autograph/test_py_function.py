"""gc.py_function / autograph.py_function: Python called on the values when the graph runs,
in program order with prints, once per execution of its line, never while tracing; its
declared outputs checked; its exceptions the user's; no gradient unless grad= is given; never
in a graph file; a loop holding one stays on the frame executor."""
import json

import numpy as np
import pytest

import autograph
import graphcore as gc
from _engines import ENGINES, agree
from autograph import function
from executor import Session

CALLS = []  # what the Python functions below saw, in order


def note(v):
    CALLS.append(v)
    print("  python sees", repr(v))
    return v * 2


def calls_in_a_loop(n):
    total = 0
    for i in range(n):
        print("before", i)
        total += autograph.py_function(note, [i], np.int64)
        print("after", total)
    return total


def calls_in_a_cond(x):
    if x > 0:
        y = autograph.py_function(lambda v: v + 0.5, [x], np.float64)
    else:
        y = x - 1.0
    print("y is", y)
    return y


@pytest.mark.parametrize("engine", ENGINES)
def test_in_a_loop_runs_once_per_iteration_in_program_order(engine):
    for n in (np.int64(3), np.int64(0)):
        CALLS.clear()
        run = agree(calls_in_a_loop, (n,), engine, same_types=False)
        assert CALLS == list(range(int(n))) * 2  # plain Python's calls, then the graph's: one per iteration
        assert run.value == 2 * sum(range(int(n)))


@pytest.mark.parametrize("engine", ENGINES)
def test_in_a_cond_runs_only_on_the_taken_branch(engine):
    for x in (np.float64(2.0), np.float64(-2.0)):
        agree(calls_in_a_cond, (x,), engine)


def test_never_called_while_tracing():
    CALLS.clear()
    f = function(calls_in_a_loop)
    f.get_concrete_function(np.int64(4))
    assert CALLS == []
    assert f(np.int64(2)) == 2 and CALLS == [0, 1]
    assert f(np.int64(2)) == 2 and CALLS == [0, 1, 0, 1]  # every call, from the cached graph


def raises_inside(x):
    print("first")
    y = autograph.py_function(lambda v: json.loads("{bad") if v > 0 else v, [x], np.float64)
    print("never")
    return y


@pytest.mark.parametrize("engine", ENGINES)
def test_an_exception_reaches_the_caller_with_its_type_and_line(engine):
    run = agree(raises_inside, (np.float64(1.0),), engine)
    assert isinstance(run.exception, json.JSONDecodeError)
    notes = "\n".join(getattr(run.exception, "__notes__", []))
    assert f"test_py_function.py:{raises_inside.__code__.co_firstlineno + 2}" in notes, notes


def wrong_dtype(x):
    return autograph.py_function(lambda v: "text", [x], np.float64)


def wrong_shape(x):
    return autograph.py_function(lambda v: np.zeros(3), [x], np.float64, shapes=[2])


def test_a_value_other_than_declared_is_refused_naming_the_line():
    line = wrong_dtype.__code__.co_firstlineno + 1
    with pytest.raises(TypeError, match=rf"test_py_function.py:{line}: py_function .*<lambda> returned a Python str "
                                        r"as output 0, declared float64"):
        function(wrong_dtype)(np.float64(1.0))
    with pytest.raises(ValueError, match=r"its shape \(3,\) is not the declared \[2\]"):
        function(wrong_shape)(np.float64(1.0))


def test_graph_level_outputs_dtypes_shapes_and_eager():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, shape=[3], name="x")
        lo, hi, n = gc.py_function(lambda v: (v.min(), v.max(), len(v)), [x], [gc.float64, gc.float64, gc.int64],
                                   shapes=[[], [], []])
        text = gc.py_function(lambda v: ",".join(f"{e:g}" for e in v), [x], object)
        done = gc.py_function(lambda v: CALLS.append(float(v.sum())), [x], [])
    assert [lo.dtype, n.dtype, text.dtype] == [gc.float64, gc.int64, gc.pyobject]
    assert lo.shape.rank == 0 and done.type == "PyFunction"
    CALLS.clear()
    out = Session(g).run([lo, hi, n, text, done], {x: np.array([2.0, -1.0, 4.5])})
    assert out[:4] == [-1.0, 4.5, 3, "2,-1,4.5"] and type(out[2]) is np.int64 and type(out[3]) is str
    assert CALLS == [5.5]
    # eager: called at once, checked the same way
    assert gc.py_function(lambda v: v * 2, [np.float64(1.5)], gc.float64) == 3.0
    with pytest.raises(TypeError, match="returned a Python str"):
        gc.py_function(lambda v: "no", [np.float64(1.5)], gc.float64)


def square_with_grad(x):
    y = autograph.py_function(lambda v: v * v, [x], np.float64, shapes=[], grad=lambda v, dy: 2.0 * v * dy)
    return y * 3.0


def square_without_grad(x):
    y = autograph.py_function(lambda v: v * v, [x], np.float64, shapes=[])
    return y * 3.0


def cube_in_a_loop(x, n):
    y = x
    for _ in range(n):
        y = autograph.py_function(lambda v, w: v * w, [y, x], np.float64, shapes=[],
                                  grad=lambda v, w, dy: (dy * w, dy * v))
    return y


def test_gradient_only_with_grad():
    assert autograph.grad(square_with_grad)(np.float64(1.5)) == pytest.approx(9.0)
    assert autograph.grad(cube_in_a_loop)(np.float64(1.5), np.int64(2)) == pytest.approx(3 * 1.5 ** 2)
    line = square_without_grad.__code__.co_firstlineno + 1
    with pytest.raises(gc.GraphError, match=rf"test_py_function.py:{line}: no gradient for py_function "
                                            r".*grad="):
        autograph.grad(square_without_grad)(np.float64(1.5))


def test_a_graph_file_never_holds_a_python_call():
    g = function(calls_in_a_loop).get_concrete_function(np.int64(2)).graph
    with pytest.raises(gc.GraphError, match=r"cannot write the graph to a file: op '[^']*PyFunction' \(PyFunction\) at "
                                            r"test_py_function.py:\d+ calls Python .* a graph file holds data.*"
                                            r"engine='ray' .* engine='local'"):
        g.to_json()
    # nor does a file that names one load (hand-made, naming a function this process holds)
    plain = gc.Graph()
    with plain.as_default():
        x = gc.placeholder(gc.int64, shape=[], name="x")
        gc.identity(x, name="y")
    doc = json.loads(plain.to_json())
    key = next(op.attrs["key"] for op in g.get_operations() if op.type == "PyFunction")
    doc["ops"][1].update(type="PyFunction", attrs={"key": key, "Tout": [], "shapes": [], "stateful": True},
                         outputs=[])
    with pytest.raises(gc.GraphFileError, match=r"ops\[1\]\.attrs\.key: a PyFunction calls a Python function"):
        gc.Graph.from_json(json.dumps(doc))


def pure_loop(n):
    t = 0
    for i in range(n):
        t += i * i
    return t


def python_in_loop(n):
    t = 0
    for i in range(n):
        t += autograph.py_function(lambda v: v * v, [i], np.int64, shapes=[])
    return t


def test_a_compiled_loop_leaves_a_python_call_to_the_frame_executor():
    def ops_of(fn):
        f = function(fn, jit_compile=True)
        assert f(np.int64(4)) == 14
        return [op.type for op in f.get_concrete_function(np.int64(4)).graph.get_operations()]
    assert "CompiledLoop" in ops_of(pure_loop)
    kinds = ops_of(python_in_loop)
    assert "CompiledLoop" not in kinds and "PyFunction" in kinds and "NextIteration" in kinds


def cube_in_a_branch(x):
    if x > 0:
        y = autograph.py_function(lambda v: v ** 3, [x], np.float64, shapes=[], grad=lambda v, dy: 3 * v * v * dy)
    else:
        y = x * 2.0
    return y


def two_outputs(x):
    y = autograph.py_function(lambda v: (v * 2, v * 3), [x], [np.float64, np.float64], shapes=[[], []],
                              grad=lambda v, d1, d2: 2 * d1 + 3 * d2)
    return y[0] + y[1] * 2


def test_gradients_in_a_branch_and_of_several_outputs():
    g = autograph.grad(cube_in_a_branch)
    assert g(np.float64(2.0)) == pytest.approx(12.0) and g(np.float64(-1.0)) == pytest.approx(2.0)
    assert autograph.grad(two_outputs)(np.float64(1.0)) == pytest.approx(8.0)


def calls_in_a_branch_of_a_loop(x, n):
    t = 0.0
    for i in range(n):
        if x > i:
            t += autograph.py_function(lambda v: v + 1.0, [x], np.float64, shapes=[])
    return t


def prints_text_in_a_branch_of_a_loop(x, n):
    for i in range(n):
        if x > i:
            print("in", str(x * 2))
    return n


def test_in_control_flow_v2_functions():
    import gc as python_gc
    args = (np.float64(2.5), np.int64(3))
    for fn in (calls_in_a_branch_of_a_loop, prints_text_in_a_branch_of_a_loop):
        f = function(fn, control_flow="v2")
        run = agree(fn, args, {"control_flow": "v2"})
        python_gc.collect()  # the function graphs' Python calls live as long as the graph around them
        assert f(*args) == run.value
        with pytest.raises(gc.GraphError, match="cannot write the graph to a file"):
            f.get_concrete_function(*args).graph.to_json()


def python_object_inputs(x):
    return autograph.py_function(lambda v, fmt, opts: fmt.format(v, **opts), [x, "{:.{p}f}", {"p": 2}], object)


def bad_tout(x):
    return autograph.py_function(lambda v: v, [x], "float")


def not_callable(x):
    return autograph.py_function(42, [x], np.float64)


def test_python_object_inputs_and_clear_errors_for_bad_arguments():
    assert function(python_object_inputs)(np.float64(2.5)) == "2.50"
    for fn, error in ((bad_tout, r"py_function's Tout / shapes: unknown dtype 'float'"),
                      (not_callable, r"py_function calls a Python function, got int 42")):
        with pytest.raises(TypeError, match=rf"test_py_function.py:{fn.__code__.co_firstlineno + 1}: {error}"):
            function(fn)(np.float64(1.0))
