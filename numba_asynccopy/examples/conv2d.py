"""2-D convolution as an implicit GEMM fed by TMA: activation patches by
im2col loads, filter tiles by tiled loads, through a multi-stage
``ac.pipeline.tma_pipeline`` (fp32 SIMT math, fp32 accumulation).

Shapes: activations NHWC ``(N, H, W, C)``, filters KRSC ``(K, R, S, C)``,
output NPQK ``(N, P, Q, K)``; stride, padding and dilation per axis.

The GEMM: ``out[m, k] = sum_{r, s, c} A[m, (r, s, c)] * F[k, (r, s, c)]``
with ``m`` the output pixel ``(n, p, q)``.  A block computes ``BM`` output
pixels x ``BN`` output channels.  Its k-loop walks the filter taps ``(r,
s)`` and channel chunks ``c0`` of ``BC``: the A tile (``BM`` pixels x ``BC``
channels of tap ``(r, s)``) is one im2col load with ``offsets = (r * dh, s *
dw)``, the F tile (``BN`` x ``BC``) one tiled load of the filters viewed as
``(K, R * S * C)``.  Warp 0's elected lane produces, the other
``CONSUMERS`` threads each accumulate one pixel x ``BN // 4`` channels.

Padding is the im2col map's bounding box (``ac.conv_corners``): pixels
outside the image load as zeros, as do filter rows past ``K`` and pixels
past the last image.  ``C`` must be a multiple of ``BC``.

Example (runs in the simulator too)::

    from numba_asynccopy.examples import conv2d as cv
    y = cv.conv2d(x, w, stride=(1, 1), padding=(1, 1), dilation=(1, 1))  # device arrays
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda

import numba_asynccopy as ac

CONSUMERS = 128
BLOCK = 32 + CONSUMERS  # warp 0 produces


def out_shape(h: int, w: int, r: int, s: int, stride, padding, dilation) -> tuple[int, int]:
    return tuple((x + 2 * p - d * (k - 1) - 1) // st + 1 for x, k, st, p, d in
                 zip((h, w), (r, s), stride, padding, dilation))


@lru_cache(maxsize=None)
def make_conv2d(R: int, S: int, stride=(1, 1), dilation=(1, 1), padding=(1, 1), BM: int = 32,
                BN: int = 32, BC: int = 8, stages: int = 3):
    """The kernel ``conv(xmap, wmap, out, N, P, Q, C, K)`` for one filter
    geometry (compile-time), launched with :data:`BLOCK` threads on a grid
    ``(ceil(N * P * Q / BM), ceil(K / BN))``; ``out`` is the output viewed as
    ``(N * P * Q, K)``.  Build the maps with :func:`maps`."""
    if BM * 4 != CONSUMERS or BN % 4 or BC % 4:
        raise ValueError(f"BM must be {CONSUMERS // 4} (4 consumer threads a pixel), BN and BC "
                         "multiples of 4 (16-byte rows of float32)")
    SH, SW = stride
    DH, DW = dilation
    LO_H, LO_W = -padding[0], -padding[1]
    TN = BN // 4
    TAPS = R * S

    @cuda.jit
    def conv(xmap, wmap, out, N, P, Q, C, K):
        a_ring = cuda.shared.array((stages, BM, BC), np.float32, alignment=128)
        b_ring = cuda.shared.array((stages, BN, BC), np.float32, alignment=128)
        bars = cuda.shared.array((2, stages), np.uint64)
        pipe = ac.pipeline.tma_pipeline(bars, stages, CONSUMERS, 2)
        ac.pipeline.init(pipe)
        tid = cuda.threadIdx.x
        m0 = cuda.blockIdx.x * BM
        k0 = cuda.blockIdx.y * BN
        chunks = C // BC
        steps = TAPS * chunks
        if tid < 32:
            if ac.elect_sync():
                n = m0 // (P * Q)
                rem = m0 - n * (P * Q)
                p = rem // Q
                q = rem - p * Q
                h0 = p * SH + LO_H
                w0 = q * SW + LO_W
                ac.fence_proxy_tensormap(xmap)
                ac.fence_proxy_tensormap(wmap)
                ps = ac.pipeline.producer_start(pipe)
                for t in range(steps):
                    tap = t // chunks
                    c0 = (t - tap * chunks) * BC
                    r = tap // S
                    s = tap - r * S
                    ac.pipeline.producer_acquire(pipe, ps)
                    ac.pipeline.copy_tensor_im2col(pipe, ps, a_ring[ps.slot], xmap,
                                                   (n, h0, w0, c0), (r * DH, s * DW), fence=False)
                    ac.pipeline.copy_tensor(pipe, ps, b_ring[ps.slot], wmap, (k0, tap * C + c0),
                                            fence=False)
                    ac.pipeline.producer_commit(pipe, ps)
                    ps = ac.pipeline.advance(pipe, ps)
        else:
            me = tid - 32
            row = me // 4
            col = (me % 4) * TN
            acc = cuda.local.array(TN, np.float32)
            for j in range(TN):
                acc[j] = 0.0
            cs = ac.pipeline.consumer_start(pipe)
            for t in range(steps):
                ac.pipeline.consumer_wait(pipe, cs)
                a = a_ring[cs.slot]
                b = b_ring[cs.slot]
                for c in range(BC):
                    av = a[row, c]
                    for j in range(TN):
                        acc[j] += av * b[col + j, c]
                ac.pipeline.consumer_release(pipe, cs)
                cs = ac.pipeline.advance(pipe, cs)
            m = m0 + row
            if m < N * P * Q:
                for j in range(TN):
                    k = k0 + col + j
                    if k < K:
                        out[m, k] = acc[j]

    return conv


def maps(x, w2d, R: int, S: int, stride, padding, dilation, BM: int = 32, BN: int = 32,
         BC: int = 8):
    """(im2col map of ``x`` NHWC, tiled map of the filters ``w2d`` viewed as
    ``(K, R * S * C)``) for :func:`make_conv2d`'s kernel."""
    lo, up = ac.conv_corners((R, S), padding, dilation)
    xmap = ac.TensorMap.im2col(x, channels_per_pixel=BC, pixels_per_column=BM, lower_corner=lo,
                               upper_corner=up, element_strides=(1, stride[0], stride[1], 1))
    wmap = ac.TensorMap(w2d, (BN, BC))
    return xmap, wmap


