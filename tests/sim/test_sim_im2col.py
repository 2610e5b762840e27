"""im2col TMA loads in the simulator: the gather against the convolution's
own im2col matrix (numpy slicing) on random 1-D/2-D/3-D geometries with
padding, stride, dilation and out-of-bounds pixels and channels; swizzle,
NaN fill and multicast; and buggy kernels (wrong corners, channels not
matching the box, a tiled copy on an im2col map, offsets out of range)
failing with the named rule."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

from .. import im2col_cases as cases

pytestmark = pytest.mark.skipif(not ac.sim.ENABLED, reason="simulator test")


def run_conv(seed: int, nsp: int, ppc: int, cpp: int):
    rng = np.random.default_rng(seed)
    conv = cases.random_conv(rng, nsp)
    x = rng.standard_normal((conv.n, *conv.spatial, conv.c)).astype(np.float32)
    lo, up = conv.corners()
    tmap = ac.TensorMap.im2col(cuda.to_device(x), channels_per_pixel=cpp, pixels_per_column=ppc,
                               lower_corner=lo, upper_corner=up,
                               element_strides=(1, *conv.stride, 1))
    coords, offs, where, m_total = cases.conv_loads(conv, ppc, cpp, 4)
    out = np.full((len(coords), ppc, cpp), -7, np.float32)
    cases.make_loader(nsp + 2, ppc, cpp, np.float32)[len(coords), 32](tmap, coords, offs, out)
    np.testing.assert_array_equal(out, cases.expected_tiles(x, conv, ppc, cpp, where, m_total),
                                  err_msg=str(conv))
    np.testing.assert_array_equal(out, cases.reference_tiles(x, tmap.spec, coords, offs))


@pytest.mark.parametrize("seed", range(6))
def test_conv2d_gather_matches_numpy(seed):
    run_conv(seed, 2, ppc=[8, 16][seed % 2], cpp=[4, 8][seed % 2])


@pytest.mark.parametrize("seed", range(3))
def test_conv1d_gather_matches_numpy(seed):
    run_conv(100 + seed, 1, ppc=8, cpp=4)


@pytest.mark.parametrize("seed", range(2))
def test_conv3d_gather_matches_numpy(seed):
    run_conv(200 + seed, 3, ppc=8, cpp=4)


def test_box_larger_than_the_tensor_and_past_the_last_image():
    # corners that widen the box past both edges (lots of zero padding), and
    # a column block that runs past the last image: all zero-filled
    x = np.arange(1 * 3 * 3 * 4, dtype=np.float32).reshape(1, 3, 3, 4) + 1
    tmap = ac.TensorMap.im2col(cuda.to_device(x), channels_per_pixel=4, pixels_per_column=64,
                               lower_corner=(-2, -2), upper_corner=(2, 2))
    coords = np.array([[0, -2, -2, 0]], np.int32)
    offs = np.array([[0, 0]], np.int32)
    out = np.zeros((1, 64, 4), np.float32)
    cases.make_loader(4, 64, 4, np.float32)[1, 32](tmap, coords, offs, out)
    want = np.zeros((7, 7, 4), np.float32)
    want[2:5, 2:5] = x[0]
    np.testing.assert_array_equal(out[0, :49], want.reshape(49, 4))
    assert not out[0, 49:].any()  # image 1 does not exist


def test_swizzle_and_nan_fill():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 5, 6, 32)).astype(np.float32)
    tmap = ac.TensorMap.im2col(cuda.to_device(x), channels_per_pixel=32, pixels_per_column=16,
                               lower_corner=(-1, -1), upper_corner=(-1, -1), swizzle=128,
                               oob_fill="nan")
    coords = np.array([[0, -1, -1, 0], [1, 2, 3, 0]], np.int32)
    offs = np.array([[0, 0], [2, 1]], np.int32)
    out = np.zeros((2, 16, 32), np.float32)
    cases.make_loader(4, 16, 32, np.float32, align=1024)[2, 64](tmap, coords, offs, out)
    ref = cases.reference_tiles(x, tmap.spec, coords, offs)
    for j in range(2):
        np.testing.assert_array_equal(cases.unswizzle(out[j], 128), ref[j])
    assert np.isnan(ref[0, 0]).all()  # pixel (-1, -1): padding, NaN-filled


def test_multicast_lands_in_both_ctas():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
    tmap = ac.TensorMap.im2col(cuda.to_device(x), channels_per_pixel=8, pixels_per_column=8,
                               lower_corner=(0, 0), upper_corner=(0, 0))
    coords = np.array([[0, 1, 2, 0]], np.int32)
    offs = np.array([[0, 0]], np.int32)
    out = np.zeros((2, 8, 8), np.float32)
    k = cases.make_loader(4, 8, 8, np.float32, multicast=True)
    ac.launch(k, 2, 32, (tmap, coords, offs, out), cluster=2)
    ref = cases.reference_tiles(x, tmap.spec, coords, offs)[0]
    np.testing.assert_array_equal(out[0], ref)
    np.testing.assert_array_equal(out[1], ref)


# --- buggy kernels: the named rule -------------------------------------------------


@cuda.jit
def buggy(tmap, case):
    tile = cuda.shared.array((8, 8), np.float32, alignment=128)
    wide = cuda.shared.array((8, 16), np.float32, alignment=128)
    bar = cuda.shared.array(1, np.uint64)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bar, 1)
        ac.fence_proxy_async("shared::cta")
        ac.mbarrier_arrive_expect_tx(bar, 8 * 8 * 4)
        if case == 0:  # the first pixel outside the box (corners for another padding)
            ac.cp_async_bulk_tensor_load_im2col(tile, tmap, (0, -2, 0, 0), (0, 0), bar)
        elif case == 1:  # a tile for 16 channels, the map has 8 per pixel
            ac.cp_async_bulk_tensor_load_im2col(wide, tmap, (0, 0, 0, 0), (0, 0), bar)
        elif case == 2:  # a tiled load through an im2col map
            ac.cp_async_bulk_tensor_load(tile, tmap, (0, 0, 0, 0), bar)
        elif case == 3:  # a run-time offset past 16 bits
            ac.cp_async_bulk_tensor_load_im2col(tile, tmap, (0, 0, 0, 0), (0, case * 30000), bar)
        elif case == 4:  # a first channel not on a 16-byte boundary
            ac.cp_async_bulk_tensor_load_im2col(tile, tmap, (0, 0, 0, 2), (0, 0), bar)
        elif case == 5:  # the far edge of the box: w = W - 1 + upper = 2 is in, 3 is out
            ac.cp_async_bulk_tensor_load_im2col(tile, tmap, (0, 0, 3, 0), (0, 0), bar)
        elif case == 6:
            ac.cp_async_bulk_prefetch_tensor_im2col(tmap, (0, 0, 0, 0, 0), (0, 0, 0))


BUGS = {
    0: "cp_async_bulk_tensor_load_im2col: `coords`[1]=-2 is outside the im2col bounding box -1..2 "
       "of that axis",
    1: "cp_async_bulk_tensor_load_im2col: `dst` has 512 bytes but one box of the tensor map has 256",
    2: "cp_async_bulk_tensor_load: `tensor_map` has load mode 1 but this copy needs mode 0",
    3: "cp_async_bulk_tensor_load_im2col: `offsets`[1]=90000 is outside 0..65535",
    4: "cp_async_bulk_tensor_load_im2col: the innermost coordinate 2 x 4-byte elements is not a "
       "multiple of 16 bytes",
    5: "cp_async_bulk_tensor_load_im2col: `coords`[2]=3 is outside the im2col bounding box -1..2",
    6: "cp_async_bulk_prefetch_tensor_im2col: `coords` has 5 entries but the tensor map has rank 4",
}


@pytest.mark.parametrize("case", sorted(BUGS))
def test_buggy_kernels_fail_with_the_named_rule(case):
    x = cuda.to_device(np.zeros((1, 4, 4, 8), np.float32))
    tmap = ac.TensorMap.im2col(x, channels_per_pixel=8, pixels_per_column=8,
                               lower_corner=(-1, -1), upper_corner=(-1, -1))
    with pytest.raises(ac.sim.SimulatorError) as e:
        buggy[1, 32](tmap, case)
    assert BUGS[case] in str(e.value), str(e.value)


def test_a_tiled_map_refuses_an_im2col_load():
    x = cuda.to_device(np.zeros((1, 4, 8, 8), np.float32))
    tmap = ac.TensorMap(x, (1, 1, 8, 8))
    with pytest.raises(ac.sim.SimulatorError, match="has load mode 0 but this copy needs mode 1"):
        buggy[1, 32](tmap, 1)


def test_sim_im2col_map_validates_like_the_gpu():
    x = cuda.to_device(np.zeros((1, 4, 4, 8), np.float32))
    with pytest.raises(ValueError, match=r"TensorMap: `upper_corner`\[0\]=200 is outside -128..127"):
        ac.TensorMap.im2col(x, channels_per_pixel=8, pixels_per_column=8, lower_corner=(0, 0),
                            upper_corner=(200, 0))
    with pytest.raises(ValueError, match="has 2 axes; an im2col map describes 3 to 5"):
        ac.TensorMap.im2col(cuda.to_device(np.zeros((4, 8), np.float32)), channels_per_pixel=8,
                            pixels_per_column=8, lower_corner=(), upper_corner=())
    m = ac.TensorMap.im2col(x, channels_per_pixel=8, pixels_per_column=8, lower_corner=(0, 0),
                            upper_corner=(0, 0))
    assert m.mode == "im2col" and m.box_bytes == 256 and "TensorMap.im2col(" in repr(m)


def test_the_image_axis_steps_by_its_element_stride():
    """With element_strides[0] = 2 the walk goes on at image n + 2 after the
    last row of image n (the H200 did not visit image n + 1; the GPU suite
    checks that it reads image n + 2)."""
    x = np.arange(3 * 2 * 2 * 4, dtype=np.float32).reshape(3, 2, 2, 4) + 1
    tmap = ac.TensorMap.im2col(cuda.to_device(x), channels_per_pixel=4, pixels_per_column=12,
                               lower_corner=(0, 0), upper_corner=(0, 0),
                               element_strides=(2, 1, 1, 1))
    out = np.zeros((1, 12, 4), np.float32)
    cases.make_loader(4, 12, 4, np.float32)[1, 32](
        tmap, np.array([[0, 0, 0, 0]], np.int32), np.array([[0, 0]], np.int32), out)
    np.testing.assert_array_equal(out[0, :4], x[0].reshape(4, 4))
    np.testing.assert_array_equal(out[0, 4:8], x[2].reshape(4, 4))  # image 1 skipped
    assert not out[0, 8:].any()
