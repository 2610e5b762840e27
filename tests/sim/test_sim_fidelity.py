"""Simulator fidelity: warp collectives converge the warp as on the GPU
(no false deadlocks in correct warp-specialized kernels), and a correct
kernel gives the same result under every interleaving seed."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

rng = np.random.default_rng()

# --- 1. elect_sync converges the warp --------------------------------------------------------------

S, ROWS, COLS, CONS = 2, 8, 32, 32
NT = 6  # three wraps of the two-slot ring: a lane a phase behind deadlocks


@cuda.jit
def warp_specialized(tmap, out, ntiles):
    """One producer warp: the whole warp waits on the slot's empty barrier,
    then one elected lane arms the full barrier and issues the TMA load;
    one consumer warp.  Correct on the GPU (elect.sync converges the warp)."""
    full = cuda.shared.array(S, np.uint64)
    empty = cuda.shared.array(S, np.uint64)
    ring = cuda.shared.array((S, ROWS, COLS), np.float32, alignment=128)
    tid = cuda.threadIdx.x
    if tid == 0:
        for s in range(S):
            ac.mbarrier_init(full[s:], 1)
            ac.mbarrier_init(empty[s:], CONS)
        ac.fence_mbarrier_init()
    cuda.syncthreads()
    if tid < 32:
        for t in range(ntiles):
            s = t % S
            ph = (t // S) & 1
            ac.mbarrier_wait_parity(empty[s:], ph ^ 1)
            if ac.elect_sync():
                ac.mbarrier_arrive_expect_tx(full[s:], ROWS * COLS * 4)
                ac.cp_async_bulk_tensor_load(ring[s], tmap, (ROWS * t, 0), full[s:])
    else:
        c = tid - 32
        for t in range(ntiles):
            s = t % S
            ph = (t // S) & 1
            ac.mbarrier_wait_parity(full[s:], ph)
            for r in range(ROWS):
                out[ROWS * t + r, c] = ring[s, r, c] * 2.0
            ac.mbarrier_arrive(empty[s:])


@pytest.mark.parametrize("run", range(4))
def test_warp_specialized_tma_ring_never_deadlocks(interleaving, run):
    # before elect_sync converged the warp this failed 6 runs in 10 unseeded
    a = rng.standard_normal((ROWS * NT, COLS)).astype(np.float32)
    tmap = ac.TensorMap(cuda.to_device(a), (ROWS, COLS))
    out = np.full_like(a, np.nan)
    warp_specialized[1, 32 + CONS](tmap, out, NT)
    np.testing.assert_array_equal(out, 2 * a)


R = 6


@cuda.jit
def lockstep(out):
    """After an elect_sync every lane of the mask sees what the leader wrote
    before it: the write of round i is seen by every lane in round i + 1."""
    s = cuda.shared.array(1, np.int32)
    lane = cuda.threadIdx.x
    if lane == 0:
        s[0] = 0
    cuda.syncthreads()
    for i in range(R):
        ac.elect_sync()
        out[lane, i] = s[0]
        if ac.elect_sync():
            s[0] = i + 1


def test_elect_sync_is_a_warp_barrier(interleaving):
    out = np.full((32, R), -1, np.int32)
    lockstep[1, 32](out)
    np.testing.assert_array_equal(out, np.tile(np.arange(R, dtype=np.int32), (32, 1)))


@cuda.jit
def leader_per_call(out):
    lane = cuda.threadIdx.x
    if lane == 0:
        return  # not in the mask
    for i in range(3):
        if ac.elect_sync(0xFFFFFFFE):
            out[i] += lane + 1  # one leader per call, the same lane every time


def test_one_leader_per_call_the_same_lane_every_time(interleaving):
    out = np.zeros(3, np.int32)
    leader_per_call[1, 32](out)
    np.testing.assert_array_equal(out, [2, 2, 2])  # lane 1, once per call


@cuda.jit
def exited_lanes(out):
    lane = cuda.threadIdx.x
    if lane < 4:
        return  # lanes 0-3 exit: the rest of the mask elects among themselves
    if ac.elect_sync():
        out[0] = lane


def test_exited_lanes_of_the_mask_do_not_block_the_election():
    out = np.full(1, -1, np.int32)
    exited_lanes[1, 32](out)
    assert out[0] == 4


@cuda.jit
def half_warp_never_comes():
    lane = cuda.threadIdx.x
    if lane < 16:
        ac.elect_sync()  # BUG: lanes 16-31 of the mask never execute it
    cuda.syncthreads()


def test_a_lane_of_the_mask_that_never_comes_is_a_deadlock_naming_the_lanes():
    with pytest.raises(ac.sim.DeadlockError, match=r"elect_sync: deadlock.*lanes \[16, 17, .*31\] "
                       r"of `mask`=0xffffffff never reach the elect.sync"):
        half_warp_never_comes[1, 32]()


@cuda.jit
def two_masks():
    lane = cuda.threadIdx.x
    if lane < 16:
        ac.elect_sync()
    else:
        ac.elect_sync(0xFFFF0000)  # BUG: lanes 16-31 are in the full mask of the other call


def test_lanes_meeting_with_different_masks_are_an_error():
    with pytest.raises(ac.sim.SimulatorError, match=r"elect_sync: lane \d+ executes elect.sync "
                       r"with `mask`=0x[0-9a-f]{8} at .* while lanes .* wait in elect.sync with "
                       r"`mask`=0x[0-9a-f]{8}"):
        two_masks[1, 32]()


# --- 2. a destination reused while a copy into it is in flight -----------------------------------


@cuda.jit
def two_groups_one_chunk(A, out):
    sh = cuda.shared.array(4, np.uint32, alignment=16)
    tid = cuda.threadIdx.x
    if tid == 0:
        ac.cp_async(sh, A[0:4], 16)
        ac.commit_group()
        ac.cp_async(sh, A[4:8], 16)  # BUG: the first copy into sh may land after this one
        ac.commit_group()
        ac.wait_group(1)
        for j in range(4):
            out[j] = sh[j]
        ac.wait_group(0)


def test_a_cp_async_into_a_chunk_still_in_flight_is_an_error_at_issue():
    a = np.arange(8, dtype=np.uint32)
    line = inspect.getsourcelines(two_groups_one_chunk.py_func)[1]
    with pytest.raises(ac.sim.SimulatorError) as e:
        two_groups_one_chunk[1, 32](a, np.zeros(4, np.uint32))
    msg = str(e.value)
    assert "cp_async: `dst` (shared array allocated at" in msg, msg
    assert ("overlaps the destination of a copy still in flight (cp_async issued at "
            f"{__file__}:{line + 5}") in msg, msg
    assert msg.endswith("[block (0,0,0) thread (0,0,0)]"), msg


def test_the_same_kernel_waiting_between_the_copies_passes():
    @cuda.jit
    def waited(A, out):
        sh = cuda.shared.array(4, np.uint32, alignment=16)
        if cuda.threadIdx.x == 0:
            ac.cp_async(sh, A[0:4], 16)
            ac.commit_group()
            ac.wait_group(0)
            ac.cp_async(sh, A[4:8], 16)
            ac.wait_all()
            for j in range(4):
                out[j] = sh[j]

    a = rng.integers(0, 2**31, 8).astype(np.uint32)
    out = np.zeros(4, np.uint32)
    waited[1, 32](a, out)
    np.testing.assert_array_equal(out, a[4:])


@cuda.jit
def bulk_into_a_tile_in_flight(A, out):
    bars = cuda.shared.array(1, np.uint64)
    sh = cuda.shared.array(64, np.float32, alignment=128)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bars[0:], 1)
        ac.fence_proxy_async("shared::cta")
        ac.mbarrier_arrive_expect_tx(bars[0:], 512)
        ac.cp_async_bulk_g2s(sh[0:64], A[0:64], bars[0:])
        ac.cp_async_bulk_g2s(sh[32:64], A[64:96], bars[0:])  # BUG: overlaps the first, in flight
        ac.mbarrier_wait_parity(bars[0:], 0)


def test_a_bulk_copy_into_a_region_still_in_flight_is_an_error_at_issue():
    with pytest.raises(ac.sim.SimulatorError, match=r"cp_async_bulk_g2s: `dst` \(shared array "
                       r"allocated at .*, byte offset 128\) overlaps the destination of a copy "
                       r"still in flight \(cp_async_bulk_g2s issued at "):
        bulk_into_a_tile_in_flight[1, 32](np.arange(96, dtype=np.float32), np.zeros(1))


@cuda.jit
def load_into_a_store_source(A, B):
    bars = cuda.shared.array(1, np.uint64)
    sh = cuda.shared.array(64, np.float32, alignment=128)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bars[0:], 1)
        ac.fence_proxy_async("shared::cta")
        for i in range(64):
            sh[i] = A[i]
        ac.fence_proxy_async("shared::cta")
        ac.cp_async_bulk_s2g(B[0:64], sh)
        ac.bulk_commit_group()
        ac.mbarrier_arrive_expect_tx(bars[0:], 256)
        ac.cp_async_bulk_g2s(sh[0:64], A[64:128], bars[0:])  # BUG: the store may still read sh
        ac.mbarrier_wait_parity(bars[0:], 0)
        ac.bulk_wait_group(0)


def test_a_copy_into_the_source_of_a_bulk_store_still_reading_it_is_an_error():
    with pytest.raises(ac.sim.SimulatorError, match=r"cp_async_bulk_g2s: `dst` \(shared array "
                       r"allocated at .*\) overlaps the shared source of a bulk store that may still "
                       r"read it \(cp_async_bulk_s2g issued at .*\): call bulk_wait_group\(n, "
                       r"read=True\) before copying into it"):
        load_into_a_store_source[1, 32](np.arange(128, dtype=np.float32), np.zeros(64, np.float32))


# --- 3. root causes first ---------------------------------------------------------------------------


@cuda.jit
def misaligned_producer(src, out):
    bars = cuda.shared.array(1, np.uint64)
    sh = cuda.shared.array(64, np.float32, alignment=128)
    tid = cuda.threadIdx.x
    if tid == 0:
        ac.mbarrier_init(bars[0:], 1)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if tid == 0:
        ac.mbarrier_arrive_expect_tx(bars[0:], 60 * 4)
        ac.cp_async_bulk_g2s(sh[1:61], src[1:61], bars[0:])  # BUG: not 16-byte aligned
    ac.mbarrier_wait_parity(bars[0:], 0)  # the other 63 threads can never pass
    out[tid] = sh[tid]


@pytest.mark.parametrize("run", range(3))
def test_the_violation_not_the_deadlock_it_causes_is_raised(interleaving, run):
    # before: the DeadlockError of a waiting thread in 12 runs of 20
    with pytest.raises(ac.sim.SimulatorError) as e:
        misaligned_producer[1, 64](np.arange(64, dtype=np.float32), np.zeros(64, np.float32))
    assert type(e.value) is ac.sim.SimulatorError, e.value  # not a DeadlockError
    msg = str(e.value)
    assert "cp_async_bulk_g2s: `dst` is not 16-byte aligned" in msg, msg
    assert "[block (0,0,0) thread (0,0,0)]" in msg, msg


@cuda.jit
def starved(src, out):
    bars = cuda.shared.array(2, np.uint64)
    sh = cuda.shared.array(64, np.float32, alignment=128)
    tid = cuda.threadIdx.x
    if tid == 0:
        ac.mbarrier_init(bars[0:], 1)
        ac.mbarrier_init(bars[1:], 32)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if tid < 32:
        if tid == 0:
            ac.mbarrier_arrive_expect_tx(bars[0:], 256)  # BUG: the copy brings 240 bytes
            ac.cp_async_bulk_g2s(sh[0:60], src[0:60], bars[0:])
        ac.mbarrier_wait_parity(bars[0:], 0)
        out[tid] = sh[tid]
        ac.mbarrier_arrive(bars[1:])
    else:
        ac.mbarrier_wait_parity(bars[1:], 0)  # starves only because bars[0] does


def test_a_deadlock_lists_every_blocked_barrier_with_its_counts():
    with pytest.raises(ac.sim.DeadlockError) as e:
        starved[1, 64](np.arange(64, dtype=np.float32), np.zeros(64, np.float32))
    msg = str(e.value)
    line = inspect.getsourcelines(starved.py_func)[1]
    # whichever thread reports, both barriers are listed with their counts and
    # the threads waiting on each; the one that starved (every arrival in, 16
    # bytes never come) says so
    assert "every thread of the block is blocked; all 2 blocked waits:" in msg, msg
    assert (f"the barrier (shared array allocated at {__file__}:{line + 2}, byte offset 0) can "
            "never complete the phase of parity 0; it is in phase 0: expected 1 arrivals, "
            "1 arrived; transaction bytes: expected 256, completed 0, in flight 240, tx-count 16 "
            "after the copies in flight land (starved: every arrival is in but 16 announced "
            f"transaction bytes never come); waiting at {__file__}:{line + 14} "
            "[32 threads, first [block (0,0,0) thread (0,0,0)]]") in msg, msg
    assert (f"the barrier (shared array allocated at {__file__}:{line + 2}, byte offset 8) can "
            "never complete the phase of parity 0; it is in phase 0: expected 32 arrivals, "
            f"0 arrived; transaction bytes: expected 0, completed 0, in flight 0, tx-count 0 "
            f"after the copies in flight land; waiting at {__file__}:{line + 18} "
            "[32 threads, first [block (0,0,0) thread (32,0,0)]]") in msg, msg


@cuda.jit
def too_many_bytes(src, out):
    bars = cuda.shared.array(1, np.uint64)
    sh = cuda.shared.array(64, np.float32, alignment=128)
    tid = cuda.threadIdx.x
    if tid == 0:
        ac.mbarrier_init(bars[0:], 1)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if tid == 0:
        ac.mbarrier_arrive_expect_tx(bars[0:], 128)
        ac.cp_async_bulk_g2s(sh[0:32], src[0:32], bars[0:])
        ac.cp_async_bulk_g2s(sh[32:64], src[32:64], bars[0:])  # BUG: 128 bytes nobody expects
        # (one waiter: with others waiting, the phase may complete between the copies, and the
        # second copy's bytes then count toward the next phase, as on the GPU)
        ac.mbarrier_wait_parity(bars[0:], 0)
        out[tid] = sh[tid]


def test_bytes_beyond_the_phase_are_reported_where_the_copy_was_issued():
    line = inspect.getsourcelines(too_many_bytes.py_func)[1]
    with pytest.raises(ac.sim.SimulatorError) as e:
        too_many_bytes[1, 64](np.arange(64, dtype=np.float32), np.zeros(64, np.float32))
    msg = str(e.value)
    assert type(e.value) is ac.sim.SimulatorError, msg
    assert ("cp_async_bulk_g2s: 128 transaction bytes more than the barrier (shared array "
            f"allocated at {__file__}:{line + 2}, byte offset 0) expects arrived in phase 0 "
            "(expect_tx announced 128 bytes, copies and complete_tx bring 256)") in msg, msg
    assert (f"cp_async_bulk_g2s issued at {__file__}:{line + 12} [block (0,0,0) thread (0,0,0)] "
            "(128 bytes)") in msg, msg
    assert msg.endswith("[block (0,0,0) thread (0,0,0)]"), msg


# --- 4. barrier initialisation: the fence before the async proxy uses it ----------------------------


def _tma_once(fence: str):
    @cuda.jit
    def k(tmap, out):
        tile = cuda.shared.array((8, 32), np.float32, alignment=128)
        bar = cuda.shared.array(1, np.uint64)
        if cuda.threadIdx.x == 0:
            ac.mbarrier_init(bar, 1)
            if fence == "proxy":
                ac.fence_proxy_async("shared::cta")
            elif fence == "mbarrier_init":
                ac.fence_mbarrier_init()
            elif fence == "global":
                ac.fence_proxy_async("global")  # orders global memory only: no fence of the init
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            ac.mbarrier_arrive_expect_tx(bar, 8 * 32 * 4)
            ac.cp_async_bulk_tensor_load(tile, tmap, (0, 0), bar)
        ac.mbarrier_wait_parity(bar, 0)
        for i in range(cuda.threadIdx.x, 8 * 32, cuda.blockDim.x):
            out[i // 32, i % 32] = tile[i // 32, i % 32]
    return k


@pytest.mark.parametrize("fence", ["proxy", "mbarrier_init"])
def test_a_fenced_init_passes(fence):
    a = rng.standard_normal((8, 32)).astype(np.float32)
    out = np.zeros_like(a)
    _tma_once(fence)[1, 32](ac.TensorMap(cuda.to_device(a), (8, 32)), out)
    np.testing.assert_array_equal(out, a)


@pytest.mark.parametrize("fence", ["none", "global"])
def test_a_barrier_used_by_the_async_proxy_without_the_init_fence_is_an_error(fence):
    a = rng.standard_normal((8, 32)).astype(np.float32)
    with pytest.raises(ac.sim.SimulatorError, match=r"cp_async_bulk_tensor_load: the barrier "
                       r"\(shared array allocated at .*\) is used by the async proxy "
                       r"\(cp_async_bulk_tensor_load\) but no fence made its initialisation "
                       r"visible to the async proxy: after mbarrier_init, the initialising "
                       r"thread calls fence_proxy_async\(\"shared::cta\"\) "
                       r"\(fence_mbarrier_init\(\) for a barrier other CTAs use too\)"):
        _tma_once(fence)[1, 32](ac.TensorMap(cuda.to_device(a), (8, 32)), np.zeros_like(a))


# --- 5. the interleaving seed ------------------------------------------------------------------------


def test_seed_is_set_restored_and_validated():
    before = ac.sim.get_seed()
    with ac.sim.seed(11):
        assert ac.sim.get_seed() == 11
        with ac.sim.seed(None):
            assert ac.sim.get_seed() is None
        assert ac.sim.get_seed() == 11
    assert ac.sim.get_seed() == before
    for bad in ("3", 1.5, True):
        with pytest.raises(ValueError, match="seed must be an int or None"):
            ac.sim.set_seed(bad)


# --- cuda.syncwarp (numba-cuda's simulator has none: the package adds it) -----------------


@cuda.jit
def syncwarp_lockstep(out):
    """After a syncwarp every lane sees what lane 0 wrote before it."""
    s = cuda.shared.array(1, np.int32)
    lane = cuda.threadIdx.x
    for i in range(R):
        if lane == 0:
            s[0] = i + 1
        cuda.syncwarp()
        out[lane, i] = s[0]
        cuda.syncwarp()  # every lane read round i before lane 0 writes round i + 1


def test_syncwarp_is_a_warp_barrier(interleaving):
    out = np.full((32, R), -1, np.int32)
    syncwarp_lockstep[1, 32](out)
    np.testing.assert_array_equal(out, np.tile(np.arange(1, R + 1, dtype=np.int32), (32, 1)))


@cuda.jit
def syncwarp_half_never_comes():
    if cuda.threadIdx.x < 16:
        cuda.syncwarp()  # BUG: lanes 16-31 of the mask never execute it
    cuda.syncthreads()


def test_syncwarp_lanes_that_never_come_are_a_deadlock_naming_them():
    with pytest.raises(ac.sim.DeadlockError, match=r"cuda.syncwarp: deadlock.*lanes \[16, 17, .*31\] "
                       r"of `mask`=0xffffffff never reach the bar.warp.sync"):
        syncwarp_half_never_comes[1, 32]()
