"""Clusters in the simulator: buggy variants of correct cluster kernels fail
with the documented message (a missing cluster_sync before a DSMEM read, a
wrong expect_tx on the receiving CTA, a CTA that exits early, a multicast
mask that misses a waiting CTA), cross-CTA deadlocks are reported, and a
16-CTA cluster of 128 threads runs without polling (its waits counted).
The correct kernels run in tests/gpu/test_cluster_gpu.py (same file on the
GPU and in the simulator)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

rng = np.random.default_rng()


# --- 1. a DSMEM read not ordered after the owner's write ------------------------------


def make_neighbour_read(sync_before_read: bool):
    @cuda.jit
    def neighbour(A, out):
        ac.cluster_dims(2)
        tid = cuda.threadIdx.x
        rank = ac.cluster_cta_rank()
        sh = cuda.shared.array(32, np.int32)
        ac.cluster_sync()  # both CTAs run
        sh[tid] = A[cuda.blockIdx.x, tid]
        if sync_before_read:
            ac.cluster_sync()
        out[cuda.blockIdx.x, tid] = ac.dsmem_load(sh, (rank + 1) % 2, tid)
        ac.cluster_sync()

    return neighbour


def test_dsmem_read_after_cluster_sync_passes():
    a = rng.integers(0, 1000, (2, 32), dtype=np.int32)
    out = np.zeros_like(a)
    make_neighbour_read(True)[2, 32](a, out)
    np.testing.assert_array_equal(out, a[::-1])


def test_missing_cluster_sync_before_a_dsmem_read_names_both_ctas_and_the_array():
    a = rng.integers(0, 1000, (2, 32), dtype=np.int32)
    for _ in range(3):  # the same error whatever the interleaving
        with pytest.raises(ac.sim.SimulatorError) as e:
            make_neighbour_read(False)[2, 32](a, np.zeros_like(a))
        msg = str(e.value)
        assert "dsmem_load: CTA " in msg, msg
        assert "shared array allocated at" in msg and "test_sim_cluster.py" in msg, msg
        assert ("is not ordered after" in msg or "the write is not ordered after the read" in msg), msg
        assert "missing synchronization" in msg, msg


def make_view_read(sync_before_read: bool):
    @cuda.jit
    def neighbour(A, out):
        ac.cluster_dims(2)
        tid = cuda.threadIdx.x
        rank = ac.cluster_cta_rank()
        sh = cuda.shared.array((4, 8), np.int32)
        peer = ac.map_shared_rank(sh, (rank + 1) % 2)
        ac.cluster_sync()  # both CTAs run
        sh[tid // 8, tid % 8] = A[cuda.blockIdx.x, tid]
        if sync_before_read:
            ac.cluster_sync()
        row = peer[tid // 8]          # a sub-view keeps the checks
        out[cuda.blockIdx.x, tid] = row[tid % 8]
        ac.cluster_sync()

    return neighbour


def test_a_map_shared_rank_view_read_after_cluster_sync_passes():
    a = rng.integers(0, 1000, (2, 32), dtype=np.int32)
    out = np.zeros_like(a)
    make_view_read(True)[2, 32](a, out)
    np.testing.assert_array_equal(out, a[::-1])


def test_a_map_shared_rank_view_read_without_cluster_sync_is_the_dsmem_error():
    """Reads through a mapped view follow dsmem_load's rule, in its words."""
    a = rng.integers(0, 1000, (2, 32), dtype=np.int32)
    with pytest.raises(ac.sim.SimulatorError) as e:
        make_view_read(False)[2, 32](a, np.zeros_like(a))
    msg = str(e.value)
    assert "map_shared_rank: CTA " in msg, msg
    assert "shared array allocated at" in msg and "test_sim_cluster.py" in msg, msg
    assert ("is not ordered after" in msg or "the write is not ordered after the read" in msg), msg
    assert "missing synchronization" in msg, msg


@cuda.jit
def view_write_then_own_read(out):
    ac.cluster_dims(2)
    tid = cuda.threadIdx.x
    rank = ac.cluster_cta_rank()
    box = cuda.shared.array(32, np.int32)
    peer = ac.map_shared_rank(box, (rank + 1) % 2)
    ac.cluster_sync()
    peer[tid] = rank * 100 + tid       # written into the other CTA
    peer[tid:tid + 1] = rank * 100 + tid  # a slice assignment is followed too
    ac.cluster_sync()
    out[cuda.blockIdx.x, tid] = box[tid]
    ac.cluster_sync()


def test_writes_through_a_mapped_view_land_in_the_other_cta():
    out = np.zeros((2, 32), np.int32)
    view_write_then_own_read[2, 32](out)
    np.testing.assert_array_equal(out, [[100 + t for t in range(32)], list(range(32))])


