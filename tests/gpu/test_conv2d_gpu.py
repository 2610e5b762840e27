"""The conv2d example on the GPU against numpy (float64 reference) on
random shapes with padding, stride and dilation, and against
torch.nn.functional.conv2d (TF32 off) where torch is installed."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numba_asynccopy.examples import conv2d as cv

from ..conftest import SIM

pytestmark = pytest.mark.gpu

CASES = [
    # (10 x 10 in the simulator: two images, a partial pixel tile and a
    # partial channel tile all stay, at half the blocks)
    ((2, 10, 10, 16, 24, 3, 3) if SIM else (2, 14, 14, 16, 24, 3, 3), (1, 1), (1, 1), (1, 1)),
    ((1, 9, 11, 8, 40, 3, 3), (2, 2), (1, 1), (1, 1)),
    ((3, 8, 8, 24, 16, 3, 3), (1, 2), (2, 1), (2, 1)),
    ((1, 7, 7, 16, 64, 1, 1), (1, 1), (0, 0), (1, 1)),
    ((2, 10, 6, 8, 8, 5, 3), (1, 1), (2, 1), (1, 2)),
]


@pytest.mark.parametrize("shape, stride, padding, dilation", CASES)
def test_conv2d_matches_numpy(shape, stride, padding, dilation):
    N, H, W, C, K, R, S = shape
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal((N, H, W, C)).astype(np.float32)
    w = rng.standard_normal((K, R, S, C)).astype(np.float32)
    y = cv.conv2d(cuda.to_device(x), cuda.to_device(w), stride, padding, dilation).copy_to_host()
    np.testing.assert_allclose(y, cv.reference(x, w, stride, padding, dilation), rtol=1e-4,
                               atol=1e-3)


def test_conv2d_matches_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    torch.backends.cudnn.allow_tf32 = False
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 12, 12, 16)).astype(np.float32)
    w = rng.standard_normal((32, 3, 3, 16)).astype(np.float32)
    y = cv.conv2d(cuda.to_device(x), cuda.to_device(w), (2, 2), (1, 1), (1, 1)).copy_to_host()
    tx = torch.from_numpy(x).permute(0, 3, 1, 2).cuda()
    tw = torch.from_numpy(w).permute(0, 3, 1, 2).cuda()
    ty = torch.nn.functional.conv2d(tx, tw, stride=2, padding=1).permute(0, 2, 3, 1).cpu().numpy()
    np.testing.assert_allclose(y, ty, rtol=1e-4, atol=1e-3)
