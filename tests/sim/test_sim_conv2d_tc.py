"""The tensor-core conv2d (implicit GEMM on wgmma, im2col + tiled TMA
through a pipeline) against numpy in the simulator: bf16 and fp16 inputs,
padding, stride, dilation, channel tails (C not a multiple of the k-step),
pixel and output-channel tails."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.examples import conv2d as cv

from ..tc_cases import rounded_inputs as inputs

pytestmark = pytest.mark.skipif(not ac.sim.ENABLED, reason="simulator test")



@pytest.mark.parametrize("shape, stride, padding, dilation, dtype, consumers", [
    ((1, 5, 6, 16, 16, 3, 3), (1, 1), (1, 1), (1, 1), "bf16", 1),
    ((2, 6, 5, 40, 24, 3, 2), (2, 1), (1, 0), (1, 2), "f16", 1),
    ((1, 9, 8, 24, 32, 3, 3), (1, 2), (2, 1), (2, 1), "bf16", 2),
])
def test_conv2d_tc_matches_numpy(shape, stride, padding, dilation, dtype, consumers):
    N, H, W, C, K, R, S = shape
    rng = np.random.default_rng(sum(shape))
    xh, xv = inputs(rng, (N, H, W, C), dtype)
    wh, wv = inputs(rng, (K, R, S, C), dtype)
    y = cv.conv2d_tc(cuda.to_device(xh), cuda.to_device(wh), stride, padding, dilation,
                     dtype=dtype, consumers=consumers, stages=2).copy_to_host()
    ref = cv.reference(xv, wv, stride, padding, dilation)
    # products of bf16/fp16 values are exact in fp32; only the fp32 sums round
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-4 * np.sqrt(R * S * C))


@pytest.mark.parametrize("shape, stride, dtype, bn, consumers, mtiles, persistent, blocks", [
    # 90 pixels: one 128-pixel tile of two MMA tiles, a pixel tail in the second
    ((1, 9, 10, 24, 40, 3, 3), (1, 1), "bf16", None, 1, 2, False, None),
    # 84 pixels x 48 channels: 2 pixel tiles x 3 channel tiles, walked by 2 blocks
    ((2, 6, 7, 16, 48, 3, 3), (1, 1), "f16", 16, 1, 1, True, 2),
    # one block walks 2 tiles of 128 pixels (two MMA tiles a consumer), stride 2
    ((4, 15, 16, 16, 32, 3, 3), (2, 1), "bf16", 32, 1, 2, True, 1),
])
def test_conv2d_tc_tile_walk_matches_numpy(shape, stride, dtype, bn, consumers, mtiles, persistent,
                                           blocks):
    N, H, W, C, K, R, S = shape
    rng = np.random.default_rng(sum(shape) + mtiles)
    xh, xv = inputs(rng, (N, H, W, C), dtype)
    wh, wv = inputs(rng, (K, R, S, C), dtype)
    y = cv.conv2d_tc(cuda.to_device(xh), cuda.to_device(wh), stride, (1, 1), (1, 1), dtype=dtype,
                     bn=bn, consumers=consumers, stages=2, mtiles=mtiles, persistent=persistent,
                     blocks=blocks).copy_to_host()
    ref = cv.reference(xv, wv, stride, (1, 1), (1, 1))
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-4 * np.sqrt(R * S * C))


@pytest.mark.parametrize("mtiles, blocks", [(1, 2), (2, 1)])
def test_conv2d_tc_bound_launcher_two_consumers_walk_matches_numpy(mtiles, blocks):
    # two consumer warpgroups, each its own copy of the k-loop (MMA tiles 0
    # and mtiles of a slot), walking several tiles through cv.bind_tc
    N, H, W, C, K, R, S = 2, 9, 8, 16, 32, 3, 3
    rng = np.random.default_rng(40 + mtiles)
    xh, xv = inputs(rng, (N, H, W, C), "bf16")
    wh, wv = inputs(rng, (K, R, S, C), "bf16")
    kern = cv.make_conv2d_tc(R, S, bn=16, bc=16, consumers=2, stages=2, mtiles=mtiles,
                             persistent=True)
    x, w = cuda.to_device(xh), cuda.to_device(wh)
    xmap, wmap = cv.maps_tc(x, w.reshape(K, R * S, C), kern, (1, 1), (1, 1), (1, 1))
    y = cuda.device_array((N * H * W, K), np.float32)
    go = cv.bind_tc(kern, xmap, wmap, y, N, H, W, C, blocks=blocks)
    assert go.grid == (blocks,)
    go()
    ref = cv.reference(xv, wv, (1, 1), (1, 1), (1, 1))
    np.testing.assert_allclose(y.copy_to_host().reshape(ref.shape), ref, rtol=1e-5,
                               atol=1e-4 * np.sqrt(R * S * C))
    with pytest.raises(ValueError, match="only a persistent kernel takes a block count"):
        cv.bind_tc(cv.make_conv2d_tc(R, S, bn=16, bc=16, consumers=2, stages=2), xmap, wmap, y,
                   N, H, W, C, blocks=2)


def test_conv2d_tc_grid_of_the_tile_walk():
    plain = cv.make_conv2d_tc(3, 3, bn=64, consumers=2, stages=4, ctas=2)
    walk = cv.make_conv2d_tc(3, 3, bn=64, consumers=2, stages=4, ctas=2, persistent=True)
    wide = cv.make_conv2d_tc(3, 3, bn=64, consumers=2, stages=5, mtiles=2)
    M = 128 * 56 * 56
    assert cv.grid_tc(plain, M, 64) == (M // 128, 1)
    assert cv.grid_tc(walk, M, 64, sms=132) == (264,)   # two blocks a multiprocessor
    assert cv.grid_tc(walk, 300, 64, sms=132) == (3,)    # at most one a tile
    assert cv.grid_tc(wide, M, 128) == (2 * M // 256,)   # a block a tile, channel tiles inner
    assert (wide.bm, walk.bm, plain.bm) == (256, 128, 128)
    with pytest.raises(ValueError, match="only a persistent kernel takes a block count"):
        cv.run_tc(plain, None, None, np.zeros((8, 64), np.float32), 1, 2, 4, 64, blocks=2)


def test_conv2d_tc_bf16_output_rounds_the_fp32_sum():
    rng = np.random.default_rng(3)
    xh, xv = inputs(rng, (1, 6, 6, 16), "bf16")
    wh, wv = inputs(rng, (16, 3, 3, 16), "bf16")
    y = cv.conv2d_tc(cuda.to_device(xh), cuda.to_device(wh), (1, 1), (1, 1), (1, 1),
                     out="bf16", consumers=1, stages=2).copy_to_host()
    ref = cv.reference(xv, wv, (1, 1), (1, 1), (1, 1))
    np.testing.assert_allclose(ac.bf16_values(y), ref, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("kw, words", [
    ({"bn": 24}, "bn must be a multiple of 16"),
    ({"bc": 48}, "bc must be 16, 32 or 64"),
    ({"consumers": 3}, "consumers must be 1 or 2"),
    ({"dtype": "tf32"}, "dtype must be 'bf16' or 'f16'"),
    ({"out": "int8"}, "out must be"),
    ({"ctas": 3}, "ctas must be 1 or 2"),
    ({"mtiles": 4}, "mtiles must be 1 or 2"),
    ({"persistent": "yes"}, "persistent must be a bool"),
    ({"bn": 128, "consumers": 1, "ctas": 2, "mtiles": 2}, "bn=128 needs 128 accumulator registers "
     "a thread; 2 block\\(s\\) of 256 threads a SM leave 128: use bn <= 88"),
    ({"bn": 128, "consumers": 2, "ctas": 2}, "bn=128 needs 64 accumulator registers a thread; 2 "
     "block\\(s\\) of 384 threads a SM leave 80: use bn <= 80"),
    ({"bn": 256, "consumers": 2, "stages": 5}, "1 block\\(s\\) of 245760 bytes of shared memory"),
])
def test_conv2d_tc_refuses_bad_tiles(kw, words):
    with pytest.raises(ValueError, match=words):
        cv.make_conv2d_tc(3, 3, **kw)


def test_conv2d_tc_refuses_channels_not_multiple_of_8():
    x = cuda.to_device(np.zeros((1, 4, 4, 12), np.uint16))
    w = cuda.to_device(np.zeros((8, 3, 3, 12), np.uint16))
    with pytest.raises(ValueError, match="C=12 must be a multiple of 8"):
        cv.conv2d_tc(x, w)


def test_tc_config_is_the_sweeps_winner_per_layer():
    # the benchmark layers (M = N * P * Q pixels, K channels) and what the H200 sweep chose
    assert cv.tc_config(32 * 56 * 56, 64) == (64, 2, 4, 2)
    assert cv.tc_config(128 * 56 * 56, 64) == (64, 2, 4, 2)
    assert cv.tc_config(32 * 28 * 28, 128) == (128, 2, 4, 1)
    assert cv.tc_config(128 * 28 * 28, 128) == (128, 2, 4, 1)
    assert cv.tc_config(128 * 7 * 7, 256) == (128, 1, 3, 2)
    assert cv.tc_config(32 * 7 * 7, 256) == (64, 1, 4, 2)
    for M, K in ((100, 8), (5000, 40), (10**6, 512), (300, 1024)):
        bn, consumers, stages, ctas = cv.tc_config(M, K)
        cv.make_conv2d_tc(3, 3, bn=bn, consumers=consumers, stages=stages, ctas=ctas)


def test_conv2d_tc_default_configuration_matches_numpy():
    rng = np.random.default_rng(4)
    xh, xv = inputs(rng, (1, 6, 7, 16), "f16")
    wh, wv = inputs(rng, (24, 3, 3, 16), "f16")
    y = cv.conv2d_tc(cuda.to_device(xh), cuda.to_device(wh), (1, 1), (1, 1), (1, 1),
                     dtype="f16").copy_to_host()
    np.testing.assert_allclose(y, cv.reference(xv, wv, (1, 1), (1, 1), (1, 1)), rtol=1e-5,
                               atol=1e-3)
