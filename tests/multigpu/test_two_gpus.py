"""One process driving two GPUs: each device compiles and runs the TMA
copy and a cluster launch with its own tensor maps and its own limits; a
tensor map is refused on the device it was not built on."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.examples import exchange as ex
from numba_asynccopy.examples import tma_copy as tc

pytestmark = pytest.mark.multigpu

BOX, STAGES = (32, 64), 4
rng = np.random.default_rng(2)


@pytest.fixture(scope="module")
def tma_kernel():
    return cuda.jit(tc.SIGNATURE)(tc.make_tma_copy(STAGES, BOX))


def test_each_device_runs_its_own_tma_copy_and_cluster_exchange(tma_kernel):
    kx = cuda.jit(ex.DSMEM_SIGNATURE)(ex.exchange_dsmem)
    for dev in (0, 1):
        with cuda.gpus[dev]:
            rows, cols = 70 + 30 * dev, 132
            src = rng.integers(0, 2**32, (rows, cols), dtype=np.uint32)
            d_src = cuda.to_device(src)
            d_dst = cuda.to_device(np.full((rows, cols), 0xDEADBEEF, np.uint32))
            smap, dmap = tc.make_maps(d_src, d_dst, BOX)
            assert (smap.device_id, dmap.device_id) == (dev, dev)
            ac.launch(tma_kernel, grid=3, block=tc.BLOCK, args=(smap, dmap, rows, cols))
            np.testing.assert_array_equal(d_dst.copy_to_host(), src, err_msg=f"device {dev}")

            a = rng.standard_normal((8, ex.TILE)).astype(np.float32)
            d_out = cuda.device_array_like(a)
            ac.launch(kx, grid=8, block=ex.BLOCK, args=(cuda.to_device(a), d_out, 5),
                      cluster=ex.CLUSTER)
            np.testing.assert_array_equal(d_out.copy_to_host(), ex.expected(a, 5),
                                          err_msg=f"device {dev}")
            # the occupancy query runs on the current device
            n = ac.max_active_clusters(kx, block=ex.BLOCK, cluster=ex.CLUSTER,
                                       args=(cuda.to_device(a), d_out, np.int32(1)))
            assert n >= 1


def test_tensor_map_is_refused_on_another_device(tma_kernel):
    rows, cols = 64, 64
    with cuda.gpus[0]:
        d_src = cuda.to_device(np.arange(rows * cols, dtype=np.uint32).reshape(rows, cols))
        d_dst = cuda.device_array((rows, cols), np.uint32)
        smap, dmap = tc.make_maps(d_src, d_dst, BOX)
    with cuda.gpus[1]:
        with pytest.raises(ac.InteropError, match="argument 0 is a TensorMap encoded on device 0, "
                                                  "but the launch runs on device 1"):
            ac.launch(tma_kernel, grid=1, block=tc.BLOCK, args=(smap, dmap, rows, cols))
        # an array of device 0 cannot be described while device 1 is current
        with pytest.raises(ValueError, match="`array` lives on device 0, but the current device is 1"):
            ac.TensorMap(d_src, BOX)
    with cuda.gpus[0]:  # on its own device the map still works
        ac.launch(tma_kernel, grid=1, block=tc.BLOCK, args=(smap, dmap, rows, cols))
        np.testing.assert_array_equal(d_dst.copy_to_host(), d_src.copy_to_host())
