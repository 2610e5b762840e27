"""2-D convolution as an implicit GEMM fed by TMA: activation patches by
im2col loads, filter tiles by tiled loads, through a multi-stage
``ac.pipeline.tma_pipeline``, fp32 accumulation: :func:`conv2d` in fp32
SIMT math, :func:`conv2d_tc` on the tensor cores (``wgmma``, bf16/fp16
inputs, sm_90a; its section below).

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
    yb = cv.conv2d_tc(xb, wb, stride=(1, 1), padding=(1, 1))             # bf16 bits in
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

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


# --- tensor cores: bf16/fp16 inputs, wgmma, fp32 accumulation -----------------

TC_BM = 64  # output pixels of one consumer warpgroup (the MMA's M)


def tc_channels(C: int) -> int:
    """Channels of one k-step: 64 (a 128-byte swizzle row of bf16/fp16) for
    ``C > 32``, else 32 or 16 (a 64- or 32-byte swizzle row), so that small
    ``C`` does not load boxes mostly of zeros."""
    if C % 8:
        raise ValueError(f"C={C} must be a multiple of 8 (TMA needs 16-byte pixel strides)")
    return 64 if C > 32 else 32 if C > 16 else 16


@lru_cache(maxsize=None)
def make_conv2d_tc(R: int, S: int, stride=(1, 1), dilation=(1, 1), padding=(1, 1), bn: int = 128,
                   bc: int = 64, stages: int = 4, consumers: int = 2, dtype: str = "bf16",
                   out: str = "float32", ctas: int = 1, mtiles: int = 1, persistent: bool = False,
                   unroll: int = 1):
    """The tensor-core kernel ``conv(xmap, wmap, out, N, P, Q, C)`` for one
    filter geometry (compile-time); launch it with :func:`run_tc` (maps by
    :func:`maps_tc`).

    A block of ``128 * (1 + consumers)`` threads computes ``64 * consumers``
    output pixels x ``bn`` output channels: warpgroup 0 produces (one elected
    lane issues, per k-step, the im2col load of the ``(64 * consumers, bc)``
    activation box and the tiled load of the ``(bn, 1, bc)`` filter box, both
    swizzled ``2 * bc`` bytes), each consumer warpgroup owns 64 pixels and
    issues ``bc / 16`` ``m64n{bn}k16`` MMAs a k-step on descriptors of the
    slot (both operands K-major), keeping one k-step of MMAs in flight
    before it releases the previous slot.  ``bn``: 64..256, a multiple of
    16 (the MMA's N); ``bc``: 16, 32 or 64 (:func:`tc_channels`); ``dtype``:
    ``"bf16"`` (uint16 bits) or ``"f16"``; ``out``: ``"float32"``,
    ``"bf16"`` or ``"float16"``; ``ctas``: blocks resident on one SM (1 or
    2; the launch bounds' second number), so that one block's epilogue and
    pipeline fill overlap another's MMAs: :func:`nreg_split` gives the
    warpgroups' register limits.

    ``mtiles`` (1 or 2): 64-pixel MMA tiles of one consumer warpgroup; with
    2, a block computes ``128 * consumers`` pixels, each consumer issuing
    two ``m64n{bn}k16`` MMAs a 16-channel step on the same filter
    descriptor, so a filter tile is loaded once for twice the pixels.
    ``persistent``: :func:`grid_tc` launches at most ``ctas`` blocks a
    multiprocessor and each walks the tiles (pixel tile ``tile // ntn``,
    channel tile ``tile % ntn``, ``ntn`` channel tiles: the blocks running
    at once share their activation rows), its ring running on across
    tiles so that the next tile's loads overlap this tile's epilogue.
    With ``mtiles=2`` or ``persistent`` the grid is one-dimensional (a
    block a tile when not persistent).

    The two kernels share their parts (the tile's im2col origin, the
    producer's loads of a tile, a consumer's k-loop, the epilogue) as
    inlined device functions; each consumer warpgroup runs its own inlined
    copy of its part, its MMA tiles' index a constant, and the loop counts
    and tile arithmetic are 32-bit, so that the k-loop's SASS has no 64-bit
    arithmetic (``tests/cpu/test_conv2d_tc_ptx.py`` pins its length).

    ``unroll`` (1 or 2): k-steps a trip of a consumer's k-loop; with 2 the
    loop runs the steps in pairs (an odd last step after), as nvcc unrolls
    the CUDA C++ twin's.  Neither is faster everywhere on the H200 (the
    benchmark's sweep tries both where it paid once), so 1 stays the default.

    Example (compile only; :func:`run_tc` launches)::

        kern = make_conv2d_tc(3, 3, bn=64, consumers=2, ctas=2, persistent=True, unroll=2)
    """
    from .hgemm import _carve

    if bn % 16 or not 16 <= bn <= 256:
        raise ValueError(f"bn must be a multiple of 16 in 16..256 (the MMA's N), got {bn}")
    if bc not in (16, 32, 64):
        raise ValueError(f"bc must be 16, 32 or 64 (a 32-, 64- or 128-byte swizzle row), got {bc}")
    if consumers not in (1, 2):
        raise ValueError(f"consumers must be 1 or 2 warpgroups, got {consumers}")
    if ctas not in (1, 2):
        raise ValueError(f"ctas must be 1 or 2 (blocks resident on one SM), got {ctas}")
    if mtiles not in (1, 2):
        raise ValueError(f"mtiles must be 1 or 2 (64-pixel MMA tiles a consumer), got {mtiles}")
    if type(unroll) is not int or unroll not in (1, 2):
        raise ValueError(f"unroll must be 1 or 2 (k-steps a trip of the k-loop), got {unroll!r}")
    if persistent not in (True, False):
        raise ValueError(f"persistent must be a bool, got {persistent!r}")
    if dtype not in ("bf16", "f16"):
        raise ValueError(f"dtype must be 'bf16' or 'f16', got {dtype!r}")
    if out not in ("float32", "bf16", "float16"):
        raise ValueError(f"out must be 'float32', 'bf16' or 'float16', got {out!r}")
    SH, SW = stride
    DH, DW = dilation
    LO_H, LO_W = -padding[0], -padding[1]
    TAPS = R * S
    MT = mtiles
    BMT = TC_BM * consumers * MT
    swz = 2 * bc
    threads = 128 * (1 + consumers)
    PROD, CONS = nreg_split(consumers, ctas)
    cap = min(248, 65536 // (threads * ctas) // 8 * 8)
    if MT * bn // 2 + 40 > cap:
        # ptxas allocates the whole kernel within the launch's cap
        raise ValueError(f"bn={bn} needs {MT * bn // 2} accumulator registers a thread; {ctas} "
                         f"block(s) of {threads} threads a SM leave {cap}: use bn <= "
                         f"{2 * (cap - 40) // MT}")
    smem = stages * (BMT + bn) * bc * 2
    if smem * ctas > SMEM_PER_SM:
        raise ValueError(f"{ctas} block(s) of {smem} bytes of shared memory (stages={stages}, "
                         f"bn={bn}, {consumers} consumer(s)) exceed the SM's {SMEM_PER_SM} bytes")
    a_elems = stages * BMT * bc
    storage = np.uint16 if dtype == "bf16" else np.float16

    MTILES = consumers * MT  # 64-row MMA tiles of a block
    N1 = bn if MT == 2 else 8  # the second fragment's N (a placeholder with one tile)
    # the two kernels' shared parts, inlined into each (Numba IR inlining)
    dev = (lambda f: f) if ac.sim.ENABLED else cuda.jit(device=True, inline="always")

    @dev
    def origin(m0, pq, q32):
        # (image, first row, first column) of the im2col box of the tile whose
        # first output pixel is m0: 32-bit division (m0 < 2**31)
        # (each step cast back: Numba widens uint32 products to 64 bits)
        n = np.uint32(m0 // pq)
        rem = np.uint32(m0 - np.uint32(n * pq))
        p = np.uint32(rem // q32)
        q = np.uint32(rem - np.uint32(p * q32))
        return np.int32(n), np.int32(p) * SH + LO_H, np.int32(q) * SW + LO_W

    @dev
    def produce(pipe, ps, sa, sb, xmap, wmap, img, h0, w0, k0, chunks):
        # one tile's loads; nested loops, no division a step: the producer
        # issues a step in far fewer cycles than the MMAs of a step take
        for r in range(R):
            for s in range(S):
                for ch in range(chunks):
                    ac.pipeline.producer_acquire(pipe, ps)
                    ac.pipeline.copy_tensor_im2col(pipe, ps, sa[ps.slot], xmap,
                                                   (img, h0, w0, ch * bc), (r * DH, s * DW),
                                                   fence=False)
                    ac.pipeline.copy_tensor(pipe, ps, sb[ps.slot], wmap, (k0, r * S + s, ch * bc),
                                            fence=False)
                    ac.pipeline.producer_commit(pipe, ps)
                    ps = ac.pipeline.advance(pipe, ps)
        return ps

    @dev
    def kstep(pipe, st, prev, sm, sb, j, acc, acc1, t, leader):
        # k-step t of a consumer's tile: wait for its slot, its MMAs, then
        # (the MMAs of step t - 1 done) release the slot of step t - 1
        ac.pipeline.consumer_wait(pipe, st)
        acc = ac.wgmma_fence(acc)
        if MT == 2:
            acc1 = ac.wgmma_fence(acc1)
        for kk in range(bc // 16):
            fd = ac.wgmma_descriptor(sb[st.slot, :, 0, 16 * kk:16 * kk + 16], swizzle=swz)
            acc = ac.wgmma_mma_async(
                acc, ac.wgmma_descriptor(sm[st.slot, j, :, 16 * kk:16 * kk + 16], swizzle=swz),
                fd, dtype=dtype, scale_d=(t > 0) or (kk > 0))
            if MT == 2:
                acc1 = ac.wgmma_mma_async(
                    acc1,
                    ac.wgmma_descriptor(sm[st.slot, j + 1, :, 16 * kk:16 * kk + 16], swizzle=swz),
                    fd, dtype=dtype, scale_d=(t > 0) or (kk > 0))
        ac.wgmma_commit_group()
        acc = ac.wgmma_wait_group(1, acc)
        if MT == 2:
            acc1 = ac.wgmma_wait_group(1, acc1)
        if t > 0 and leader:
            ac.pipeline.consumer_release(pipe, prev)
        return ac.pipeline.advance(pipe, st), st, acc, acc1

    @dev
    def finish(pipe, prev, acc, acc1, leader):
        # the end of a tile's k-loop: its last MMAs done, its last slot released
        acc = ac.wgmma_wait_group(0, acc)
        if MT == 2:
            acc1 = ac.wgmma_wait_group(0, acc1)
        if leader:
            ac.pipeline.consumer_release(pipe, prev)
        return acc, acc1

    @dev
    def consume(pipe, st, sm, sb, j, acc, acc1, steps, leader):
        # one tile's k-loop of a consumer warpgroup whose MMA tiles are
        # j (and j + 1) of the A ring viewed as 64-row MMA tiles (sm),
        # ending with its MMAs done and its last slot released.  (kstep's
        # body, written out: the loop through kstep compiles to other PTX,
        # and this one is the kernel the benchmark's plain rows time.)
        prev = st
        for t in range(steps):
            ac.pipeline.consumer_wait(pipe, st)
            acc = ac.wgmma_fence(acc)
            if MT == 2:
                acc1 = ac.wgmma_fence(acc1)
            for kk in range(bc // 16):
                fd = ac.wgmma_descriptor(sb[st.slot, :, 0, 16 * kk:16 * kk + 16], swizzle=swz)
                acc = ac.wgmma_mma_async(
                    acc, ac.wgmma_descriptor(sm[st.slot, j, :, 16 * kk:16 * kk + 16], swizzle=swz),
                    fd, dtype=dtype, scale_d=(t > 0) or (kk > 0))
                if MT == 2:
                    acc1 = ac.wgmma_mma_async(
                        acc1,
                        ac.wgmma_descriptor(sm[st.slot, j + 1, :, 16 * kk:16 * kk + 16], swizzle=swz),
                        fd, dtype=dtype, scale_d=(t > 0) or (kk > 0))
            ac.wgmma_commit_group()
            # the MMAs of step t - 1 are done: free their slot
            acc = ac.wgmma_wait_group(1, acc)
            if MT == 2:
                acc1 = ac.wgmma_wait_group(1, acc1)
            if t > 0 and leader:
                ac.pipeline.consumer_release(pipe, prev)
            prev = st
            st = ac.pipeline.advance(pipe, st)
        acc, acc1 = finish(pipe, prev, acc, acc1, leader)
        return st, acc, acc1


    @dev
    def consume_unrolled(pipe, st, sm, sb, j, acc, acc1, steps, leader):
        # one tile's k-loop, unrolled by two (an odd last step after)
        # (the pair count and the step index 32-bit: steps >= 0)
        prev = st
        for t2 in range(np.int32(np.uint32(steps) >> np.uint32(1))):
            t = np.int32(t2 + t2)
            st, prev, acc, acc1 = kstep(pipe, st, prev, sm, sb, j, acc, acc1, t, leader)
            st, prev, acc, acc1 = kstep(pipe, st, prev, sm, sb, j, acc, acc1, np.int32(t + 1),
                                        leader)
        if np.uint32(steps) & np.uint32(1):
            st, prev, acc, acc1 = kstep(pipe, st, prev, sm, sb, j, acc, acc1, np.int32(steps - 1),
                                        leader)
        acc, acc1 = finish(pipe, prev, acc, acc1, leader)
        return st, acc, acc1

    # the k-loop the kernel runs (a name bound once: the callers below are the same either way)
    k_loop = consume if unroll == 1 else consume_unrolled

    @dev
    def store(acc, acc1, out_, m, k0):
        ac.wgmma_store(acc, out_, m, k0, dtype=out)
        if MT == 2:
            ac.wgmma_store(acc1, out_, m + 64, k0, dtype=out)

    # a consumer warpgroup's whole part: its MMA tiles' index j is a constant
    # in each of the two inlined copies (kernels below), so its A
    # descriptors are, like the filters', a uniform function of the slot
    @dev
    def one_tile(pipe, sm, sb, out_, j, m0, k0, steps, leader):
        st = ac.pipeline.consumer_start(pipe)
        _, acc, acc1 = k_loop(pipe, st, sm, sb, j, ac.wgmma_zero(bn), ac.wgmma_zero(N1), steps,
                               leader)
        store(acc, acc1, out_, m0 + TC_BM * j, k0)

    @dev
    def walk(pipe, sm, sb, out_, j, ntiles, ntn, steps, leader):
        acc = ac.wgmma_zero(bn)
        acc1 = ac.wgmma_zero(N1)
        st = ac.pipeline.consumer_start(pipe)
        for tile in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
            mi = np.uint32(tile) // ntn
            k0 = (np.uint32(tile) - mi * ntn) * bn
            st, acc, acc1 = k_loop(pipe, st, sm, sb, j, acc, acc1, steps, leader)
            # (persistent: the producer is already filling the next tile's slots)
            store(acc, acc1, out_, mi * BMT + TC_BM * j, k0)

    def conv(xmap, wmap, out_, N, P, Q, C):
        dyn = cuda.shared.array(0, storage, alignment=1024)
        sa = _carve(dyn, 0, (stages, BMT, bc))
        sb = _carve(dyn, a_elems, (stages, bn, 1, bc))
        sm = _carve(dyn, 0, (stages, MTILES, TC_BM, bc))  # sa as the MMAs' 64-row tiles
        bars = cuda.shared.array((2, stages), np.uint64)
        pipe = ac.pipeline.tma_pipeline(bars, stages, consumers=consumers, copies=2)
        ac.pipeline.init(pipe)
        tid = cuda.threadIdx.x
        wg = tid // 128
        chunks = np.int32((C + bc - 1) // bc)
        steps = np.int32(TAPS * chunks)
        m0 = np.uint32(cuda.blockIdx.x * BMT)
        k0 = cuda.blockIdx.y * bn
        if wg == 0:
            ac.setmaxnreg_dec(PROD)
            if tid < 32:
                if ac.elect_sync():
                    img, h0, w0 = origin(m0, np.uint32(P * Q), np.uint32(Q))
                    ac.fence_proxy_tensormap(xmap)
                    ac.fence_proxy_tensormap(wmap)
                    ps = ac.pipeline.producer_start(pipe)
                    produce(pipe, ps, sa, sb, xmap, wmap, img, h0, w0, k0, chunks)
        else:
            ac.setmaxnreg_inc(CONS)
            leader = (tid % 128) == 0
            if consumers == 1 or wg == 1:
                one_tile(pipe, sm, sb, out_, np.uint32(0), m0, k0, steps, leader)
            else:
                one_tile(pipe, sm, sb, out_, np.uint32(MT), m0, k0, steps, leader)

    def conv_tiles(xmap, wmap, out_, N, P, Q, C):
        dyn = cuda.shared.array(0, storage, alignment=1024)
        sa = _carve(dyn, 0, (stages, BMT, bc))
        sb = _carve(dyn, a_elems, (stages, bn, 1, bc))
        sm = _carve(dyn, 0, (stages, MTILES, TC_BM, bc))  # sa as the MMAs' 64-row tiles
        bars = cuda.shared.array((2, stages), np.uint64)
        pipe = ac.pipeline.tma_pipeline(bars, stages, consumers=consumers, copies=2)
        ac.pipeline.init(pipe)
        tid = cuda.threadIdx.x
        wg = tid // 128
        # loop counts and tile arithmetic in 32 bits (a tile's first pixel and
        # the tile count are below 2**31): no 64-bit division or counter
        chunks = np.int32((C + bc - 1) // bc)
        steps = np.int32(TAPS * chunks)
        ntn = np.uint32((out_.shape[1] + bn - 1) // bn)
        ntiles = np.int32(((out_.shape[0] + BMT - 1) // BMT) * ntn)
        pq = np.uint32(P * Q)
        q32 = np.uint32(Q)
        if wg == 0:
            ac.setmaxnreg_dec(PROD)
            if tid < 32:
                if ac.elect_sync():
                    ac.fence_proxy_tensormap(xmap)
                    ac.fence_proxy_tensormap(wmap)
                    ps = ac.pipeline.producer_start(pipe)
                    for tile in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
                        mi = np.uint32(tile) // ntn
                        k0 = (np.uint32(tile) - mi * ntn) * bn
                        img, h0, w0 = origin(np.uint32(mi * BMT), pq, q32)
                        ps = produce(pipe, ps, sa, sb, xmap, wmap, img, h0, w0, k0, chunks)
        else:
            ac.setmaxnreg_inc(CONS)
            leader = (tid % 128) == 0
            if consumers == 1 or wg == 1:
                walk(pipe, sm, sb, out_, np.uint32(0), ntiles, ntn, steps, leader)
            else:
                walk(pipe, sm, sb, out_, np.uint32(MT), ntiles, ntn, steps, leader)

    jit = cuda.jit if ac.sim.ENABLED else cuda.jit(launch_bounds=(threads, ctas))
    fn = conv_tiles if (MT == 2 or persistent) else conv
    return ConvTC(jit(fn), R, S, bn, bc, stages, consumers, threads, smem, ctas, MT, persistent)


#: shared memory one SM gives its resident blocks (227 KB on sm_90), less
#: 1 KB a block for the barriers and the driver's reservation
SMEM_PER_SM = 227 * 1024 - 2048


def nreg_split(consumers: int, ctas: int) -> tuple[int, int]:
    """(producer, consumer) per-thread register limits for ``setmaxnreg``.
    The launch bounds ``(threads, ctas)`` cap the launch's count at ``cap``
    (65536 registers shared by the resident threads, in steps of 8); the
    producer warpgroup gives registers back (40, or 24 with two blocks a
    SM) and the consumers take what that frees, at most 232: the block's
    total never exceeds what it was launched with (else ``setmaxnreg.inc``
    would wait for ever)."""
    threads = 128 * (1 + consumers)
    cap = min(248, 65536 // (threads * ctas) // 8 * 8)
    prod = 40 if ctas == 1 else 24
    cons = min(232, (cap * threads - prod * 128) // (128 * consumers) // 8 * 8)
    return prod, cons


@dataclass(frozen=True)
class ConvTC:
    """A compiled-on-first-launch tensor-core conv2d kernel and its tiles."""

    kernel: Any
    R: int
    S: int
    bn: int
    bc: int
    stages: int
    consumers: int
    threads: int
    smem: int
    ctas: int = 1
    mtiles: int = 1
    persistent: bool = False

    @property
    def tiled(self) -> bool:
        """The one-dimensional tile-walking kernel (``mtiles=2`` or persistent)."""
        return self.mtiles == 2 or self.persistent

    @property
    def bm(self) -> int:
        """Output pixels of one block's tile."""
        return TC_BM * self.consumers * self.mtiles


def maps_tc(x, w3d, conv: ConvTC, stride, padding, dilation):
    """(im2col map of ``x`` NHWC, boxes ``(64 * consumers * mtiles, bc)``; tiled map
    of the filters viewed as ``(K, R * S, C)``, boxes ``(bn, 1, bc)``), both
    swizzled ``2 * bc`` bytes, for :func:`make_conv2d_tc`'s kernel."""
    lo, up = ac.conv_corners((conv.R, conv.S), padding, dilation)
    xmap = ac.TensorMap.im2col(x, channels_per_pixel=conv.bc, pixels_per_column=conv.bm,
                               lower_corner=lo, upper_corner=up,
                               element_strides=(1, stride[0], stride[1], 1), swizzle=2 * conv.bc)
    wmap = ac.TensorMap(w3d, (conv.bn, 1, conv.bc), swizzle=2 * conv.bc)
    return xmap, wmap


def grid_tc(conv: ConvTC, M: int, K: int, sms: int | None = None) -> tuple[int, ...]:
    """The launch grid of a :func:`make_conv2d_tc` kernel for ``M`` output
    pixels and ``K`` output channels: ``(pixel tiles, channel tiles)``; a
    tile-walking kernel's one dimension: a block a tile, or for a
    persistent one ``ctas`` blocks a multiprocessor (``sms``, default the
    device's), at most one a tile."""
    tm, tn = -(-M // conv.bm), -(-K // conv.bn)
    if not conv.tiled:
        return (tm, tn)
    if not conv.persistent:
        return (tm * tn,)
    from .hgemm import _sms

    return (max(1, min(tm * tn, conv.ctas * (_sms() if sms is None else sms))),)


def run_tc(conv: ConvTC, xmap, wmap, y2d, N: int, P: int, Q: int, C: int, stream: Any = 0,
           blocks: int | None = None) -> None:
    """Launch a kernel of :func:`make_conv2d_tc`: ``y2d`` is the output
    viewed as ``(N * P * Q, K)``.  ``blocks``: a persistent kernel's grid
    (default :func:`grid_tc`'s: ``ctas`` blocks a multiprocessor)."""
    if blocks is not None and (not conv.persistent or int(blocks) < 1):
        raise ValueError(f"blocks={blocks!r}: only a persistent kernel takes a block count, at "
                         "least 1")
    grid = grid_tc(conv, N * P * Q, y2d.shape[1]) if blocks is None else (int(blocks),)
    ac.launch(conv.kernel, grid, conv.threads, (xmap, wmap, y2d, N, P, Q, C), shared_mem=conv.smem,
              stream=stream)


def bind_tc(conv: ConvTC, xmap, wmap, y2d, N: int, P: int, Q: int, C: int, stream: Any = 0,
            blocks: int | None = None) -> Callable[[], None]:
    """A launcher of :func:`run_tc`'s launch whose grid and argument tuple
    are worked out once: each call is ``ac.launch``'s prepared path alone
    (a few microseconds of host time), so back-to-back launches of a layer
    that runs for about as long as :func:`run_tc`'s host work keep the GPU
    busy.  Keep using the same maps and output.

    Example::

        kern = cv.make_conv2d_tc(3, 3, bn=64, consumers=2, ctas=2, persistent=True)
        xmap, wmap = cv.maps_tc(x, w.reshape(K, 9, C), kern, (1, 1), (1, 1), (1, 1))
        go = cv.bind_tc(kern, xmap.device, wmap.device, y2d, N, P, Q, C)
        for _ in range(10):
            go()
    """
    if blocks is not None and (not conv.persistent or int(blocks) < 1):
        raise ValueError(f"blocks={blocks!r}: only a persistent kernel takes a block count, at "
                         "least 1")
    grid = grid_tc(conv, N * P * Q, y2d.shape[1]) if blocks is None else (int(blocks),)
    kernel, threads, smem = conv.kernel, conv.threads, conv.smem
    args = (xmap, wmap, y2d, N, P, Q, C)

    def launch() -> None:
        ac.launch(kernel, grid, threads, args, shared_mem=smem, stream=stream)

    launch.grid = grid  # type: ignore[attr-defined]
    return launch


def tc_config(M: int, K: int, sms: int = 132) -> tuple[int, int, int, int]:
    """The tile configuration ``(bn, consumers, stages, ctas)`` for ``M``
    output pixels and ``K`` output channels, from the H200 sweep of the
    benchmark (docs/im2col.md): ``K <= 64``: 128 x 64 tiles, two blocks a
    SM; otherwise 128 x 128 tiles while they fill every SM, then 64 x 128
    tiles two blocks a SM, then 64 x 64 (the fewer the pixels, the more
    blocks the smaller tiles give).  :func:`conv2d_tc` runs them on a
    persistent grid, which beat or tied the block-a-tile grid of the same
    tiles on every layer of the sweep (up to 1.23x at batch 128)."""
    if K <= 64:
        return (-(-K // 16) * 16, 2, 4, 2)
    if -(-M // 128) * -(-K // 128) >= sms:
        return (128, 2, 4, 1)
    if -(-M // 64) * -(-K // 128) >= sms:
        return (128, 1, 3, 2)
    return (64, 1, 4, 2)


def conv2d_tc(x, w, stride=(1, 1), padding=(0, 0), dilation=(1, 1), dtype: str = "bf16",
              out: str = "float32", bn: int | None = None, stages: int | None = None,
              consumers: int | None = None, ctas: int | None = None, mtiles: int = 1,
              persistent: bool | None = None, blocks: int | None = None, unroll: int = 1):
    """Convolve device arrays ``x`` (NHWC) and ``w`` (KRSC) on the tensor
    cores: bf16 (uint16 bits, ``dtype="bf16"``) or float16 inputs, fp32
    accumulation; returns the NPQK output (float32, or bf16 bits / float16
    for ``out="bf16"`` / ``"float16"``) as a device array.  ``C`` and ``K``
    must be multiples of 8 (16-byte rows for TMA).  With none of ``bn``,
    ``stages``, ``consumers``, ``ctas`` given, :func:`tc_config` picks them
    and the grid is persistent (``persistent=None``: persistent exactly
    then); otherwise the missing ones are ``bn`` = K rounded up to 16 (at
    most 256), 4 stages, 2 consumers, 1 block a SM.  ``mtiles``,
    ``persistent``, ``unroll`` and ``blocks`` (a persistent grid's size) as
    :func:`make_conv2d_tc` and :func:`run_tc` say.

    Example::

        xb = cuda.to_device(ac.bf16_array(x)); wb = cuda.to_device(ac.bf16_array(w))
        y = cv.conv2d_tc(xb, wb, stride=(1, 1), padding=(1, 1))   # float32 NPQK
    """
    N, H, W, C = x.shape
    K, R, S, C2 = w.shape
    if C2 != C:
        raise ValueError(f"the filters have {C2} channels, the input {C}")
    if K % 8:
        raise ValueError(f"K={K} must be a multiple of 8 (TMA needs 16-byte filter rows)")
    stride, padding, dilation = tuple(stride), tuple(padding), tuple(dilation)
    P, Q = out_shape(H, W, R, S, stride, padding, dilation)
    if bn is stages is consumers is ctas is None:
        bn, consumers, stages, ctas = tc_config(N * P * Q, K)
        persistent = True if persistent is None else persistent
    persistent = False if persistent is None else persistent
    bn = min(256, -(-K // 16) * 16) if bn is None else bn
    stages = 4 if stages is None else stages
    consumers = 2 if consumers is None else consumers
    ctas = 1 if ctas is None else ctas
    kern = make_conv2d_tc(R, S, stride, dilation, padding, bn=bn, bc=tc_channels(C), stages=stages,
                          consumers=consumers, dtype=dtype, out=out, ctas=ctas, mtiles=mtiles,
                          persistent=persistent, unroll=unroll)
    xmap, wmap = maps_tc(x, w.reshape(K, R * S, C), kern, stride, padding, dilation)
    odt = {"float32": np.float32, "bf16": np.uint16, "float16": np.float16}[out]
    y = cuda.device_array((N * P * Q, K), odt)
    run_tc(kern, xmap, wmap, y, N, P, Q, C, blocks=blocks)
    return y.reshape(N, P, Q, K)


def flops(N: int, P: int, Q: int, K: int, R: int, S: int, C: int) -> int:
    return 2 * N * P * Q * K * R * S * C
