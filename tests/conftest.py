import importlib
import importlib.util
import os
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# The project's own dependencies (pyproject.toml). `python -m pytest` in a checkout whose
# interpreter lacks them (the project was never installed there) installs the project
# with its test extra first, as the README's test command does, instead of failing to
# collect. The optional extras (Ray, numba, Graphviz's picture tests) skip where missing.
_CORE = ("gast", "astunparse", "typer", "rich", "graphviz", "numpy")


def _install_missing_dependencies() -> None:
    missing = [m for m in _CORE if importlib.util.find_spec(m) is None]
    if not missing:
        return
    print(f"tests: {', '.join(missing)} not installed: pip install -e '.[test]' into {sys.executable}",
          file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", f"{ROOT}[test]"], check=True)
    importlib.invalidate_caches()


_install_missing_dependencies()

# Every kernel's output is checked against the dtype and shape its op declares
# (executor/kernel_contract.py): a mismatch fails where it happens, not as a wrong value.
os.environ.setdefault("AUTOGRAPH_CHECK_KERNELS", "1")


def graphviz_package_installed() -> bool:
    """Whether the `graphviz` Python package (pictures) can be imported here."""
    try:
        importlib.import_module("graphviz")
    except ImportError:
        return False
    return True


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_graphviz: draws pictures with the graphviz package")


def pytest_collection_modifyitems(config, items):
    if graphviz_package_installed():
        return
    skip = pytest.mark.skip(reason="the graphviz package is not installed (pip install graphviz)")
    for item in items:
        if "needs_graphviz" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def ctrl_c_raises_keyboard_interrupt():
    """Ctrl-C raises KeyboardInterrupt, as in a terminal, also when the suite was started in
    the background (`cmd &` in a script ignores SIGINT, and Python then installs no handler):
    the run-contract tests send SIGINT and expect it."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(autouse=True)
def _generous_time_limits_for_random_programs(monkeypatch):
    """The fuzzers' per-program limits (10 s for a gradient program, 20 s for a value program)
    are for a quiet machine; the fixed seeds take about a second, but a test machine busy with
    other work stalled some past them. A loop that never ends is still caught."""
    from autograph.testing import differential, random_grad_programs  # noqa: PLC0415 (after the install above)

    monkeypatch.setattr(random_grad_programs, "TIME_LIMIT", 60.0)
    monkeypatch.setattr(differential, "TIMEOUT_SECONDS", 60.0)
