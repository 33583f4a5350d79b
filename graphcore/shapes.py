"""Static tensor shapes: known rank with possibly unknown dimensions, or unknown rank."""
from __future__ import annotations

from typing import Iterable, Optional


class TensorShape:
    """A shape as the graph knows it before running: `dims` is a tuple of ints or
    None (unknown size), or `dims` is None when even the rank is unknown."""

    __slots__ = ("dims",)

    def __init__(self, dims: Optional[Iterable[Optional[int]]]):
        if isinstance(dims, TensorShape):
            dims = dims.dims
        self.dims = None if dims is None else tuple(None if d is None or d < 0 else int(d) for d in dims)

    @staticmethod
    def unknown() -> "TensorShape":
        return TensorShape(None)

    @property
    def rank(self) -> Optional[int]:
        return None if self.dims is None else len(self.dims)

    def is_fully_defined(self) -> bool:
        return self.dims is not None and all(d is not None for d in self.dims)

    def num_elements(self) -> Optional[int]:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self.dims:
            n *= d
        return n

    def as_list(self):
        if self.dims is None:
            raise ValueError("as_list() is not defined on a shape of unknown rank")
        return list(self.dims)

    def is_compatible_with(self, other) -> bool:
        other = as_shape(other)
        if self.dims is None or other.dims is None:
            return True
        if len(self.dims) != len(other.dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self.dims, other.dims))

    def merge_with(self, other) -> "TensorShape":
        """The most specific shape compatible with both; raises if they conflict."""
        other = as_shape(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"shapes {self} and {other} are not compatible")
        if self.dims is None:
            return other
        if other.dims is None:
            return self
        return TensorShape(a if a is not None else b for a, b in zip(self.dims, other.dims))

    def most_specific_compatible(self, other) -> "TensorShape":
        """The most specific shape that both are instances of (used to relax loop variables)."""
        other = as_shape(other)
        if self.dims is None or other.dims is None or len(self.dims) != len(other.dims):
            return TensorShape(None)
        return TensorShape(a if a == b else None for a, b in zip(self.dims, other.dims))

    def __eq__(self, other):
        try:
            return self.dims == as_shape(other).dims
        except (TypeError, ValueError):
            return NotImplemented

    def __hash__(self):
        return hash(self.dims)

    def __len__(self):
        if self.dims is None:
            raise ValueError("len() of a shape of unknown rank")
        return len(self.dims)

    def __iter__(self):
        if self.dims is None:
            raise ValueError("cannot iterate over a shape of unknown rank")
        return iter(self.dims)

    def __getitem__(self, i):
        if self.dims is None:
            return None
        return self.dims[i]

    def __str__(self):
        if self.dims is None:
            return "[?...]"
        return "[" + ",".join("?" if d is None else str(d) for d in self.dims) + "]"

    def __repr__(self):
        return f"TensorShape({None if self.dims is None else list(self.dims)})"


def as_shape(value) -> TensorShape:
    if isinstance(value, TensorShape):
        return value
    if value is None:
        return TensorShape(None)
    if isinstance(value, int):
        return TensorShape([value])
    return TensorShape(value)


def scalar() -> TensorShape:
    return TensorShape(())


def broadcast(a, b) -> TensorShape:
    """numpy broadcasting of two static shapes; raises ValueError naming both if impossible."""
    a, b = as_shape(a), as_shape(b)
    if a.dims is None or b.dims is None:
        return TensorShape(None)
    out = []
    da, db = a.dims[::-1], b.dims[::-1]
    for i in range(max(len(da), len(db))):
        x = da[i] if i < len(da) else 1
        y = db[i] if i < len(db) else 1
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None:
            out.append(y)
        elif y is None or x == y:
            out.append(x)
        else:
            raise ValueError(f"shapes {a} and {b} cannot be broadcast together")
    return TensorShape(out[::-1])
