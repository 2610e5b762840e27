"""im2col stores and reductions (``.im2col_no_offs``) on the GPU against
numpy: a column block written back in the image's raster order (corners
0/0, stride 1), and with padding and stride against ``numpy_im2col_store``
(the simulator's model), for a store and an add reduction, on fresh random
data; every element outside the block keeps its poison."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.host.im2col import numpy_im2col_store

pytestmark = pytest.mark.gpu

PPC, CPP = 16, 8


@cuda.jit
def store_block(tmap, tile_in, coords, reduce):
    tile = cuda.shared.array((PPC, CPP), np.float32, alignment=128)
    for i in range(cuda.threadIdx.x, PPC * CPP, cuda.blockDim.x):
        tile[i // CPP, i % CPP] = tile_in[i // CPP, i % CPP]
    ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        c = (coords[0], coords[1], coords[2], coords[3])
        if reduce:
            ac.cp_reduce_async_bulk_tensor_im2col(tmap, c, tile, "add")
        else:
            ac.cp_async_bulk_tensor_store_im2col(tmap, c, tile)
        ac.bulk_commit_group()
        ac.bulk_wait_group(0)


@pytest.mark.parametrize("start", [(0, 0, 0), (0, 2, 1), (1, 2, 4)])
def test_store_writes_consecutive_pixels_in_raster_order(start):
    rng = np.random.default_rng()
    y = np.full((2, 3, 5, 12), -7.0, np.float32)
    d = cuda.to_device(y)
    tmap = ac.TensorMap.im2col(d, channels_per_pixel=CPP, pixels_per_column=PPC,
                               lower_corner=(0, 0), upper_corner=(0, 0))
    tile = rng.standard_normal((PPC, CPP)).astype(np.float32)
    store_block[1, 32](tmap, tile, np.array([*start, 4], np.int32), False)
    want = y.copy().reshape(-1, 12)
    first = (start[0] * 3 + start[1]) * 5 + start[2]
    n = min(PPC, want.shape[0] - first)  # pixels past the last image are not written
    want[first:first + n, 4:12] = tile[:n]
    np.testing.assert_array_equal(d.copy_to_host(), want.reshape(y.shape))


@pytest.mark.parametrize("reduce", [False, True])
def test_store_and_reduce_with_padding_and_stride(reduce):
    rng = np.random.default_rng()
    base = rng.standard_normal((1, 7, 6, 8)).astype(np.float32)
    lo, up = ac.conv_corners((3, 3), padding=1)
    tile = rng.standard_normal((PPC, CPP)).astype(np.float32)
    d = cuda.to_device(base)
    tmap = ac.TensorMap.im2col(d, channels_per_pixel=CPP, pixels_per_column=PPC, lower_corner=lo,
                               upper_corner=up, element_strides=(1, 2, 2, 1))
    store_block[1, 32](tmap, tile, np.array([0, -1, -1, 0], np.int32), reduce)
    want = base.copy()
    numpy_im2col_store(want, tile, (0, -1, -1, 0), tmap.spec,
                       (lambda old, new: old + new) if reduce else None)
    np.testing.assert_array_equal(d.copy_to_host(), want)
