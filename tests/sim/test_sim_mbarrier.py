"""mbarrier, fences and elect.sync in the simulator: correct kernels give the
numpy result under the worst-case schedule; counts and states are exact."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

rng = np.random.default_rng()


@cuda.jit
def double_buffer(A, B, ntiles):
    # tile t (64 rows of 16 bytes) -> ring[t % 2]; each thread's cp.async
    # arrival completes full[t % 2]; thread tid reads row tid+1 of the tile
    tid = cuda.threadIdx.x
    ring = cuda.shared.array((2, 64, 4), np.uint32, alignment=16)
    full = cuda.shared.array(2, np.uint64)
    if tid == 0:
        ac.mbarrier_init(full[0:], 64)
        ac.mbarrier_init(full[1:], 64)
    cuda.syncthreads()
    ac.cp_async(ring[0, tid, :], A[tid, :], 16)
    ac.cp_async_mbarrier_arrive(full[0:], noinc=True)
    for t in range(ntiles):
        if t + 1 < ntiles:
            nxt = (t + 1) % 2
            ac.cp_async(ring[nxt, tid, :], A[(t + 1) * 64 + tid, :], 16)
            ac.cp_async_mbarrier_arrive(full[nxt:], noinc=True)
        ac.mbarrier_wait_parity(full[t % 2:], (t // 2) & 1)
        for j in range(4):
            B[t * 64 + tid, j] = ring[t % 2, (tid + 1) % 64, j]
        cuda.syncthreads()  # everyone is done with ring[t % 2] before its refill


@pytest.mark.parametrize("schedule", ["worst", "eager"])
def test_double_buffered_pipeline_matches_numpy(schedule):
    ntiles = 5
    a = rng.integers(0, 2**32 - 1, (ntiles * 64, 4), dtype=np.uint32)
    expected = np.concatenate([np.roll(a[t * 64:(t + 1) * 64], -1, axis=0) for t in range(ntiles)])
    out = np.zeros_like(a)
    with ac.sim.schedule(schedule):
        double_buffer[1, 64](a, out, ntiles)
    np.testing.assert_array_equal(out, expected)


@cuda.jit
def inc_arrive(A, B):
    # noinc=False: the cp.async arrival is net zero; every thread arrives too
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((32, 4), np.float32, alignment=16)
    bars = cuda.shared.array(1, np.uint64)
    if tid == 0:
        ac.mbarrier_init(bars[0:], 32)
    cuda.syncthreads()
    ac.cp_async(sh[tid, :], A[tid, :], 16)
    ac.cp_async_mbarrier_arrive(bars[0:])
    st = ac.mbarrier_arrive(bars[0:])
    while not ac.mbarrier_test_wait(bars[0:], st):
        pass
    for j in range(4):
        B[tid, j] = sh[31 - tid, j]


def test_cp_async_arrive_with_increment_and_test_wait_loop():
    a = rng.standard_normal((32, 4)).astype(np.float32)
    out = np.zeros_like(a)
    inc_arrive[1, 32](a, out)
    np.testing.assert_array_equal(out, a[::-1])


@cuda.jit
def drop_and_count(out):
    # phase 0: 8 arrivals (thread 0 drops out); phase 1 expects 7
    tid = cuda.threadIdx.x
    bars = cuda.shared.array(1, np.uint64)
    if tid == 0:
        ac.mbarrier_init(bars[0:], 8)
    cuda.syncthreads()
    if tid == 0:
        st = ac.mbarrier_arrive_drop(bars[0:])
    else:
        st = ac.mbarrier_arrive(bars[0:])
    ac.mbarrier_wait(bars[0:], st)
    cuda.syncthreads()
    if tid == 1:
        s1 = ac.mbarrier_arrive_no_complete(bars[0:], 2)
        out[0] = ac.mbarrier_pending_count(s1)
        out[1] = ac.mbarrier_test_wait_parity(bars[0:], 1)  # phase 1 not complete
    cuda.syncthreads()
    if tid >= 3:
        st = ac.mbarrier_arrive(bars[0:])
        ac.mbarrier_wait(bars[0:], st)
    cuda.syncthreads()
    if tid == 1:
        out[2] = ac.mbarrier_test_wait_parity(bars[0:], 1)
        out[3] = ac.mbarrier_test_wait_parity(bars[0:], 0)  # phase 2 is current


def test_arrive_drop_lowers_later_phases_and_pending_count_is_exact():
    out = np.full(4, 99, np.int64)
    drop_and_count[1, 8](out)
    np.testing.assert_array_equal(out, [7, 0, 1, 0])  # a state: the count before its arrive


@cuda.jit
def elect(out, mask):
    tid = cuda.threadIdx.x
    if (mask >> (tid % 32)) & 1:
        if ac.elect_sync(mask):
            out[tid] = 1


@pytest.mark.parametrize("mask, block, leaders", [
    (0xFFFFFFFF, 48, [0, 32]),
    (0xFFFFFFF0, 64, [4, 36]),
])
def test_elect_sync_elects_the_lowest_lane_of_each_warp(mask, block, leaders):
    out = np.zeros(block, np.int32)
    elect[1, block](out, mask)
    assert list(np.flatnonzero(out)) == leaders


@cuda.jit
def fences_and_tx(A, B):
    tid = cuda.threadIdx.x
    bars = cuda.shared.array(1, np.uint64)
    if ac.elect_sync():
        ac.mbarrier_init(bars[0:], 1)
        ac.fence_mbarrier_init()
    ac.fence_proxy_async("shared::cta")
    ac.fence_acq_rel_cluster()
    cuda.syncthreads()
    if tid == 0:
        ac.mbarrier_expect_tx(bars[0:], 64)
        ac.mbarrier_arrive(bars[0:], sem="release", scope="cta")
    ac.mbarrier_complete_tx(bars[0:], 2)
    while not ac.mbarrier_try_wait_parity(bars[0:], 0, 1000):
        pass
    B[tid] = A[tid]


def test_fences_and_software_transaction_counts():
    a = rng.integers(0, 100, 32).astype(np.int32)
    out = np.zeros_like(a)
    fences_and_tx[1, 32](a, out)
    np.testing.assert_array_equal(out, a)
