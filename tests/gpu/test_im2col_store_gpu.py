"""im2col stores and reductions (``.im2col_no_offs``) on the GPU against
numpy: a column block written back in the image's raster order (corners
0/0, stride 1), and with stride 2 against ``numpy_im2col_store``
(the simulator's model), for a store and an add reduction, on fresh random
data; every element outside the block keeps its poison."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.host.im2col import numpy_im2col_store

from .. import im2col_cases as cases

pytestmark = pytest.mark.gpu

PPC, CPP = 16, 8


store_block = cases.make_store_block(PPC, CPP)


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
def test_store_and_reduce_with_stride(reduce):
    # zero corners: on the H200 a store or reduction through a map with
    # nonzero corners fails the launch (an illegal instruction); checked
    # mode and the simulator refuse it
    rng = np.random.default_rng()
    base = rng.standard_normal((1, 7, 6, 8)).astype(np.float32)
    tile = rng.standard_normal((PPC, CPP)).astype(np.float32)
    d = cuda.to_device(base)
    tmap = ac.TensorMap.im2col(d, channels_per_pixel=CPP, pixels_per_column=PPC,
                               lower_corner=(0, 0), upper_corner=(0, 0), element_strides=(1, 2, 2, 1))
    store_block[1, 32](tmap, tile, np.array([0, 1, 1, 0], np.int32), reduce)
    want = base.copy()
    numpy_im2col_store(want, tile, (0, 1, 1, 0), tmap.spec,
                       (lambda old, new: old + new) if reduce else None)
    np.testing.assert_array_equal(d.copy_to_host(), want)
