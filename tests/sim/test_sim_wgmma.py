"""Warpgroup MMA in the simulator: each async rule has a buggy kernel that
fails with its message (and the fixed kernel passes), and the HGEMM example
matches numpy at small shapes."""

from __future__ import annotations

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
        if bug == "refill" and tid == 0:
            ac.mbarrier_arrive_expect_tx(bar[1:], 8192)
            ac.cp_async_bulk_tensor_load(sa, ta, (0, 0), bar[1:])
        acc = ac.wgmma_wait_group(0, acc)
        ac.wgmma_store(acc, c, 0, 0)

    return k


def maps(swizzle_b=128):
    a, av = bf16((64, 64))
    bt, btv = bf16((64, 64))
    da, db = cuda.to_device(a), cuda.to_device(bt)
    return (ac.TensorMap(da, (64, 64), swizzle=128), ac.TensorMap(db, (64, 64), swizzle=swizzle_b),
            (av @ btv.T).astype(np.float32))


def test_the_fixed_kernel_matches_numpy():
    ta, tb, ref = maps()
    c = np.full((64, 64), np.nan, np.float32)
    make("")[1, 128](ta, tb, c)
    np.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("bug,message", [
    ("read", "reading the accumulator fragment of a wgmma_mma_async issued at"),
    ("store", "passing on (to wgmma_store) the accumulator fragment of a wgmma_mma_async"),
    ("no_fence", "wgmma_mma_async on accumulators written since the last wgmma_fence (no "
                 "wgmma_fence before this MMA)"),
    ("refill", "`dst` (a TMA load with swizzle=128) overlaps a shared tile that the "
               "wgmma_mma_async issued at"),
])
def test_each_async_rule_names_the_bug(bug, message):
    ta, tb, _ = maps()
    with pytest.raises(SimulatorError, match=__import__("re").escape(message)):
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


def test_hgemm_example_matches_numpy_at_a_small_edge_shape():
    from numba_asynccopy.examples import hgemm

    M, N, K = 136, 72, 80
    a, av = bf16((M, K))
    b, bv = bf16((K, N))
    c = cuda.to_device(np.full((M, N), np.nan, np.float32))
    hgemm.run(hgemm.make_hgemm(bn=64, stages=2), cuda.to_device(a), cuda.to_device(b), c)
    np.testing.assert_array_equal(c.copy_to_host(), (av @ bv).astype(np.float32))


def test_hgemm_persistent_example_matches_numpy_walking_several_tiles_a_block():
    from numba_asynccopy.examples import hgemm

    # 3 x 2 tiles of 128 x 64 on two blocks: each walks three, its ring running on across them
    M, N, K = 300, 120, 136
    a, av = bf16((M, K))
    b, bv = bf16((K, N))
    c = cuda.to_device(np.full((M, N), np.nan, np.float32))
    hgemm.run(hgemm.make_hgemm(bn=64, stages=2, persistent=True), cuda.to_device(a),
              cuda.to_device(b), c, blocks=2)
    np.testing.assert_array_equal(c.copy_to_host(), (av @ bv).astype(np.float32))


def test_hgemm_bind_matches_numpy():
    from numba_asynccopy.examples import hgemm

    M, N, K = 72, 64, 40
    a, av = bf16((M, K))
    b, bv = bf16((K, N))
    c = cuda.to_device(np.full((M, N), np.nan, np.float32))
    go = hgemm.bind(hgemm.make_hgemm(bn=64, stages=2, persistent=True), cuda.to_device(a),
                    cuda.to_device(b), c)
    go()
    np.testing.assert_array_equal(c.copy_to_host(), (av @ bv).astype(np.float32))


def test_hgemm_cluster_example_matches_numpy_with_an_odd_count_of_m_tiles():
    from numba_asynccopy.examples import hgemm

    # 3 m-tiles: the second pair's second CTA has no rows (zero-filled loads, no stores)
    M, N, K = 300, 64, 72
    a, av = bf16((M, K))
    b, bv = bf16((K, N))
    c = cuda.to_device(np.full((M, N), np.nan, np.float32))
    hgemm.run(hgemm.make_hgemm(bn=128, stages=2, persistent=True, cluster=2), cuda.to_device(a),
              cuda.to_device(b), c, blocks=2)
    np.testing.assert_array_equal(c.copy_to_host(), (av @ bv).astype(np.float32))
