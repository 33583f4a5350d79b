import importlib
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

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
