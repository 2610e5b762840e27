"""Simulator tests: they need ``NUMBA_ENABLE_CUDASIM=1`` set before numba.cuda
is imported, so they run in their own pytest process:

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/sim

(``make test`` runs that after the main suite).  In a process without the
simulator they are skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    if SIM:
        return
    skip = pytest.mark.skip(
        reason="simulator test: run `NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/sim` "
        "(make test does)")
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)


# the worst-case schedule for every test: tests/conftest.py (_worst_schedule)
