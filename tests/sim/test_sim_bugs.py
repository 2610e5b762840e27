"""Buggy kernels fail in the simulator (poison or a DeadlockError naming the
barrier), and the same kernels fixed pass; the eager schedule shows that
the missing-wait bugs depend on the schedule."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

rng = np.random.default_rng()
POISON_U32 = 0xFFFFFFFF


def rows(n=64, w=4):
    return rng.integers(0, 2**32 - 1, (n, w), dtype=np.uint32)  # never all ones


def run(kernel, a, block=64, extra=()):
    out = np.zeros_like(a)
    kernel[1, block](a, out, *extra)
    return out


# --- 1. a read before wait_group ---------------------------------------------


@cuda.jit
def read_before_wait(A, B):
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((64, 4), np.uint32, alignment=16)
    ac.cp_async(sh[tid, :], A[tid, :], 16)
    ac.commit_group()
    for j in range(4):
        B[tid, j] = sh[tid, j]  # BUG: the group has not been waited for
    ac.wait_group(0)


@cuda.jit
def read_after_wait(A, B):
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((64, 4), np.uint32, alignment=16)
    ac.cp_async(sh[tid, :], A[tid, :], 16)
    ac.commit_group()
    ac.wait_group(0)
    for j in range(4):
        B[tid, j] = sh[tid, j]


def test_read_before_wait_group_reads_poison():
    a = rows()
    out = run(read_before_wait, a)
    assert (out == POISON_U32).all()
    np.testing.assert_array_equal(run(read_after_wait, a), a)


def test_read_before_wait_group_passes_in_the_eager_schedule():
    a = rows()
    with ac.sim.schedule("eager"):
        np.testing.assert_array_equal(run(read_before_wait, a), a)


# --- 2. wait_group(1) where 0 was needed ----------------------------------------


def make_two_groups(newest_wait):
    @cuda.jit
    def two_groups(A, B):
        tid = cuda.threadIdx.x
        sh = cuda.shared.array((2, 64, 4), np.uint32, alignment=16)
        for s in range(2):
            ac.cp_async(sh[s, tid, :], A[tid, :], 16)
            ac.commit_group()
        ac.wait_group(newest_wait)  # 1 is the BUG: the newest group may be in flight
        for j in range(4):
            B[tid, j] = sh[1, tid, j]
        ac.wait_all()

    return two_groups


def test_wait_group_1_where_0_was_needed_reads_poison():
    a = rows()
    assert (run(make_two_groups(1), a) == POISON_U32).all()
    np.testing.assert_array_equal(run(make_two_groups(0), a), a)


# --- 3. a missing barrier wait -------------------------------------------------


def make_barrier_rows(wait: bool):
    @cuda.jit
    def barrier_rows(A, B):
        tid = cuda.threadIdx.x
        sh = cuda.shared.array((64, 4), np.uint32, alignment=16)
        bars = cuda.shared.array(1, np.uint64)
        if tid == 0:
            ac.mbarrier_init(bars[0:], 64)
        cuda.syncthreads()
        ac.cp_async(sh[tid, :], A[tid, :], 16)
        ac.cp_async_mbarrier_arrive(bars[0:], noinc=True)
        cuda.syncthreads()
        if wait:  # without it (the BUG) the copies may not have landed
            ac.mbarrier_wait_parity(bars[0:], 0)
        for j in range(4):
            B[tid, j] = sh[(tid + 1) % 64, j]

    return barrier_rows


def test_missing_barrier_wait_is_named():
    # each thread reads the row another thread's copy still writes: a named read race
    a = rows()
    with pytest.raises(ac.sim.SimulatorError,
                       match=r"shared-memory read: race: thread \[block \(0,0,0\) thread \(\d+,0,0\)\] "
                             r"reads element \(\d+, \d\) of shared array allocated at .* which a copy "
                             r"of another thread still writes: cp_async issued at .*, tracked by the "
                             r"barrier \(.*\) through cp_async_mbarrier_arrive: wait on that barrier's "
                             r"phase \(mbarrier_wait\)"):
        run(make_barrier_rows(False), a)
    np.testing.assert_array_equal(run(make_barrier_rows(True), a), np.roll(a, -1, axis=0))


def test_missing_barrier_wait_passes_in_the_eager_schedule():
    a = rows()
    with ac.sim.schedule("eager"):
        np.testing.assert_array_equal(run(make_barrier_rows(False), a), np.roll(a, -1, axis=0))


# --- 4. a wrong expect_tx --------------------------------------------------------


def make_tx_kernel(expect_bytes: int, shift: int = 1):
    """Thread 0 announces the tile's bytes; each thread copies its row and
    reports its 16 bytes as completed transactions; all wait on phase 0,
    then read the row ``shift`` below their own."""

    @cuda.jit
    def tx_rows(A, B):
        tid = cuda.threadIdx.x
        sh = cuda.shared.array((64, 4), np.uint32, alignment=16)
        bars = cuda.shared.array(1, np.uint64)
        if tid == 0:
            ac.mbarrier_init(bars[0:], 1)
        cuda.syncthreads()
        if tid == 0:
            ac.mbarrier_arrive_expect_tx(bars[0:], expect_bytes)
        ac.cp_async(sh[tid, :], A[tid, :], 16)
        ac.wait_all()
        ac.mbarrier_complete_tx(bars[0:], 16)
        ac.mbarrier_wait_parity(bars[0:], 0)
        for j in range(4):
            B[tid, j] = sh[(tid + shift) % 64, j]

    return tx_rows


def test_expect_tx_too_large_raises_deadlock_naming_the_barrier():
    a = rows()
    wrong = 64 * 16 + 16
    with pytest.raises(ac.sim.DeadlockError) as e:
        run(make_tx_kernel(wrong), a)
    msg = str(e.value)
    assert "mbarrier_wait_parity: deadlock: every thread of the block is blocked" in msg
    assert "shared array allocated at" in msg and "test_sim_bugs.py" in msg
    assert "can never complete the phase of parity 0" in msg
    assert "phase 0: expected 1 arrivals, 1 arrived" in msg
    assert f"transaction bytes: expected {wrong}, completed 1024" in msg
    assert f"tx-count {wrong - 1024} after" in msg
    src, first = inspect.getsourcelines(make_tx_kernel)
    line = first + next(i for i, t in enumerate(src) if "ac.mbarrier_wait_parity(" in t)
    assert f"test_sim_bugs.py:{line}" in msg, msg


def test_expect_tx_too_small_is_reported_when_the_block_exits():
    # phase 0 completes once 1008 bytes are in (as on the GPU: the rest of
    # the tile may not have landed); the extra 16 bytes leave phase 1 at -16
    # (each thread reads its own row: another thread's row may be read before
    # its writer's complete_tx, test_expect_tx_too_small_is_a_read_race)
    a = rows()
    with pytest.raises(ac.sim.SimulatorError) as e:
        run(make_tx_kernel(64 * 16 - 16, shift=0), a)
    msg = str(e.value)
    assert "block (0,0,0) exited with the barrier (shared array allocated at" in msg
    assert "phase 1: expected 1 arrivals, 0 arrived" in msg
    assert "transaction bytes: expected 0, completed 16, in flight 0, tx-count -16" in msg
    assert "announced with expect_tx (0) do not match the bytes completed (16)" in msg


def test_expect_tx_too_small_with_rows_of_other_threads_is_named():
    # the phase completes before the last thread's complete_tx: its row, read by
    # another thread before that complete_tx, is a read race; read after it (the
    # schedule decides), the bytes are left over when the block exits
    with pytest.raises(ac.sim.SimulatorError,
                       match=r"shared-memory read: race: .* which (another thread's copy wrote "
                             r"\(cp_async issued at .*, landed at that thread's wait_all at .*\), "
                             r"with no barrier between that and this read|a copy of another thread "
                             r"still writes: cp_async issued at)|exited with the barrier "
                             r".* do not match the bytes completed \(16\)"):
        run(make_tx_kernel(64 * 16 - 16), rows())


def test_right_expect_tx_passes():
    a = rows()
    np.testing.assert_array_equal(run(make_tx_kernel(64 * 16), a), np.roll(a, -1, axis=0))


# --- 5. arrival counts and spin loops --------------------------------------------


def make_count_kernel(init_count: int, spin: bool):
    @cuda.jit
    def counted(A, B):
        tid = cuda.threadIdx.x
        bars = cuda.shared.array(1, np.uint64)
        if tid == 0:
            ac.mbarrier_init(bars[0:], init_count)
        cuda.syncthreads()
        st = ac.mbarrier_arrive(bars[0:])
        if spin:
            while not ac.mbarrier_try_wait(bars[0:], st):
                pass
        else:
            ac.mbarrier_wait(bars[0:], st)
        B[tid, 0] = A[tid, 0]

    return counted


@pytest.mark.parametrize("spin", [False, True])
def test_init_count_too_large_deadlocks_instead_of_hanging(spin):
    a = rows(32)
    with pytest.raises(ac.sim.DeadlockError) as e:
        run(make_count_kernel(33, spin), a, block=32)
    api = "mbarrier_try_wait" if spin else "mbarrier_wait"
    assert f"{api}: deadlock" in str(e.value)
    assert "phase 0: expected 33 arrivals, 32 arrived" in str(e.value)
    assert "can never complete phase 0 (state 0x" in str(e.value)


def test_init_count_too_small_leaks_into_the_next_phase_and_deadlocks():
    # 31 arrivals complete phase 0; the 32nd counts for phase 1, as on the GPU
    a = rows(32)
    with pytest.raises(ac.sim.DeadlockError) as e:
        run(make_count_kernel(31, False), a, block=32)
    assert "can never complete phase 1 (state 0x" in str(e.value)
    assert "phase 1: expected 31 arrivals, 1 arrived" in str(e.value)


@cuda.jit
def arrive_while_tx_pending(A, B):
    bars = cuda.shared.array(1, np.uint64)
    ac.mbarrier_init(bars[0:], 1)
    ac.mbarrier_arrive_expect_tx(bars[0:], 16)
    ac.mbarrier_arrive(bars[0:])  # BUG: phase 0 has no arrival left to make


def test_arrival_beyond_the_expected_count_is_an_error():
    with pytest.raises(ac.sim.SimulatorError, match=r"mbarrier_arrive: 1 arrival\(s\) on the "
                       r"barrier .* in phase 0, but only 0 of its expected 1 arrivals are still "
                       r"pending"):
        run(arrive_while_tx_pending, rows(1), block=1)


@pytest.mark.parametrize("spin", [False, True])
def test_right_count_passes(spin):
    a = rows(32)
    out = run(make_count_kernel(32, spin), a, block=32)
    np.testing.assert_array_equal(out[:, 0], a[:, 0])
