"""Fixtures of the GPU functional tests.  This file is loaded in every run
(without a GPU, in the simulator): it imports nothing GPU-specific at module
level."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def twins(tmp_path_factory):
    """The CUDA C++ twins library of the benchmark (``twins.cu``,
    ``twins_bulk.cu`` and ``twins_idioms.cu``), built once with nvcc for this
    GPU and shared by test_examples_gpu.py, test_async_examples_gpu.py and
    test_idioms_gpu.py.  Skips without
    nvcc; a failed build fails every test that uses it (nvcc runs once)."""
    from numba import cuda

    from numba_asynccopy.bench.twins import Build, TwinError, find_nvcc

    if find_nvcc() is None:
        pytest.skip("nvcc not found")
    cc = cuda.get_current_device().compute_capability
    try:
        return Build(tmp_path_factory.mktemp("twins"), tuple(cc[:2])).library()
    except TwinError as e:
        pytest.fail(str(e))
