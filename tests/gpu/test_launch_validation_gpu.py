"""Launch arguments checked against the real device's limits, before the
driver sees the launch: each error names the limit and its value."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

from ..conftest import SIM_DEVICE, skip_on_sim

pytestmark = pytest.mark.gpu


@cuda.jit
def fill(out):
    if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0:
        out[cuda.blockIdx.x] = 1


@cuda.jit
def pairs(out):
    ac.cluster_dims(2)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = 1


@skip_on_sim(SIM_DEVICE)
def test_block_and_grid_past_the_device_limits():
    dev = cuda.get_current_device()
    out = cuda.device_array(64, np.int32)
    for _ in range(2):  # a refused shape is refused again (never cached)
        with pytest.raises(ac.ClusterLaunchError,
                           match=f"ac.launch: `block` .* the device's MAX_BLOCK_DIM_X is {dev.MAX_BLOCK_DIM_X}"):
            ac.launch(fill, 2, dev.MAX_BLOCK_DIM_X + 1, (out,), cluster=2)
    with pytest.raises(ac.ClusterLaunchError,
                       match=f"has 2048 threads; the device's MAX_THREADS_PER_BLOCK is {dev.MAX_THREADS_PER_BLOCK}"):
        ac.launch(fill, 2, (32, 64), (out,))
    with pytest.raises(ac.ClusterLaunchError, match=f"MAX_GRID_DIM_Y is {dev.MAX_GRID_DIM_Y}"):
        ac.launch(fill, (2, dev.MAX_GRID_DIM_Y + 1), 32, (out,))
    with pytest.raises(ac.ClusterLaunchError, match=f"MAX_BLOCK_DIM_Z is {dev.MAX_BLOCK_DIM_Z}"):
        ac.max_active_clusters(fill, (1, 1, dev.MAX_BLOCK_DIM_Z + 1), 2, args=(out,))
    # the ordinary launch of a kernel that declares a cluster shape: checked by the hook
    with pytest.raises(ac.ClusterLaunchError, match=f"MAX_BLOCK_DIM_X is {dev.MAX_BLOCK_DIM_X}"):
        pairs[2, dev.MAX_BLOCK_DIM_X + 1](out)
    cuda.synchronize()
    ac.launch(fill, 4, 32, (out,), cluster=2)  # a good shape still launches
    pairs[(2,), (32,)](out)
    assert (out.copy_to_host()[:4] == 1).all()


def test_wrong_types_are_refused_not_converted():
    out = cuda.device_array(8, np.int32)
    for kwargs in (dict(grid=2.0), dict(grid="2"), dict(block=(32.0,)), dict(cluster=(2.7,)),
                   dict(shared_mem=1024.0), dict(non_portable="no"), dict(args=np.zeros(1))):
        call = dict(grid=2, block=32, args=(out,), cluster=2) | kwargs
        with pytest.raises(TypeError) as info:
            ac.launch(fill, call.pop("grid"), call.pop("block"), call.pop("args"), **call)
        assert isinstance(info.value, ac.ClusterLaunchError)
        assert f"`{next(iter(kwargs))}`" in str(info.value)
