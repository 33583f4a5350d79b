"""The `ag__` namespace that converted code calls: every runtime operator, in one place."""
from __future__ import annotations

from .conversion import changing_call, converted_call
from .operators.attributes import array_attribute
from .operators.augmented import augmented, setitem
from .operators.comprehensions import comprehension_iter, comprehension_test, generator_expression
from .operators.conditionals import if_exp, if_stmt
from .operators.context_managers import context_manager
from .operators.data_structures import contents, list_append, set_contents
from .operators.exceptions import assert_stmt, raise_stmt, try_body
from .operators.loops import for_stmt, while_stmt
from .operators.logical import and_, compare_chain, not_, or_
from .operators.maybe_defined import ld, retval
from .operators.side_effects import python_side_effect
from .operators.strings import format_string, percent_format
from .operators.subscripts import getitem, slice_
from .operators.variables import Undefined, UndefinedReturnValue

__all__ = ["augmented", "converted_call", "comprehension_iter", "comprehension_test", "generator_expression", "for_stmt", "if_exp", "if_stmt",
           "while_stmt", "list_append", "contents", "set_contents", "assert_stmt", "raise_stmt", "and_",
           "compare_chain", "not_", "or_", "Undefined", "UndefinedReturnValue", "ld", "retval",
           "python_side_effect", "format_string", "percent_format", "getitem", "slice_", "try_body", "setitem",
           "array_attribute", "context_manager", "changing_call"]
