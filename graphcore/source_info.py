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


# file name -> whether its frames are this project's or the library's (user_location skips them)
_not_user_file: dict[str, bool] = {}
# (file name, line, function name) -> the SourceLocation user_location gives for a frame there:
# every op records one, so the source-map lookup runs once per line, not once per op
_locations: dict = {}
_MAX_ENTRIES = 20000  # (cleared when this large, not grown for ever)


def user_location(skip: int = 1) -> SourceLocation | None:
    """The innermost stack frame that belongs to the user's code (not to this project's
    packages), with generated autograph lines mapped back to the user's own."""
    f = sys._getframe(skip)
    not_user = _not_user_file
    while f is not None:
        code = f.f_code
        fn = code.co_filename
        skipped = not_user.get(fn)
        if skipped is None:
            if len(not_user) > _MAX_ENTRIES:
                not_user.clear()
            skipped = not_user[fn] = fn.startswith(_PACKAGE_DIRS) or fn.endswith(_LIB_MARKERS)
        if not skipped:
            key = (fn, f.f_lineno, code.co_name)
            loc = _locations.get(key)
            if loc is None:
                hit = map_location(fn, key[1])
                loc = (SourceLocation(hit[0], hit[1], key[2]) if hit is not None
                       else SourceLocation(fn, key[1], key[2]))
                if len(_locations) > _MAX_ENTRIES:
                    _locations.clear()
                _locations[key] = loc
            return loc
        f = f.f_back
    return None
