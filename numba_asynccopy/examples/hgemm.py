"""HGEMM on Hopper tensor cores: ``C = A @ B`` with bf16 or fp16 inputs and
fp32 accumulation (``wgmma``), fed by a TMA pipeline (sm_90a).

Layout: ``A`` is (M, K) and ``B`` is (K, N), both row-major, as torch holds
them (bf16 as its bits in a uint16 array or a ``torch.uint16`` view; fp16 as
float16); ``C`` is (M, N) row-major, float32 or the input type.

Tiling: a block of 384 threads computes a ``BM x BN`` = 128 x ``bn`` tile of
C, walking K in steps of ``BK`` = 64:

- warpgroup 0 is the producer: it gives its registers away
  (``setmaxnreg_dec(40)``) and one elected lane of its first warp issues,
  per k-tile, the TMA loads of the A tile (128 x 64, 128-byte swizzle) and of
  the B tile (64 x ``bn`` as ``bn / 64`` boxes of 64 x 64, 128-byte swizzle)
  into a slot of an ``ac.pipeline.tma_pipeline`` of ``stages`` slots;
- warpgroups 1 and 2 are the consumers (``setmaxnreg_inc(232)``): each owns
  64 rows of the tile, and per k-tile waits for the slot, issues four
  ``m64n{bn}k16`` MMAs on descriptors of the slot's tiles (B N-major:
  ``trans_b=True``), commits them, waits for the previous k-tile's MMAs
  (``wgmma_wait_group(1)``) and releases that k-tile's slot, so one group of
  MMAs is always in flight while the next slot lands;
- the epilogue stores each consumer's fragment with ``ac.wgmma_store``
  (masked at the edges, converted to the output type).

Edges: M, N and K need not be multiples of the tile: TMA zero-fills the
parts of a box outside A or B (zeros add nothing to C), and the store is
masked.  K and N must be multiples of 8 (TMA needs 16-byte row strides).

Example::

    from numba_asynccopy.examples import hgemm
    gemm = hgemm.make_hgemm(bn=128, out="float32")
    hgemm.run(gemm, A, B, C)          # device arrays; C = A @ B
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np
from numba import cuda

import numba_asynccopy as ac

def _carve_typing(typingctx, dyn, offset, shape):
    """``dyn[offset:offset + prod(shape)]`` as a C-contiguous array of
    ``shape`` (a constant tuple): numba's ``reshape`` of a shared slice calls
    a runtime helper that does not link into a kernel."""
    from numba.core import types as nbt

    from .._compat import TypingError

    if not all(isinstance(d, nbt.IntegerLiteral) for d in shape):
        raise TypingError(f"_carve: `shape` must be a tuple of int constants, got {shape}")
    dims = [d.literal_value for d in shape]
    ty = nbt.Array(dyn.dtype, len(dims), "C")

    def codegen(context, builder, sig, args):
        from llvmlite import ir
        from numba.cuda import cgutils

        src = context.make_array(sig.args[0])(context, builder, args[0])
        intp = context.get_value_type(nbt.intp)
        off = context.cast(builder, args[1], sig.args[1], nbt.intp)
        data = builder.gep(src.data, [off])
        out = context.make_array(ty)(context, builder)
        isz = context.get_abi_sizeof(context.get_data_type(dyn.dtype))
        strides, acc = [], isz
        for d in reversed(dims):
            strides.insert(0, ir.Constant(intp, acc))
            acc *= d
        context.populate_array(out, data=data, shape=[ir.Constant(intp, d) for d in dims],
                               strides=strides, itemsize=ir.Constant(intp, isz), meminfo=None)
        return out._getvalue()

    return ty(dyn, offset, shape), codegen


from .._compat import intrinsic as _intrinsic  # noqa: E402  (literal-first typing)

def _carve_sim(dyn, offset, shape):
    """The simulator's ``_carve``: a plain view."""
    n = int(np.prod(shape))
    return dyn[offset:offset + n].reshape(shape)


_carve = _carve_sim if ac.sim.ENABLED else _intrinsic(_carve_typing)

BM = 128
BK = 64
THREADS = 384
SWIZZLE = 128
ATOM = 64  # bf16/fp16 elements in one 128-byte swizzle row


