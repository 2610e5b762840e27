"""HGEMM the Ampere way: ``C = A @ B`` with bf16 or fp16 inputs and float32
accumulation on the tensor cores (cp.async multi-stage + ldmatrix + mma.sync).

Runs on sm_80 and newer (A100, L4, RTX 30xx/40xx, and Hopper, where
mma.sync runs at a fraction of wgmma's rate).

Layout: ``A`` is (M, K), ``B`` is (K, N), ``C`` is (M, N), all row-major.
bf16 matrices are ``uint16`` arrays of bf16 bits (the package's bf16
representation: a torch ``bfloat16`` tensor passed to ``ac.launch`` arrives
as one); fp16 ones are ``float16``.  ``C`` is float32, float16 or bf16
(uint16): :func:`ac.mma_store` converts.

Tiling: a block of 128 threads (4 warps, 2 x 2) computes a 128 x 128 tile of
C, walking K in steps of 16; each warp holds a 64 x 64 accumulator as 4 x 8
m16n8 fragments in registers.  Every k-tile is one 16-byte cp.async chunk
per thread and operand twice over, into ``stages`` shared buffers on
``ac.pipeline.group_pipeline(stages, shared=True)``.  The shared rows are
padded by 8 halves so that the 8 row addresses of each ldmatrix hit 8
different 16-byte bank groups.

Edges: M is arbitrary; N and K must be multiples of 8 (a 16-byte chunk of a
row is the copy unit).  Chunks past M, N or K are zero-filled
(``src_size=0``) and :func:`ac.mma_store` skips elements outside C.

Example::

    from numba import cuda
    from numba_asynccopy.examples.hgemm_sm80 import BLOCK, grid, make_hgemm, signature

    gemm = cuda.jit(signature("bf16"))(make_hgemm("bf16"))
    gemm[grid(M, N), BLOCK](A, B, C)          # A, B: uint16 bf16 bits, C: float32
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, types

import numba_asynccopy as ac

BM = 128
BN = 128
BK = 16
BLOCK = 128
WM = 64          # warp tile
WN = 64
MT = WM // 16    # m16 fragments per warp
NT = WN // 8     # n8 fragments per warp
PAD = 8          # halves of padding per shared row (bank-conflict-free ldmatrix)
PA = BK + PAD
PB = BN + PAD
DTYPES = ("bf16", "f16")


@lru_cache(maxsize=None)
def make_hgemm(dtype: str = "bf16", stages: int = 4):
    """Python function ``hgemm(A, B, C)`` for ``dtype`` inputs ("bf16" or
    "f16"); compile with ``cuda.jit(signature(dtype))``, launch
    ``[grid(M, N), BLOCK]``.  ``stages`` shared buffers (2..4)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if not 2 <= stages <= 4:
        raise ValueError("stages must be 2, 3 or 4 (static shared memory: 48 KB)")
    elem = np.uint16 if dtype == "bf16" else np.float16
    DT = dtype

    def load_tile(A, B, sa, sb, slot, kt, tid, m0, n0):
        M, K = A.shape
        N = B.shape[1]
        k0 = kt * BK
        for i in range(2):
            # A: BM rows x 2 chunks; B: BK rows x 16 chunks; 256 chunks each
            q = tid + BLOCK * i
            ra, ca = q // 2, (q % 2) * 8
            gr, gc = m0 + ra, k0 + ca
            oka = gr < M and gc < K
            src = ac.chunk_view(A, (gr if oka else 0, gc if oka else 0), 8)
            ac.cp_async(ac.chunk_view(sa, (slot, ra, ca), 8), src, 16, src_size=16 if oka else 0)
            rb, cb = q // 16, (q % 16) * 8
            gr, gc = k0 + rb, n0 + cb
            okb = gr < K and gc < N
            src = ac.chunk_view(B, (gr if okb else 0, gc if okb else 0), 8)
            ac.cp_async(ac.chunk_view(sb, (slot, rb, cb), 8), src, 16, src_size=16 if okb else 0)

    load_tile = cuda.jit(device=True, inline="always")(load_tile)

    def multiply(sa, sb, acc, wm, wn):
        # one k16 step of the warp's 64 x 64 tile: 4 A and 8 B fragments, 32 MMAs
        af = cuda.local.array((MT, 4), np.uint32)
        bf = cuda.local.array((NT, 2), np.uint32)
        for mt in range(MT):
            a = ac.mma_load_a(sa, wm + 16 * mt, 0)
            af[mt, 0], af[mt, 1], af[mt, 2], af[mt, 3] = a
        for nt in range(NT):
            b = ac.mma_load_b(sb, 0, wn + 8 * nt)
            bf[nt, 0], bf[nt, 1] = b
        for mt in range(MT):
            for nt in range(NT):
                d = ac.mma_sync((af[mt, 0], af[mt, 1], af[mt, 2], af[mt, 3]),
                                (bf[nt, 0], bf[nt, 1]),
                                (acc[mt, nt, 0], acc[mt, nt, 1], acc[mt, nt, 2], acc[mt, nt, 3]),
                                DT)
                acc[mt, nt, 0], acc[mt, nt, 1], acc[mt, nt, 2], acc[mt, nt, 3] = d

    multiply = cuda.jit(device=True, inline="always")(multiply)

    def hgemm(A, B, C):
        sa = cuda.shared.array((stages, BM, PA), elem, alignment=128)
        sb = cuda.shared.array((stages, BK, PB), elem, alignment=128)
        tid = cuda.threadIdx.x
        warp = tid // 32
        wm = (warp // 2) * WM
        wn = (warp % 2) * WN
        m0 = cuda.blockIdx.y * BM
        n0 = cuda.blockIdx.x * BN
        ktiles = (A.shape[1] + BK - 1) // BK
        acc = cuda.local.array((MT, NT, 4), np.float32)
        for mt in range(MT):
            for nt in range(NT):
                for e in range(4):
                    acc[mt, nt, e] = 0.0
        pipe = ac.pipeline.group_pipeline(stages, True)
        ps = ac.pipeline.producer_start(pipe)
        cs = ac.pipeline.consumer_start(pipe)
        for s in range(stages - 1):  # prologue: stages - 1 k-tiles in flight
            ac.pipeline.producer_acquire(pipe, ps)
            if s < ktiles:
                load_tile(A, B, sa, sb, ps.slot, s, tid, m0, n0)
            ac.pipeline.producer_commit(pipe, ps)
            ps = ac.pipeline.advance(pipe, ps)
        for kt in range(ktiles):
            # k-tile kt landed for everyone, and k-tile kt-1's slot is free
            ac.pipeline.consumer_wait(pipe, cs)
            ac.pipeline.producer_acquire(pipe, ps)
            if kt + stages - 1 < ktiles:
                load_tile(A, B, sa, sb, ps.slot, kt + stages - 1, tid, m0, n0)
            ac.pipeline.producer_commit(pipe, ps)
            ps = ac.pipeline.advance(pipe, ps)
            multiply(sa[cs.slot], sb[cs.slot], acc, wm, wn)
            ac.pipeline.consumer_release(pipe, cs)
            cs = ac.pipeline.advance(pipe, cs)
        ac.pipeline.producer_tail(pipe, ps)
        for mt in range(MT):
            for nt in range(NT):
                ac.mma_store(C, m0 + wm + 16 * mt, n0 + wn + 8 * nt,
                             (acc[mt, nt, 0], acc[mt, nt, 1], acc[mt, nt, 2], acc[mt, nt, 3]))

    return hgemm


def signature(dtype: str = "bf16", out: str = "float32") -> tuple:
    """The Numba signature of ``make_hgemm(dtype)``: A, B of ``dtype``
    (uint16 bits for bf16), C of ``out`` ("float32", "float16" or "bf16")."""
    elem = types.uint16 if dtype == "bf16" else types.float16
    c = {"float32": types.float32, "float16": types.float16, "bf16": types.uint16}[out]
    return (elem[:, ::1], elem[:, ::1], c[:, ::1])


def grid(M: int, N: int) -> tuple[int, int]:
    """Launch grid (x over N, y over M)."""
    return ((N + BN - 1) // BN, (M + BM - 1) // BM)


def check_shape(M: int, N: int, K: int) -> None:
    """Raise ValueError unless the kernel can compute (M, N, K)."""
    if min(M, N, K) <= 0 or N % 8 or K % 8:
        raise ValueError(f"hgemm_sm80 needs N and K multiples of 8 (16-byte rows); "
                         f"got M={M}, N={N}, K={K}")


def flops(M: int, N: int, K: int) -> int:
    return 2 * M * N * K
