"""Finding a function's source (pyct/parser.py): the lines and first line inspect gives, for
functions in files, in linecache entries (notebook cells) and lambdas; no source, the usual error."""
import inspect

import pytest

from autograph import to_code
from autograph.errors import SourceNotFoundError
from autograph.pyct import parser
from benchmarks.bench_autograph import fresh_nested, nested


def _decorated(f):
    return f


@_decorated
def _with_a_decorator(x):
    return x + 1


_lambda = lambda x: x * 2  # noqa: E731


@pytest.mark.parametrize("fn", [nested, fresh_nested(), _with_a_decorator, _lambda, parser.parse_entity],
                         ids=["file", "linecache", "decorated", "lambda", "library"])
def test_lines_are_inspects(fn):
    code = fn.__code__
    filename = inspect.getsourcefile(code) or inspect.getfile(code)
    assert parser._code_lines(code, filename, fn.__globals__, tokenized=True) == inspect.getsourcelines(code)
    # found from where the code ends (no tokenizing): the same lines, but for blank ones at the end
    lines, start = parser._code_lines(code, filename, fn.__globals__)
    want, want_start = inspect.getsourcelines(code)
    assert start == want_start and "".join(lines).rstrip() == "".join(want).rstrip()


def test_a_block_that_does_not_parse_is_found_again_by_tokenizing(monkeypatch):
    # a block found from where the code ends that stops inside a string or brackets (text past the
    # last instruction at the def's indentation) does not parse: parse_entity asks inspect's tokenizer
    quick = parser._definition_block
    monkeypatch.setattr(parser, "_definition_block", lambda code, lines, lnum: quick(code, lines, lnum)[:3])
    parsed = parser.parse_entity(nested)
    assert parsed.node.name == "nested" and len(parsed.node.body) == len(parser.parse_entity(fresh_nested()).node.body)


def test_a_function_without_source_is_refused_as_before():
    namespace: dict = {}
    exec(compile("def f(x):\n    return x\n", "<no source>", "exec"), namespace)  # noqa: S102
    with pytest.raises(SourceNotFoundError, match=r"\(could not get source code\)"):
        to_code(namespace["f"])