@cuda.jit
def view_access_before_any_cluster_barrier(out):
    ac.cluster_dims(2)
    sh = cuda.shared.array(4, np.int32)
    peer = ac.map_shared_rank(sh, 1 - ac.cluster_cta_rank())  # an address: fine
    out[cuda.blockIdx.x] = peer[0]  # an access before any cluster barrier
    ac.cluster_sync()


def test_a_view_access_before_the_first_cluster_barrier_is_the_dsmem_error():
    with pytest.raises(ac.sim.SimulatorError, match=r"map_shared_rank: CTA \d \(block \(\d,0,0\)\) "
                       r"accesses the shared memory of CTA \d \(block \(\d,0,0\)\) before waiting on "
                       r"any cluster barrier"):
        view_access_before_any_cluster_barrier[2, 1](np.zeros(2, np.int32))


@cuda.jit
def dsmem_before_any_cluster_barrier(out):
    ac.cluster_dims(2)
    sh = cuda.shared.array(4, np.int32)
    sh[0] = 1
    out[cuda.blockIdx.x] = ac.dsmem_load(sh, 1 - ac.cluster_cta_rank(), 0)


def test_dsmem_access_before_the_first_cluster_barrier_is_an_error():
    with pytest.raises(ac.sim.SimulatorError, match=r"accesses the shared memory of CTA \d "
                       r"\(block \(\d,0,0\)\) before waiting on any cluster barrier"):
        dsmem_before_any_cluster_barrier[2, 1](np.zeros(2, np.int32))


# --- 2. a wrong expect_tx on the receiving CTA -------------------------------------------------


def make_seed(expect: int):
    @cuda.jit
    def seed(A, Out):
        ac.cluster_dims(2)
        rank = ac.cluster_cta_rank()
        src = cuda.shared.array(64, np.uint32, alignment=16)
        dst = cuda.shared.array(64, np.uint32, alignment=16)
        mbar = cuda.shared.array(1, np.uint64, alignment=8)
        ac.mbarrier_init(mbar, 1)
        ac.fence_mbarrier_init()
        ac.cluster_sync()
        if rank == 0:
            for i in range(64):
                src[i] = A[i]
            ac.fence_proxy_async("shared::cta")
            ac.cp_async_bulk_cluster(dst, src, 256, mbar, 1)
        else:
            ac.mbarrier_arrive_expect_tx(mbar, expect)
            ac.mbarrier_wait_parity(mbar, 0)
            for i in range(64):
                Out[i] = dst[i]
        ac.cluster_sync()

    return seed


def test_wrong_expect_tx_on_the_receiving_cta_is_a_deadlock_naming_its_barrier():
    a = rng.integers(0, 2**32, 64, dtype=np.uint32)
    with pytest.raises(ac.sim.DeadlockError) as e:
        make_seed(512)[2, 1](a, np.zeros_like(a))
    msg = str(e.value)
    assert "mbarrier_wait_parity: deadlock" in msg, msg
    assert "in CTA 1 (block (1,0,0))" in msg, msg  # the CTA that owns the barrier
    assert "phase 0: expected 1 arrivals, 1 arrived" in msg, msg
    assert "transaction bytes: expected 512, completed 0, in flight 256" in msg, msg
    # every blocked wait is listed: CTA 0 waits in the last cluster_sync
    assert "cluster_sync: deadlock" in msg and "the cluster barrier can never complete" in msg, msg


def test_seed_with_the_right_expect_tx_passes_in_both_schedules():
    a = rng.integers(0, 2**32, 64, dtype=np.uint32)
    for sched in ac.sim.SCHEDULES:
        out = np.zeros_like(a)
        with ac.sim.schedule(sched):
            make_seed(256)[2, 1](a, out)
        np.testing.assert_array_equal(out, a)


# --- 3. a CTA that exits while another can still access its shared memory ----------------------


def make_early_exit(final_sync: bool):
    @cuda.jit
    def early(A, out):
        ac.cluster_dims(2)
        tid = cuda.threadIdx.x
        sh = cuda.shared.array(32, np.float32)
        sh[tid] = A[cuda.blockIdx.x, tid]
        ac.cluster_sync()
        if ac.cluster_cta_rank() == 0:
            out[tid] = ac.dsmem_load(sh, 1, tid)
        if final_sync:
            ac.cluster_sync()  # keeps CTA 1 alive until CTA 0 read it

    return early


