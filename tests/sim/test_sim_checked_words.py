"""The checked-mode trap cases of the GPU layer (barrier views, values on
their full width) raise the same words in the simulator, as a
``SimulatorError`` with checked mode's prefix (the value is a kernel
parameter: a run-time value, which the simulator reads from the kernel's
source)."""

from __future__ import annotations

import linecache

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy._lowering import TRAP_PREFIX

from ..gpu.test_checked_traps_gpu import CASES, kernel_source


def kernel(name: str):
    src = kernel_source(name)
    filename = f"<checked words kernel {name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict = {}
    exec(compile(src, filename, "exec"), ns)
    return ns["k"]


@pytest.mark.parametrize("name", list(CASES))
def test_the_simulator_reports_the_trap_words(name):
    """Every case, the cluster ones too (a cluster of 2 runs in the simulator)."""
    _, n, cluster, words = CASES[name]
    out = cuda.to_device(np.zeros(8, np.uint64))
    A = cuda.to_device(np.zeros((32, 8), np.float32))
    with ac.checked_mode(), pytest.raises(ac.sim.SimulatorError) as e:
        kernel(name)[2 if cluster else 1, 32](out, n, A)
    text = str(e.value)
    assert TRAP_PREFIX + words + " [block (" in text, text
