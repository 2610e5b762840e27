"""FP8 GEMM on Hopper tensor cores: ``C = scale_a * scale_b * (A @ Bt.T)``
with e4m3 (or e5m2) inputs, fp32 accumulation (``wgmma`` m64nNk32), fed by
a TMA pipeline (sm_90a); the per-tensor scales of ``torch._scaled_mm``.

Layout: fp8 MMAs read both operands K-major, so ``A`` is (M, K) and ``Bt``
is (N, K), both row-major, as the fp8 bits in uint8 arrays (a torch
``float8_e4m3fn`` tensor ``.view(torch.uint8)``; ``torch._scaled_mm(a, b)``
takes ``b = Bt.t()``).  ``C`` is (M, N) row-major, float32, bf16 (uint16
bits) or float16.

Tiling, like ``hgemm``: a block of 384 threads computes a 128 x ``bn``
tile of C, walking K in steps of ``BK`` = 128 (one 128-byte swizzle row of
fp8):

- warpgroup 0 is the producer (``setmaxnreg_dec(40)``); one elected lane
  issues, per k-tile, the TMA loads of the A tile (128 x 128 bytes) and of
  the Bt tile (``bn`` x 128 bytes), 128-byte swizzle, into a slot of an
  ``ac.pipeline.tma_pipeline``;
- warpgroups 1 and 2 consume (``setmaxnreg_inc(232)``), 64 rows each: per
  k-tile four ``m64n{bn}k32`` MMAs on descriptors of K slices of the slot,
  a commit, a wait for the previous k-tile's MMAs (``wgmma_wait_group(1)``)
  and the release of that k-tile's slot;
- the epilogue stores each fragment with ``ac.wgmma_store(...,
  scale=scale_a * scale_b)`` (masked at the edges, converted).

Edges: M and N need not be multiples of the tile, K need not be a multiple
of 128 (TMA zero-fills; zeros add nothing); K must be a multiple of 16
(16-byte rows for TMA).

Example::

    from numba_asynccopy.examples import fp8_gemm
    gemm = fp8_gemm.make_fp8_gemm(bn=128, out="float32")
    fp8_gemm.run(gemm, A, Bt, C, 0.5, 2.0)      # C = 0.5 * 2.0 * (A @ Bt.T)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np
from numba import cuda

import numba_asynccopy as ac

from ..sim.wgmma import _decode
from .hgemm import _bound, _carve  # the bound launch; a typed view of the dynamic shared array

BM = 128
BK = 128  # fp8 elements of one 128-byte swizzle row
KSTEP = 32  # K of one fp8 MMA
THREADS = 384
SWIZZLE = 128


@lru_cache(maxsize=None)
def make_fp8_gemm(bn: int = 128, stages: int = 4, dtype: str = "e4m3", out: str = "bf16"):
    """The kernel ``gemm(ta, tb, C, K, scale)`` (``ta``/``tb`` the maps of
    :func:`tensor_maps`); launch it with :func:`run`.  ``bn``: 64, 128, 192
    or 256; ``dtype``: ``"e4m3"`` or ``"e5m2"``; ``out``: ``"float32"``,
    ``"bf16"`` (uint16 bits) or ``"float16"``."""
    if bn not in (64, 128, 192, 256):
        raise ValueError(f"bn must be 64, 128, 192 or 256, got {bn}")
    if dtype not in ("e4m3", "e5m2"):
        raise ValueError(f"dtype must be 'e4m3' or 'e5m2', got {dtype!r}")
    if out not in ("float32", "bf16", "float16"):
        raise ValueError(f"out must be 'float32', 'bf16' or 'float16', got {out!r}")
    a_elems = stages * BM * BK

    def fp8_gemm(ta, tb, C, K, scale):
        dyn = cuda.shared.array(0, np.uint8, alignment=1024)
        sa = _carve(dyn, 0, (stages, BM, BK))
        sb = _carve(dyn, a_elems, (stages, bn, BK))
        bars = cuda.shared.array((2, stages), np.uint64)
        pipe = ac.pipeline.tma_pipeline(bars, stages, consumers=2, copies=2)
        ac.pipeline.init(pipe)
        tid = cuda.threadIdx.x
        wg = tid // 128
        m0 = cuda.blockIdx.y * BM
        n0 = cuda.blockIdx.x * bn
        ktiles = (K + BK - 1) // BK
        if wg == 0:
            ac.setmaxnreg_dec(40)
            if tid < 32:
                if ac.elect_sync():
                    ac.fence_proxy_tensormap(ta)
                    ac.fence_proxy_tensormap(tb)
                    st = ac.pipeline.producer_start(pipe)
                    for t in range(ktiles):
                        ac.pipeline.producer_acquire(pipe, st)
                        ac.pipeline.copy_tensor(pipe, st, sa[st.slot], ta, (m0, t * BK), fence=False)
                        ac.pipeline.copy_tensor(pipe, st, sb[st.slot], tb, (n0, t * BK), fence=False)
                        ac.pipeline.producer_commit(pipe, st)
                        st = ac.pipeline.advance(pipe, st)
        else:
            ac.setmaxnreg_inc(232)
            c = wg - 1
            leader = (tid % 128) == 0
            acc = ac.wgmma_zero(bn)
            st = ac.pipeline.consumer_start(pipe)
            prev = st
            for t in range(ktiles):
                ac.pipeline.consumer_wait(pipe, st)
                acc = ac.wgmma_fence(acc)
                for kk in range(BK // KSTEP):
                    acc = ac.wgmma_mma_async(
                        acc,
                        ac.wgmma_descriptor(sa[st.slot, 64 * c:64 * c + 64,
                                               KSTEP * kk:KSTEP * kk + KSTEP], swizzle=SWIZZLE),
                        ac.wgmma_descriptor(sb[st.slot, :, KSTEP * kk:KSTEP * kk + KSTEP],
                                            swizzle=SWIZZLE),
                        dtype=dtype, scale_d=(t > 0) or (kk > 0))
                ac.wgmma_commit_group()
                # the MMAs of k-tile t - 1 are done: free their slot
                acc = ac.wgmma_wait_group(1, acc)
                if t > 0 and leader:
                    ac.pipeline.consumer_release(pipe, prev)
                prev = st
                st = ac.pipeline.advance(pipe, st)
            acc = ac.wgmma_wait_group(0, acc)
            if leader:
                ac.pipeline.consumer_release(pipe, prev)
            ac.wgmma_store(acc, C, m0 + 64 * c, n0, dtype=out, scale=scale)

    # launch bounds give the kernel the register limit setmaxnreg needs
    jit = cuda.jit if ac.sim.ENABLED else cuda.jit(launch_bounds=(THREADS, 1))
    return Fp8Gemm(jit(fp8_gemm), bn, stages, shared_bytes(bn, stages))


@dataclass(frozen=True)
class Fp8Gemm:
    """A compiled-on-first-launch fp8 GEMM kernel and its tile parameters."""

    kernel: Any
    bn: int
    stages: int
    smem: int


def shared_bytes(bn: int, stages: int) -> int:
    """Dynamic shared memory of one block: the A and Bt slots (1 byte an element)."""
    return stages * (BM + bn) * BK


def tensor_maps(A: Any, Bt: Any, bn: int) -> tuple[Any, Any]:
    """The TMA maps of A (boxes of 128 x 128) and Bt (``bn`` x 128), 128-byte swizzle."""
    return (ac.TensorMap(A, (BM, BK), swizzle=SWIZZLE), ac.TensorMap(Bt, (bn, BK), swizzle=SWIZZLE))


def grid(M: int, N: int, bn: int) -> tuple[int, int]:
    return (-(-N // bn), -(-M // BM))


def check_shape(M: int, N: int, K: int, K2: int) -> None:
    if K2 != K:
        raise ValueError(f"fp8_gemm: A is (M, {K}) but Bt is (N, {K2}): Bt holds B transposed, "
                         "(N, K)")
    if min(M, N, K) <= 0 or K % 16:
        raise ValueError(f"fp8_gemm needs M, N, K > 0 and K a multiple of 16 (16-byte rows for "
                         f"TMA); got M={M}, N={N}, K={K}")


def run(gemm: Fp8Gemm, A: Any, Bt: Any, C: Any, scale_a: float = 1.0, scale_b: float = 1.0,
        maps: tuple | None = None, stream: Any = 0) -> None:
    """C = scale_a * scale_b * (A @ Bt.T) with a kernel of :func:`make_fp8_gemm`
    (device arrays or torch tensors of the fp8 bits)."""
    M, K = A.shape
    N, K2 = Bt.shape
    check_shape(M, N, K, K2)
    ta, tb = maps if maps is not None else tensor_maps(A, Bt, gemm.bn)
    ac.launch(gemm.kernel, grid(M, N, gemm.bn), THREADS,
              (ta, tb, C, K, np.float32(scale_a * scale_b)), shared_mem=gemm.smem, stream=stream)


def bind(gemm: Fp8Gemm, A: Any, Bt: Any, C: Any, scale_a: float = 1.0, scale_b: float = 1.0,
         maps: tuple | None = None, stream: Any = 0) -> Callable[[], None]:
    """A launcher of ``C = scale_a * scale_b * (A @ Bt.T)`` whose arguments
    are converted once, as ``hgemm.bind`` does: the arrays as Numba device
    arrays viewing the same memory (``ac.as_device_array``) and the tensor
    maps as their device buffers, so each call takes ``ac.launch``'s
    prepared path (microseconds of host time) instead of :func:`run`'s
    conversions of torch tensors and maps on every launch (about as long as
    a 4096^3 fp8 GEMM runs).  Keep using the same ``A``, ``Bt``, ``C``.

    Example::

        gemm = fp8_gemm.make_fp8_gemm(bn=256, out="bf16")
        go = fp8_gemm.bind(gemm, A, Bt, C, 0.5, 0.25)   # uint8 views of fp8 tensors
        for _ in range(10):
            go()
    """
    M, K = A.shape
    N, K2 = Bt.shape
    check_shape(M, N, K, K2)
    a, b, c = (ac.as_device_array(x, "fp8_gemm.bind", n) for x, n in ((A, "A"), (Bt, "Bt"), (C, "C")))
    ta, tb = maps if maps is not None else tensor_maps(a, b, gemm.bn)
    g = grid(M, N, gemm.bn)
    scale = np.float32(scale_a * scale_b)
    # (the simulator's kernels take the maps themselves)
    args = (ta, tb, c, K, scale) if ac.sim.ENABLED else (ta.device, tb.device, c, K, scale)
    return _bound(gemm, g, args, (A, Bt, C, ta, tb), stream)


def flops(M: int, N: int, K: int) -> int:
    return 2 * M * N * K


def e4m3_bits(x: np.ndarray) -> np.ndarray:
    """Round float values to the nearest e4m3 (saturating at +-448) and
    return the uint8 bits; for tests and demos without torch."""
    x = np.asarray(x, np.float64)
    table = decode(np.arange(256, dtype=np.uint8), "e4m3")
    finite = np.where(np.isnan(table), np.inf, table)
    idx = np.abs(np.clip(x, -448, 448)[..., None] - finite).argmin(axis=-1)
    return idx.astype(np.uint8)


def decode(bits: np.ndarray, dtype: str = "e4m3") -> np.ndarray:
    """The float64 values of fp8 bits (e4m3: bias 7, no infinities; e5m2:
    bias 15), as the simulator's MMA reads them."""
    return _decode(np.asarray(bits).astype(np.uint64), dtype)
