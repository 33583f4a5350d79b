"""Find and parse the source of a Python function (or lambda) into a gast tree.

Source comes from `inspect`, so functions in modules, in files run as scripts,
methods and nested functions all work, and so do functions typed where Python keeps the
source in `linecache` (IPython, Jupyter cells, the Python 3.13 REPL); functions made by
`exec` or typed at the plain `python` REPL (before 3.13) or in `python -c` have no source
and raise `SourceNotFoundError`.
"""
from __future__ import annotations

import ast
import functools
import inspect
import io
import linecache
import re
import textwrap
import types
from dataclasses import dataclass

import gast
from gast import ast3 as gast_ast3

from ..errors import ConversionError, SourceNotFoundError


@dataclass(frozen=True)
class ParsedEntity:
    """A parsed function: its node (FunctionDef or Lambda), the dedented source it came
    from, the user's file name, and the offsets that map tree positions back to it."""

    node: gast.AST
    source: str
    filename: str
    line_offset: int  # user line = tree line + line_offset
    col_offset: int   # user column = tree column + col_offset


# the line a definition starts on (inspect.findsource's pattern)
_DEFINITION_LINE = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")


def _code_lines(code: types.CodeType, filename: str, module_globals: dict,
                tokenized: bool = False) -> tuple[list[str], int]:
    """inspect.getsourcelines(code), its lines read with the function's own module globals
    instead of the module inspect.getmodule finds: for a file no module was loaded from (a
    notebook cell, a linecache entry) that search reads every loaded module's file on each
    call, most of the time it takes to find a function's source. (The globals matter only
    to a module's loader, for a file not on disk.) A def's block ends where its code does
    (_definition_block), or where inspect's tokenizer says with `tokenized`."""
    lines = linecache.getlines(filename, module_globals)
    if not lines:
        raise OSError("could not get source code")
    lnum = code.co_firstlineno - 1
    while lnum > 0:
        try:
            line = lines[lnum]
        except IndexError:
            raise OSError("lineno is out of bounds") from None
        if _DEFINITION_LINE.match(line):
            break
        lnum -= 1
    if not tokenized and code.co_name != "<lambda>" and lnum < len(lines) and \
            lines[lnum].lstrip().startswith(("def ", "async ", "@")):
        return _definition_block(code, lines, lnum), lnum + 1
    return inspect.getblock(lines[lnum:]), lnum + 1


def _definition_block(code: types.CodeType, lines: list[str], lnum: int) -> list[str]:
    """The lines of the def starting at lines[lnum] without tokenizing them (inspect.getblock
    does, a third of the time to find a function's source): up to the last line its
    instructions span (nested bodies included), then the lines indented deeper than the def
    (a trailing `pass` has no instruction); blank and comment lines after the last of those
    are left out, as getblock leaves them. A block that ends early (inside a string or
    brackets past the last instruction) does not parse: parse_entity then asks getblock."""
    last = lnum
    todo = [code]
    while todo:
        c = todo.pop()
        for _, end, _, _ in c.co_positions():
            if end is not None and end > last:
                last = end
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    head = lines[lnum]
    indent = len(head) - len(head.lstrip())
    end = max(last, lnum + 1)  # (positions count lines from 1: `last` is the index after the last line)
    for i in range(end, len(lines)):
        text = lines[i]
        stripped = text.strip()
        if stripped and not stripped.startswith("#"):
            if len(text) - len(text.lstrip()) <= indent:
                break
            end = i + 1
    return lines[lnum:end]


def _source_file(code: types.CodeType) -> str | None:
    """inspect.getsourcefile(code). For a `<...>` file Python keeps in linecache (a notebook
    cell, a program registered there) that is the name itself, found without inspect's search
    of every loaded module for one with a loader for it (whose answer it would not change)."""
    filename = code.co_filename
    if filename.startswith("<") and filename in linecache.cache:
        return filename
    return inspect.getsourcefile(code)


