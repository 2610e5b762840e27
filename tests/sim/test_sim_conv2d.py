"""The conv2d example (implicit GEMM, im2col + tiled TMA through a
pipeline) against numpy in the simulator, with padding, stride and
dilation, M and K tails."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.examples import conv2d as cv

pytestmark = pytest.mark.skipif(not ac.sim.ENABLED, reason="simulator test")


@pytest.mark.parametrize("shape, stride, padding, dilation", [
    ((1, 5, 6, 8, 12, 3, 3), (1, 1), (1, 1), (1, 1)),
    ((2, 6, 5, 16, 8, 3, 2), (2, 1), (1, 0), (1, 2)),
])
def test_conv2d_matches_numpy(shape, stride, padding, dilation):
    N, H, W, C, K, R, S = shape
    rng = np.random.default_rng(1)
    x = rng.standard_normal((N, H, W, C)).astype(np.float32)
    w = rng.standard_normal((K, R, S, C)).astype(np.float32)
    y = cv.conv2d(cuda.to_device(x), cuda.to_device(w), stride, padding, dilation).copy_to_host()
    np.testing.assert_allclose(y, cv.reference(x, w, stride, padding, dilation), rtol=1e-5,
                               atol=1e-4)
