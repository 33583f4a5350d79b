"""Load generated source as code: registered in `linecache` under a readable name so
tracebacks show it, with its line map registered (in graphcore.source_info, the one
home of source maps) so graph ops and errors show the user's own lines."""
from __future__ import annotations

import itertools
import linecache
import threading

from graphcore import source_info

_counter = itertools.count()
_lock = threading.Lock()


def load_source(source: str, name: str, line_map: dict[int, tuple[str, int]]) -> tuple[dict, str]:
    """Execute `source` as a fresh module namespace; returns (namespace, file name)."""
    with _lock:
        filename = f"<autograph {name} #{next(_counter)}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    source_info.register_source_map(filename, line_map)
    namespace: dict = {"__name__": f"autograph_generated_{name}"}
    code = compile(source, filename, "exec")
    exec(code, namespace)  # noqa: S102 (our own generated code)
    return namespace, filename
