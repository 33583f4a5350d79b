"""The shortcuts that make a first call cheap give what the long way gives:

- a converter pass skipped because the tree has none of the nodes it acts on (`ACTS_ON`,
  transpiler.transform_node): every function of the test programs, the golden and
  conformance functions and generated random programs (values, arrays, gradients: seeds 24
  and 33 of the last have the while/else and for/else without break that break_statements
  lowers) converts to the same source (or the same refusal) as with every pass run;
- the guards' reading of bytecode without dis (guards._code_info): the same global names
  and mentions as dis gives, for every code object of the modules loaded here.
"""
from __future__ import annotations

import dis
import functools
import glob
import linecache
import os
import sys
import types

from autograph import guards, transpiler
from autograph.converters import break_statements
from autograph.testing import random_array_programs, random_grad_programs, random_programs

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from scale import LONG, seeds  # noqa: E402

HERE = os.path.dirname(__file__)


def _code_objects(code: types.CodeType):
    for k in code.co_consts:
        if isinstance(k, types.CodeType):
            yield k
            yield from _code_objects(k)


def _functions(source: str, filename: str) -> list:
    """Every def and lambda of a module's text, as functions (closure cells empty: a
    conversion reads the names of free variables, not their values)."""
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    module = compile(source, filename, "exec")
    return [types.FunctionType(c, {}, c.co_name, None, tuple(types.CellType() for _ in c.co_freevars))
            for c in _code_objects(module) if not c.co_name.startswith("<") or c.co_name == "<lambda>"]


def _conversion(fn, skip_idle: bool, monkeypatch) -> tuple:
    monkeypatch.setattr(transpiler, "transform_node", functools.partial(_transform_node, skip_idle=skip_idle))
    try:
        return ("converted", transpiler._transform(fn).source)
    except Exception as e:  # noqa: BLE001 (a refusal must be the same refusal)
        return ("refused", type(e).__name__, str(e))


_transform_node = transpiler.transform_node


def _corpus() -> list:
    files = sorted(glob.glob(os.path.join(HERE, "*.py")))
    sources = [(open(f, encoding="utf-8").read(), f) for f in files]
    sources += [(random_programs.generate(s).source, f"<random program {s}>") for s in seeds(0, 10, 300)]
    sources += [(random_array_programs.generate(s).source, f"<random array program {s}>") for s in seeds(0, 5, 100)]
    sources += [(random_grad_programs.generate(s).source, f"<random grad program {s}>") for s in seeds(20, 20, 150)]
    return sources


STRIDE = 1 if LONG else 5  # quick: every fifth function (AUTOGRAPH_TESTS=long: all, about 1700)


def test_skipping_idle_passes_converts_every_function_as_running_them_all(monkeypatch):
    compared = skipped_somewhere = 0
    differ = []
    for source, filename in _corpus():
        for fn in _functions(source, filename)[::STRIDE]:
            short, long = _conversion(fn, True, monkeypatch), _conversion(fn, False, monkeypatch)
            compared += 1
            if short != long:
                differ.append(f"{filename}:{fn.__code__.co_firstlineno} {fn.__name__}")
    assert not differ, f"{len(differ)} of {compared} functions convert otherwise when idle passes are skipped: {differ[:5]}"
    assert compared > 1500 // STRIDE


def test_a_pass_is_skipped_only_without_its_nodes(monkeypatch):
    """The comparison above would see a wrong ACTS_ON: break_statements said to act on
    a node no tree has leaves the break unconverted."""
    source = "def f(n):\n    for i in range(n):\n        if i > 2:\n            break\n    return i\n"
    fn = _functions(source, "<a loop with a break>")[0]
    right = _conversion(fn, True, monkeypatch)
    assert right[0] == "converted" and right == _conversion(fn, False, monkeypatch)
    monkeypatch.setattr(break_statements, "ACTS_ON", frozenset({type(None)}))
    assert _conversion(fn, True, monkeypatch) != right
    assert _conversion(fn, False, monkeypatch) == right
    ran = []
    monkeypatch.undo()
    original = break_statements.transform
    monkeypatch.setattr(break_statements, "transform", lambda node, ctx: ran.append(1) or original(node, ctx))
    # (a loop without break is not enough: the pass moves a loop's else clause after it)
    no_break = _functions("def g(n):\n    if n > 2:\n        n += 1\n    return n\n", "<no break, no loop>")[0]
    assert _conversion(no_break, True, monkeypatch)[0] == "converted" and ran == []  # skipped
    assert _conversion(fn, True, monkeypatch)[0] == "converted" and ran == [1]
    for loop in ("while n > 0:\n        n -= 1", "for i in range(n):\n        n += i"):  # else, no break
        loop_else = _functions(f"def h(n):\n    {loop}\n    else:\n        n = -n\n    return n\n", "<loop else>")[0]
        assert _conversion(loop_else, True, monkeypatch) == _conversion(loop_else, False, monkeypatch)
        assert _conversion(loop_else, True, monkeypatch)[0] == "converted"


def _code_info_by_dis(code: types.CodeType) -> tuple[frozenset, frozenset]:
    """What _code_info gives, read with dis (as it was before it read the bytecode itself)."""
    names, mentions = set(), set()
    todo = [code]
    while todo:
        c = todo.pop()
        for ins in dis.get_instructions(c):
            if ins.opname in guards._GLOBAL_LOADS:
                names.add(ins.argval)
            elif ins.opname in guards._ATTRIBUTE_LOADS:
                mentions.add(ins.argval)
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


def test_the_guards_read_the_names_dis_reads():
    assert guards._name_args() is not None  # (this Python's loads were learned: the fast reading is in use)
    codes = [f.__code__ for m in list(sys.modules.values()) for f in vars(m).values()
             if isinstance(f, types.FunctionType)]
    codes.append(compile("x = [a.b for a in range(%d)]\n" % 3 + "".join(f"v{i} = g{i}.a{i}\n" for i in range(700)),
                         "<many names: EXTENDED_ARG>", "exec"))
    assert len(codes) > 2000
    for code in codes[::STRIDE]:
        assert guards._code_info.__wrapped__(code) == _code_info_by_dis(code), code
