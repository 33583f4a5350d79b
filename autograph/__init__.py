"""AutoGraph: convert Python control flow on tensors into graph control flow, and trace
functions into graphs with `@function`.

    from autograph import function, to_code

    @function
    def collatz(n):
        ...
    collatz(np.int64(27))

`grad` / `value_and_grad` are added alongside these by the gradients work.
"""
from .conversion import do_not_convert
from .errors import (ConversionError, SourceNotFoundError, StagingError, UndefinedValueError,
                     UndefinedVariableError)
from .function import (ConcreteFunction, Function, RetracingWarning, TensorSpec, function,
                       functions_run_eagerly, run_functions_eagerly)
from .transpiler import convert as to_graph
from .transpiler import to_code

__all__ = ["function", "to_code", "to_graph", "do_not_convert", "run_functions_eagerly", "functions_run_eagerly",
           "ConversionError", "SourceNotFoundError", "StagingError", "UndefinedVariableError", "UndefinedValueError",
           "TensorSpec", "ConcreteFunction", "Function", "RetracingWarning"]
from .gradients_api import grad, value_and_grad  # noqa: E402
from .operators.side_effects import SideEffectWarning  # noqa: E402

__all__ += ["grad", "value_and_grad", "SideEffectWarning"]
from .operators.python_calls import py_function  # noqa: E402
__all__ += ["py_function"]
