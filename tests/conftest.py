import importlib
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
