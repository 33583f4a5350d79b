"""The conversion pipeline: parse -> (analyse ->) convert, pass by pass -> generate
source from the tree -> load it with a source map -> rebind to the user's globals and
closure. `PASSES` is the one ordered list of converters."""
from __future__ import annotations

import functools
import threading
import types
import weakref

import gast

from . import analysis, conversion, guards, runtime
from .conversion_policy import plain_function
from .converters import (asserts, attributes, augmented_assignments, break_statements, call_trees, comprehensions,
                         conditional_expressions, continue_statements, control_flow, formatted_strings,
                         item_assignments, lists, logical_expressions, loop_tests, match_statements,
                         return_statements, side_effects, subscripts, try_statements, unsupported, variables,
                         with_statements)
from .converters.base import Context
from .pyct import loader, origin_info, parser, templates
from .pyct.naming import Namer, all_names
from .pyct.transformer import node_classes

# The order matters; each comment says why a pass sits where it does.
PASSES = [
    match_statements,         # `match` is an if / elif chain to everything after
    unsupported,              # reject what cannot be converted before changing anything
    break_statements,         # lower jumps first: later passes only see structured loops
    continue_statements,      # before return, so a guarded `continue` does not hide a return
    return_statements,        # early returns anywhere become do_return / retval_ flags
    loop_tests,               # a while test with `:=` becomes a flag re-tested at the body's end (no jumps left)
    asserts,                  # `assert` -> ag__.assert_stmt, before calls are wrapped
    try_statements,           # a try body with handlers in `with ag__.try_body(...)`, before calls are wrapped
    side_effects,             # note changes to objects from outside; before lists rebinds appended names
    augmented_assignments,    # `a += b` -> `a = ag__.augmented(...)`: numpy's in-place vs graph values
    item_assignments,         # `y[k] = v` -> `y = ag__.setitem(...)`: a new graph array, the name rebound
    lists,                    # `xs.append(v)` -> assignment, so the list is loop state
    comprehensions,           # guard comprehension iterables / conditions (they stay Python)
    with_statements,          # `with m:` -> ag__.context_manager(m, line, "m"): before call_trees, so "m" is as written
    call_trees,               # before control flow, so the ag__ calls it emits stay unwrapped
    formatted_strings,        # f-strings -> ag__.format_string, after call_trees so the call stays unwrapped
    subscripts,               # `a[k]` -> ag__.getitem: numpy arrays indexed by tensors; after call_trees likewise
    attributes,               # `a.shape` -> ag__.array_attribute: numpy's shape of a tensor; after call_trees likewise
    variables,                # guards reads of maybe-undefined names; needs the plain structure
    control_flow,             # if / while / for -> ag__.if_stmt / while_stmt / for_stmt
    conditional_expressions,  # `a if c else b`
    logical_expressions,      # last: also converts the `not flag and test` of lowered jumps
]
_EXPRESSION_PASSES = [call_trees, formatted_strings, subscripts, attributes, conditional_expressions,
                      logical_expressions]


class _Converted:
    """A converted function's code and generated file; `source`, the converted function
    alone (for to_code), is written from its tree when first asked for (a call never asks)."""

    __slots__ = ("code", "filename", "_tree", "_source")

    def __init__(self, code: types.CodeType, filename: str, tree):
        self.code, self.filename = code, filename
        self._tree, self._source = tree, None

    @property
    def source(self) -> str:
        with _lock:
            if self._source is None:
                self._source = parser.unparse(self._tree)
                self._tree = None
            return self._source


_cache: dict = {}
_instances: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_lock = threading.RLock()


def transform_node(node: gast.AST, ctx: Context, skip_idle: bool = True) -> gast.AST:
    """`node` through every pass in order. A pass whose module names the nodes it acts on
    (`ACTS_ON`) is skipped when the tree has none of them (`skip_idle`; most functions
    have no break, try, with, f-string...), and so are the analyses it reads (their
    reaching definitions also mark reads for later passes: ACTS_ON is only declared where
    skipping both converts the same, which tests/autograph/test_conversion_shortcuts.py
    checks on a corpus). The node classes are found by a walk, again only after a pass
    that ran (it may have made new nodes) when a later pass asks. The runtime's functions
    the passes call (`ag__.augmented`) are no attributes to act on."""
    passes = _EXPRESSION_PASSES if isinstance(node, gast.Lambda) else PASSES
    present: set | None = None  # the tree's node classes, as last walked
    changed = True  # a pass ran since: `present` may lack the classes of nodes it made
    for p in passes:
        acts_on = getattr(p, "ACTS_ON", None) if skip_idle else None
        if acts_on is not None:
            if changed and (present is None or present.isdisjoint(acts_on)):
                present, changed = node_classes(node, runtime="ag__"), False
            if present.isdisjoint(acts_on):
                continue  # (classes a pass removed may linger in `present`: then it runs, as before)
        needed = _requires_analysis(p)
        if needed:
            analysis.analyze(node, None if needed is True else needed)
        node = p.transform(node, ctx)
        changed = True
    return node


