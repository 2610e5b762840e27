"""``ac.launch`` in the simulator: without a cluster it is an ordinary
simulated launch (dynamic shared memory included); with a cluster shape the
blocks of each cluster run together, after the same shape checks as on a GPU."""

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


@cuda.jit
def swap_halves_through_dsmem(a, out):
    dyn = cuda.shared.array(0, np.int32)
    t = cuda.threadIdx.x
    rank = ac.cluster_cta_rank()
    dyn[t] = a[cuda.blockIdx.x, t]
    ac.cluster_sync()
    out[cuda.blockIdx.x, t] = ac.dsmem_load(dyn, 1 - rank, t) * 10 + rank
    ac.cluster_sync()


def test_a_cluster_runs_its_blocks_together():
    a = np.random.default_rng().integers(-2**20, 2**20, (4, 16), dtype=np.int32)
    out = np.full_like(a, 0x7F7F7F7F)
    ac.launch(swap_halves_through_dsmem, 4, 16, (a, out), cluster=2, shared_mem=64)
    swapped = a.reshape(2, 2, 16)[:, ::-1].reshape(4, 16)
    np.testing.assert_array_equal(out, swapped * 10 + np.array([0, 1, 0, 1], np.int32)[:, None])


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
