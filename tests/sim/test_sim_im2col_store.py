"""im2col stores and reductions (``.im2col_no_offs``) in the simulator: a
column block written back along the traversal (against the raster order of
the image, and against ``numpy_im2col_store`` with padding and stride),
an add reduction, and buggy kernels (a tiled map, a first pixel outside
the bounding box, a tile that is not the box) failing with the named rule."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.host.im2col import numpy_im2col_store

from .. import im2col_cases as cases

pytestmark = pytest.mark.skipif(not ac.sim.ENABLED, reason="simulator test")

PPC, CPP = 16, 8


store_block = cases.make_store_block(PPC, CPP)


def test_store_writes_consecutive_pixels_in_raster_order():
    rng = np.random.default_rng(1)
    y = np.full((2, 3, 5, 12), -1.0, np.float32)          # N H W C: 30 pixels
    d = cuda.to_device(y)
    tmap = ac.TensorMap.im2col(d, channels_per_pixel=CPP, pixels_per_column=PPC,
                               lower_corner=(0, 0), upper_corner=(0, 0))
    tile = rng.standard_normal((PPC, CPP)).astype(np.float32)
    # from pixel (0, 2, 1), channels 4..11: 16 pixels run into image 1
    store_block[1, 32](tmap, tile, np.array([0, 2, 1, 4], np.int32), False)
    got = d.copy_to_host()
    want = y.copy().reshape(-1, 12)
    start = 2 * 5 + 1
    want[start:start + PPC, 4:12] = tile
    np.testing.assert_array_equal(got, want.reshape(y.shape))


def test_store_with_stride_and_a_reduction():
    rng = np.random.default_rng(2)
    y = np.zeros((1, 7, 6, 8), np.float32)
    tile = rng.standard_normal((PPC, CPP)).astype(np.float32)
    for reduce in (False, True):
        base = np.ones_like(y) if reduce else np.zeros_like(y)
        d = cuda.to_device(base)
        tmap = ac.TensorMap.im2col(d, channels_per_pixel=CPP, pixels_per_column=PPC,
                                   lower_corner=(0, 0), upper_corner=(0, 0),
                                   element_strides=(1, 2, 2, 1))
        store_block[1, 32](tmap, tile, np.array([0, 1, 1, 0], np.int32), reduce)
        want = base.copy()
        numpy_im2col_store(want, tile, (0, 1, 1, 0), tmap.spec,
                           (lambda old, new: old + new) if reduce else None)
        np.testing.assert_array_equal(d.copy_to_host(), want)
        # stride 2 from (1, 1): (1, 1), (1, 3), (1, 5), then the next row from the box's
        # first column: (3, 0), (3, 2), ... (the order the H200 wrote, the probe's cases)
        np.testing.assert_array_equal(want[0, 1, 3], base[0, 1, 3] + tile[1])
        np.testing.assert_array_equal(want[0, 3, 0], base[0, 3, 0] + tile[3])
        assert np.array_equal(want[0, 2], base[0, 2])  # the rows between are not written


@cuda.jit
def store_tiled_map(tmap):
    tile = cuda.shared.array((PPC, CPP), np.float32, alignment=128)
    if cuda.threadIdx.x == 0:
        ac.cp_async_bulk_tensor_store_im2col(tmap, (0, 0, 0, 0), tile)
        ac.bulk_commit_group()
        ac.bulk_wait_group(0)


@cuda.jit
def store_outside(tmap):
    tile = cuda.shared.array((PPC, CPP), np.float32, alignment=128)
    if cuda.threadIdx.x == 0:
        ac.cp_async_bulk_tensor_store_im2col(tmap, (0, -3, 0, 0), tile)
        ac.bulk_commit_group()
        ac.bulk_wait_group(0)


@cuda.jit
def store_small_tile(tmap):
    tile = cuda.shared.array((8, CPP), np.float32, alignment=128)
    if cuda.threadIdx.x == 0:
        ac.cp_async_bulk_tensor_store_im2col(tmap, (0, 0, 0, 0), tile)
        ac.bulk_commit_group()
        ac.bulk_wait_group(0)


def test_buggy_stores_fail_with_the_named_rule():
    d = cuda.to_device(np.zeros((1, 4, 4, 8), np.float32))
    tiled = ac.TensorMap(d, (1, 4, 4, 8))
    im2col = ac.TensorMap.im2col(d, channels_per_pixel=CPP, pixels_per_column=PPC,
                                 lower_corner=(0, 0), upper_corner=(0, 0))
    padded = ac.TensorMap.im2col(d, channels_per_pixel=CPP, pixels_per_column=PPC,
                                 lower_corner=(-1, -1), upper_corner=(-1, -1))
    with pytest.raises(ac.sim.SimulatorError, match="load mode 0 but this copy needs mode 1"):
        store_tiled_map[1, 32](tiled)
    with pytest.raises(ac.sim.SimulatorError, match="outside the im2col bounding box 0..3"):
        store_outside[1, 32](im2col)
    with pytest.raises(ac.sim.SimulatorError, match="box"):
        store_small_tile[1, 32](im2col)


@pytest.mark.parametrize("reduce", [False, True])
def test_a_store_through_a_map_with_corners_is_refused(reduce):
    # the corners of a padded 3x3 convolution: loads take them, stores do not
    d = cuda.to_device(np.zeros((1, 7, 6, 8), np.float32))
    lo, up = ac.conv_corners((3, 3), padding=1)
    tmap = ac.TensorMap.im2col(d, channels_per_pixel=CPP, pixels_per_column=PPC,
                               lower_corner=lo, upper_corner=up)
    with pytest.raises(ac.sim.SimulatorError, match=(
            "cp_(async_bulk_tensor_store|reduce_async_bulk_tensor)_im2col: an im2col store or "
            "reduction needs a map whose pixel-box corners are all zero")):
        store_block[1, 32](tmap, np.ones((PPC, CPP), np.float32), np.array([0, 1, 1, 0], np.int32),
                           reduce)
