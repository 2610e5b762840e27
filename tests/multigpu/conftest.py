"""Tests for machines with two or more GPUs (such as a host with two H200s).
Elsewhere every test here is skipped (and counted as skipped): one GPU, no
GPU, or the simulator."""

from __future__ import annotations

import pytest

from ..conftest import SIM


def gpu_count() -> int:
    if SIM:
        return 0
    try:
        from numba import cuda

        return len(cuda.gpus) if cuda.is_available() else 0
    except Exception:
        return 0


GPUS = gpu_count()


def pytest_collection_modifyitems(config, items):
    if GPUS >= 2:
        return
    skip = pytest.mark.skip(reason=f"needs 2 GPUs, this machine has {GPUS} "
                                   "(run on a host with two or more GPUs)")
    for item in items:
        if "multigpu" in item.keywords:
            item.add_marker(skip)
