"""SGEMM with the cp.async ring written by hand: the reference the pipelined
:mod:`~numba_asynccopy.examples.sgemm` is measured against (benchmark rows
"pipeline vs hand-written", CPU SASS-count tests).

Same layout, tiling, factory name and signature as
:mod:`numba_asynccopy.examples.sgemm`; only the ring differs: here the slot
indices are 32-bit counters kept by hand and ``wait_group(stages - 2)`` plus
one block barrier per k-tile are written out.

Example::

    from numba import cuda
    from numba_asynccopy.examples.sgemm import SIGNATURE, BLOCK, grid
    from numba_asynccopy.examples.sgemm_manual import make_sgemm

    gemm = cuda.jit(SIGNATURE)(make_sgemm(stages=3))
    gemm[grid(M, N), BLOCK](AT, B, C)
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy import load4, store4

from .sgemm import BK, BM, BN, BLOCK, HALF, QM, QN, SIGNATURE, check_shape, flops, grid  # noqa: F401

#: the factory, and the launch helpers of the pipelined module, re-exported
__all__ = ["BK", "BLOCK", "BM", "BN", "HALF", "QM", "QN", "SIGNATURE", "check_shape", "flops",
           "grid", "make_sgemm"]


@lru_cache(maxsize=None)
def make_sgemm(stages: int = 3):
    """Python function ``sgemm(AT, B, C)`` (compile with ``cuda.jit(SIGNATURE,
    **JIT_OPTIONS)``, launch ``[grid(M, N), BLOCK]``).  ``stages=1``:
    synchronous loads; ``stages >= 2``: a cp.async pipeline with that many
    shared buffers."""
    if stages < 1:
        raise ValueError("stages must be >= 1")
    nbuf = stages
    pending = max(stages - 2, 0)  # wait_group argument: a closure constant
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
            for s in range(stages - 1):
                if s < ktiles:
                    row = np.uint32(s * BK)
                    ac.cp_async(As[s, lr, lq, :], a_src[row, :], 16)
                    ac.cp_async(Bs[s, lr, lq, :], b_src[row, :], 16)
                ac.commit_group()
            # Loop counter and ring slots as 32-bit unsigned counters (no
            # modulo in the loop).  Numba's int64 made them register pairs
            # with carry adds and a 64-bit row multiply per copy: 24 more
            # instructions per k-tile than the C++ twin's ints (608 vs 584).
            u0 = np.uint32(0)
            u1 = np.uint32(1)
            last = np.uint32(stages - 1)
            nkt = np.uint32(ktiles)
            rslot = u0              # k-tile kt
            wslot = last            # k-tile kt + stages - 1
            kt = u0
            while kt < nkt:
                ac.wait_group(pending)  # this thread's copies of k-tile kt landed
                cuda.syncthreads()      # everyone's did, and k-tile kt-1 is done
                nk = np.uint32(kt + last)
                if nk < nkt:
                    row = np.uint32(nk * np.uint32(BK))
                    ac.cp_async(As[wslot, lr, lq, :], a_src[row, :], 16)
                    ac.cp_async(Bs[wslot, lr, lq, :], b_src[row, :], 16)
                ac.commit_group()
                multiply(As, Bs, rslot, acc, ty, tx)
                rslot = u0 if rslot == last else np.uint32(rslot + u1)
                wslot = u0 if wslot == last else np.uint32(wslot + u1)
                kt = np.uint32(kt + u1)
            ac.wait_all()
        for h in range(2):
            for i in range(4):
                r = m0 + 64 * h + 4 * ty + i
                ii = 4 * h + i
                store4(C, (r, n0 + 4 * tx), (acc[ii, 0], acc[ii, 1], acc[ii, 2], acc[ii, 3]))
                store4(C, (r, n0 + 64 + 4 * tx), (acc[ii, 4], acc[ii, 5], acc[ii, 6], acc[ii, 7]))

    return sgemm
