"""Where in the user's code an op was created, mapped through the source maps of
generated code (autograph registers one per converted function; this is their one home)."""
from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass

_PACKAGE_DIRS = tuple(
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), p) + os.sep
    for p in ("graphcore", "executor", "autograph")
)
_LIB_MARKERS = (os.sep + "contextlib.py", os.sep + "threading.py", os.sep + "functools.py")

# generated file name -> {generated line: (user file, user line)}
_source_maps: dict[str, dict[int, tuple[str, int]]] = {}
_maps_lock = threading.Lock()


@dataclass(frozen=True)
class SourceLocation:
    filename: str
    lineno: int
    function: str = ""

    def __str__(self) -> str:
        return f"{os.path.basename(self.filename)}:{self.lineno}"


def register_source_map(generated_filename: str, line_map: dict[int, tuple[str, int]]) -> None:
    """Tell the graph that lines of `generated_filename` stand for lines of user files."""
    with _maps_lock:
        _source_maps[generated_filename] = dict(line_map)
        _locations.clear()  # (a location found before may now map elsewhere)


def map_location(filename: str, lineno: int) -> tuple[str, int] | None:
    """The user's (file, line) behind a generated line, or None if the file is not generated."""
    m = _source_maps.get(filename)
    if m is None:
        return None
    return m.get(lineno)


def is_generated(filename: str) -> bool:
    return filename in _source_maps


# Caches keyed by id(code object) (code objects that differ only in their file name compare
# equal, so they cannot be keys), each entry holding its code object so that the id stays its own:
# id -> (code, whether its frames are this project's or the library's: user_location skips them)
_not_user_code: dict = {}
# (id, line) -> (code, the SourceLocation user_location gives for a frame there): every op records
# one, so the file-name tests and the source-map lookup run once per line, not once per op
_locations: dict = {}
_MAX_ENTRIES = 20000  # (the caches hold code objects: cleared when this large, not grown for ever)


def user_location(skip: int = 1) -> SourceLocation | None:
    """The innermost stack frame that belongs to the user's code (not to this project's
    packages), with generated autograph lines mapped back to the user's own."""
    f = sys._getframe(skip)
    not_user = _not_user_code
    while f is not None:
        code = f.f_code
        entry = not_user.get(id(code))
        if entry is None or entry[0] is not code:
            fn = code.co_filename
            if len(not_user) > _MAX_ENTRIES:
                not_user.clear()
            entry = not_user[id(code)] = (code, fn.startswith(_PACKAGE_DIRS) or fn.endswith(_LIB_MARKERS))
        if not entry[1]:
            lineno = f.f_lineno
            key = (id(code), lineno)
            cached = _locations.get(key)
            if cached is not None and cached[0] is code:
                return cached[1]
            fn = code.co_filename
            hit = map_location(fn, lineno)
            loc = (SourceLocation(hit[0], hit[1], code.co_name) if hit is not None
                   else SourceLocation(fn, lineno, code.co_name))
            if len(_locations) > _MAX_ENTRIES:
                _locations.clear()
            _locations[key] = (code, loc)
            return loc
        f = f.f_back
    return None
