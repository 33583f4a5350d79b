"""Lowers `match` to an `if` / `elif` chain on the subject, so the later passes (and a
tensor subject) see ordinary control flow: `case 1 | 2:` tests `subject == 1 or
subject == 2`, `case None:` tests `subject is None`, `case x:` binds x, `case _:` is
the else, and a guard joins its pattern's test with `and`.

Patterns that destructure (sequences, mappings, classes, `P as x`) are refused with a
ConversionError: they have no graph meaning on a tensor, and an if chain says it as well."""
from __future__ import annotations

import gast

from ..pyct import templates
from .base import Converter


# the nodes without which this pass changes nothing: a tree with none (a `match`) skips it
ACTS_ON = frozenset({gast.Match})


class MatchTransformer(Converter):
    def visit_Match(self, node):
        self.generic_visit(node)
        subject = self.ctx.namer.new("match_subject")
        head = templates.replace("subject = value", subject=subject, value=node.subject)
        return self.mark(head + self._chain(node.cases, subject), node)

    def _chain(self, cases, subject: str) -> list:
        if not cases:
            return []
        case, rest = cases[0], cases[1:]
        pattern = case.pattern
        if isinstance(pattern, gast.MatchAs) and pattern.pattern is None:  # `case x:` / `case _:`
            bind = [] if pattern.name is None else templates.replace("name = subject", name=pattern.name,
                                                                     subject=subject)
            if case.guard is None:
                return self.mark(bind, case.pattern) + case.body
            return self.mark(bind + [gast.If(test=case.guard, body=case.body, orelse=self._chain(rest, subject))],
                             case.pattern)
        test = self._test(pattern, subject)
        if case.guard is not None:
            test = gast.BoolOp(op=gast.And(), values=[test, case.guard])
        return self.mark([gast.If(test=test, body=case.body, orelse=self._chain(rest, subject))], case.pattern)

    def _test(self, pattern, subject: str) -> gast.expr:
        if isinstance(pattern, gast.MatchValue):
            return templates.replace_as_expression("subject == value", subject=subject, value=pattern.value)
        if isinstance(pattern, gast.MatchSingleton):
            return templates.replace_as_expression("subject is value", subject=subject,
                                                   value=templates.const(pattern.value))
        if isinstance(pattern, gast.MatchOr):
            return gast.BoolOp(op=gast.Or(), values=[self._test(p, subject) for p in pattern.patterns])
        raise self.error(pattern, f"this `case` pattern ({type(pattern).__name__}) cannot be converted: only "
                                  "literal values, `None` / `True` / `False`, `|`, a name and `_` are. Write the "
                                  "test as an if / elif chain, or mark the function with @do_not_convert.")


def transform(node, ctx):
    return MatchTransformer(ctx).visit(node)
