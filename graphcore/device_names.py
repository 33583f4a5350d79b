"""Device names, read as TensorFlow writes them: `cpu:0`, `/cpu:0`, `/device:CPU:0`,
`/task:1/cpu:0`, `/job:worker/task:1/device:CPU:0`, `/job:worker/replica:0/task:1/cpu:0`.

A name may leave parts out (`cpu:0` says nothing of the task); such a partial name
matches every device whose named parts agree (`cpu:0` matches `/job:worker/task:1/cpu:0`).
The task is what decides the machine: the in-process engine runs every task's devices
here, the Ray engine runs each task's on the node the task is mapped to.

This is the one place device names are parsed; placement (placement.py) and the
engines ask it. Names are data: nothing in them is ever run.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import GraphError

_JOB = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")
_NUMBER = re.compile(r"(0|[1-9][0-9]*)\Z")
_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_ORDER = ("job", "replica", "task", "device")
EXAMPLES = "'cpu:0', '/task:1/cpu:0' or '/job:worker/task:1/device:CPU:0'"


@dataclass(frozen=True)
class DeviceName:
    """The parts of a device name; None where the name leaves a part out."""

    job: str | None = None
    replica: int | None = None
    task: int | None = None
    type: str | None = None   # lower case: "CPU" and "cpu" are one type
    index: int | None = None

    @property
    def complete(self) -> bool:
        """Names one device of a machine (a type and an index): what a run's devices must be."""
        return self.type is not None and self.index is not None

    @property
    def task_name(self) -> str | None:
        """`/job:worker/task:1` (or `/task:1`): the machine the device is on; None if unnamed."""
        if self.task is None:
            return None
        return (f"/job:{self.job}" if self.job is not None else "") + f"/task:{self.task}"

    def matches(self, other: "DeviceName") -> bool:
        """Every part this name gives is `other`'s too (a partial name matches fuller ones)."""
        return all(mine is None or mine == theirs for mine, theirs in (
            (self.job, other.job), (self.replica, other.replica), (self.task, other.task),
            (self.type, other.type), (self.index, other.index)))


def parse_device(name: str) -> DeviceName:
    """The parts of `name`; a GraphError saying what is wrong and how to write it if it is
    not a device name (the caller adds where the name came from)."""
    if not isinstance(name, str):
        raise GraphError(f"a device name is a string such as {EXAMPLES}, got {type(name).__name__} {name!r}")
    pieces = name[1:].split("/") if name.startswith("/") else name.split("/")
    parts: dict = {}
    seen = -1
    for piece in pieces:
        kind, _, rest = piece.partition(":")
        kind_l = kind.lower()
        if kind_l in ("job", "replica", "task"):
            field_kind = kind_l
        elif kind_l == "device" or (_TYPE.match(kind) and kind_l not in _ORDER):
            field_kind = "device"
        else:
            raise _malformed(name, f"{piece!r} is not a part of a device name" if piece else "it has an empty part")
        at = _ORDER.index(field_kind)
        if at <= seen:
            raise _malformed(name, f"{field_kind} is given twice or out of order (the order is "
                                   "/job:NAME/replica:N/task:N/TYPE:N)" if at == seen else
                             f"{field_kind} comes after {_ORDER[seen]}, not before (the order is "
                             "/job:NAME/replica:N/task:N/TYPE:N)")
        seen = at
        if field_kind == "job":
            if not _JOB.match(rest):
                raise _malformed(name, f"the job {rest!r} is not a name (letters, digits, '_' and '-', "
                                       "starting with a letter)")
            parts["job"] = rest
        elif field_kind in ("replica", "task"):
            if not _NUMBER.match(rest):
                raise _malformed(name, f"the {field_kind} {rest!r} is not a number (0, 1, 2, ...)")
            parts[field_kind] = int(rest)
        else:
            dtype, index = (rest.partition(":")[::2] if kind_l == "device" else (kind, rest))
            if not _TYPE.match(dtype):
                raise _malformed(name, f"the device type {dtype!r} is not a name such as CPU" if dtype else
                                 "it names no device type after 'device:'")
            if piece.count(":") > (2 if kind_l == "device" else 1):
                raise _malformed(name, f"{piece!r} has too many ':'")
            parts["type"] = dtype.lower()
            if index or piece.endswith(":"):
                if not _NUMBER.match(index):
                    raise _malformed(name, f"the device index {index!r} is not a number (0, 1, 2, ...)")
                parts["index"] = int(index)
    return DeviceName(**parts)


def _malformed(name: str, why: str) -> GraphError:
    return GraphError(f"device name {name!r} is malformed: {why}; write it as TensorFlow does, e.g. {EXAMPLES}")
