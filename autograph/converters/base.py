"""What every converter shares: the conversion context, errors that point at the user's
line, and the block rewriting that guards statements after a lowered jump."""
from __future__ import annotations

from dataclasses import dataclass, field

import gast

from ..errors import ConversionError
from ..pyct import anno, templates
from ..pyct.naming import Namer
from ..pyct.transformer import Transformer, not_entered


@dataclass
class Context:
    """Per-function conversion state shared by all passes."""

    filename: str
    namer: Namer
    fn_name: str = ""
    # names of generated return-value variables: operators fill them with zeros rather
    # than Undefined when only one graph branch sets them
    special_names: set[str] = field(default_factory=set)


class Converter(Transformer):
    """Base transformer (pyct.transformer's faster NodeTransformer). Subclasses set
    `requires_analysis` when they read annotations: True for all analyses, or a tuple of
    the names of those they read (autograph.analysis.ANALYSES)."""

    requires_analysis = False

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def error(self, node: gast.AST, message: str) -> ConversionError:
        origin = anno.getanno(node, anno.ORIGIN)
        if origin is None:
            return ConversionError(message, filename=self.ctx.filename)
        return ConversionError(message, filename=origin[0], lineno=origin[1], col=origin[2])

    def lineno(self, node: gast.AST) -> int:
        origin = anno.getanno(node, anno.ORIGIN)
        return origin[1] if origin else 0

    def mark(self, new_nodes, original: gast.AST):
        """Give generated statements the user location of the construct they replace."""
        origin = anno.getanno(original, anno.ORIGIN)
        if origin is not None:
            for n in new_nodes if isinstance(new_nodes, list) else [new_nodes]:
                if not anno.hasanno(n, anno.ORIGIN):
                    anno.setanno(n, anno.ORIGIN, origin)
        return new_nodes


_BLOCK_FIELDS = ("body", "orelse", "finalbody")


class _JumpState:
    def __init__(self, flag: str):
        self.flag = flag
        self.count = 0


class GuardingTransformer(Converter):
    """Lowers a jump (break, continue, return) to `flag = True` and wraps the statements
    after any statement that may have jumped in `if not flag:`.

    Subclasses push a _JumpState (or None for scopes the jump cannot leave, such as
    nested functions) on `self.stack` while visiting the region the jump exits."""

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.stack: list[_JumpState | None] = []

    @property
    def state(self) -> _JumpState | None:
        return self.stack[-1] if self.stack else None

    def visit_block(self, stmts: list) -> list:
        st = self.state
        out: list = []
        for i, s in enumerate(stmts):
            before = st.count if st else 0
            new = self.visit(s)
            if isinstance(new, list):
                out.extend(new)
            elif new is not None:
                out.append(new)
            if st is not None and st.count > before and i + 1 < len(stmts):
                rest = self.visit_block(stmts[i + 1:])
                guard = templates.replace("if not flag:\n    rest", flag=st.flag, rest=rest)
                out.extend(self.mark(guard, stmts[i + 1]))
                break
        return out

    def generic_visit(self, node):
        if not isinstance(node, gast.stmt):
            return super().generic_visit(node)
        for name, value in gast.iter_fields(node):
            if name in _BLOCK_FIELDS and isinstance(value, list):
                setattr(node, name, self.visit_block(value))
            elif name == "handlers":
                for h in value:
                    h.body = self.visit_block(h.body)
            elif isinstance(value, list):
                setattr(node, name, [self.visit(v) if isinstance(v, gast.AST) else v for v in value])
            elif isinstance(value, gast.AST):
                setattr(node, name, self.visit(value))
        return node

    def lower_jump(self, node: gast.stmt, keyword: str) -> list:
        """`break` / `continue` -> `flag = True`; the statements after it get guarded."""
        st = self.state
        if st is None:
            raise self.error(node, f"'{keyword}' outside a loop")
        st.count += 1
        return self.mark(templates.replace("flag = True", flag=st.flag), node)

    def visit_FunctionDef(self, node):
        self.stack.append(None)
        node.body = self.visit_block(node.body)
        self.stack.pop()
        return node

    visit_Lambda = not_entered
