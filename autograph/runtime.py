"""The `ag__` namespace that converted code calls: every runtime operator, in one place."""
from __future__ import annotations

from .conversion import converted_call
from .operators.control_flow import for_stmt, if_exp, if_stmt, while_stmt
from .operators.data_structures import list_append
from .operators.exceptions import assert_stmt
from .operators.logical import and_, compare_chain, not_, or_
from .operators.variables import Undefined, UndefinedReturnValue, ld, retval

__all__ = ["converted_call", "for_stmt", "if_exp", "if_stmt", "while_stmt", "list_append", "assert_stmt", "and_",
           "compare_chain", "not_", "or_", "Undefined", "UndefinedReturnValue", "ld", "retval"]