#: m-tiles of one group of the persistent kernel's tile order
GROUP_M = 8


def _tile_of(tile, ntm, per_group, group):
    """(m-tile, n-tile) of the persistent walk's ``tile``: groups of
    ``group`` m-tiles (``per_group`` tiles) share each column of n-tiles.
    uint32 throughout, as a C ``unsigned`` divides: Numba widens integer
    arithmetic to 64 bits, and ptxas then guards each 64-bit division with a
    test for a 32-bit fast path."""
    g = np.uint32(tile // per_group)
    first = np.uint32(g * group)
    rows = min(np.uint32(ntm - first), group)
    r = np.uint32(tile - g * per_group)
    return np.uint32(first + np.uint32(r % rows)), np.uint32(r // rows)


_tile_of_dev = _tile_of if ac.sim.ENABLED else cuda.jit(device=True, inline="always")(_tile_of)


@lru_cache(maxsize=None)
def make_hgemm(bn: int = 128, stages: int = 4, dtype: str = "bf16", out: str = "float32",
               persistent: bool = False, cluster: int = 1):
    """The compiled kernel ``gemm(ta, tb, C, K)`` (``ta``/``tb`` the tensor
    maps :func:`tensor_maps` builds); launch it with :func:`run`.  ``bn``:
    64, 128, 192 or 256 (the MMA's N); ``dtype``: ``"bf16"`` or ``"f16"``;
    ``out``: ``"float32"``, ``"bf16"`` (uint16 bits) or ``"float16"``;
    ``persistent``: one block per multiprocessor walks the tiles (grouped
    order, :data:`GROUP_M` m-tiles a group), its ring running on across
    tiles, so the next tile's loads overlap this tile's epilogue;
    ``cluster=2`` (persistent only): CTA pairs of a 2-CTA cluster compute
    vertically adjacent tiles and each loads half of their common B tile,
    multicast to both (an ``ac.pipeline.cluster_tma_pipeline`` for B beside
    a ``tma_pipeline`` for A), so B is read from L2 once per pair."""
    if bn not in (64, 128, 192, 256):
        raise ValueError(f"bn must be 64, 128, 192 or 256, got {bn}")
    if dtype not in ("bf16", "f16"):
        raise ValueError(f"dtype must be 'bf16' or 'f16', got {dtype!r}")
    if persistent not in (True, False):
        raise ValueError(f"persistent must be a bool, got {persistent!r}")
    if cluster not in (1, 2) or (cluster == 2 and not persistent):
        raise ValueError(f"cluster must be 1 or 2 (2: persistent=True only), got {cluster!r}")
    nb = bn // ATOM
    a_elems, b_elems = stages * BM * BK, stages * nb * BK * ATOM
    storage = np.uint16 if dtype == "bf16" else np.float16
    copies = 1 + nb  # the A box and the B boxes of a stage
    def hgemm(ta, tb, C, K):
        dyn = cuda.shared.array(0, storage, alignment=1024)
        sa = _carve(dyn, 0, (stages, BM, BK))
        sb = _carve(dyn, a_elems, (stages, nb, BK, ATOM))
        bars = cuda.shared.array((2, stages), np.uint64)
        pipe = ac.pipeline.tma_pipeline(bars, stages, consumers=2, copies=copies)
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
                        for j in range(nb):
                            ac.pipeline.copy_tensor(pipe, st, sb[st.slot, j], tb,
                                                    (t * BK, n0 + ATOM * j), fence=False)
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
                for kk in range(BK // 16):
                    acc = ac.wgmma_mma_async(
                        acc,
                        ac.wgmma_descriptor(sa[st.slot, 64 * c:64 * c + 64, 16 * kk:16 * kk + 16],
                                            swizzle=SWIZZLE),
                        ac.wgmma_descriptor(sb[st.slot, :, 16 * kk:16 * kk + 16, :],
                                            swizzle=SWIZZLE, major="MN"),
                        dtype=dtype, scale_d=(t > 0) or (kk > 0), trans_b=True)
                ac.wgmma_commit_group()
                # the MMAs of k-tile t - 1 are done: free their slot
                acc = ac.wgmma_wait_group(1, acc)
                if t > 0 and leader:
                    ac.pipeline.consumer_release(pipe, prev)
                prev = st
                st = ac.pipeline.advance(pipe, st)
            acc = ac.wgmma_wait_group(0, acc)
            # (K >= 1: ktiles >= 1.  Measured: a guard `ktiles > 0` here gives
            # ptxas a path that skips the loop and it serializes the MMAs, C7515)
            if leader:
                ac.pipeline.consumer_release(pipe, prev)
            ac.wgmma_store(acc, C, m0 + 64 * c, n0, dtype=out)

    def hgemm_persistent(ta, tb, C, K):
        dyn = cuda.shared.array(0, storage, alignment=1024)
        sa = _carve(dyn, 0, (stages, BM, BK))
        sb = _carve(dyn, a_elems, (stages, nb, BK, ATOM))
        bars = cuda.shared.array((2, stages), np.uint64)
        pipe = ac.pipeline.tma_pipeline(bars, stages, consumers=2, copies=copies)
        ac.pipeline.init(pipe)
        tid = cuda.threadIdx.x
        wg = tid // 128
        ktiles = (K + BK - 1) // BK
        # the tile walk in uint32 (see _tile_of)
        ntm = np.uint32((C.shape[0] + BM - 1) // BM)
        ntn = np.uint32((C.shape[1] + bn - 1) // bn)
        ntiles = np.uint32(ntm * ntn)
        per_group = np.uint32(np.uint32(GROUP_M) * ntn)
        step = np.uint32(cuda.gridDim.x)
        if wg == 0:
            ac.setmaxnreg_dec(40)
            if tid < 32:
                if ac.elect_sync():
                    ac.fence_proxy_tensormap(ta)
                    ac.fence_proxy_tensormap(tb)
                    st = ac.pipeline.producer_start(pipe)
                    tile = np.uint32(cuda.blockIdx.x)
                    while tile < ntiles:
                        # grouped order: GROUP_M m-tiles share each B column of tiles
                        mt, nt = _tile_of_dev(tile, ntm, per_group, np.uint32(GROUP_M))
                        m0 = np.int32(mt) * BM
                        n0 = np.int32(nt) * bn
                        tile = np.uint32(tile + step)
                        for t in range(ktiles):
                            ac.pipeline.producer_acquire(pipe, st)
                            ac.pipeline.copy_tensor(pipe, st, sa[st.slot], ta, (m0, t * BK),
                                                    fence=False)
                            for j in range(nb):
                                ac.pipeline.copy_tensor(pipe, st, sb[st.slot, j], tb,
                                                        (t * BK, n0 + ATOM * j), fence=False)
                            ac.pipeline.producer_commit(pipe, st)
                            st = ac.pipeline.advance(pipe, st)
        else:
            ac.setmaxnreg_inc(232)
            c = wg - 1
            leader = (tid % 128) == 0
            acc = ac.wgmma_zero(bn)
            st = ac.pipeline.consumer_start(pipe)
            tile = np.uint32(cuda.blockIdx.x)
            while tile < ntiles:
                mt, nt = _tile_of_dev(tile, ntm, per_group, np.uint32(GROUP_M))
                m0 = np.int32(mt) * BM
                n0 = np.int32(nt) * bn
                tile = np.uint32(tile + step)
                prev = st
                for t in range(ktiles):
                    ac.pipeline.consumer_wait(pipe, st)
                    acc = ac.wgmma_fence(acc)
                    for kk in range(BK // 16):
                        acc = ac.wgmma_mma_async(
                            acc,
                            ac.wgmma_descriptor(sa[st.slot, 64 * c:64 * c + 64, 16 * kk:16 * kk + 16],
                                                swizzle=SWIZZLE),
                            ac.wgmma_descriptor(sb[st.slot, :, 16 * kk:16 * kk + 16, :],
                                                swizzle=SWIZZLE, major="MN"),
                            dtype=dtype, scale_d=(t > 0) or (kk > 0), trans_b=True)
                    ac.wgmma_commit_group()
                    acc = ac.wgmma_wait_group(1, acc)
                    if t > 0 and leader:
                        ac.pipeline.consumer_release(pipe, prev)
                    prev = st
                    st = ac.pipeline.advance(pipe, st)
                acc = ac.wgmma_wait_group(0, acc)
                if leader:
                    ac.pipeline.consumer_release(pipe, prev)
                # the producer is already filling the next tile's slots
                ac.wgmma_store(acc, C, m0 + 64 * c, n0, dtype=out)

    half = nb // 2  # B boxes each CTA of a pair loads (and multicasts)

    def hgemm_cluster(ta, tb, C, K):
        ac.cluster_dims(2)
        dyn = cuda.shared.array(0, storage, alignment=1024)
        sa = _carve(dyn, 0, (stages, BM, BK))
        sb = _carve(dyn, a_elems, (stages, nb, BK, ATOM))
        bars_a = cuda.shared.array((2, stages), np.uint64)
        bars_b = cuda.shared.array((2, stages), np.uint64)
        pa = ac.pipeline.tma_pipeline(bars_a, stages, consumers=2, copies=1)
        pb = ac.pipeline.cluster_tma_pipeline(bars_b, stages, consumers=2, ctas=2, copies=half)
        ac.pipeline.init(pa)
        ac.pipeline.init(pb)  # ends with a cluster barrier: both rings ready in both CTAs
        rank = ac.cluster_cta_rank()
        tid = cuda.threadIdx.x
        wg = tid // 128
        ktiles = (K + BK - 1) // BK
        pairs_m = np.uint32((C.shape[0] + 2 * BM - 1) // (2 * BM))
        ntn = np.uint32((C.shape[1] + bn - 1) // bn)
        npairs = np.uint32(pairs_m * ntn)
        group = np.uint32(GROUP_M // 2)
        per_group = np.uint32(group * ntn)
        step = np.uint32(cuda.gridDim.x // 2)
        if wg == 0:
            ac.setmaxnreg_dec(40)
            if tid < 32:
                if ac.elect_sync():
                    ac.fence_proxy_tensormap(ta)
                    ac.fence_proxy_tensormap(tb)
                    sta = ac.pipeline.producer_start(pa)
                    stb = ac.pipeline.producer_start(pb)
                    pair = np.uint32(cuda.blockIdx.x // 2)
                    while pair < npairs:
                        mp, nt = _tile_of_dev(pair, pairs_m, per_group, group)
                        m0 = np.int32(2 * mp + rank) * BM
                        n0 = np.int32(nt) * bn
                        pair = np.uint32(pair + step)
                        for t in range(ktiles):
                            ac.pipeline.producer_acquire(pa, sta)
                            ac.pipeline.copy_tensor(pa, sta, sa[sta.slot], ta, (m0, t * BK),
                                                    fence=False)
                            ac.pipeline.producer_commit(pa, sta)
                            # the slot is free in both CTAs: this CTA's half of B, to both
                            ac.pipeline.producer_acquire(pb, stb)
                            for j in range(half):
                                q = rank * half + j
                                ac.pipeline.copy_tensor(pb, stb, sb[stb.slot, q], tb,
                                                        (t * BK, n0 + ATOM * q), fence=False)
                            ac.pipeline.producer_commit(pb, stb)
                            sta = ac.pipeline.advance(pa, sta)
                            stb = ac.pipeline.advance(pb, stb)
                    ac.pipeline.producer_tail(pb, stb)
        else:
            ac.setmaxnreg_inc(232)
            c = wg - 1
            leader = (tid % 128) == 0
            acc = ac.wgmma_zero(bn)
            sta = ac.pipeline.consumer_start(pa)
            stb = ac.pipeline.consumer_start(pb)
            pair = np.uint32(cuda.blockIdx.x // 2)
            while pair < npairs:
                mp, nt = _tile_of_dev(pair, pairs_m, per_group, group)
                m0 = np.int32(2 * mp + rank) * BM
                n0 = np.int32(nt) * bn
                pair = np.uint32(pair + step)
                prev_a = sta
                prev_b = stb
                for t in range(ktiles):
                    ac.pipeline.consumer_wait(pa, sta)
                    ac.pipeline.consumer_wait(pb, stb)
                    acc = ac.wgmma_fence(acc)
                    for kk in range(BK // 16):
                        acc = ac.wgmma_mma_async(
                            acc,
                            ac.wgmma_descriptor(sa[sta.slot, 64 * c:64 * c + 64, 16 * kk:16 * kk + 16],
                                                swizzle=SWIZZLE),
                            ac.wgmma_descriptor(sb[stb.slot, :, 16 * kk:16 * kk + 16, :],
                                                swizzle=SWIZZLE, major="MN"),
                            dtype=dtype, scale_d=(t > 0) or (kk > 0), trans_b=True)
                    ac.wgmma_commit_group()
                    acc = ac.wgmma_wait_group(1, acc)
                    if t > 0 and leader:
                        ac.pipeline.consumer_release(pa, prev_a)
                        ac.pipeline.consumer_release(pb, prev_b)  # in both CTAs
                    prev_a = sta
                    prev_b = stb
                    sta = ac.pipeline.advance(pa, sta)
                    stb = ac.pipeline.advance(pb, stb)
                acc = ac.wgmma_wait_group(0, acc)
                if leader:
                    ac.pipeline.consumer_release(pa, prev_a)
                    ac.pipeline.consumer_release(pb, prev_b)
                ac.wgmma_store(acc, C, m0 + 64 * c, n0, dtype=out)
        ac.cluster_sync()  # no CTA exits while its peer may still multicast or arrive into it

    # launch bounds give the kernel the register limit setmaxnreg needs (the
    # simulator's jit takes no launch bounds and simulates no registers)
    jit = cuda.jit if ac.sim.ENABLED else cuda.jit(launch_bounds=(THREADS, 1))
    fn = hgemm_cluster if cluster == 2 else hgemm_persistent if persistent else hgemm
    return Hgemm(jit(fn), bn, stages, shared_bytes(bn, stages), persistent, cluster)


@dataclass(frozen=True)
class Hgemm:
    """A compiled-on-first-launch HGEMM kernel and its tile parameters."""

    kernel: Any
    bn: int
    stages: int
    smem: int
    persistent: bool = False
    cluster: int = 1


def shared_bytes(bn: int, stages: int) -> int:
    """Dynamic shared memory of one block: the A and B slots."""
    return stages * (BM * BK + (bn // ATOM) * BK * ATOM) * 2


def tensor_maps(A: Any, B: Any) -> tuple[Any, Any]:
    """The TMA maps of A (boxes of 128 x 64) and B (boxes of 64 x 64), 128-byte swizzle."""
    return (ac.TensorMap(A, (BM, BK), swizzle=SWIZZLE), ac.TensorMap(B, (BK, ATOM), swizzle=SWIZZLE))


def grid(M: int, N: int, bn: int) -> tuple[int, int]:
    return (-(-N // bn), -(-M // BM))


def persistent_grid(M: int, N: int, bn: int, sms: int, cluster: int = 1) -> int:
    """Blocks of the persistent kernel: one per multiprocessor, at most one
    per tile (a multiple of ``cluster``: pairs of vertically adjacent tiles)."""
    if cluster == 2:
        pairs = -(-N // bn) * -(-M // (2 * BM))
        return 2 * max(1, min(pairs, sms // 2))
    tiles = -(-N // bn) * -(-M // BM)
    return max(1, min(tiles, sms))


@lru_cache(maxsize=None)
def _sms() -> int:
    if ac.sim.ENABLED:
        return 2  # the simulator's device has no multiprocessors: two blocks walk the tiles
    return cuda.get_current_device().MULTIPROCESSOR_COUNT


def check_shape(M: int, N: int, K: int) -> None:
    if min(M, N, K) <= 0 or K % 8 or N % 8:
        raise ValueError(f"hgemm needs M, N, K > 0 and K, N multiples of 8 (16-byte rows for "
                         f"TMA); got M={M}, N={N}, K={K}")


#: (kernel, C's kind and dtype) -> clusters resident at once (the query compiles the kernel)
_RESIDENT: dict = {}


def _blocks(gemm: Hgemm, M: int, N: int, blocks: int | None, args: tuple) -> Any:
    """The launch grid: a block a tile, or the persistent grid (``blocks``,
    else one block per multiprocessor; in clusters, as many pairs as
    ``ac.max_active_clusters`` says can be resident at once, at most one
    per tile pair: a pair that is not resident would wait for a whole
    persistent walk to end)."""
    if not gemm.persistent:
        return grid(M, N, gemm.bn)
    if blocks is not None:
        return int(blocks)
    if gemm.cluster == 1 or ac.sim.ENABLED:
        return persistent_grid(M, N, gemm.bn, _sms(), gemm.cluster)
    key = (gemm, type(args[2]).__name__, str(getattr(args[2], "dtype", "")))
    if key not in _RESIDENT:
        _RESIDENT[key] = ac.max_active_clusters(gemm.kernel, THREADS, args=args,
                                                shared_mem=gemm.smem)
    return persistent_grid(M, N, gemm.bn, 2 * _RESIDENT[key], gemm.cluster)


def _check_blocks(gemm: Hgemm, blocks: int | None) -> None:
    if blocks is None:
        return
    if not gemm.persistent or int(blocks) < 1 or int(blocks) % gemm.cluster:
        raise ValueError(f"blocks={blocks!r}: only a persistent kernel takes a block count, "
                         f"at least 1 and a multiple of its cluster ({gemm.cluster})")


def run(gemm: Hgemm, A: Any, B: Any, C: Any, maps: tuple | None = None, stream: Any = 0,
        blocks: int | None = None) -> None:
    """C = A @ B with a kernel from :func:`make_hgemm` (device arrays or torch tensors).
    ``blocks``: the persistent kernel's grid (default: one block per
    multiprocessor, at most one per tile)."""
    M, K = A.shape
    N = B.shape[1]
    check_shape(M, N, K)
    _check_blocks(gemm, blocks)
    ta, tb = maps if maps is not None else tensor_maps(A, B)
    g = _blocks(gemm, M, N, blocks, (ta, tb, C, K))
    ac.launch(gemm.kernel, g, THREADS, (ta, tb, C, K), shared_mem=gemm.smem, stream=stream)


def bind(gemm: Hgemm, A: Any, B: Any, C: Any, maps: tuple | None = None, stream: Any = 0,
         blocks: int | None = None) -> Callable[[], None]:
    """A launcher of ``C = A @ B`` whose arguments are converted once: the
    arrays as Numba device arrays viewing the same memory
    (``ac.as_device_array``: torch tensors, bf16 ones too) and the tensor
    maps as their device buffers, so each call takes ``ac.launch``'s
    prepared path (microseconds of host time) instead of converting torch
    tensors and maps on every launch (hundreds of microseconds, as long as
    a 4096^3 GEMM runs).  Keep using the same ``A``, ``B``, ``C``.

    Example::

        gemm = hgemm.make_hgemm(bn=256, dtype="bf16", out="bf16", persistent=True)
        go = hgemm.bind(gemm, A, B, C)   # torch tensors or device arrays
        for _ in range(10):
            go()
    """
    M, K = A.shape
    N = B.shape[1]
    check_shape(M, N, K)
    _check_blocks(gemm, blocks)
    a, b, c = (ac.as_device_array(x, "hgemm.bind", n) for x, n in ((A, "A"), (B, "B"), (C, "C")))
    ta, tb = maps if maps is not None else tensor_maps(a, b)
    g = _blocks(gemm, M, N, blocks, (ta, tb, c, K))
    # (the simulator's kernels take the maps themselves)
    args = (ta, tb, c, K) if ac.sim.ENABLED else (ta.device, tb.device, c, K)
    return _bound(gemm, g, args, (A, B, C, ta, tb), stream)


def _bound(gemm: Any, g: tuple, args: tuple, keep: tuple, stream: Any) -> Callable[[], None]:
    """A no-argument launch of ``gemm.kernel`` on ``g`` with ``args`` (what
    ``bind`` returns), holding ``keep``: the memory the views and maps point
    into."""

    def launch() -> None:
        ac.launch(gemm.kernel, g, THREADS, args, shared_mem=gemm.smem, stream=stream)

    launch.keep = keep  # type: ignore[attr-defined]
    launch.grid = g  # type: ignore[attr-defined]
    return launch


def flops(M: int, N: int, K: int) -> int:
    return 2 * M * N * K