def test_final_cluster_sync_keeps_the_peer_alive():
    a = rng.standard_normal((2, 32)).astype(np.float32)
    out = np.zeros(32, np.float32)
    make_early_exit(True)[2, 32](a, out)
    np.testing.assert_array_equal(out, a[1])


def test_a_cta_exiting_early_is_an_error():
    a = rng.standard_normal((2, 32)).astype(np.float32)
    for _ in range(3):  # an error whether CTA 1 exits before or after the read
        with pytest.raises(ac.sim.SimulatorError) as e:
            make_early_exit(False)[2, 32](a, np.zeros(32, np.float32))
        msg = str(e.value)
        assert "CTA 1 (block (1,0,0))" in msg and "exited" in msg, msg
        assert "end the kernel with cluster_sync()" in msg, msg


# --- 4. a multicast mask that misses a CTA that waits ---------------------------------------


def make_multicast(mask: int):
    @cuda.jit
    def mc(A, out):
        ac.cluster_dims(4)
        tid = cuda.threadIdx.x
        sh = cuda.shared.array(256, np.float32, alignment=128)
        bar = cuda.shared.array(1, np.uint64, alignment=8)
        if tid == 0:
            ac.mbarrier_init(bar, 1)
            ac.fence_mbarrier_init()
        ac.cluster_sync()
        if tid == 0:
            ac.mbarrier_arrive_expect_tx(bar, 1024)  # every CTA waits for the tile
            if ac.cluster_cta_rank() == 0:
                ac.cp_async_bulk_g2s(sh, A, bar, multicast_mask=mask)
        ac.mbarrier_wait_parity(bar, 0)
        for i in range(tid, 256, cuda.blockDim.x):
            out[cuda.blockIdx.x, i] = sh[i]
        ac.cluster_sync()

    return mc


def test_multicast_to_every_waiting_cta_passes():
    a = rng.standard_normal(256).astype(np.float32)
    out = np.zeros((4, 256), np.float32)
    make_multicast(0b1111)[4, 64](a, out)
    np.testing.assert_array_equal(out, np.tile(a, (4, 1)))


def test_multicast_mask_missing_a_waiting_cta_is_a_deadlock_naming_it():
    a = rng.standard_normal(256).astype(np.float32)
    with pytest.raises(ac.sim.DeadlockError) as e:
        make_multicast(0b1011)[4, 64](a, np.zeros((4, 256), np.float32))
    msg = str(e.value)
    assert "mbarrier_wait_parity: deadlock" in msg, msg
    assert "in CTA 2 (block (2,0,0))" in msg, msg
    assert "transaction bytes: expected 1024, completed 0, in flight 0" in msg, msg
    assert "64 threads, first [block (2,0,0) thread (0,0,0)]" in msg, msg


# --- 5. the cluster barrier ------------------------------------------------------------------


@cuda.jit
def one_cta_skips_the_barrier(out):
    ac.cluster_dims(2)
    if ac.cluster_cta_rank() == 0:
        ac.cluster_sync()
    out[cuda.blockIdx.x] = 1


def test_cluster_barrier_counts_exited_threads_as_arrived():
    out = np.zeros(2, np.int32)
    one_cta_skips_the_barrier[2, 32](out)
    np.testing.assert_array_equal(out, [1, 1])


@cuda.jit
def wait_without_arrive(out):
    ac.cluster_dims(2)
    ac.cluster_wait()
    out[0] = 1


def test_cluster_wait_without_arrive_is_an_error():
    with pytest.raises(ac.sim.SimulatorError, match="cluster_wait: cluster_wait without a "
                       "cluster_arrive"):
        wait_without_arrive[2, 1](np.zeros(1, np.int32))


@cuda.jit
def relaxed_then_read(A, out):
    ac.cluster_dims(2)
    sh = cuda.shared.array(1, np.int32)
    sh[0] = A[cuda.blockIdx.x]
    ac.cluster_arrive(sem="relaxed")  # BUG: orders nothing
    ac.cluster_wait()
    out[cuda.blockIdx.x] = ac.dsmem_load(sh, 1 - ac.cluster_cta_rank(), 0)
    ac.cluster_sync()


def test_relaxed_cluster_arrive_does_not_publish_shared_memory():
    with pytest.raises(ac.sim.SimulatorError, match="is not ordered after CTA"):
        relaxed_then_read[2, 1](np.array([5, 7], np.int32), np.zeros(2, np.int32))


@cuda.jit
def remote_rank_out_of_range(out, r):
    ac.cluster_dims(2)
    sh = cuda.shared.array(4, np.int32)
    ac.cluster_sync()
    out[0] = ac.dsmem_load(sh, r, 0)


