"""im2col TMA loads on the GPU against numpy: the gather equals the
convolution's own im2col matrix (numpy slicing) on random 1-D, 2-D and 3-D
geometries with padding, stride, dilation and out-of-bounds pixels and
channels; the pixel-box corner convention (the box is ``lower .. extent - 1
+ upper``, both ends included); swizzle, NaN fill, multicast, prefetch;
and the same tiles as the simulator's gather (``numpy_im2col``)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

from .. import im2col_cases as cases

pytestmark = pytest.mark.gpu


def run(x, tmap, coords, offs, ppc, cpp, align=128):
    out = cuda.to_device(np.full((len(coords), ppc, cpp), -7, x.dtype))
    cases.make_loader(x.ndim, ppc, cpp, x.dtype, align)[len(coords), 64](
        tmap, cuda.to_device(coords), cuda.to_device(offs), out)
    return out.copy_to_host()


def run_conv(seed, nsp, ppc, cpp):
    rng = np.random.default_rng(seed)
    conv = cases.random_conv(rng, nsp)
    x = rng.standard_normal((conv.n, *conv.spatial, conv.c)).astype(np.float32)
    lo, up = conv.corners()
    d = cuda.to_device(x)
    tmap = ac.TensorMap.im2col(d, channels_per_pixel=cpp, pixels_per_column=ppc,
                               lower_corner=lo, upper_corner=up,
                               element_strides=(1, *conv.stride, 1))
    coords, offs, where, m_total = cases.conv_loads(conv, ppc, cpp, 4)
    got = run(x, tmap, coords, offs, ppc, cpp)
    np.testing.assert_array_equal(got, cases.expected_tiles(x, conv, ppc, cpp, where, m_total),
                                  err_msg=str(conv))


@pytest.mark.parametrize("seed", range(4))
def test_conv2d_gather_matches_numpy(seed):
    run_conv(seed, 2, ppc=[8, 16][seed % 2], cpp=[4, 8][seed % 2])


def test_conv1d_gather_matches_numpy():
    run_conv(100, 1, ppc=8, cpp=4)


def test_conv3d_gather_matches_numpy():
    run_conv(200, 3, ppc=8, cpp=4)


def test_corner_convention():
    """A 4x4 image, corners (0, 0)/(0, 0): the box is rows/columns 0..3 (=
    ``[0, 4)``): 16 pixels walk the whole image in raster order; corners
    (0, 0)/(-1, -1): 0..2, 9 pixels, then the next image."""
    x = (np.arange(2 * 4 * 4 * 4, dtype=np.float32).reshape(2, 4, 4, 4) + 1)
    d = cuda.to_device(x)
    whole = ac.TensorMap.im2col(d, channels_per_pixel=4, pixels_per_column=16,
                                lower_corner=(0, 0), upper_corner=(0, 0))
    coords, offs = np.array([[0, 0, 0, 0]], np.int32), np.array([[0, 0]], np.int32)
    np.testing.assert_array_equal(run(x, whole, coords, offs, 16, 4)[0], x[0].reshape(16, 4))
    inner = ac.TensorMap.im2col(d, channels_per_pixel=4, pixels_per_column=16,
                                lower_corner=(0, 0), upper_corner=(-1, -1))
    want = np.concatenate([x[0, :3, :3].reshape(9, 4), x[1, :3, :3].reshape(9, 4)[:7]])
    np.testing.assert_array_equal(run(x, inner, coords, offs, 16, 4)[0], want)


def test_box_larger_than_the_tensor_and_past_the_last_image():
    x = np.arange(1 * 3 * 3 * 4, dtype=np.float32).reshape(1, 3, 3, 4) + 1
    tmap = ac.TensorMap.im2col(cuda.to_device(x), channels_per_pixel=4, pixels_per_column=64,
                               lower_corner=(-2, -2), upper_corner=(2, 2))
    got = run(x, tmap, np.array([[0, -2, -2, 0]], np.int32), np.array([[0, 0]], np.int32), 64, 4)
    want = np.zeros((7, 7, 4), np.float32)
    want[2:5, 2:5] = x[0]
    np.testing.assert_array_equal(got[0, :49], want.reshape(49, 4))
    assert not got[0, 49:].any()


def test_swizzle_nan_fill_and_the_simulators_gather():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 5, 6, 32)).astype(np.float32)
    tmap = ac.TensorMap.im2col(cuda.to_device(x), channels_per_pixel=32, pixels_per_column=16,
                               lower_corner=(-1, -1), upper_corner=(-1, -1), swizzle=128,
                               oob_fill="nan")
    coords = np.array([[0, -1, -1, 0], [1, 2, 3, 0], [1, 3, 4, 0]], np.int32)
    offs = np.array([[0, 0], [2, 1], [1, 2]], np.int32)
    got = run(x, tmap, coords, offs, 16, 32, align=1024)
    ref = cases.reference_tiles(x, tmap.spec, coords, offs)
    for j in range(len(coords)):
        np.testing.assert_array_equal(cases.unswizzle(got[j], 128), ref[j])
    assert np.isnan(ref[0, 0]).all()


def test_multicast_lands_in_both_ctas():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
    tmap = ac.TensorMap.im2col(cuda.to_device(x), channels_per_pixel=8, pixels_per_column=8,
                               lower_corner=(0, 0), upper_corner=(0, 0))
    coords, offs = np.array([[0, 1, 2, 0]], np.int32), np.array([[0, 0]], np.int32)
    out = cuda.to_device(np.full((2, 8, 8), -7, np.float32))
    k = cases.make_loader(4, 8, 8, np.float32, multicast=True)
    ac.launch(k, 2, 32, (tmap, cuda.to_device(coords), cuda.to_device(offs), out), cluster=2)
    ref = cases.reference_tiles(x, tmap.spec, coords, offs)[0]
    got = out.copy_to_host()
    np.testing.assert_array_equal(got[0], ref)
    np.testing.assert_array_equal(got[1], ref)


@cuda.jit
def prefetch_then_load(tmap, out):
    tile = cuda.shared.array((8, 8), np.float32, alignment=128)
    bar = cuda.shared.array(1, np.uint64)
    tid = cuda.threadIdx.x
    if tid == 0:
        ac.cp_async_bulk_prefetch_tensor_im2col(tmap, (0, 1, 1, 0), (1, 0))
        ac.mbarrier_init(bar, 1)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if tid == 0:
        ac.mbarrier_arrive_expect_tx(bar, 256)
        ac.cp_async_bulk_tensor_load_im2col(tile, tmap, (0, 1, 1, 0), (1, 0), bar, fence=False)
    ac.mbarrier_wait_parity(bar, 0)
    for i in range(tid, 64, cuda.blockDim.x):
        out[i // 8, i % 8] = tile[i // 8, i % 8]


def test_prefetch_then_load():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
    tmap = ac.TensorMap.im2col(cuda.to_device(x), channels_per_pixel=8, pixels_per_column=8,
                               lower_corner=(-1, -1), upper_corner=(-1, -1))
    out = cuda.to_device(np.full((8, 8), -7, np.float32))
    prefetch_then_load[1, 32](tmap, out)
    ref = cases.reference_tiles(x, tmap.spec, [(0, 1, 1, 0)], [(1, 0)])[0]
    np.testing.assert_array_equal(out.copy_to_host(), ref)


def test_checked_mode_passes_a_correct_gather():
    """Checked mode's im2col rules (map mode, rank, tile, channel alignment,
    offsets) do not trap on a correct kernel, and the tiles are the same."""
    with ac.checked_mode():
        run_conv(11, 2, ppc=8, cpp=4)


def test_the_image_axis_steps_by_its_element_stride():
    x = np.arange(3 * 2 * 2 * 4, dtype=np.float32).reshape(3, 2, 2, 4) + 1
    tmap = ac.TensorMap.im2col(cuda.to_device(x), channels_per_pixel=4, pixels_per_column=12,
                               lower_corner=(0, 0), upper_corner=(0, 0),
                               element_strides=(2, 1, 1, 1))
    got = run(x, tmap, np.array([[0, 0, 0, 0]], np.int32), np.array([[0, 0]], np.int32), 12, 4)
    np.testing.assert_array_equal(got[0, :4], x[0].reshape(4, 4))
    np.testing.assert_array_equal(got[0, 4:8], x[2].reshape(4, 4))
    assert not got[0, 8:].any()
