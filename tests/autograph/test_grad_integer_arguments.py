"""grad refuses to differentiate with respect to an integer or bool (the answer would be 0)."""
import numpy as np
import pytest

import autograph


def square(x):
    return x * x


@pytest.mark.parametrize("arg, what", [(np.int64(3), "a numpy int64"), (np.int32(3), "a numpy int32"),
                                       (np.array([1, 2]), "a numpy int64"), (True, "a bool"),
                                       (np.bool_(True), "a bool")])
def test_grad_with_respect_to_an_integer_says_to_pass_a_float(arg, what):
    with pytest.raises(TypeError, match=f"argument 0 \\(x\\) is {what};.*pass a float"):
        autograph.grad(square)(arg)


def test_python_numbers_and_floats_still_work():
    assert autograph.grad(square)(3) == 6.0  # a Python int is untyped: it becomes float64
    assert autograph.grad(square)(np.float64(3)) == 6.0
    assert autograph.value_and_grad(square)(np.float32(2)) == (4.0, 4.0)


def test_only_the_differentiated_argument_must_be_a_float():
    def power(x, n):
        y = x
        for _ in range(n - 1):
            y = y * x
        return y

    assert autograph.grad(power)(np.float64(2.0), np.int64(3)) == pytest.approx(12.0)
    with pytest.raises(TypeError, match=r"argument 1 \(n\) is a numpy int64"):
        autograph.grad(power, argnums=1)(np.float64(2.0), np.int64(3))


@autograph.function
def grad_inside(n):
    return autograph.grad(square)(n)


def test_an_integer_tensor_inside_a_function_is_refused_too():
    with pytest.raises(TypeError, match=r"argument 0 \(x\) is a tensor of int64"):
        grad_inside(np.int64(2))
    assert grad_inside(np.float64(2.0)) == 4.0