@functools.cache
def _requires_analysis(module) -> "bool | frozenset":
    """The analyses a converter module's classes read: True for all, a set of their names,
    or False for none (`requires_analysis` on each class)."""
    needed: set = set()
    for v in vars(module).values():
        if not (isinstance(v, type) and v.__module__ == module.__name__):
            continue
        wanted = getattr(v, "requires_analysis", False)
        if wanted is True:
            return True
        if wanted:
            unknown = set(wanted) - set(analysis.ANALYSES)
            if unknown:
                raise ValueError(f"{module.__name__}: no analysis named {', '.join(sorted(unknown))}")
            needed |= set(wanted)
    return frozenset(needed) or False


def _transform(fn: types.FunctionType) -> _Converted:
    parsed = parser.parse_entity(fn)
    node = parsed.node
    origin_info.annotate(node, parsed.filename, parsed.line_offset, parsed.col_offset)
    freevars = list(fn.__code__.co_freevars)
    ctx = Context(parsed.filename, Namer(all_names(node) | {"ag__"} | set(freevars)), fn.__name__)
    node = transform_node(node, ctx)
    _drop_definition_time_expressions(node)
    if isinstance(node, gast.Lambda):
        body = templates.replace("ag__lambda = fn", fn=node)
        result = "ag__lambda"
    else:
        body = [node]
        result = node.name
        if node.name not in freevars:
            # the function's own name is a global in the user's module (a recursive call
            # must find whatever it is bound to there), not the factory's local
            body.insert(0, gast.Global(names=[node.name]))
    factory = templates.replace("def ag__factory():\n    body\n    return result\n", body=body, result=result)
    factory[0].args.args = [gast.Name(id=n, ctx=gast.Param(), annotation=None, type_comment=None)
                            for n in ["ag__"] + freevars]
    module = gast.Module(body=factory, type_ignores=[])
    source, line_map = origin_info.generate(module)
    namespace, filename = loader.load_source(source, fn.__name__.strip("<>"), line_map)
    inner = namespace["ag__factory"](runtime, *[None] * len(freevars))
    return _Converted(inner.__code__, filename, [node] if not isinstance(node, gast.Lambda) else body)


def _drop_definition_time_expressions(node: gast.AST) -> None:
    """Defaults and annotations are evaluated where the user's `def` ran, in the user's
    module; the converted function takes the evaluated values from the original
    (`__defaults__`, `__kwdefaults__`, `__annotations__`), so the generated `def` must not
    evaluate them again in the loader's namespace."""
    args = node.args
    args.defaults = []
    args.kw_defaults = [None] * len(args.kwonlyargs)
    if isinstance(node, gast.FunctionDef):
        node.returns = None
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None:
                a.annotation = None


def _converted(fn: types.FunctionType) -> _Converted:
    with _lock:
        entry = _cache.get(fn.__code__)
        if entry is None:
            entry = _cache[fn.__code__] = _transform(fn)
        return entry


def _not_convertible(fn) -> TypeError:
    return TypeError(f"cannot convert {fn!r}: AutoGraph converts Python functions, methods and "
                     "functools.partial of them")


def convert(fn):
    """The converted version of a function, bound method, static or class method, or a
    functools.partial of one (which keeps its bound arguments); cached."""
    if isinstance(fn, types.MethodType):
        return types.MethodType(convert(fn.__func__), fn.__self__)
    if isinstance(fn, (staticmethod, classmethod)):
        return type(fn)(convert(fn.__func__))
    if isinstance(fn, functools.partial):
        return functools.partial(convert(fn.func), *fn.args, **fn.keywords)
    if not isinstance(fn, types.FunctionType):
        raise _not_convertible(fn)
    try:
        hit = _instances.get(fn)
    except TypeError:
        hit = None
    if hit is not None:
        guards.note(hit)  # it runs in a trace: what it reads is what the trace depends on
        return hit
    entry = _converted(fn)
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = tuple(types.CellType(runtime) if name == "ag__" else cells[name] for name in entry.code.co_freevars)
    new = types.FunctionType(entry.code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__annotations__ = fn.__annotations__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__dict__.update(fn.__dict__)
    new.__wrapped__ = fn
    with _lock:
        _instances[fn] = new
    guards.note(new)
    return new


class PythonSource(str):
    """Python source text: a plain `str` that a notebook shows highlighted (and IPython's
    terminal shows as the code, not as a quoted string with `\\n`)."""

    __slots__ = ()

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        bundle = {"text/plain": str(self).rstrip("\n")}
        try:
            from pygments import highlight  # noqa: PLC0415 (pygments comes with rich)
            from pygments.formatters import HtmlFormatter  # noqa: PLC0415
            from pygments.lexers import PythonLexer  # noqa: PLC0415
        except ImportError:  # pragma: no cover
            return bundle
        bundle["text/html"] = highlight(str(self), PythonLexer(), HtmlFormatter(noclasses=True, nowrap=False))
        return bundle


def to_code(fn) -> str:
    """The converted source of `fn` (what runs when it is traced), as a str that
    notebooks display as highlighted Python."""
    plain = plain_function(getattr(fn, "python_function", fn))
    if plain is None:
        raise _not_convertible(fn)
    return PythonSource(_converted(plain).source)


conversion.install_converter(convert)  # converted_call converts the user's functions with it
