"""The tensor-core conv2d (wgmma implicit GEMM, im2col + tiled TMA) on the
GPU: random shapes with padding, stride, dilation and tails (pixels,
channels, output channels), bf16 and fp16 inputs, fp32 and 16-bit outputs,
against a float64 numpy reference of the same rounded inputs and against
torch.nn.functional.conv2d where torch is installed."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numba_asynccopy.examples import conv2d as cv

from ..conftest import SIM
from ..tc_cases import rounded_inputs as inputs

pytestmark = pytest.mark.gpu

# (N, H, W, C, K, R, S), stride, padding, dilation, dtype, bn, consumers, ctas
CASES = [
    ((2, 14, 14, 64, 64, 3, 3), (1, 1), (1, 1), (1, 1), "bf16", 64, 2, 1),
    ((1, 9, 11, 48, 40, 3, 3), (2, 2), (1, 1), (1, 1), "f16", None, 1, 1),
    ((3, 8, 8, 24, 16, 3, 3), (1, 2), (2, 1), (2, 1), "bf16", None, 2, 1),
    ((1, 7, 7, 16, 72, 1, 1), (1, 1), (0, 0), (1, 1), "f16", None, 2, 1),
    ((2, 10, 6, 136, 32, 5, 3), (1, 1), (2, 1), (1, 2), "bf16", 32, 1, 1),
    ((2, 16, 16, 128, 256, 3, 3), (2, 2), (1, 1), (1, 1), "bf16", 256, 2, 1),
    ((4, 12, 13, 96, 128, 3, 3), (1, 1), (1, 1), (1, 1), "f16", 128, 1, 1),
    # two blocks a SM (the setmaxnreg split of nreg_split)
    ((8, 20, 20, 64, 64, 3, 3), (1, 1), (1, 1), (1, 1), "bf16", 64, 2, 2),
    ((3, 15, 17, 128, 128, 3, 3), (2, 1), (1, 1), (1, 1), "bf16", 128, 1, 2),
    ((2, 11, 9, 72, 96, 3, 3), (1, 1), (1, 1), (2, 2), "f16", 64, 1, 2),
]



@pytest.mark.parametrize("shape, stride, padding, dilation, dtype, bn, consumers, ctas", CASES)
def test_conv2d_tc_matches_numpy(shape, stride, padding, dilation, dtype, bn, consumers, ctas):
    N, H, W, C, K, R, S = shape
    if SIM and N * H * W * C * K > 200_000:
        pytest.skip("a large shape: the simulator runs the small ones (tests/sim has more)")
    rng = np.random.default_rng()
    xh, xv = inputs(rng, (N, H, W, C), dtype)
    wh, wv = inputs(rng, (K, R, S, C), dtype)
    y = cv.conv2d_tc(cuda.to_device(xh), cuda.to_device(wh), stride, padding, dilation, dtype=dtype,
                     bn=bn, consumers=consumers, ctas=ctas,
                     stages=3 if ctas == 2 else 4).copy_to_host()
    ref = cv.reference(xv, wv, stride, padding, dilation)
    # products of bf16/fp16 values are exact in fp32: the error is the fp32 sums'
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=2e-5 * np.sqrt(R * S * C) * 4)


# the tile walk: (N, H, W, C, K, R, S), stride, padding, dilation, dtype, out, bn, consumers,
# ctas, mtiles, persistent, blocks (None: grid_tc's)
TILE_CASES = [
    ((8, 20, 20, 64, 64, 3, 3), (1, 1), (1, 1), (1, 1), "bf16", "float32", 64, 2, 2, 1, True, None),
    # 5 blocks walk 25 tiles
    ((8, 20, 20, 64, 64, 3, 3), (1, 1), (1, 1), (1, 1), "bf16", "bf16", 64, 2, 2, 1, True, 5),
    ((3, 15, 17, 128, 128, 3, 3), (2, 1), (1, 1), (1, 1), "bf16", "float32", 128, 2, 1, 2, True, None),
    # two channel tiles (channel tile inner), 3 blocks
    ((2, 16, 16, 128, 256, 3, 3), (2, 2), (1, 1), (1, 1), "bf16", "float32", 128, 1, 2, 1, True, 3),
    ((4, 12, 13, 96, 64, 3, 3), (1, 1), (1, 1), (1, 1), "f16", "float32", 64, 2, 1, 2, True, 2),
    # channel tails (C = 72 of 64-channel steps, K = 96 of 64-channel tiles), dilation
    ((2, 11, 9, 72, 96, 3, 3), (1, 1), (1, 1), (2, 2), "f16", "float32", 64, 1, 2, 2, True, None),
    # two MMA tiles a consumer, a block a tile
    ((1, 9, 11, 48, 40, 3, 3), (2, 2), (1, 1), (1, 1), "bf16", "float32", 48, 2, 1, 2, False, None),
    # the benchmark's 56x56 configuration (256 x 64 tiles, 5 stages) on a batch of 2
    ((2, 56, 56, 64, 64, 3, 3), (1, 1), (1, 1), (1, 1), "bf16", "bf16", 64, 2, 1, 2, True, None),
]


@pytest.mark.parametrize("shape, stride, padding, dilation, dtype, out, bn, consumers, ctas, "
                         "mtiles, persistent, blocks", TILE_CASES)
def test_conv2d_tc_tile_walk_matches_numpy(shape, stride, padding, dilation, dtype, out, bn,
                                           consumers, ctas, mtiles, persistent, blocks):
    import numba_asynccopy as ac

    N, H, W, C, K, R, S = shape
    if SIM and N * H * W * C * K > 200_000:
        pytest.skip("a large shape: the simulator runs the small ones (tests/sim has more)")
    rng = np.random.default_rng()
    xh, xv = inputs(rng, (N, H, W, C), dtype)
    wh, wv = inputs(rng, (K, R, S, C), dtype)
    stages = 3 if ctas == 2 else 5 if (mtiles == 2 and bn == 64) else 4
    y = cv.conv2d_tc(cuda.to_device(xh), cuda.to_device(wh), stride, padding, dilation, dtype=dtype,
                     out=out, bn=bn, consumers=consumers, ctas=ctas, stages=stages, mtiles=mtiles,
                     persistent=persistent, blocks=blocks).copy_to_host()
    ref = cv.reference(xv, wv, stride, padding, dilation)
    if out == "bf16":
        np.testing.assert_allclose(ac.bf16_values(y), ref, rtol=1e-2, atol=1e-2 * np.abs(ref).max())
    else:
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=2e-5 * np.sqrt(R * S * C) * 4)


#: ``unroll=2`` (k-steps in pairs, an odd last step after): an odd step count
#: (9), an even one (18: two 64-channel chunks of C = 72), one step (a 1x1
#: filter: no pair), on a tile walk and a block a tile; the last, the
#: benchmark's 56x56 configuration on a batch of 2 (GPU only)
UNROLL_CASES = [
    ((1, 9, 11, 48, 40, 3, 3), (1, 1), (1, 1), (1, 1), "bf16", 48, 2, 1, 1, True, 3),
    ((1, 6, 7, 72, 16, 3, 3), (2, 1), (1, 1), (1, 2), "f16", 16, 1, 2, 2, True, None),
    ((1, 8, 8, 64, 32, 1, 1), (1, 1), (0, 0), (1, 1), "bf16", 32, 2, 1, 1, False, None),
    ((2, 56, 56, 64, 64, 3, 3), (1, 1), (1, 1), (1, 1), "bf16", 64, 2, 2, 1, True, None),
]


@pytest.mark.parametrize("shape, stride, padding, dilation, dtype, bn, consumers, ctas, mtiles, "
                         "persistent, blocks", UNROLL_CASES)
def test_conv2d_tc_unrolled_k_loop_matches_numpy(shape, stride, padding, dilation, dtype, bn,
                                                 consumers, ctas, mtiles, persistent, blocks):
    N, H, W, C, K, R, S = shape
    if SIM and N * H * W * C * K > 200_000:
        pytest.skip("a large shape: the simulator runs the small ones")
    rng = np.random.default_rng()
    xh, xv = inputs(rng, (N, H, W, C), dtype)
    wh, wv = inputs(rng, (K, R, S, C), dtype)
    y = cv.conv2d_tc(cuda.to_device(xh), cuda.to_device(wh), stride, padding, dilation, dtype=dtype,
                     bn=bn, consumers=consumers, ctas=ctas, stages=3 if ctas == 2 else 4,
                     mtiles=mtiles, persistent=persistent, blocks=blocks, unroll=2).copy_to_host()
    ref = cv.reference(xv, wv, stride, padding, dilation)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=2e-5 * np.sqrt(R * S * C) * 4)


@pytest.mark.parametrize("dtype, out", [("bf16", "bf16"), ("f16", "float16")])
def test_conv2d_tc_16bit_output_matches_torch(dtype, out):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    tdt = torch.bfloat16 if dtype == "bf16" else torch.float16
    x = torch.randn(4, 20, 18, 64, device="cuda").to(tdt)
    w = (torch.randn(128, 3, 3, 64, device="cuda") / 24).to(tdt)
    view = torch.uint16 if dtype == "bf16" else torch.float16
    y = cv.conv2d_tc(cuda.as_cuda_array(x.view(view)), cuda.as_cuda_array(w.view(view)), (2, 1),
                     (1, 2), (1, 2), dtype=dtype, out=out)
    got = torch.as_tensor(y, device="cuda")
    got = got.view(tdt).float() if dtype == "bf16" else got.float()
    ref = torch.nn.functional.conv2d(x.permute(0, 3, 1, 2).float(), w.permute(0, 3, 1, 2).float(),
                                     stride=(2, 1), padding=(1, 2), dilation=(1, 2))
    ref = ref.permute(0, 2, 3, 1)
    assert got.shape == ref.shape
    err = float((got - ref).norm() / ref.norm())
    assert err < 5e-3, err
