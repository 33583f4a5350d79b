"""The runtime value of a tensor list: an immutable, persistent stack.

Pushing returns a new list sharing the old one (O(1)), so a list can flow through a
loop as an ordinary value: forward loops push accumulated intermediates, backward
loops pop them in reverse, and nothing is mutated in place (parallel iterations and
second-order gradients stay correct)."""
from __future__ import annotations

import numpy as np


class ListValue:
    __slots__ = ("prev", "item", "length")

    def __init__(self, prev: "ListValue | None" = None, item=None):
        self.prev = prev
        self.item = item
        self.length = 0 if prev is None and item is None else (prev.length if prev is not None else 0) + 1

    def push(self, item) -> "ListValue":
        return ListValue(self, item)

    def pop(self):
        if self.length == 0:
            raise IndexError("pop from an empty tensor list")
        return (self.prev if self.prev is not None else EMPTY), self.item

    def items(self) -> list:
        out = []
        node = self
        while node is not None and node.length > 0:
            out.append(node.item)
            node = node.prev
        out.reverse()
        return out

    def get(self, i: int):
        n = self.length
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"tensor list index {i} out of range for a list of length {n}")
        node = self
        for _ in range(n - 1 - i):
            node = node.prev
        return node.item

    def nbytes(self) -> int:
        return sum(np.asarray(x).nbytes for x in self.items())

    def __len__(self):
        return self.length

    def __repr__(self):
        return f"ListValue(length={self.length})"


EMPTY = ListValue()