def test_rank_outside_the_cluster_has_checked_modes_text():
    with pytest.raises(ac.sim.SimulatorError,
                       match=r"dsmem_load: `rank`=3 is outside the cluster \(2 CTAs: ranks 0..1\)"):
        remote_rank_out_of_range[2, 1](np.zeros(1, np.int32), 3)


# --- 6. timing: a 16-CTA cluster of 128 threads ----------------------------------------------


@cuda.jit
def ring16(A, out):
    tid = cuda.threadIdx.x
    b = cuda.blockIdx.x
    rank = ac.cluster_cta_rank()
    n = ac.cluster_num_ctas()
    src = cuda.shared.array(128, np.float32, alignment=16)
    dst = cuda.shared.array(128, np.float32, alignment=16)
    bar = cuda.shared.array(1, np.uint64, alignment=8)
    if tid == 0:
        ac.mbarrier_init(bar, 1)
        ac.fence_mbarrier_init()
    src[tid] = A[b, tid]
    ac.fence_proxy_async("shared::cta")
    ac.cluster_sync()
    if tid == 0:
        ac.mbarrier_arrive_expect_tx(bar, 512)
        ac.cp_async_bulk_cluster(dst, src, 512, bar, (rank + 1) % n)
    ac.mbarrier_wait_parity(bar, 0)
    out[b, tid] = dst[tid] + ac.dsmem_load(src, (rank + n - 1) % n, tid)
    ac.cluster_sync()


def test_a_16_cta_cluster_of_128_threads_never_polls(sim_waits):
    a = rng.standard_normal((16, 128)).astype(np.float32)
    out = np.zeros_like(a)
    t0 = time.perf_counter()
    ac.launch(ring16, 16, 128, (a, out), cluster=16, non_portable=True)
    dt = time.perf_counter() - t0
    prev = np.roll(a, 1, axis=0)
    np.testing.assert_array_equal(out, prev + prev)
    print(f"16-CTA cluster of 128 threads: {dt:.2f} s, {sim_waits}")
    # three waits per thread (two cluster barriers, one mbarrier parity
    # wait), about 17 predicate evaluations per thread today; a loop waking
    # every waiter of the cluster at each arrival would be thousands
    threads = 16 * 128
    assert sim_waits["waits"] <= 4 * threads, sim_waits
    assert sim_waits["evaluations"] <= 32 * threads, sim_waits


# --- 7. a deadlock across CTAs names every blocked wait ------------------------------------------


@cuda.jit
def cta1_never_arrives(out):
    ac.cluster_dims(2)
    tid = cuda.threadIdx.x
    bar = cuda.shared.array(1, np.uint64, alignment=8)
    if tid == 0:
        ac.mbarrier_init(bar, 2)  # BUG: CTA 1 arrives once, CTA 0 waits for two
        ac.fence_mbarrier_init()
    ac.cluster_sync()
    if ac.cluster_cta_rank() == 1:
        if tid == 0:
            ac.mbarrier_arrive(bar, cta_rank=0)
        cuda.syncthreads()
    else:
        ac.mbarrier_wait_parity(bar, 0)
    out[cuda.blockIdx.x, tid] = 1
    ac.cluster_sync()


def test_a_deadlock_across_ctas_lists_every_blocked_wait():
    with pytest.raises(ac.sim.DeadlockError) as e:
        cta1_never_arrives[2, 32](np.zeros((2, 32), np.int32))
    msg = str(e.value)
    assert "every thread of the cluster is blocked" in msg, msg
    assert "in CTA 0 (block (0,0,0))" in msg and "phase 0: expected 2 arrivals, 1 arrived" in msg, msg
    assert "[32 threads, first [block (0,0,0) thread (0,0,0)]]" in msg, msg
    # CTA 1 waits in the last cluster_sync (its line is named)
    src, first = __import__("inspect").getsourcelines(cta1_never_arrives.py_func)
    line = first + next(i for i, t in enumerate(src) if "ac.cluster_sync()" in t and "out[" not in t
                        and i > 10)
    assert f"test_sim_cluster.py:{line}" in msg, msg


# --- 8. checked mode's cluster rules, same words ---------------------------------------------


@pytest.mark.parametrize("case", ["remote_cta_id", "misaligned", "chunk_counts", "partial_chunk",
                                  "dsmem_rank", "dsmem_index", "remote_arrive_rank"])
