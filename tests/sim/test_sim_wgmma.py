"""Warpgroup MMA in the simulator: each async rule has a buggy kernel that
fails with its message (and the fixed kernel passes), and the HGEMM example
matches numpy at small shapes."""

from __future__ import annotations

import re

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.sim import SimulatorError

rng = np.random.default_rng()


def bf16(shape):
    v = (rng.integers(-8, 9, shape) / 8).astype(np.float32)
    return (v.view(np.uint32) >> 16).astype(np.uint16), v.astype(np.float64)


def make(bug: str):
    """A 64 x 64 x 64 bf16 MMA kernel (TMA tiles with 128-byte swizzle) with
    one bug planted, or none (``bug=""``)."""

    @cuda.jit
    def k(ta, tb, c):
        sa = cuda.shared.array((64, 64), np.uint16, alignment=1024)
        sb = cuda.shared.array((64, 64), np.uint16, alignment=1024)
        bar = cuda.shared.array(2, np.uint64)
        tid = cuda.threadIdx.x
        if tid == 0:
            ac.mbarrier_init(bar[0:], 1)
            ac.mbarrier_init(bar[1:], 1)
            ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if tid == 0:
            ac.mbarrier_arrive_expect_tx(bar[0:], 16384)
            ac.cp_async_bulk_tensor_load(sa, ta, (0, 0), bar[0:])
            ac.cp_async_bulk_tensor_load(sb, tb, (0, 0), bar[0:])
        ac.mbarrier_wait_parity(bar[0:], 0)
        acc = ac.wgmma_zero(64)
        if bug != "no_fence":
            acc = ac.wgmma_fence(acc)
        if bug == "made_after_fence":
            acc = ac.wgmma_zero(64)
        for kk in range(4):
            acc = ac.wgmma_mma_async(
                acc, ac.wgmma_descriptor(sa[:, 16 * kk:16 * kk + 16], swizzle=128),
                ac.wgmma_descriptor(sb[:, 16 * kk:16 * kk + 16], swizzle=128),
                dtype="bf16", scale_d=kk > 0)
        ac.wgmma_commit_group()
        if bug == "read":
            c[0, 0] = acc[0]
        if bug == "store":
            ac.wgmma_store(acc, c, 0, 0)
        if bug == "store_tile":  # each thread stores into B while the MMAs read it
            sb[tid // 64, tid % 64] = sb[tid // 64, tid % 64] ^ 0x8000
        if bug == "refill" and tid == 0:
            ac.mbarrier_arrive_expect_tx(bar[1:], 8192)
            ac.cp_async_bulk_tensor_load(sa, ta, (0, 0), bar[1:])
        acc = ac.wgmma_wait_group(0, acc)
        if bug == "store_after_wait" and tid == 5:
            sb[3, 17] = 0  # the MMAs are done with the tile: allowed
        ac.wgmma_store(acc, c, 0, 0)

    return k


def maps(swizzle_b=128):
    a, av = bf16((64, 64))
    bt, btv = bf16((64, 64))
    da, db = cuda.to_device(a), cuda.to_device(bt)
    return (ac.TensorMap(da, (64, 64), swizzle=128), ac.TensorMap(db, (64, 64), swizzle=swizzle_b),
            (av @ btv.T).astype(np.float32))


@pytest.mark.parametrize("variant", ["", "store_after_wait"])
def test_the_fixed_kernel_matches_numpy(variant):
    ta, tb, ref = maps()
    c = np.full((64, 64), np.nan, np.float32)
    make(variant)[1, 128](ta, tb, c)
    np.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("bug,message", [
    ("read", "reading the accumulator fragment of a wgmma_mma_async issued at"),
    ("store", "passing on (to wgmma_store) the accumulator fragment of a wgmma_mma_async"),
    ("no_fence", "wgmma_mma_async on accumulators written since the last wgmma_fence (no "
                 "wgmma_fence before this MMA)"),
    ("made_after_fence", "wgmma_mma_async on accumulators written since the last wgmma_fence "
                         "(the fragment was made after the last wgmma_fence"),
    ("store_tile", "a store into the tile of `b` (its bytes changed before this wait covered the "
                   "MMA) overlaps a shared tile that the wgmma_mma_async issued at"),
    ("refill", "`dst` (a TMA load with swizzle=128) overlaps a shared tile that the "
               "wgmma_mma_async issued at"),
])
def test_each_async_rule_names_the_bug(bug, message):
    ta, tb, _ = maps()
    with pytest.raises(SimulatorError, match=re.escape(message)):
        make(bug)[1, 128](ta, tb, np.zeros((64, 64), np.float32))


def test_a_descriptor_swizzle_other_than_the_tma_maps_is_named():
    ta, tb, _ = maps(swizzle_b=None)  # B written unswizzled, read as 128-byte swizzled
    with pytest.raises(SimulatorError, match="the descriptor of `b` says swizzle=128 but the tile "
                       "was written with swizzle=None"):
        make("")[1, 128](ta, tb, np.zeros((64, 64), np.float32))


@cuda.jit
def misaligned(c):
    s = cuda.shared.array((72, 64), np.uint16, alignment=1024)
    ac.wgmma_descriptor(s[1:65, 0:16], swizzle=128)


def test_a_misaligned_swizzled_tile_is_named():
    with pytest.raises(SimulatorError, match="does not start in row 0 of a 1024-byte aligned atom"):
        misaligned[1, 1](np.zeros((1, 1), np.float32))


@cuda.jit
def wait_too_deep(c):
    ac.wgmma_wait_group(8)


def test_wait_depth_range():
    with pytest.raises(Exception, match=r"`n`=8 is outside 0\.\.7"):
        wait_too_deep[1, 128](np.zeros((1, 1), np.float32))


def make_ring(release_early: bool):
    """A two-slot TMA pipeline of 64 x 64 k-tiles consumed by one warpgroup;
    the buggy variant releases each slot before the MMAs reading it are waited."""

    @cuda.jit
    def k(ta, tb, c, ktiles):
        sa = cuda.shared.array((2, 64, 64), np.uint16, alignment=1024)
        sb = cuda.shared.array((2, 64, 64), np.uint16, alignment=1024)
        bars = cuda.shared.array((2, 2), np.uint64)
        pipe = ac.pipeline.tma_pipeline(bars, 2, consumers=1, copies=2)
        ac.pipeline.init(pipe)
        tid = cuda.threadIdx.x
        if tid == 128:
            st = ac.pipeline.producer_start(pipe)
            for t in range(ktiles):
                ac.pipeline.producer_acquire(pipe, st)
                ac.pipeline.copy_tensor(pipe, st, sa[st.slot], ta, (0, 64 * t))
                ac.pipeline.copy_tensor(pipe, st, sb[st.slot], tb, (0, 64 * t))
                ac.pipeline.producer_commit(pipe, st)
                st = ac.pipeline.advance(pipe, st)
        if tid < 128:
            acc = ac.wgmma_fence(ac.wgmma_zero(64))
            st = ac.pipeline.consumer_start(pipe)
            for t in range(ktiles):
                ac.pipeline.consumer_wait(pipe, st)
                acc = ac.wgmma_fence(acc)
                for kk in range(4):
                    acc = ac.wgmma_mma_async(
                        acc, ac.wgmma_descriptor(sa[st.slot, :, 16 * kk:16 * kk + 16], swizzle=128),
                        ac.wgmma_descriptor(sb[st.slot, :, 16 * kk:16 * kk + 16], swizzle=128),
                        dtype="bf16", scale_d=(t > 0) or (kk > 0))
                ac.wgmma_commit_group()
                if release_early and tid == 0:
                    ac.pipeline.consumer_release(pipe, st)
                acc = ac.wgmma_wait_group(0, acc)
                if not release_early and tid == 0:
                    ac.pipeline.consumer_release(pipe, st)
                st = ac.pipeline.advance(pipe, st)
            ac.wgmma_store(acc, c, 0, 0)

    return k


@pytest.mark.parametrize("early", [False, True])
def test_a_stage_released_while_a_wgmma_reads_it(early):
    a, av = bf16((64, 192))
    bt, btv = bf16((64, 192))
    ta = ac.TensorMap(cuda.to_device(a), (64, 64), swizzle=128)
    tb = ac.TensorMap(cuda.to_device(bt), (64, 64), swizzle=128)
    c = np.full((64, 64), np.nan, np.float32)
    if early:
        with pytest.raises(SimulatorError, match="releasing the slot overlaps a shared tile that "
                           "the wgmma_mma_async issued at"):
            make_ring(True)[1, 160](ta, tb, c, 3)
    else:
        make_ring(False)[1, 160](ta, tb, c, 3)
        np.testing.assert_array_equal(c, (av @ btv.T).astype(np.float32))


def check_hgemm(M: int, N: int, K: int, blocks: int | None = None, bind: bool = False,
                **make) -> None:
    """C = A @ B of random bf16 A and B (exact sums) through the hgemm
    example built with ``make``: launched by ``run`` (on ``blocks`` blocks)
    or through ``bind``, into a NaN-poisoned C."""
    from numba_asynccopy.examples import hgemm

    a, av = bf16((M, K))
    b, bv = bf16((K, N))
    c = cuda.to_device(np.full((M, N), np.nan, np.float32))
    args = (hgemm.make_hgemm(**make), cuda.to_device(a), cuda.to_device(b), c)
    if bind:
        hgemm.bind(*args)()
    elif blocks is not None:
        hgemm.run(*args, blocks=blocks)
    else:
        hgemm.run(*args)
    np.testing.assert_array_equal(c.copy_to_host(), (av @ bv).astype(np.float32))


def test_hgemm_example_matches_numpy_at_a_small_edge_shape():
    check_hgemm(136, 72, 80, bn=64, stages=2)


def test_hgemm_persistent_example_matches_numpy_walking_several_tiles_a_block():
    # 3 x 2 tiles of 128 x 64 on two blocks: each walks three, its ring running on across them
    check_hgemm(300, 120, 136, blocks=2, bn=64, stages=2, persistent=True)


def test_hgemm_bind_matches_numpy():
    check_hgemm(72, 64, 40, bind=True, bn=64, stages=2, persistent=True)


def test_hgemm_cluster_example_matches_numpy_with_an_odd_count_of_m_tiles():
    # 3 m-tiles: the second pair's second CTA has no rows (zero-filled loads, no stores)
    check_hgemm(300, 64, 72, blocks=2, bn=128, stages=2, persistent=True, cluster=2)


# --- f16 accumulation -------------------------------------------------------------------


def make_f16_acc(dtype: str, n: int, store: str):
    """C[64, n] = A[64, K] @ B[K, n] with an f16 accumulator (K = one
    128-byte swizzled box: 64 f16 or 128 fp8 columns), stored as ``store``."""
    kstep = 16 if dtype == "f16" else 32
    k = 128 // (2 if dtype == "f16" else 1)
    st = np.float16 if dtype == "f16" else np.uint8

    @cuda.jit
    def kern(ta, tb, c):
        sa = cuda.shared.array((64, k), st, alignment=1024)
        sb = cuda.shared.array((n, k), st, alignment=1024)
        bar = cuda.shared.array(1, np.uint64)
        if cuda.threadIdx.x == 0:
            ac.mbarrier_init(bar, 1)
            ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            ac.mbarrier_arrive_expect_tx(bar, (64 + n) * 128)
            ac.cp_async_bulk_tensor_load(sa, ta, (0, 0), bar)
            ac.cp_async_bulk_tensor_load(sb, tb, (0, 0), bar)
        ac.mbarrier_wait_parity(bar, 0)
        acc = ac.wgmma_fence(ac.wgmma_zero(n, dtype="f16"))
        for kk in range(k // kstep):
            acc = ac.wgmma_mma_async(
                acc, ac.wgmma_descriptor(sa[:, kstep * kk:kstep * kk + kstep], swizzle=128),
                ac.wgmma_descriptor(sb[:, kstep * kk:kstep * kk + kstep], swizzle=128),
                dtype=dtype, scale_d=kk > 0)
        ac.wgmma_commit_group()
        acc = ac.wgmma_wait_group(0, acc)
        ac.wgmma_store(acc, c, 0, 0, dtype=store)

    return kern, k


def f16_acc_inputs(dtype, shape, exact=True):
    """(storage, float64 values); ``exact``: values in {0, ±1/2, ±1} whose
    sums are exact in f16, else random normal f16 (only for dtype f16)."""
    if dtype == "f16":
        v = (rng.integers(-2, 3, shape) / 2 if exact else rng.standard_normal(shape)).astype(np.float16)
        return v, v.astype(np.float64)
    s, e = rng.integers(0, 2, shape), rng.integers(0, 3, shape)  # 0, 1/2 or 1
    bias, shift = (7, 3) if dtype == "e4m3" else (15, 2)
    bits = np.where(e == 0, 0, (s << 7) | ((bias - 2 + e) << shift))
    val = np.where(e == 0, 0.0, 2.0 ** (e - 2.0)) * np.where(s == 1, -1, 1)
    return bits.astype(np.uint8), val


@pytest.mark.parametrize("dtype", ["f16", "e4m3", "e5m2"])
@pytest.mark.parametrize("store", ["float16", "float32", "bf16"])
def test_f16_accumulation_matches_numpy(dtype, store):
    n = 24  # 8 mod 16: six words a thread
    kern, k = make_f16_acc(dtype, n, store)
    a, av = f16_acc_inputs(dtype, (64, k))
    bt, btv = f16_acc_inputs(dtype, (n, k))
    ta = ac.TensorMap(cuda.to_device(a), a.shape, swizzle=128)
    tb = ac.TensorMap(cuda.to_device(bt), bt.shape, swizzle=128)
    ref = av @ btv.T  # exact in f16, f32 and bf16 (multiples of 1/4 below 2**8)
    out_t = {"float16": np.float16, "float32": np.float32, "bf16": np.uint16}[store]
    c = np.zeros((64, n), out_t)
    kern[1, 128](ta, tb, c)
    got = (c.astype(np.uint32) << 16).view(np.float32) if store == "bf16" else c
    np.testing.assert_array_equal(got.astype(np.float64), ref)


def test_f16_accumulation_rounds_to_f16_once_per_mma():
    """Random normal f16 inputs: the result is the f16 rounding of each
    k16 step's exact sum, within the documented bound of the float64
    product and (over K = 64) different from f32 accumulation."""
    kern, k = make_f16_acc("f16", 64, "float32")
    a, av = f16_acc_inputs("f16", (64, k), exact=False)
    bt, btv = f16_acc_inputs("f16", (64, k), exact=False)
    ta = ac.TensorMap(cuda.to_device(a), a.shape, swizzle=128)
    tb = ac.TensorMap(cuda.to_device(bt), bt.shape, swizzle=128)
    c = np.zeros((64, 64), np.float32)
    kern[1, 128](ta, tb, c)
    model = np.zeros((64, 64), np.float16)
    for kk in range(k // 16):
        s = slice(16 * kk, 16 * kk + 16)
        model = (av[:, s] @ btv[:, s].T + model.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(c, model.astype(np.float32))
    exact = av @ btv.T
    bound = (k // 16) * 2.0 ** -11 * (np.abs(av) @ np.abs(btv).T)
    assert np.all(np.abs(c - exact) <= bound)
    assert np.any(c != exact.astype(np.float32))


@cuda.jit
def bf16_into_f16_acc(c):
    s = cuda.shared.array((64, 64), np.uint16, alignment=1024)
    acc = ac.wgmma_fence(ac.wgmma_zero(64, dtype="f16"))
    acc = ac.wgmma_mma_async(acc, ac.wgmma_descriptor(s[:, 0:16], swizzle=128),
                             ac.wgmma_descriptor(s[:, 16:32], swizzle=128), dtype="bf16")


def test_bf16_inputs_with_an_f16_accumulator_are_refused():
    with pytest.raises(Exception, match=re.escape(
            "wgmma_mma_async: dtype='bf16' inputs accumulate in f32 only, but `acc` is an f16 "
            "fragment")):
        bf16_into_f16_acc[1, 128](np.zeros(1, np.float32))


def test_fp8_gemm_example_matches_numpy_at_a_small_edge_shape():
    """e4m3 inputs near 1 (their sums are exact in f32), K not a multiple of
    the 128-column k-tile, M and N not multiples of the block tile, the
    per-tensor scales applied in the store."""
    from numba_asynccopy.examples import fp8_gemm

    M, N, K = 136, 72, 160
    s = rng.integers(0, 2, (M + N, K))
    e, m = rng.integers(6, 9, (M + N, K)), rng.integers(0, 8, (M + N, K))
    bits = ((s << 7) | (e << 3) | m).astype(np.uint8)
    a, bt = bits[:M].copy(), bits[M:].copy()
    ref = 0.5 * 4.0 * (fp8_gemm.decode(a) @ fp8_gemm.decode(bt).T)
    c = cuda.to_device(np.full((M, N), np.nan, np.float32))
    fp8_gemm.run(fp8_gemm.make_fp8_gemm(bn=64, stages=2, out="float32"), cuda.to_device(a),
                 cuda.to_device(bt), c, 0.5, 4.0)
    np.testing.assert_array_equal(c.copy_to_host(), ref.astype(np.float32))


def test_fp8_example_helpers_round_trip_e4m3():
    from numba_asynccopy.examples import fp8_gemm

    codes = np.array([c for c in range(256) if c not in (0x80, 0x7F, 0xFF)], np.uint8)
    vals = fp8_gemm.decode(codes)
    np.testing.assert_array_equal(fp8_gemm.e4m3_bits(vals), codes)
    assert fp8_gemm.decode(fp8_gemm.e4m3_bits([1.1, -300.0, 1000.0])).tolist() == [1.125, -288.0, 448.0]