def conv2d(x, w, stride=(1, 1), padding=(0, 0), dilation=(1, 1), BC: int = 8, stages: int = 3):
    """Convolve device arrays ``x`` (NHWC float32) and ``w`` (KRSC float32);
    returns the NPQK output as a device array."""
    N, H, W, C = x.shape
    K, R, S, C2 = w.shape
    if C2 != C:
        raise ValueError(f"the filters have {C2} channels, the input {C}")
    if C % BC:
        raise ValueError(f"C={C} must be a multiple of BC={BC}")
    stride, padding, dilation = tuple(stride), tuple(padding), tuple(dilation)
    P, Q = out_shape(H, W, R, S, stride, padding, dilation)
    w2d = w.reshape(K, R * S * C)
    xmap, wmap = maps(x, w2d, R, S, stride, padding, dilation, BC=BC)
    y = cuda.device_array((N * P * Q, K), np.float32)
    kern = make_conv2d(R, S, stride, dilation, padding, BC=BC, stages=stages)
    grid = ((N * P * Q + 31) // 32, (K + 31) // 32)
    kern[grid, BLOCK](xmap, wmap, y, N, P, Q, C, K)
    return y.reshape(N, P, Q, K)


def reference(x: np.ndarray, w: np.ndarray, stride, padding, dilation) -> np.ndarray:
    """numpy NHWC x KRSC convolution, float64 accumulation."""
    N, H, W, C = x.shape
    K, R, S, _ = w.shape
    P, Q = out_shape(H, W, R, S, stride, padding, dilation)
    xp = np.zeros((N, H + 2 * padding[0] + 64, W + 2 * padding[1] + 64, C))
    xp[:, padding[0]:padding[0] + H, padding[1]:padding[1] + W] = x
    y = np.zeros((N, P, Q, K))
    for r in range(R):
        for s in range(S):
            h0, w0 = r * dilation[0], s * dilation[1]
            patch = xp[:, h0:h0 + stride[0] * P:stride[0], w0:w0 + stride[1] * Q:stride[1]]
            y += patch @ w[:, r, s, :].T.astype(np.float64)
    return y
