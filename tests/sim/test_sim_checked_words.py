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

# the cluster cases: the simulator runs no clusters (it says so instead)
LOCAL = [name for name, (_, _, cluster, _) in CASES.items() if not cluster]


def kernel(name: str):
    src = kernel_source(name)
    filename = f"<checked words kernel {name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict = {}
    exec(compile(src, filename, "exec"), ns)
    return ns["k"]


@pytest.mark.parametrize("name", LOCAL)
def test_the_simulator_reports_the_trap_words(name):
    _, n, _, words = CASES[name]
    out = cuda.to_device(np.zeros(8, np.uint64))
    A = cuda.to_device(np.zeros((32, 8), np.float32))
    with ac.checked_mode(), pytest.raises(ac.sim.SimulatorError) as e:
        kernel(name)[1, 32](out, n, A)
    text = str(e.value)
    assert TRAP_PREFIX + words + " [block (0,0,0) thread (" in text, text


@pytest.mark.parametrize("name", [n for n in CASES if n not in LOCAL])
def test_the_cluster_cases_say_clusters_are_not_simulated(name):
    _, n, _, _ = CASES[name]
    out = cuda.to_device(np.zeros(8, np.uint64))
    A = cuda.to_device(np.zeros((32, 8), np.float32))
    with pytest.raises(ac.sim.SimulatorError) as e:
        kernel(name)[2, 32](out, n, A)
    assert "cluster" in str(e.value), str(e.value)
