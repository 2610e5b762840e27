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
  in flight with cp.async; ``wait_group(stages - 2)`` retires the tile about
  to be used and one barrier per k-tile both publishes it and frees the buffer
  the next copy overwrites.

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

from ._vec import load4, store4

BM = 128
BN = 128
BK = 8
BLOCK = 256


@lru_cache(maxsize=None)
def make_sgemm(stages: int = 3):
    """Python function ``sgemm(AT, B, C)`` (compile with ``cuda.jit(SIGNATURE)``,
    launch ``[grid(M, N), BLOCK]``).  ``stages=1``: synchronous loads;
    ``stages >= 2``: a cp.async pipeline with that many shared buffers."""
    if stages < 1:
        raise ValueError("stages must be >= 1")
    nbuf = stages
    pending = max(stages - 2, 0)  # wait_group argument: a closure constant
    if 2 * nbuf * BK * BM * 4 > 48 * 1024:
        raise ValueError(f"stages={stages} needs more than 48 KB of static shared memory")

    def multiply(As, Bs, slot, acc, ty, tx):
        a = cuda.local.array(8, np.float32)
        b = cuda.local.array(8, np.float32)
        for k in range(BK):
            a[0], a[1], a[2], a[3] = load4(As, (slot, k, 4 * ty))
            a[4], a[5], a[6], a[7] = load4(As, (slot, k, 64 + 4 * ty))
            b[0], b[1], b[2], b[3] = load4(Bs, (slot, k, 4 * tx))
            b[4], b[5], b[6], b[7] = load4(Bs, (slot, k, 64 + 4 * tx))
            for i in range(8):
                for j in range(8):
                    acc[i, j] += a[i] * b[j]

    multiply = cuda.jit(device=True, inline="always")(multiply)

    def sgemm(AT, B, C):
        As = cuda.shared.array((nbuf, BK, BM), np.float32, alignment=16)
        Bs = cuda.shared.array((nbuf, BK, BN), np.float32, alignment=16)
        tid = cuda.threadIdx.x
        ty = tid // 16
        tx = tid % 16
        lr = tid // 32          # the k row of the thread's chunk
        lc = 4 * (tid % 32)     # its first column
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
                store4(As, (0, lr, lc), load4(AT, (k, m0 + lc)))
                store4(Bs, (0, lr, lc), load4(B, (k, n0 + lc)))
                cuda.syncthreads()
                multiply(As, Bs, 0, acc, ty, tx)
                cuda.syncthreads()
        else:
            for s in range(stages - 1):
                if s < ktiles:
                    k = s * BK + lr
                    ac.cp_async(As[s, lr, lc:lc + 4], AT[k, m0 + lc:m0 + lc + 4], 16)
                    ac.cp_async(Bs[s, lr, lc:lc + 4], B[k, n0 + lc:n0 + lc + 4], 16)
                ac.commit_group()
            for kt in range(ktiles):
                ac.wait_group(pending)  # this thread's copies of k-tile kt landed
                cuda.syncthreads()      # everyone's did, and k-tile kt-1 is done
                nk = kt + stages - 1
                if nk < ktiles:
                    s = nk % stages
                    k = nk * BK + lr
                    ac.cp_async(As[s, lr, lc:lc + 4], AT[k, m0 + lc:m0 + lc + 4], 16)
                    ac.cp_async(Bs[s, lr, lc:lc + 4], B[k, n0 + lc:n0 + lc + 4], 16)
                ac.commit_group()
                multiply(As, Bs, kt % stages, acc, ty, tx)
            ac.wait_all()
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


def flops(M: int, N: int, K: int) -> int:
    return 2 * M * N * K