def _source_lines(fn: types.FunctionType, tokenized: bool = False) -> tuple[list[str], int, str]:
    # Read the source of the code object, not of `fn`: inspect follows `__wrapped__`
    # from a function, so a `functools.wraps` wrapper would be replaced by the function
    # it wraps and the wrapper's own code would never run.
    code = fn.__code__
    try:
        filename = _source_file(code)
        if filename:
            linecache.checkcache(filename)
        else:
            filename = inspect.getfile(code)
            if not (filename.startswith("<") and filename.endswith(">")):
                raise OSError("source code not available")
        lines, start = _code_lines(code, filename, fn.__globals__, tokenized)
    except (OSError, TypeError) as e:
        raise SourceNotFoundError(
            f"cannot find the source code of {getattr(fn, '__qualname__', fn)!r} ({e}); AutoGraph "
            "converts functions whose source Python keeps: in files, notebook cells and IPython (the "
            "plain `python` REPL and `python -c` keep none). Define it in a module or script, or use "
            "@function(autograph=False) to trace it without conversion.") from None
    return lines, start, filename


def parse_entity(fn: types.FunctionType) -> ParsedEntity:
    """Parse `fn`'s source. Decorators are dropped (the caller applies conversion itself).

    Raises:
      SourceNotFoundError: the source is not available.
      ConversionError: the source of a lambda is ambiguous.
    """
    lines, start, filename = _source_lines(fn)
    first = lines[0]
    indent = len(first) - len(first.lstrip())
    source = textwrap.dedent("".join(lines))
    if fn.__name__ == "<lambda>":
        return _parse_lambda(fn, source, filename, start, indent)
    try:
        module = parse(source)
    except SyntaxError:  # (the block ended early: see _definition_block)
        lines, start, filename = _source_lines(fn, tokenized=True)
        source = textwrap.dedent("".join(lines))
        module = parse(source)
    node = module.body[0]
    if not isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)) or node.name != fn.__code__.co_name:
        raise ConversionError(f"expected the definition of {fn.__code__.co_name} for {fn.__qualname__}",
                              filename=filename, lineno=start)
    if isinstance(node, gast.AsyncFunctionDef):
        raise ConversionError("async functions cannot be converted; make it a plain function",
                              filename=filename, lineno=start, col=indent)
    node.decorator_list = []
    return ParsedEntity(node, source, filename, start - 1, indent)


def _parse_lambda(fn, source: str, filename: str, start: int, indent: int) -> ParsedEntity:
    """A lambda's source is the whole line(s) it sits on; pick the lambda whose arguments
    match. Lines that do not parse alone (a lambda inside a multi-line call) are retried
    with trailing text trimmed."""
    tree = None
    text = source
    while text:
        try:
            tree = parse(text)
            break
        except SyntaxError:
            text = text[:-1]
    if tree is None:
        raise SourceNotFoundError(f"cannot parse the source of the lambda at {filename}:{start}; "
                                  "give it a name with `def`")
    want = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
    found = [n for n in gast.walk(tree) if isinstance(n, gast.Lambda)
             and [a.id for a in n.args.args] == want]
    if len(found) != 1:
        raise SourceNotFoundError(
            f"{len(found)} lambdas with arguments {want} on {filename}:{start}; AutoGraph cannot "
            "tell which one to convert. Give the function a name with `def`.")
    return ParsedEntity(found[0], source, filename, start - 1, indent)


def parse(source: str) -> gast.Module:
    """gast.parse(source), translated from the standard ast about twice as fast."""
    return _ToGast().visit(ast.parse(source))


def unparse(node: gast.AST) -> str:
    """Source text of a gast tree (via the standard ast and astunparse)."""
    if isinstance(node, list):
        node = gast.Module(body=node, type_ignores=[])
    out = io.StringIO()  # (no positions needed: astunparse writes the text from the tree alone)
    _unparser()(_ToAst().visit(node), file=out)
    return out.getvalue().strip() + "\n"


def unparser_class() -> type:
    """The Unparser `unparse` writes with (astunparse's, corrected), to build on."""
    return _unparser()


def translator_to_ast() -> type:
    """The class translating a gast tree to the standard ast that `unparse` uses (each
    node through its `visit`), to build on."""
    return _ToAst


