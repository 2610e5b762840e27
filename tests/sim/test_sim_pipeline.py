"""ac.pipeline in the simulator: every kind runs a ring over several wraps
and matches numpy under the worst-case schedule, and each misuse of the
protocol is a named error (operation, slot, phase, counts)."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

rng = np.random.default_rng()
STAGES = 3
NT = 8  # tiles: more than two wraps of the ring
ROWS, COLS = 8, 32
CONS = 32  # consumer threads (one warp)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# --- 1. the four kinds, correct -------------------------------------------------------------------


@cuda.jit
def tma_ring(tmap, out, ntiles):
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, ROWS, COLS), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=CONS)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    if tid < 32:                                   # producer warp, one elected lane
        if ac.elect_sync():
            st = ac.pipeline.producer_start(pipe)
            for t in range(ntiles):
                ac.pipeline.producer_acquire(pipe, st)
                ac.pipeline.copy_tensor(pipe, st, ring[st.slot], tmap, (ROWS * t, 0))
                ac.pipeline.producer_commit(pipe, st)
                st = ac.pipeline.advance(pipe, st)
            ac.pipeline.producer_tail(pipe, st)
    else:
        c = tid - 32
        st = ac.pipeline.consumer_start(pipe)
        for t in range(ntiles):
            ac.pipeline.consumer_wait(pipe, st)
            for r in range(ROWS):
                out[ROWS * t + r, c] = ring[st.slot, r, c] * 2.0
            ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)


def test_tma_ring_matches_numpy():
    a = rand(ROWS * NT, COLS)
    tmap = ac.TensorMap(cuda.to_device(a), (ROWS, COLS))
    out = np.full_like(a, np.nan)
    tma_ring[1, 32 + CONS](tmap, out, NT)
    np.testing.assert_array_equal(out, 2 * a)


@cuda.jit
def bulk_ring(src, out, ntiles):  # two copies a stage: the halves of a tile
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 64), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=CONS, copies=2)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    if tid == 0:
        st = ac.pipeline.producer_start(pipe)
        for t in range(ntiles):
            ac.pipeline.producer_acquire(pipe, st)
            ac.pipeline.copy_bulk(pipe, st, ring[st.slot, :32], src[64 * t:64 * t + 32])
            ac.pipeline.copy_bulk(pipe, st, ring[st.slot, 32:], src[64 * t + 32:64 * t + 64])
            ac.pipeline.producer_commit(pipe, st)
            st = ac.pipeline.advance(pipe, st)
        ac.pipeline.producer_tail(pipe, st)
    elif tid >= 32:
        c = tid - 32
        st = ac.pipeline.consumer_start(pipe)
        for t in range(ntiles):
            ac.pipeline.consumer_wait(pipe, st)
            out[t, c] = ring[st.slot, c] + ring[st.slot, c + 32]
            ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)


def test_bulk_ring_two_copies_a_stage():
    a = rand(64 * NT)
    out = np.full((NT, 32), np.nan, np.float32)
    bulk_ring[1, 32 + CONS](a, out, NT)
    t = a.reshape(NT, 64)
    np.testing.assert_array_equal(out, t[:, :32] + t[:, 32:])


@cuda.jit
def cp_async_ring(src, out, ntiles):  # src: float32[ntiles, 32, 4]
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 32, 4), np.float32, alignment=16)
    pipe = ac.pipeline.cp_async_pipeline(bars, STAGES, producers=32, consumers=CONS)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    if tid < 32:
        st = ac.pipeline.producer_start(pipe)
        for t in range(ntiles):
            while not ac.pipeline.producer_try_acquire(pipe, st):
                pass
            ac.cp_async(ring[st.slot, tid, :], src[t, tid, :], 16)
            ac.pipeline.producer_commit(pipe, st)
            st = ac.pipeline.advance(pipe, st)
    else:
        c = tid - 32
        st = ac.pipeline.consumer_start(pipe)
        for t in range(ntiles):
            while not ac.pipeline.consumer_try_wait(pipe, st):
                pass
            for j in range(4):
                out[t, (c + 1) % 32, j] = ring[st.slot, (c + 1) % 32, j]  # another thread's copy
            ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)


def test_cp_async_ring_matches_numpy():
    a = rand(NT, 32, 4)
    out = np.full_like(a, np.nan)
    cp_async_ring[1, 32 + CONS](a, out, NT)
    np.testing.assert_array_equal(out, a)


@cuda.jit
def group_ring(src, out, ntiles):  # src: float32[ntiles, 32, 4]; each thread its own row
    ring = cuda.shared.array((STAGES, 32, 4), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    pipe = ac.pipeline.group_pipeline(STAGES)
    ps = ac.pipeline.producer_start(pipe)
    cs = ac.pipeline.consumer_start(pipe)
    for s in range(STAGES - 1):
        ac.pipeline.producer_acquire(pipe, ps)
        if s < ntiles:
            ac.cp_async(ring[ps.slot, tid, :], src[s, tid, :], 16)
        ac.pipeline.producer_commit(pipe, ps)
        ps = ac.pipeline.advance(pipe, ps)
    for t in range(ntiles):
        ac.pipeline.producer_acquire(pipe, ps)
        if t + STAGES - 1 < ntiles:
            ac.cp_async(ring[ps.slot, tid, :], src[t + STAGES - 1, tid, :], 16)
        ac.pipeline.producer_commit(pipe, ps)
        ps = ac.pipeline.advance(pipe, ps)
        ac.pipeline.consumer_wait(pipe, cs)
        for j in range(4):
            out[t, tid, j] = ring[cs.slot, tid, j]
        ac.pipeline.consumer_release(pipe, cs)
        cs = ac.pipeline.advance(pipe, cs)
    ac.pipeline.producer_tail(pipe, ps)


@cuda.jit
def shared_group_ring(src, out, ntiles):  # sgemm's order: wait, refill the slot read last, use
    ring = cuda.shared.array((STAGES, 32, 4), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    pipe = ac.pipeline.group_pipeline(STAGES, shared=True)
    ps = ac.pipeline.producer_start(pipe)
    cs = ac.pipeline.consumer_start(pipe)
    for s in range(STAGES - 1):
        ac.pipeline.producer_acquire(pipe, ps)
        if s < ntiles:
            ac.cp_async(ring[ps.slot, tid, :], src[s, tid, :], 16)
        ac.pipeline.producer_commit(pipe, ps)
        ps = ac.pipeline.advance(pipe, ps)
    for t in range(ntiles):
        ac.pipeline.consumer_wait(pipe, cs)
        ac.pipeline.producer_acquire(pipe, ps)
        if t + STAGES - 1 < ntiles:
            ac.cp_async(ring[ps.slot, tid, :], src[t + STAGES - 1, tid, :], 16)
        ac.pipeline.producer_commit(pipe, ps)
        ps = ac.pipeline.advance(pipe, ps)
        for j in range(4):
            out[t, tid, j] = ring[cs.slot, (tid + 1) % 32, j]
        ac.pipeline.consumer_release(pipe, cs)
        cs = ac.pipeline.advance(pipe, cs)
    ac.pipeline.producer_tail(pipe, ps)


def test_group_rings_match_numpy():
    a = rand(NT, 32, 4)
    out = np.full_like(a, np.nan)
    group_ring[1, 32](a, out, NT)
    np.testing.assert_array_equal(out, a)
    out = np.full_like(a, np.nan)
    shared_group_ring[1, 32](a, out, NT)
    np.testing.assert_array_equal(out, np.roll(a, -1, axis=1))


def test_rings_also_pass_eagerly():
    a = rand(NT, 32, 4)
    with ac.sim.schedule("eager"):
        out = np.full_like(a, np.nan)
        cp_async_ring[1, 32 + CONS](a, out, NT)
        np.testing.assert_array_equal(out, a)
        b = rand(64 * NT)
        out = np.full((NT, 32), np.nan, np.float32)
        bulk_ring[1, 32 + CONS](b, out, NT)
        t = b.reshape(NT, 64)
        np.testing.assert_array_equal(out, t[:, :32] + t[:, 32:])


# --- 2. misuse ----------------------------------------------------------------------------------


@cuda.jit
def starved(src, out, fills, waits):
    """The producer fills ``fills`` stages; the consumers wait for ``waits``."""
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 64), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=CONS)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    if tid == 0:
        st = ac.pipeline.producer_start(pipe)
        for t in range(fills):
            ac.pipeline.producer_acquire(pipe, st)
            ac.pipeline.copy_bulk(pipe, st, ring[st.slot], src[64 * t:64 * t + 64])
            ac.pipeline.producer_commit(pipe, st)
            st = ac.pipeline.advance(pipe, st)
    elif tid >= 32:
        st = ac.pipeline.consumer_start(pipe)
        for t in range(waits):
            ac.pipeline.consumer_wait(pipe, st)
            out[t, tid - 32] = ring[st.slot, tid - 32]
            ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)


def test_consumer_waiting_on_a_slot_no_producer_fills_is_a_named_deadlock():
    a = rand(64 * NT)
    out = np.zeros((NT, 32), np.float32)
    with pytest.raises(ac.sim.DeadlockError) as e:
        starved[1, 32 + CONS](a, out, 4, 5)
    msg = str(e.value)
    assert "pipeline consumer_wait: deadlock" in msg, msg
    assert "slot 1 (step 4, phase 1) of a tma pipeline (3 stages, 1 copy per stage, 32 consumers)" in msg
    assert "can never become full (no producer commits it)" in msg
    assert "expected 1 arrivals, 0 arrived" in msg, msg


@cuda.jit
def release_without_wait(src, out):
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 64), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=CONS)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    if tid == 0:
        st = ac.pipeline.producer_start(pipe)
        ac.pipeline.producer_acquire(pipe, st)
        ac.pipeline.copy_bulk(pipe, st, ring[st.slot], src[:64])
        ac.pipeline.producer_commit(pipe, st)
    elif tid >= 32:
        st = ac.pipeline.consumer_start(pipe)
        out[tid - 32] = ring[st.slot, tid - 32]          # BUG: no consumer_wait
        ac.pipeline.consumer_release(pipe, st)


def test_release_without_wait():
    with pytest.raises(ac.sim.SimulatorError) as e:
        release_without_wait[1, 32 + CONS](rand(64), np.zeros(32, np.float32))
    msg = str(e.value)
    assert "pipeline consumer_release: slot 0 (step 0, phase 0) of a tma pipeline" in msg, msg
    assert "consumer_release without a consumer_wait of this state" in msg


@cuda.jit
def acquire_twice(src, out, advance):
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 64), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=CONS)
    ac.pipeline.init(pipe)
    if cuda.threadIdx.x == 0:
        st = ac.pipeline.producer_start(pipe)
        for t in range(2):
            ac.pipeline.producer_acquire(pipe, st)
            ac.pipeline.copy_bulk(pipe, st, ring[st.slot], src[64 * t:64 * t + 64])
            ac.pipeline.producer_commit(pipe, st)
            if advance:
                st = ac.pipeline.advance(pipe, st)


def test_second_acquire_of_a_slot_in_use():
    with pytest.raises(ac.sim.SimulatorError) as e:
        acquire_twice[1, 32 + CONS](rand(128), np.zeros(32, np.float32), False)
    msg = str(e.value)
    assert "pipeline producer_acquire: slot 0 (step 0, phase 1)" in msg, msg
    assert "second producer_acquire of a slot still in use" in msg
    assert "advance the state" in msg


@cuda.jit
def acquire_without_commit(src):
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 64), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=CONS)
    ac.pipeline.init(pipe)
    if cuda.threadIdx.x == 0:
        st = ac.pipeline.producer_start(pipe)
        ac.pipeline.producer_acquire(pipe, st)
        ac.pipeline.copy_bulk(pipe, st, ring[st.slot], src)
        ac.pipeline.producer_acquire(pipe, st)          # BUG: not committed


def test_acquire_of_an_uncommitted_slot():
    with pytest.raises(ac.sim.SimulatorError, match="acquired it at state step 0 and has not committed it"):
        acquire_without_commit[1, 32 + CONS](rand(64))


@cuda.jit
def wrong_copies(src, raw):
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 64), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=CONS, copies=2)
    ac.pipeline.init(pipe)
    if cuda.threadIdx.x == 0:
        st = ac.pipeline.producer_start(pipe)
        ac.pipeline.producer_acquire(pipe, st)
        ac.pipeline.copy_bulk(pipe, st, ring[st.slot, :32], src[:32])
        if raw:   # BUG: the second half bypasses the pipeline (its bytes were never armed)
            ac.mbarrier_arrive(bars[0, st.slot:])
            ac.cp_async_bulk_g2s(ring[st.slot, 32:], src[32:], bars[0, st.slot:])
        ac.pipeline.producer_commit(pipe, st)           # BUG (raw=False): one copy of two


def test_stage_with_fewer_copies_than_built_for():
    with pytest.raises(ac.sim.SimulatorError) as e:
        wrong_copies[1, 32 + CONS](rand(64), False)
    msg = str(e.value)
    assert "pipeline producer_commit: slot 0 (step 0, phase 1) of a tma pipeline (3 stages, 2 copies" in msg
    assert "1 copy (128 bytes) issued into the stage, but the pipeline was built for copies=2" in msg


def test_stage_whose_copies_carry_other_bytes_than_armed():
    with pytest.raises(ac.sim.SimulatorError) as e:
        wrong_copies[1, 32 + CONS](rand(64), True)
    msg = str(e.value)
    # reported at the raw copy that brought the bytes the phase never expected
    assert "cp_async_bulk_g2s: 128 transaction bytes more than the barrier" in msg, msg
    assert "(expect_tx announced 128 bytes, copies and complete_tx bring 256)" in msg
    line = inspect.getsourcelines(wrong_copies.py_func)[1] + 12  # the raw cp_async_bulk_g2s
    assert f"cp_async_bulk_g2s issued at {__file__}:{line}" in msg, msg


@cuda.jit
def consumers_ring(src, out, ntiles):  # the pipeline is built for CONS consumers; the block decides
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 64), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=CONS)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    if tid == 0:
        st = ac.pipeline.producer_start(pipe)
        for t in range(ntiles):
            ac.pipeline.producer_acquire(pipe, st)
            ac.pipeline.copy_bulk(pipe, st, ring[st.slot], src[64 * t:64 * t + 64])
            ac.pipeline.producer_commit(pipe, st)
            st = ac.pipeline.advance(pipe, st)
        ac.pipeline.producer_tail(pipe, st)
    elif tid >= 32:
        c = tid - 32
        st = ac.pipeline.consumer_start(pipe)
        for t in range(ntiles):
            ac.pipeline.consumer_wait(pipe, st)
            out[t, c] = ring[st.slot, c % 64]
            ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)


def test_more_consumer_threads_than_built_for():
    with pytest.raises(ac.sim.SimulatorError) as e:
        # one fill: the extra releases come after the phase completed, nothing else can block
        consumers_ring[1, 32 + CONS + 8](rand(64), np.zeros((1, CONS + 8), np.float32), 1)
    msg = str(e.value)
    assert "pipeline consumer_release: slot 0 (step 0, phase 0)" in msg, msg
    assert f"all {CONS} consumer releases of this fill already came" in msg
    assert f"more threads release than the consumers={CONS} the pipeline was built for" in msg


def test_fewer_consumer_threads_than_built_for():
    with pytest.raises(ac.sim.SimulatorError) as e:
        consumers_ring[1, 32 + CONS - 8](rand(64 * NT), np.zeros((NT, CONS), np.float32), NT)
    msg = str(e.value)
    # the producer waits for the releases, the consumers for the fill: either reports
    assert "pipeline producer_acquire: deadlock" in msg or "pipeline consumer_wait: deadlock" in msg, msg
    assert f"its empty barrier is in phase 0: expected {CONS} arrivals, {CONS - 8} arrived" in msg


def test_block_smaller_than_the_pipeline():
    with pytest.raises(ac.sim.SimulatorError) as e:
        consumers_ring[1, CONS](rand(64 * NT), np.zeros((NT, CONS), np.float32), NT)
    assert (f"pipeline init: the block has {CONS} threads; a tma pipeline (3 stages, 1 copy per "
            f"stage, {CONS} consumers) is built for {CONS + 1} producer and consumer threads") in str(e.value)


@cuda.jit
def group_not_ahead(src, out, ntiles):  # BUG: no prologue, so wait_group(stages - 1) waits for nothing
    ring = cuda.shared.array((STAGES, 32, 4), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    pipe = ac.pipeline.group_pipeline(STAGES)
    ps = ac.pipeline.producer_start(pipe)
    cs = ac.pipeline.consumer_start(pipe)
    for t in range(ntiles):
        ac.pipeline.producer_acquire(pipe, ps)
        ac.cp_async(ring[ps.slot, tid, :], src[t, tid, :], 16)
        ac.pipeline.producer_commit(pipe, ps)
        ps = ac.pipeline.advance(pipe, ps)
        ac.pipeline.consumer_wait(pipe, cs)
        for j in range(4):
            out[t, tid, j] = ring[cs.slot, tid, j]
        ac.pipeline.consumer_release(pipe, cs)
        cs = ac.pipeline.advance(pipe, cs)


def test_group_pipeline_without_the_producer_ahead():
    a = rand(NT, 32, 4)
    with pytest.raises(ac.sim.SimulatorError) as e:
        group_not_ahead[1, 32](a, np.zeros_like(a), NT)
    msg = str(e.value)
    assert "pipeline consumer_wait: slot 0 (step 0, phase 0) of a group pipeline (3 stages)" in msg, msg
    assert "only 0 group(s) were committed after this stage, but the pipeline waits with wait_group(2)" in msg



# --- a tma ring run by one thread (consumers=0): the copy examples' ring -------------------


@cuda.jit
def solo_ring(src, dst, ntiles, release):
    bars = cuda.shared.array(STAGES, np.uint64)              # full barriers only
    ring = cuda.shared.array((STAGES, 64), np.float32, alignment=128)
    if cuda.threadIdx.x == 0:
        pipe = ac.pipeline.tma_pipeline(bars, STAGES, 0)
        ac.pipeline.init(pipe)
        ps = ac.pipeline.producer_start(pipe)
        cs = ac.pipeline.consumer_start(pipe)
        for s in range(STAGES):
            ac.pipeline.producer_acquire(pipe, ps)
            ac.pipeline.copy_bulk(pipe, ps, ring[ps.slot], src[64 * s:64 * s + 64])
            ac.pipeline.producer_commit(pipe, ps)
            ps = ac.pipeline.advance(pipe, ps)
        for t in range(ntiles):
            ac.pipeline.consumer_wait(pipe, cs)
            ac.cp_async_bulk_s2g(dst[64 * t:64 * t + 64], ring[cs.slot])
            ac.bulk_commit_group()
            ac.bulk_wait_group(0, read=True)
            if release:                                      # BUG when False: slot refilled unreleased
                ac.pipeline.consumer_release(pipe, cs)
            if t + STAGES < ntiles:
                ac.pipeline.producer_acquire(pipe, ps)
                ac.pipeline.copy_bulk(pipe, ps, ring[ps.slot], src[64 * (t + STAGES):64 * (t + STAGES) + 64])
                ac.pipeline.producer_commit(pipe, ps)
                ps = ac.pipeline.advance(pipe, ps)
            cs = ac.pipeline.advance(pipe, cs)
        ac.pipeline.producer_tail(pipe, ps)
        ac.bulk_wait_group(0)


def test_ring_run_by_one_thread_matches_numpy():
    src = rand(64 * NT)
    dst = np.full_like(src, np.nan)
    solo_ring[1, 32](src, dst, NT, True)
    np.testing.assert_array_equal(dst, src)


def test_ring_run_by_one_thread_refilled_before_release():
    with pytest.raises(ac.sim.SimulatorError) as e:
        solo_ring[1, 32](rand(64 * NT), np.zeros(64 * NT, np.float32), NT, False)
    msg = str(e.value)
    assert ("pipeline producer_acquire: slot 0 (step 3, phase 0) of a tma pipeline (3 stages, 1 copy "
            "per stage, run by one thread)") in msg, msg
    assert "second producer_acquire of a slot still in use: the fill of state step 0 was not " \
           "consumer_release'd by this thread" in msg, msg


# --- the cluster pipeline: multicast parts, releases in every CTA ----------------------------

CL_CTAS = 2  # a module constant: the simulator reads cluster_dims from the source


@cuda.jit
def cluster_ring(src, out, ntiles, skip_rank):
    """Tile t is 64 floats; CTA r multicasts half r into the slot of both CTAs;
    every CTA's consumers copy the whole tile out (row r of ``out``).  The
    consumers of CTA ``skip_rank`` never release (BUG unless it is -1)."""
    ac.cluster_dims(CL_CTAS)
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, CL_CTAS, 32), np.float32, alignment=128)
    pipe = ac.pipeline.cluster_tma_pipeline(bars, STAGES, CONS, CL_CTAS)
    ac.pipeline.init(pipe)
    rank = ac.cluster_cta_rank()
    tid = cuda.threadIdx.x
    if tid == 0:
        st = ac.pipeline.producer_start(pipe)
        for t in range(ntiles):
            ac.pipeline.producer_acquire(pipe, st)
            ac.pipeline.copy_bulk(pipe, st, ring[st.slot, rank], src[64 * t + 32 * rank:64 * t + 32 * rank + 32])
            ac.pipeline.producer_commit(pipe, st)
            st = ac.pipeline.advance(pipe, st)
        ac.pipeline.producer_tail(pipe, st)
    elif tid >= 32:
        c = tid - 32
        st = ac.pipeline.consumer_start(pipe)
        for t in range(ntiles):
            ac.pipeline.consumer_wait(pipe, st)
            for p in range(CL_CTAS):
                out[rank, 64 * t + 32 * p + c] = ring[st.slot, p, c]
            if rank != skip_rank:
                ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)
    ac.cluster_sync()


def test_cluster_ring_matches_numpy():
    src = rand(64 * NT)
    out = np.full((CL_CTAS, 64 * NT), np.nan, np.float32)
    cluster_ring[CL_CTAS, 32 + CONS](src, out, NT, -1)
    np.testing.assert_array_equal(out, np.stack([src] * CL_CTAS))


def test_cluster_ring_a_cta_that_never_releases_deadlocks():
    with pytest.raises(ac.sim.DeadlockError) as e:
        cluster_ring[CL_CTAS, 32 + CONS](rand(64 * NT), np.zeros((CL_CTAS, 64 * NT), np.float32), NT, 1)
    msg = str(e.value)
    # both producers wait for the fill of step 0 to be released everywhere: CTA 1's consumers never do
    head = ("pipeline producer_acquire: deadlock: every thread of the cluster is blocked and slot 0 "
            "(step 3, phase 0) of a cluster tma pipeline (3 stages, 2 CTAs, 1 copy per stage and CTA, "
            "32 consumers per CTA) in CTA {} (block ({},0,0)) can never become free (its consumers never "
            "release it)")
    for r in range(CL_CTAS):
        assert head.format(r, r) in msg, msg
    assert ("its empty barrier is in phase 0: expected 64 arrivals, 32 arrived; transaction bytes: "
            "expected 0, completed 0, in flight 0, tx-count 0 after the copies in flight land; releases "
            "of this fill by CTA: CTA 0 32 of 32, CTA 1 0 of 32 (the consumers of CTA 1 never released "
            "it)") in msg, msg


@cuda.jit
def cluster_parts_differ(src, ntiles):
    ac.cluster_dims(CL_CTAS)
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, CL_CTAS, 32), np.float32, alignment=128)
    pipe = ac.pipeline.cluster_tma_pipeline(bars, STAGES, CONS, CL_CTAS)
    ac.pipeline.init(pipe)
    rank = ac.cluster_cta_rank()
    tid = cuda.threadIdx.x
    if tid == 0:
        st = ac.pipeline.producer_start(pipe)
        for t in range(ntiles):
            ac.pipeline.producer_acquire(pipe, st)
            n = 16 if rank == 1 else 32  # BUG: CTA 1's part is half the size of CTA 0's
            ac.pipeline.copy_bulk(pipe, st, ring[st.slot, rank, :n], src[64 * t + 32 * rank:64 * t + 32 * rank + n])
            ac.pipeline.producer_commit(pipe, st)
            st = ac.pipeline.advance(pipe, st)
        ac.pipeline.producer_tail(pipe, st)
    elif tid >= 32:
        st = ac.pipeline.consumer_start(pipe)
        for t in range(ntiles):
            ac.pipeline.consumer_wait(pipe, st)
            ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)
    ac.cluster_sync()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cluster_parts_of_different_sizes_are_named(seed):
    # CTA 1 armed its barrier for 2 x 64 bytes; CTA 0's 128-byte part lands there too.
    # Which diagnosis comes depends on the interleaving (complete_tx may precede
    # expect_tx, so the hardware cannot tell either which phase bytes belong to):
    # the surplus at the phase that received it; when CTA 0's part landed
    # before CTA 1 armed its barrier, the phases that were left short of their bytes;
    # or, when CTA 0's part is in flight to CTA 1's barrier by the time CTA 1's
    # producer commits its stage, the commit's own check of the stage's bytes.
    with ac.sim.seed(seed), pytest.raises(ac.sim.SimulatorError) as e:
        cluster_parts_differ[CL_CTAS, 32 + CONS](rand(64 * NT), NT)
    msg = str(e.value)
    surplus = re.search(r"64 transaction bytes more than the barrier \(shared array allocated at "
                        r"\S+, byte offset \d+, in CTA 1 \(block \(1,0,0\)\)\) expects arrived in phase "
                        r"\d \(expect_tx announced 128 bytes, copies and complete_tx bring 192\)", msg)
    short = (re.search(r"in CTA 0 \(block \(0,0,0\)\) can never become full .*tx-count 64 after the "
                       r"copies in flight land \(starved: every arrival is in but 64 announced "
                       r"transaction bytes never come\)", msg)
             and re.search(r"in CTA 1 \(block \(1,0,0\)\) can never become .*tx-count -64 after the "
                           r"copies in flight land", msg))
    at_commit = re.search(r"pipeline producer_commit: slot \d \(step \d, phase \d\) of a cluster tma "
                          r"pipeline \(3 stages, 2 CTAs, 1 copy per stage and CTA, 32 consumers per CTA\): "
                          r"the stage's copies carry 192 bytes but the pipeline armed 128 .*issue every copy "
                          r"of the stage through copy_bulk/copy_tensor, the same sizes in every CTA "
                          r"\[block \(1,0,0\)", msg)
    assert surplus or short or at_commit, msg


@cuda.jit
def cluster_pipe():
    bars = cuda.shared.array((2, STAGES), np.uint64)
    pipe = ac.pipeline.cluster_tma_pipeline(bars, STAGES, 4, 2)
    ac.pipeline.init(pipe)


def test_cluster_pipeline_needs_a_cluster_of_its_ctas():
    with pytest.raises(ac.sim.SimulatorError) as e:
        cluster_pipe[1, 32]()
    assert ("pipeline init: the cluster has 1 CTAs; a cluster tma pipeline (3 stages, 2 CTAs, 1 copy "
            "per stage and CTA, 4 consumers per CTA) needs a cluster of exactly 2 CTAs") in str(e.value)
