"""SGEMM (float32, SIMT): ``C = A @ B``, tiled, with synchronous shared-memory
loads or with a cp.async multi-stage pipeline.

Layout: ``AT`` is A transposed, shape (K, M), row-major (that is, A in
column-major order); ``B`` is (K, N) and ``C`` is (M, N), row-major.  With A
stored k-major, a 16-byte cp.async chunk of a row of ``AT`` lands in shared
memory already in the layout the inner product reads (a cp.async cannot
transpose), so both variants keep the same shared layout and differ only in
how tiles arrive.  The cuBLAS peer computes ``AT.T @ B`` from the same memory.

Tiling: a block of 256 threads computes a 128x128 tile of C, walking K in
steps of 8; each thread holds an 8x8 accumulator in registers (rows
``4*ty + i`` and ``64 + 4*ty + i``, columns ``4*tx + j`` and ``64 + 4*tx + j``,
``ty, tx = tid // 16, tid % 16``) so its shared reads are 16-byte vectors
without bank conflicts.  Each k-tile is one 16-byte chunk of A and one of B
per thread.

- ``make_sgemm(stages=1)``: synchronous: load the k-tile into registers,
  store it to shared memory, barrier, multiply, barrier.
- ``make_sgemm(stages>=2)``: ``stages`` shared buffers, ``stages - 1`` k-tiles
  in flight with cp.async, on ``ac.pipeline.group_pipeline(stages,
  shared=True)``: its ``consumer_wait`` (``wait_group(stages - 2)`` and one
  block barrier per k-tile) both publishes the tile about to be used and
  frees the buffer the next copy overwrites; the slots come from the
  pipeline's states, no index arithmetic in the kernel.

The same kernel with the ring written by hand is
:mod:`numba_asynccopy.examples.sgemm_manual` (the benchmark compares them).

Requires M and N multiples of 128 and K a multiple of 8 (see :func:`check_shape`).

Example::

    from numba import cuda
    from numba_asynccopy.examples.sgemm import SIGNATURE, BLOCK, grid, make_sgemm

    gemm = cuda.jit(SIGNATURE)(make_sgemm(stages=3))
    gemm[grid(M, N), BLOCK](AT, B, C)
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, types

import numba_asynccopy as ac
from numba_asynccopy import load4, store4

BM = 128
BN = 128
BK = 8
BLOCK = 256
QM = BM // 4     # 16-byte chunks in a row of a tile
QN = BN // 4
HALF = 16        # chunk index of column 64 in a tile row


@lru_cache(maxsize=None)
def make_sgemm(stages: int = 3):
    """Python function ``sgemm(AT, B, C)`` (compile with ``cuda.jit(SIGNATURE,
    **JIT_OPTIONS)``, launch ``[grid(M, N), BLOCK]``).  ``stages=1``:
    synchronous loads; ``stages >= 2``: a cp.async pipeline with that many
    shared buffers (``ac.pipeline.group_pipeline``)."""
    if stages < 1:
        raise ValueError("stages must be >= 1")
    nbuf = stages
    from .._rules import STATIC_SHARED_LIMIT  # 48 KB, defined once

    if 2 * nbuf * BK * BM * 4 > STATIC_SHARED_LIMIT:
        raise ValueError(f"stages={stages} needs more than 48 KB of static shared memory")

    def k_step(As, Bs, slot, k, acc, ty, tx):
        # one rank-1 update: 4 x LDS.128, 64 FFMA
        a = cuda.local.array(8, np.float32)
        b = cuda.local.array(8, np.float32)
        a[0], a[1], a[2], a[3] = load4(As, (slot, k, ty, 0))
        a[4], a[5], a[6], a[7] = load4(As, (slot, k, HALF + ty, 0))
        b[0], b[1], b[2], b[3] = load4(Bs, (slot, k, tx, 0))
        b[4], b[5], b[6], b[7] = load4(Bs, (slot, k, HALF + tx, 0))
        for i in range(8):
            for j in range(8):
                acc[i, j] += a[i] * b[j]

    k_step = cuda.jit(device=True, inline="always")(k_step)

    def multiply(As, Bs, slot, acc, ty, tx):
        # the eight k steps written out: one basic block, so ptxas can load
        # the next step's fragments while this step's FFMAs run (NVVM does
        # not unroll a loop of this size by itself)
        k_step(As, Bs, slot, 0, acc, ty, tx)
        k_step(As, Bs, slot, 1, acc, ty, tx)
        k_step(As, Bs, slot, 2, acc, ty, tx)
        k_step(As, Bs, slot, 3, acc, ty, tx)
        k_step(As, Bs, slot, 4, acc, ty, tx)
        k_step(As, Bs, slot, 5, acc, ty, tx)
        k_step(As, Bs, slot, 6, acc, ty, tx)
        k_step(As, Bs, slot, 7, acc, ty, tx)

    multiply = cuda.jit(device=True, inline="always")(multiply)

    def sgemm(AT, B, C):
        # tiles as (buffer, k, 16-byte chunk, 4): a chunk is a whole last
        # axis, so each cp.async below is one instruction (its chunk count is
        # a compile-time 1) and each fragment read one ld.shared.v4
        As = cuda.shared.array((nbuf, BK, QM, 4), np.float32, alignment=16)
        Bs = cuda.shared.array((nbuf, BK, QN, 4), np.float32, alignment=16)
        tid = cuda.threadIdx.x
        ty = tid // 16
        tx = tid % 16
        lr = tid // 32          # the k row of the thread's chunk
        lq = tid % 32           # its chunk in that row
        lc = 4 * lq             # its first column
        m0 = cuda.blockIdx.y * BM
        n0 = cuda.blockIdx.x * BN
        ktiles = AT.shape[0] // BK
        acc = cuda.local.array((8, 8), np.float32)
        for i in range(8):
            for j in range(8):
                acc[i, j] = 0.0
        if stages == 1:
            for kt in range(ktiles):
                k = kt * BK + lr
                store4(As, (0, lr, lq, 0), load4(AT, (k, m0 + lc)))
                store4(Bs, (0, lr, lq, 0), load4(B, (k, n0 + lc)))
                cuda.syncthreads()
                multiply(As, Bs, 0, acc, ty, tx)
                cuda.syncthreads()
        else:
            # the thread's source columns, once: k-tile t is row t * BK of
            # these views (an unsigned row index: no negative-index wraparound)
            a_src = AT[lr:, m0 + lc:m0 + lc + 4]
            b_src = B[lr:, n0 + lc:n0 + lc + 4]
            pipe = ac.pipeline.group_pipeline(stages, True)
            ps = ac.pipeline.producer_start(pipe)
            cs = ac.pipeline.consumer_start(pipe)
            # prologue: stages - 1 k-tiles in flight (every stage committed,
            # empty ones too: the wait counts groups)
            for s in range(stages - 1):
                ac.pipeline.producer_acquire(pipe, ps)
                if s < ktiles:
                    row = np.uint32(s * BK)
                    ac.cp_async(As[ps.slot, lr, lq, :], a_src[row, :], 16)
                    ac.cp_async(Bs[ps.slot, lr, lq, :], b_src[row, :], 16)
                ac.pipeline.producer_commit(pipe, ps)
                ps = ac.pipeline.advance(pipe, ps)
            # 32-bit unsigned loop counter (Numba's int64 would make register
            # pairs and 64-bit row multiplies); the slots are the pipeline's
            last = np.uint32(stages - 1)
            nkt = np.uint32(ktiles)
            kt = np.uint32(0)
            while kt < nkt:
                # k-tile kt landed for everyone, and k-tile kt-1's slot is free
                ac.pipeline.consumer_wait(pipe, cs)
                ac.pipeline.producer_acquire(pipe, ps)
                nk = np.uint32(kt + last)
                if nk < nkt:
                    row = np.uint32(nk * np.uint32(BK))
                    ac.cp_async(As[ps.slot, lr, lq, :], a_src[row, :], 16)
                    ac.cp_async(Bs[ps.slot, lr, lq, :], b_src[row, :], 16)
                ac.pipeline.producer_commit(pipe, ps)
                ps = ac.pipeline.advance(pipe, ps)
                multiply(As, Bs, cs.slot, acc, ty, tx)
                ac.pipeline.consumer_release(pipe, cs)
                cs = ac.pipeline.advance(pipe, cs)
                kt = np.uint32(kt + np.uint32(1))
            ac.pipeline.producer_tail(pipe, ps)
        for h in range(2):
            for i in range(4):
                r = m0 + 64 * h + 4 * ty + i
                ii = 4 * h + i
                store4(C, (r, n0 + 4 * tx), (acc[ii, 0], acc[ii, 1], acc[ii, 2], acc[ii, 3]))
                store4(C, (r, n0 + 64 + 4 * tx), (acc[ii, 4], acc[ii, 5], acc[ii, 6], acc[ii, 7]))

    return sgemm


SIGNATURE = (types.float32[:, ::1], types.float32[:, ::1], types.float32[:, ::1])


def grid(M: int, N: int) -> tuple[int, int]:
    """Launch grid (x over N, y over M)."""
    return (N // BN, M // BM)


def check_shape(M: int, N: int, K: int) -> None:
    """Raise ValueError unless the kernel covers (M, N, K) exactly."""
    if M % BM or N % BN or K % BK or min(M, N, K) <= 0:
        raise ValueError(f"sgemm example needs M, N multiples of {BM}/{BN} and K of {BK}; "
                         f"got M={M}, N={N}, K={K}")
    if K >= 2**32:
        # the pipelined loop counts k rows in 32-bit unsigned
        raise ValueError(f"sgemm example needs K < 2**32; got K={K}")


def flops(M: int, N: int, K: int) -> int:
    return 2 * M * N * K