_OLD_CONSTANT_VISITORS = ("visit_Num", "visit_Str", "visit_Bytes", "visit_NameConstant", "visit_Ellipsis")


def _faster(translator: type, target, positions: bool = True) -> type:
    """gast's translator between the standard ast and gast (`translator`, making nodes of
    module `target`), making the same nodes, but with NodeVisitor.visit's method lookup
    done once per node class and its generic_visit's fields read once each: translating
    was a quarter of a conversion's time (a function's tree, then the generated one).
    Without `positions` (a tree only written as text) no node gets a line or column, and
    one instance of each context and operator (field-less nodes) serves all."""

    class Faster(translator):
        _methods: dict = {}  # node class -> the function translating it
        _targets: dict = {}  # node class -> the class of `target` it becomes (None: dropped)
        _leaves: dict = {}  # field-less node class -> its one instance (without positions)

        def visit(self, node):
            cls = node.__class__
            try:
                method = self._methods[cls]
            except KeyError:
                kind = type(self)
                method = getattr(kind, "visit_" + cls.__name__, None)
                if method is None or (method is ast.NodeVisitor.visit_Constant
                                      and not any(hasattr(kind, m) for m in _OLD_CONSTANT_VISITORS)):
                    method = kind.generic_visit
                self._methods[cls] = method
            return method(self, node)

        def _visit(self, node):
            if isinstance(node, ast.AST):
                return self.visit(node)
            if isinstance(node, list):
                return [self.visit(n) if isinstance(n, ast.AST) else self._visit(n) for n in node]
            return node

        def generic_visit(self, node):
            cls = node.__class__
            try:
                new_cls = self._targets[cls]
            except KeyError:
                new_cls = self._targets[cls] = getattr(target, cls.__name__, None)
            if new_cls is None:  # (a node that is not part of the target's tree)
                return None
            if not positions and not node._fields:
                leaf = self._leaves.get(cls)
                if leaf is None:
                    leaf = self._leaves[cls] = new_cls()
                return leaf
            fields = {}
            for field in node._fields:
                try:
                    value = getattr(node, field)
                except AttributeError:
                    continue
                if isinstance(value, ast.AST):
                    value = self.visit(value)
                elif isinstance(value, list):
                    value = [self.visit(n) if isinstance(n, ast.AST) else self._visit(n) for n in value]
                fields[field] = value
            if not positions:
                new_node = new_cls.__new__(new_cls)
                new_node.__dict__.update(fields)
                return new_node
            new_node = new_cls(**fields)
            for attr in node._attributes:
                try:
                    setattr(new_node, attr, getattr(node, attr))
                except AttributeError:
                    pass
            return new_node

        if not positions:  # (gast's own translations of these copy positions)
            def visit_Name(self, node):
                new_node = target.Name.__new__(target.Name)
                new_node.__dict__.update(id=node.id, ctx=self.visit(node.ctx))
                return new_node

            visit_Assign = generic_visit

    Faster.__name__ = Faster.__qualname__ = "Faster" + translator.__name__
    return Faster


_ToGast = _faster(gast_ast3.Ast3ToGAst, gast)
_ToAst = _faster(gast_ast3.GAstToAst3, ast, positions=False)  # (for unparse only)


@functools.cache
def _unparser():
    """astunparse's Unparser, but writing a subscript's tuple key without parentheses:
    astunparse 1.6.3 predates Python 3.9's AST, where `x[None, :]` has a Tuple holding a
    Slice as its key, and writes `x[(None, :)]`, which is not Python."""
    import astunparse  # noqa: PLC0415 (only needed when emitting code)

    class Unparser(astunparse.Unparser):
        def _Subscript(self, t):
            self.dispatch(t.value)
            self.write("[")
            key = t.slice
            if isinstance(key, ast.Tuple) and any(isinstance(e, ast.Slice) for e in key.elts):
                for i, elt in enumerate(key.elts):
                    self.write(", " if i else "")
                    self.dispatch(elt)
                self.write("," if len(key.elts) == 1 else "")
            else:
                self.dispatch(t.slice)
            self.write("]")

    return Unparser
