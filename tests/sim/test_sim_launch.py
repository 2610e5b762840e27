"""``ac.launch`` in the simulator: without a cluster it is an ordinary
simulated launch (dynamic shared memory included); a cluster shape is
refused with the reason, after the same shape checks as on a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac


@cuda.jit
def reverse_through_dynamic_shared(a, out):
    dyn = cuda.shared.array(0, np.int32)
    t = cuda.threadIdx.x
    dyn[t] = a[cuda.blockIdx.x, t]
    cuda.syncthreads()
    out[cuda.blockIdx.x, t] = dyn[cuda.blockDim.x - 1 - t] + cuda.blockIdx.x


def test_launch_without_a_cluster_runs():
    a = np.random.default_rng().integers(-2**20, 2**20, (3, 16), dtype=np.int32)
    out = np.full_like(a, 0x7F7F7F7F)
    ac.launch(reverse_through_dynamic_shared, 3, 16, (a, out), shared_mem=16 * 4)
    np.testing.assert_array_equal(out, a[:, ::-1] + np.arange(3, dtype=np.int32)[:, None])


def test_a_cluster_is_refused_with_the_reason():
    a = np.zeros((4, 16), np.int32)
    message = (r"ac.launch\(\.\.\., cluster=\(2, 1, 1\)\) cannot run in the CUDA simulator: "
               r".*blocks of a cluster never run together")
    with pytest.raises(ac.sim.SimulatorError, match=message):
        ac.launch(reverse_through_dynamic_shared, 4, 16, (a, a.copy()), cluster=2, shared_mem=64)


def test_shape_errors_come_first():
    a = np.zeros((6, 16), np.int32)
    with pytest.raises(ac.ClusterLaunchError, match=r"grid \(6, 1, 1\) \(blocks\) is not a multiple"):
        ac.launch(reverse_through_dynamic_shared, 6, 16, (a, a.copy()), cluster=4)


def test_device_functions_are_rejected():
    @cuda.jit(device=True)
    def helper(x):
        return x

    with pytest.raises(TypeError, match="helper is a device function, not a kernel"):
        ac.launch(helper, 1, 1, (0,))
