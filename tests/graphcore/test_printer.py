"""Golden tests of the text listing (`str(graph)`)."""
import re

import numpy as np

import graphcore as gc
from graphcore.printer import format_value


def _fib_graph():
    g = gc.Graph()
    with g.as_default():
        gc.while_loop(lambda a, b, i: i < 2, lambda a, b, i: (b, a + b, i + 1), [1, 1, 1])
    return g


FIB_LISTING = """\
%Const: int64[] = Const(value=1)  # test_printer.py:N
%Const_1: int64[] = Const(value=1)  # test_printer.py:N
%Const_2: int64[] = Const(value=1)  # test_printer.py:N
%while/Enter: int64[] = Enter(%Const, frame_name='while', is_constant=False, parallel_iterations=10)  # frame while, test_printer.py:N
%while/Merge: int64[], %while/Merge:1: int32[] = Merge(%while/Enter, %while/NextIteration)  # frame while, test_printer.py:N
%while/Enter_1: int64[] = Enter(%Const_1, frame_name='while', is_constant=False, parallel_iterations=10)  # frame while, test_printer.py:N
%while/Merge_1: int64[], %while/Merge_1:1: int32[] = Merge(%while/Enter_1, %while/NextIteration_1)  # frame while, test_printer.py:N
%while/Enter_2: int64[] = Enter(%Const_2, frame_name='while', is_constant=False, parallel_iterations=10)  # frame while, test_printer.py:N
%while/Merge_2: int64[], %while/Merge_2:1: int32[] = Merge(%while/Enter_2, %while/NextIteration_2)  # frame while, test_printer.py:N
%while/Const: int64[] = Const(value=2)  # test_printer.py:N
%while/Enter_3: int64[] = Enter(%while/Const, frame_name='while', is_constant=True, parallel_iterations=10)  # frame while, test_printer.py:N
%while/Less: bool[] = Less(%while/Merge_2, %while/Enter_3)  # frame while, test_printer.py:N
%while/LoopCond: bool[] = LoopCond(%while/Less)  # frame while, test_printer.py:N
%while/Switch: int64[], %while/Switch:1: int64[] = Switch(%while/Merge, %while/LoopCond)  # frame while, test_printer.py:N
%while/Switch_1: int64[], %while/Switch_1:1: int64[] = Switch(%while/Merge_1, %while/LoopCond)  # frame while, test_printer.py:N
%while/Switch_2: int64[], %while/Switch_2:1: int64[] = Switch(%while/Merge_2, %while/LoopCond)  # frame while, test_printer.py:N
%while/Add: int64[] = Add(%while/Switch:1, %while/Switch_1:1)  # frame while, test_printer.py:N
%while/Const_1: int64[] = Const(value=1)  # test_printer.py:N
%while/Enter_4: int64[] = Enter(%while/Const_1, frame_name='while', is_constant=True, parallel_iterations=10)  # frame while, test_printer.py:N
%while/Add_1: int64[] = Add(%while/Switch_2:1, %while/Enter_4)  # frame while, test_printer.py:N
%while/NextIteration: int64[] = NextIteration(%while/Switch_1:1)  # frame while, test_printer.py:N
%while/NextIteration_1: int64[] = NextIteration(%while/Add)  # frame while, test_printer.py:N
%while/NextIteration_2: int64[] = NextIteration(%while/Add_1)  # frame while, test_printer.py:N
%while/Exit: int64[] = Exit(%while/Switch)  # test_printer.py:N
%while/Exit_1: int64[] = Exit(%while/Switch_1)  # test_printer.py:N
%while/Exit_2: int64[] = Exit(%while/Switch_2)  # test_printer.py:N
"""


def _golden(g) -> str:
    """The listing with the test file's line numbers replaced by N (so edits above do not matter)."""
    return re.sub(r"test_printer\.py:\d+$", "test_printer.py:N", str(g), flags=re.M)


def test_fibonacci_loop_listing():
    assert _golden(_fib_graph()) == FIB_LISTING


def _cond_graph():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float32, [3], name="x")
        y = gc.placeholder(gc.float32, [3], name="y")
        p = gc.placeholder(gc.bool, [], name="p")
        gc.cond(p, lambda: x + y, lambda: x * y)
    return g


COND_LISTING = """\
%x: float32[3] = Placeholder()  # test_printer.py:N
%y: float32[3] = Placeholder()  # test_printer.py:N
%p: bool[] = Placeholder()  # test_printer.py:N
%cond/Switch: float32[3], %cond/Switch:1: float32[3] = Switch(%x, %p)  # test_printer.py:N
%cond/Switch_1: float32[3], %cond/Switch_1:1: float32[3] = Switch(%y, %p)  # test_printer.py:N
%cond/Add: float32[3] = Add(%cond/Switch:1, %cond/Switch_1:1)  # cond cond:true, test_printer.py:N
%cond/Switch_2: float32[3], %cond/Switch_2:1: float32[3] = Switch(%x, %p)  # test_printer.py:N
%cond/Switch_3: float32[3], %cond/Switch_3:1: float32[3] = Switch(%y, %p)  # test_printer.py:N
%cond/Mul: float32[3] = Mul(%cond/Switch_2, %cond/Switch_3)  # cond cond:false, test_printer.py:N
%cond/Merge: float32[3], %cond/Merge:1: int32[] = Merge(%cond/Mul, %cond/Add)  # test_printer.py:N
"""


def test_cond_listing_shows_branches():
    assert _golden(_cond_graph()) == COND_LISTING


def test_control_inputs_devices_and_attrs():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [None, 2], name="x")
        big = gc.constant(np.zeros((10, 3), np.float32), name="big")
        with g.device("/cpu:0"):
            a = gc.identity(x, name="a")
        with g.control_dependencies([a]):
            gc.print("x is", x, name="show")
        gc.strided_slice(x, (slice(1, None), 0))
    lines = str(g).splitlines()
    assert lines[0].startswith("%x: float64[?,2] = Placeholder()  # ")
    assert lines[1].startswith("%big: float32[10,3] = Const(value=<float32[10,3]>)")
    assert "# device /cpu:0, test_printer.py:" in lines[2]
    assert lines[3].startswith("%show = Print(%x, ^a, template=('x is', ' ', None), sep=' ', end='\\n', "
                               "stream='stdout')")
    assert "spec=(('slice', ('c', 1), None, None), ('index', ('c', 0)))" in lines[4]


def test_nested_contexts_are_listed_outermost_first():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        gc.while_loop(lambda i: i < n, lambda i: gc.cond(i > 3, lambda: i + 2, lambda: i + 1), [0])
    listing = str(g)
    assert "# frame while, cond while/cond:true, " in listing
    assert "# frame while, cond while/cond:false, " in listing


def test_format_value():
    assert format_value(np.float32(1.5)) == "1.5"
    assert format_value(np.array([1, 2, 3])) == "[1, 2, 3]"
    assert format_value(np.array([[True, False]])) == "[[True, False]]"
    assert format_value(np.zeros(100)) == "<float64[100]>"
    assert format_value(gc.int32) == "int32"
    assert format_value(gc.TensorShape([None, 3])) == "[?,3]"
    assert format_value((1,)) == "(1,)"
    assert format_value("a") == "'a'"


def test_empty_graph():
    assert str(gc.Graph()) == "# empty graph\n"