def test_checked_modes_cluster_rules_with_the_same_words(case):
    # the statements and messages of tests/gpu/test_cluster_gpu.py's trap tests
    from tests.gpu.test_cluster_gpu import VIOLATIONS

    stmt, message = VIOLATIONS[case]
    src = f"""
def k(out, n):
    src = cuda.shared.array(64, np.int32, alignment=16)
    dst = cuda.shared.array(64, np.int32, alignment=16)
    src8 = cuda.shared.array(1024, np.uint8, alignment=16)
    dst8 = cuda.shared.array(1024, np.uint8, alignment=16)
    bar = cuda.shared.array(1, np.uint64, alignment=8)
    ac.mbarrier_init(bar, 1)
    ac.fence_mbarrier_init()
    ac.cluster_sync()
    if ac.cluster_cta_rank() == 0:
        {stmt}
    ac.cluster_sync()
"""
    ns = {"cuda": cuda, "np": np, "ac": ac}
    exec(compile(src, f"<{case}>", "exec"), ns)
    with pytest.raises(ac.sim.SimulatorError) as e:
        ac.launch(cuda.jit(ns["k"]), 2, 1, (np.zeros(64, np.int32), 2), cluster=2)
    text = str(e.value)
    assert "numba_asynccopy simulator: " + message in text, text
    assert "[block (0,0,0) thread (0,0,0)]" in text, text


# --- a barrier another CTA uses: fence_mbarrier_init, then a cluster barrier ---------------


def make_remote_arrive(fence_at: str):
    """Each CTA's thread 0 arrives on its own barrier and on the peer's.
    ``fence_at``: "init" (the README's rule: init, fence_mbarrier_init,
    cluster_sync), "none" (no fence), "late" (the fence after the cluster_sync
    the peer waited on)."""
    @cuda.jit
    def k(out):
        ac.cluster_dims(2)
        bar = cuda.shared.array(1, np.uint64)
        rank = ac.cluster_cta_rank()
        if cuda.threadIdx.x == 0:
            ac.mbarrier_init(bar, 2)  # its own arrival and the peer's
            if fence_at == "init":
                ac.fence_mbarrier_init()
        ac.cluster_sync()
        if cuda.threadIdx.x == 0:
            if fence_at == "late":
                ac.fence_mbarrier_init()
            ac.mbarrier_arrive(bar, cta_rank=1 - rank)
            ac.mbarrier_arrive(bar)
            ac.mbarrier_wait_parity(bar, 0)
            out[cuda.blockIdx.x] = 1
        ac.cluster_sync()

    return k


def test_a_barrier_fenced_for_the_cluster_is_used_by_the_peer():
    out = np.zeros(2, np.int32)
    make_remote_arrive("init")[2, 32](out)
    np.testing.assert_array_equal(out, [1, 1])


@pytest.mark.parametrize("fence_at", ["none", "late"])
def test_a_barrier_another_cta_uses_needs_fence_mbarrier_init_then_a_cluster_barrier(fence_at):
    with pytest.raises(ac.sim.SimulatorError) as e:
        make_remote_arrive(fence_at)[2, 32](np.zeros(2, np.int32))
    msg = str(e.value)
    assert "mbarrier_arrive: the barrier" in msg and "is used by CTA" in msg, msg
    assert "(mbarrier_arrive) but its initialisation is not visible to that CTA: " in msg, msg
    why = ("its initialising thread has not called fence_mbarrier_init() since mbarrier_init",
           "has not waited on a cluster barrier since that thread's fence_mbarrier_init()")
    # "late": the peer may arrive before or after the owner's late fence
    assert why[0] in msg if fence_at == "none" else any(w in msg for w in why), msg
    assert msg.count("After mbarrier_init, the initialising thread calls fence_mbarrier_init(), "
                     "then the cluster synchronizes") == 1, msg


# --- .aligned: every lane of the warp at the same instruction ------------------------------


@cuda.jit
def aligned_sync(out, split):
    ac.cluster_dims(2)
    tid = cuda.threadIdx.x
    if split and tid < 16:
        ac.cluster_sync(aligned=True)
    else:
        ac.cluster_sync(aligned=True)
    out[cuda.blockIdx.x, tid] = tid


def test_an_aligned_cluster_sync_in_uniform_code_runs():
    out = np.zeros((2, 64), np.int32)
    aligned_sync[2, 64](out, False)
    np.testing.assert_array_equal(out, np.tile(np.arange(64), (2, 1)))


def test_an_aligned_cluster_sync_split_across_two_places_is_an_error():
    with pytest.raises(ac.sim.SimulatorError) as e:
        aligned_sync[2, 64](np.zeros((2, 64), np.int32), True)
    msg = str(e.value)
    assert "cluster_sync: lane " in msg and "executes barrier.cluster.arrive.aligned at " in msg, msg
    assert ("an .aligned instruction must be executed by every thread of the warp at the same "
            "place (uniform control flow), or drop aligned=True") in msg, msg
