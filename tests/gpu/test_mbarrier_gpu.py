"""mbarriers, fences and elect.sync on the GPU: pipelines, phases, counts,
transaction bytes, and the checked-mode watchdog."""

from __future__ import annotations

import time

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

from ..conftest import run_python, skip_on_sim

pytestmark = pytest.mark.gpu
rng = np.random.default_rng()

STAGES, NTILES, TILE = 3, 11, 32 * 4  # more phases than stages: parity flips


def _ring_kernel(noinc: bool):
    @cuda.jit
    def ring(A, out):
        # warp 0 produces tiles with cp.async; warps 1..3 consume them
        full = cuda.shared.array(STAGES, np.uint64)
        empty = cuda.shared.array(STAGES, np.uint64)
        buf = cuda.shared.array((STAGES, 32, 4), np.float32, alignment=16)
        tid = cuda.threadIdx.x
        if tid == 0:
            for s in range(STAGES):
                ac.mbarrier_init(full[s:], 32)
                ac.mbarrier_init(empty[s:], 96)
        cuda.syncthreads()
        if tid < 32:
            for t in range(NTILES):
                s = t % STAGES
                phase = (t // STAGES) & 1
                ac.mbarrier_wait_parity(empty[s:], phase ^ 1)
                ac.cp_async(buf[s, tid, :], A[t, tid, :], 16)
                if noinc:
                    ac.cp_async_mbarrier_arrive(full[s:], noinc=True)
                else:
                    ac.cp_async_mbarrier_arrive(full[s:])
                    ac.mbarrier_arrive(full[s:])
        else:
            c = tid - 32
            for t in range(NTILES):
                s = t % STAGES
                phase = (t // STAGES) & 1
                ac.mbarrier_wait_parity(full[s:], phase)
                # each consumer reads 4 floats of the 128 in the tile
                out[t, c] = buf[s, (c * 4 + 1) % 32, c % 4] * 2.0 + t
                ac.mbarrier_arrive(empty[s:])
    return ring


@pytest.mark.parametrize("noinc", [False, True])
def test_producer_consumer_ring(noinc):
    a = rng.standard_normal((NTILES, 32, 4)).astype(np.float32)
    out = cuda.to_device(np.full((NTILES, 96), np.nan, np.float32))
    _ring_kernel(noinc)[1, 128](cuda.to_device(a), out)
    c = np.arange(96)
    expected = a[:, (c * 4 + 1) % 32, c % 4] * 2.0 + np.arange(NTILES)[:, None]
    np.testing.assert_array_equal(out.copy_to_host(), expected.astype(np.float32))


@cuda.jit
def waits_and_counts(res):
    bars = cuda.shared.array(4, np.uint64)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bars[0:], 2)
        ac.mbarrier_init(bars[1:], 10)
        ac.mbarrier_init(bars[2:], 1)
        st = ac.mbarrier_arrive(bars[0:])          # 1 of 2
        res[0] = ac.mbarrier_test_wait(bars[0:], st)
        res[1] = ac.mbarrier_try_wait(bars[0:], st, 1000)
        res[2] = ac.mbarrier_test_wait_parity(bars[0:], 0)
        st2 = ac.mbarrier_arrive(bars[0:])         # 2 of 2: phase 0 completes
        res[3] = ac.mbarrier_test_wait(bars[0:], st)
        res[4] = ac.mbarrier_try_wait_parity(bars[0:], 0)
        ac.mbarrier_wait(bars[0:], st2)
        ac.mbarrier_wait_parity(bars[0:], 0)
        res[5] = 1
        # a state records the barrier as it was before that arrive
        nc = ac.mbarrier_arrive_no_complete(bars[1:], 3)
        nc2 = ac.mbarrier_arrive_drop_no_complete(bars[1:], 2)
        res[6] = ac.mbarrier_pending_count(nc) * 100 + ac.mbarrier_pending_count(nc2)
        s3 = ac.mbarrier_arrive(bars[1:], 5, sem="release", scope="cta")
        res[7] = ac.mbarrier_test_wait(bars[1:], s3, sem="acquire", scope="cta")
        # transaction bytes: one arrival plus 64 bytes
        s4 = ac.mbarrier_arrive_expect_tx(bars[2:], 64)
        res[8] = ac.mbarrier_test_wait(bars[2:], s4)
        ac.mbarrier_complete_tx(bars[2:], 48)
        res[9] = ac.mbarrier_test_wait(bars[2:], s4)
        ac.mbarrier_complete_tx(bars[2:], 16)
        res[10] = ac.mbarrier_test_wait(bars[2:], s4)
        # next phase: expect_tx then arrive, then complete_tx
        ac.mbarrier_expect_tx(bars[2:], 32)
        s5 = ac.mbarrier_arrive(bars[2:])
        res[11] = ac.mbarrier_test_wait_parity(bars[2:], 1)
        ac.mbarrier_complete_tx(bars[2:], 32, scope="cta")
        res[12] = ac.mbarrier_test_wait(bars[2:], s5)
        ac.mbarrier_inval(bars[0:])
        ac.mbarrier_init(bars[0:], 1)              # re-init after inval
        s6 = ac.mbarrier_arrive(bars[0:])
        res[13] = ac.mbarrier_test_wait(bars[0:], s6)


def test_test_wait_try_wait_blocking_wait_counts_and_tx():
    res = cuda.to_device(np.full(14, 99, np.int32))
    waits_and_counts[1, 32](res)
    got = res.copy_to_host()
    expected = [0, 0, 0, 1, 1, 1, 1007, 1, 0, 0, 1, 0, 1, 1]
    assert got.tolist() == expected


@cuda.jit
def drop_phases(res):
    bar = cuda.shared.array(1, np.uint64)
    tid = cuda.threadIdx.x
    if tid == 0:
        ac.mbarrier_init(bar[0:], 32)
    cuda.syncthreads()
    # phase 0: lanes 0..15 leave (arrive_drop), 16..31 arrive: 32 arrivals
    if tid < 16:
        ac.mbarrier_arrive_drop(bar[0:])
    else:
        ac.mbarrier_arrive(bar[0:], 1)
    ac.mbarrier_wait_parity(bar[0:], 0)
    # a parity wait tells only two phases apart: no lane may start the next
    # phase's arrivals before every lane has passed this wait (the simulator
    # found lanes falling two phases behind without these syncs)
    cuda.syncthreads()
    # phase 1 expects only 16 now: 16 arrivals of the remaining lanes complete it
    if tid >= 16:
        ac.mbarrier_arrive(bar[0:])
        ac.mbarrier_wait_parity(bar[0:], 1)
        res[tid] = 1
    cuda.syncthreads()
    # phase 2: 8 arrivals with count 2 each complete it too
    if tid >= 24:
        ac.mbarrier_arrive(bar[0:], 2)
    if tid >= 16:
        ac.mbarrier_wait_parity(bar[0:], 0)
        res[tid] += 1


def test_arrive_drop_changes_later_phases_and_counts_above_one():
    res = cuda.to_device(np.zeros(32, np.int32))
    drop_phases[1, 32](res)
    got = res.copy_to_host()
    assert got[:16].tolist() == [0] * 16
    assert got[16:].tolist() == [2] * 16


@cuda.jit
def elect(res, mask):
    lane = cuda.threadIdx.x % 32
    if (mask >> lane) & 1:
        res[cuda.threadIdx.x] = ac.elect_sync(mask)
    else:
        res[cuda.threadIdx.x] = 7


@pytest.mark.parametrize("mask", [0xFFFFFFFF, 0x0000FF00, 0x80000001])
def test_elect_sync_elects_one_lane_per_warp(mask):
    res = cuda.to_device(np.full(128, 99, np.int32))
    elect[1, 128](res, np.uint32(mask))
    got = res.copy_to_host().reshape(4, 32)
    lanes = np.array([(mask >> i) & 1 for i in range(32)], bool)
    for w in range(4):
        assert got[w, ~lanes].tolist() == [7] * int((~lanes).sum())
        assert got[w, lanes].sum() == 1  # exactly one elected
        assert set(got[w, lanes].tolist()) <= {0, 1}


@cuda.jit
def proxy_fences(A, out):
    # generic stores to shared, then the fences: must compile, run, keep data
    sh = cuda.shared.array(128, np.float32)
    tid = cuda.threadIdx.x
    sh[tid] = A[tid]
    ac.fence_proxy_async("shared::cta")
    ac.fence_proxy_async()
    ac.fence_proxy_async("global")
    ac.fence_acq_rel_cluster()
    if tid == 0:
        ac.fence_mbarrier_init()
    cuda.syncthreads()
    out[tid] = sh[127 - tid]


def test_fences_run():
    a = rng.standard_normal(128).astype(np.float32)
    out = cuda.to_device(np.full(128, np.nan, np.float32))
    proxy_fences[1, 128](cuda.to_device(a), out)
    np.testing.assert_array_equal(out.copy_to_host(), a[::-1])


WATCHDOG = """
import time
import numpy as np
from numba import cuda
import numba_asynccopy as ac
ac.set_checked(True, timeout_ns=300_000_000)

@cuda.jit
def wrong_expect_tx(out):
    bar = cuda.shared.array(1, np.uint64)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bar[0:], 1)
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        ac.mbarrier_arrive_expect_tx(bar[0:], 256)   # 256 bytes never arrive
        ac.mbarrier_complete_tx(bar[0:], 128)
    ac.mbarrier_wait_parity(bar[0:], 0)
    out[cuda.threadIdx.x] = 1

out = cuda.to_device(np.zeros(64, np.int32))
t0 = time.time()
try:
    wrong_expect_tx[2, 64](out)
    cuda.synchronize()
    print("NO TRAP")
except Exception as e:
    print("LAUNCH FAILED:", type(e).__name__)
print("ELAPSED %.1f" % (time.time() - t0))
"""


@pytest.mark.traps
@skip_on_sim("checked mode's watchdog traps a real GPU after its timeout; the simulator "
             "reports the hang as DeadlockError at once (tests/sim/test_sim_bulk.py)")
def test_watchdog_turns_a_wrong_expect_tx_into_an_error():
    t0 = time.time()
    proc = run_python(WATCHDOG, timeout=120)
    out = proc.stdout + proc.stderr
    assert "LAUNCH FAILED" in out, out
    assert ("numba_asynccopy checked mode: mbarrier_wait_parity: timed out after 300000000 ns "
            "waiting for parity 0 of the barrier at shared address 0x") in out, out
    assert "[block (1,0,0) thread (" in out or "[block (0,0,0) thread (" in out
    elapsed = float(out.split("ELAPSED ")[1].split()[0])
    assert elapsed < 20, elapsed
    assert time.time() - t0 < 90
    # the device is usable again from a fresh process
    again = run_python("""
import numpy as np
from numba import cuda
a = cuda.to_device(np.arange(4))
print("OK", a.copy_to_host().sum())
""")
    assert "OK 6" in again.stdout, again.stdout + again.stderr
