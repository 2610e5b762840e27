"""The simulator's launch loop (sim/engine.py): blocked threads sleep until
what they wait for changes, a deadlock is found at once and lists every
blocked wait, a rule violation is reported before the deadlock it causes,
and a 256-thread block waiting on mbarriers in a loop does work linear in
threads x phases (counted: no polling, no wake-all)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac


@cuda.jit
def mbarrier_loop(A, out, iters):
    bar = cuda.shared.array(1, np.uint64, alignment=8)
    sh = cuda.shared.array(256, np.float32)
    tid = cuda.threadIdx.x
    if tid == 0:
        ac.mbarrier_init(bar, 256)
    cuda.syncthreads()
    acc = 0.0
    for i in range(iters):
        sh[tid] = A[tid] + i
        ac.mbarrier_arrive(bar)
        ac.mbarrier_wait_parity(bar, i % 2)
        acc += sh[(tid + 1) % 256]
        cuda.syncthreads()  # everyone read before the next phase's write
    out[tid] = acc


def test_a_256_thread_block_waiting_on_mbarriers_in_a_loop_never_polls(sim_waits):
    a = np.random.default_rng().standard_normal(256).astype(np.float32)
    out = np.zeros(256, np.float32)
    t0 = time.perf_counter()
    mbarrier_loop[1, 256](a, out, 16)
    dt = time.perf_counter() - t0
    expected = sum(np.roll(a, -1) + np.float32(i) for i in range(16))
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    print(f"256 threads, 16 mbarrier phases: {dt:.2f} s, {sim_waits}")
    # two waits per thread and phase (the parity wait, syncthreads), each
    # woken a few times: about 2 waits and 8 evaluations per thread-phase
    # today; polling, or waking all 256 waiters at each of the 256 arrivals
    # of a phase, would be ~256 per thread-phase
    thread_phases = 256 * 16
    assert sim_waits["waits"] <= 3 * thread_phases, sim_waits
    assert sim_waits["evaluations"] <= 16 * thread_phases, sim_waits


@cuda.jit
def half_in_syncthreads(out):
    bar = cuda.shared.array(1, np.uint64, alignment=8)
    tid = cuda.threadIdx.x
    if tid == 0:
        ac.mbarrier_init(bar, 64)  # BUG: only 32 threads arrive
    cuda.syncthreads()
    if tid < 32:
        ac.mbarrier_arrive(bar)
        ac.mbarrier_wait_parity(bar, 0)
    cuda.syncthreads()
    out[tid] = 1


def test_a_deadlock_lists_the_barrier_wait_and_the_syncthreads_wait():
    with pytest.raises(ac.sim.DeadlockError) as e:
        half_in_syncthreads[1, 64](np.zeros(64, np.int32))
    msg = str(e.value)
    assert "mbarrier_wait_parity: deadlock" in msg, msg
    assert "phase 0: expected 64 arrivals, 32 arrived" in msg, msg
    assert "[32 threads, first [block (0,0,0) thread (0,0,0)]]" in msg, msg
    assert "cuda.syncthreads: deadlock: waiting at " in msg and "test_sim_engine.py:" in msg, msg
    assert "[32 threads, first [block (0,0,0) thread (32,0,0)]]" in msg, msg


@cuda.jit
def violation_then_starve(A, out):
    bar = cuda.shared.array(1, np.uint64, alignment=8)
    sh = cuda.shared.array(64, np.float32, alignment=16)
    tid = cuda.threadIdx.x
    if tid == 0:
        ac.mbarrier_init(bar, 1)
    cuda.syncthreads()
    if tid == 0:
        ac.mbarrier_arrive_expect_tx(bar, 256)
        ac.cp_async_bulk_g2s(sh[1:], A[1:], bar)  # BUG: misaligned, raises
    ac.mbarrier_wait_parity(bar, 0)  # the others would starve
    out[tid] = sh[tid]


def test_the_rule_violation_is_reported_not_the_deadlock_it_causes():
    for _ in range(3):
        with pytest.raises(ac.sim.SimulatorError) as e:
            violation_then_starve[1, 64](np.zeros(65, np.float32), np.zeros(64, np.float32))
        assert not isinstance(e.value, ac.sim.DeadlockError), str(e.value)
        assert "cp_async_bulk_g2s" in str(e.value), str(e.value)


@cuda.jit
def blocks_have_their_own_shared_memory(out):
    sh = cuda.shared.array(1, np.int32)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = sh[0]  # uninitialised: poison in every block
        sh[0] = cuda.blockIdx.x


def test_each_block_starts_with_fresh_shared_memory():
    out = np.zeros(4, np.int32)
    blocks_have_their_own_shared_memory[4, 32](out)
    np.testing.assert_array_equal(out, np.full(4, -1, np.int32))  # 0xFFFFFFFF poison


# --- carriers: the OS threads are reused, the simulated threads are not --------------

_seen: list = []


@cuda.jit
def record_carrier(out):
    import threading

    t = threading.current_thread()
    tid = cuda.threadIdx.x
    # a fresh simulated thread: nothing of the one its carrier ran before
    _seen.append((t, tid, sorted(k for k in t.__dict__ if k.startswith("_ac_") and
                                       k not in ("_ac_go", "_ac_keep_keys", "_ac_job",
                                                 "_ac_done", "_ac_debug"))))
    ac.commit_group()  # leaves per-thread state (the cp.async groups) behind
    ac.wait_all()
    cuda.syncthreads()
    out[tid] = tid + 10 * cuda.blockIdx.x


def test_launches_reuse_os_threads_but_start_every_simulated_thread_afresh():
    from numba_asynccopy.sim import _numba_sim_internals as nbsim

    out = np.full(64, -1, np.int64)
    record_carrier[1, 64](out)
    first = {t for t, _, _ in _seen}  # the objects: their ids could be reused
    np.testing.assert_array_equal(out, np.arange(64))
    _seen.clear()
    out[:] = -1
    record_carrier[1, 64](out)
    again = {t for t, _, _ in _seen}
    np.testing.assert_array_equal(out, np.arange(64))
    assert len(first) == 64 and len(again) == 64
    assert again <= first | {id(t) for t in nbsim._idle}, "the second launch made new threads"
    assert len(again & first) == 64, "a launch of the same size reuses every carrier"
    # what the last simulated thread kept in its thread (_ac_thread, ...) is gone
    assert all(keys == [] for _, _, keys in _seen), _seen[:3]
    assert sorted(tid for _, tid, _ in _seen) == list(range(64))
    _seen.clear()


@cuda.jit
def spin_on_a_flag(flag, out):
    tid = cuda.threadIdx.x
    if tid == 0:
        while flag[0] == 0:  # no simulator call: this thread never hands off
            pass
        out[0] = flag[0]
    elif tid == 31:
        flag[0] = 7


def test_a_thread_spinning_without_simulator_calls_does_not_starve_the_others():
    # threads start one at a time (each when the one before blocks or exits);
    # the launching thread's watchdog starts the rest when none hands off
    flag = np.zeros(1, np.int32)
    out = np.full(1, -1, np.int32)
    spin_on_a_flag[1, 32](flag, out)
    assert out[0] == 7


_order: list = []


@cuda.jit
def log_turns(out):
    tid = cuda.threadIdx.x
    for i in range(4):
        ac.commit_group()  # an intrinsic call: a scheduling point under a seed
        _order.append(tid)
    ac.wait_all()
    out[tid] = tid


def _turns(seed) -> list:
    _order.clear()
    out = np.full(32, -1, np.int64)
    with ac.sim.seed(seed):
        log_turns[1, 32](out)
    np.testing.assert_array_equal(out, np.arange(32))
    return list(_order)


def test_a_seed_gives_the_same_interleaving_every_time_and_seeds_differ():
    # the simulated threads run one at a time: at a seed's scheduling points a
    # thread gives up its turn as the seed's generator says, so the order is
    # the seed's, not the OS scheduler's
    unseeded = _turns(None)
    assert unseeded == sorted(unseeded)  # no seed: each thread runs to its first wait
    a, b = _turns(3), _turns(3)
    assert a == b
    assert a != unseeded and sorted(a) == sorted(unseeded)
    assert _turns(4) != a
