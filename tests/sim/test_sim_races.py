"""Races the simulator names, each buggy kernel beside its correct twin
(run under several interleaving seeds): shared-memory bytes written by
ordinary stores, then read by the async proxy (a bulk or TMA store) with no
fence_proxy_async between; a tile cp.async brought, read by other threads
after only the writer's wait_group; another CTA's DSMEM store read by the
owner with no cluster barrier or mbarrier handshake between; a slot
released without waiting for its fill (a ring by hand, and ac.pipeline)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

N = 64


@cuda.jit
def store_tile(out, fence):
    sh = cuda.shared.array(N, np.float32, alignment=128)
    t = cuda.threadIdx.x
    sh[t] = t * 2.0  # ordinary stores: the generic proxy
    if fence:  # BUG when 0: the async proxy may not see them
        ac.fence_proxy_async()
    cuda.syncthreads()
    if t == 0:
        ac.cp_async_bulk_s2g(out, sh)
        ac.bulk_commit_group()
        ac.bulk_wait_group(0)


def test_store_without_proxy_fence_is_a_named_race():
    with pytest.raises(ac.sim.SimulatorError,
                       match=r"cp_async_bulk_s2g: race: its shared source `src` \(shared array "
                             r"allocated at .*, byte offset 0, 256 of its 256 bytes\) was written by "
                             r"ordinary stores after the block's last fence_proxy_async\(\), and "
                             r"the async proxy reads it"):
        store_tile[1, N](np.zeros(N, np.float32), 0)


def test_store_with_proxy_fence(interleaving):
    out = np.zeros(N, np.float32)
    store_tile[1, N](out, 1)
    np.testing.assert_array_equal(out, np.arange(N, dtype=np.float32) * 2)


@cuda.jit
def load_then_store(src, out, rewrite):
    # a tile the async proxy loaded (TMA-like bulk load) and stores back: no fence needed,
    # unless ordinary stores change it in between
    sh = cuda.shared.array(N, np.float32, alignment=128)
    bar = cuda.shared.array(1, np.uint64)
    t = cuda.threadIdx.x
    if t == 0:
        ac.mbarrier_init(bar[0:], 1)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if t == 0:
        ac.mbarrier_arrive_expect_tx(bar[0:], N * 4)
        ac.cp_async_bulk_g2s(sh, src, bar[0:])
    ac.mbarrier_wait_parity(bar[0:], 0)
    if rewrite:  # BUG when 1: changed by ordinary stores, no fence before the store
        sh[t] = sh[t] + 1.0
    cuda.syncthreads()
    if t == 0:
        ac.cp_async_bulk_s2g(out, sh)
        ac.bulk_commit_group()
        ac.bulk_wait_group(0)


def test_async_loaded_tile_stored_back(interleaving):
    src = np.arange(N, dtype=np.float32)
    out = np.zeros(N, np.float32)
    load_then_store[1, N](src, out, 0)
    np.testing.assert_array_equal(out, src)


def test_async_loaded_tile_rewritten_without_fence():
    src = np.arange(N, dtype=np.float32)
    with pytest.raises(ac.sim.SimulatorError, match=r"cp_async_bulk_s2g: race: its shared source"):
        load_then_store[1, N](src, np.zeros(N, np.float32), 1)


# --- a tile cp.async brought, read by other threads without a block barrier -------------

STAGES, NT = 3, 5


def make_group_ring(shared: bool):
    @cuda.jit
    def group_ring(src, out, ntiles):
        ring = cuda.shared.array((STAGES, 32, 4), np.float32, alignment=16)
        tid = cuda.threadIdx.x
        # BUG when shared=False: its consumer_wait is this thread's wait_group only
        pipe = ac.pipeline.group_pipeline(STAGES, shared=shared)
        ps = ac.pipeline.producer_start(pipe)
        cs = ac.pipeline.consumer_start(pipe)
        for s in range(STAGES - 1):
            ac.pipeline.producer_acquire(pipe, ps)
            if s < ntiles:
                ac.cp_async(ring[ps.slot, tid, :], src[s, tid, :], 16)
            ac.pipeline.producer_commit(pipe, ps)
            ps = ac.pipeline.advance(pipe, ps)
        for t in range(ntiles):
            if shared:  # sgemm's order: wait (and the block barrier), refill the slot read last
                ac.pipeline.consumer_wait(pipe, cs)
            ac.pipeline.producer_acquire(pipe, ps)
            if t + STAGES - 1 < ntiles:
                ac.cp_async(ring[ps.slot, tid, :], src[t + STAGES - 1, tid, :], 16)
            ac.pipeline.producer_commit(pipe, ps)
            ps = ac.pipeline.advance(pipe, ps)
            if not shared:  # the per-thread order: refill, then wait for the oldest stage
                ac.pipeline.consumer_wait(pipe, cs)
            for j in range(4):
                out[t, tid, j] = ring[cs.slot, (tid + 1) % 32, j]  # another thread's row
            ac.pipeline.consumer_release(pipe, cs)
            cs = ac.pipeline.advance(pipe, cs)
        ac.pipeline.producer_tail(pipe, ps)

    return group_ring


CROSS_THREAD = (r"shared-memory read: race: thread \[block \(0,0,0\) thread \((\d+),0,0\)\] reads "
                r"element \(\d+, \d+, \d\) of shared array allocated at .*test_sim_races.py:\d+, "
                r"byte offset \d+ at .*test_sim_races.py:\d+, which ")


def test_cross_thread_tile_after_only_wait_group_is_a_named_race():
    src = np.random.default_rng(1).standard_normal((NT, 32, 4)).astype(np.float32)
    with pytest.raises(ac.sim.SimulatorError, match=CROSS_THREAD) as e:
        make_group_ring(False)[1, 32](src, np.zeros_like(src), NT)
    msg = str(e.value)
    # which thread wrote it, where, and the barrier that is missing
    assert re.search(r"cp_async issued at .*test_sim_races.py:\d+ \[block \(0,0,0\) thread "
                     r"\(\d+,0,0\)\]", msg), msg
    assert "wait_group makes a copy visible only to the thread that issued it" in msg, msg
    assert "cuda.syncthreads()" in msg and "group_pipeline(shared=True)" in msg, msg


def test_cross_thread_tile_with_the_block_barrier(interleaving):
    src = np.random.default_rng(2).standard_normal((NT, 32, 4)).astype(np.float32)
    out = np.zeros_like(src)
    make_group_ring(True)[1, 32](src, out, NT)
    np.testing.assert_array_equal(out, np.roll(src, -1, axis=1))


@cuda.jit
def copy_then_read(A, out, sync):
    sh = cuda.shared.array(64, np.float32, alignment=16)
    t = cuda.threadIdx.x
    if t < 16:
        ac.cp_async(sh[t * 4:t * 4 + 4], A[t * 4:t * 4 + 4], 16)
        ac.commit_group()
        ac.wait_group(0)
    if sync == 1:
        cuda.syncthreads()
    elif sync == 2:  # a warp's lanes read what lanes of the same warp copied
        cuda.syncwarp()
    out[t] = sh[(t + 4) % 64 if sync == 2 else 63 - t]


def test_landed_copy_read_by_another_thread_names_the_writer_and_the_wait():
    # which words come depends on the interleaving: the reader may run after
    # the writer's wait_group landed the copy, or before (the copy still in flight)
    A = np.arange(64, dtype=np.float32)
    with pytest.raises(ac.sim.SimulatorError) as e:
        copy_then_read[1, 64](A, np.zeros(64, np.float32), 0)
    msg = str(e.value)
    landed = re.search(r"shared-memory read: race: .* which another thread's copy wrote "
                       r"\(cp_async issued at .*test_sim_races.py:\d+ \[block \(0,0,0\) "
                       r"thread \((\d+),0,0\)\], landed at that thread's wait_group at "
                       r".*test_sim_races.py:\d+\), with no barrier between that and this "
                       r"read", msg)
    in_flight = re.search(r"shared-memory read: race: .* which a copy of another thread still writes: "
                          r"cp_async issued at .*test_sim_races.py:\d+ \[block \(0,0,0\) thread "
                          r"\((\d+),0,0\)\], not retired yet \(its bytes land when that thread's "
                          r"wait_group / wait_all retires the group\)\. wait_group makes a copy "
                          r"visible only to the thread that issued it", msg)
    assert landed or in_flight, msg


@pytest.mark.parametrize("sync", [1, 2], ids=["syncthreads", "syncwarp"])
def test_copy_read_after_a_barrier(sync, interleaving):
    A = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    copy_then_read[1, 16 if sync == 2 else 64](A, out, sync)
    n = 16 if sync == 2 else 64
    want = A[(np.arange(n) + 4) % 64] if sync == 2 else A[63 - np.arange(64)]
    np.testing.assert_array_equal(out[:n], want)


# --- a remote DSMEM store read by the owner without synchronization ---------------------


@cuda.jit
def dsmem_to_peer(out, how):
    ac.cluster_dims(2)
    box = cuda.shared.array(32, np.int32)
    bar = cuda.shared.array(1, np.uint64)
    t = cuda.threadIdx.x
    r = ac.cluster_cta_rank()
    box[t] = -1
    if t == 0:
        ac.mbarrier_init(bar[0:], 32)
        ac.fence_mbarrier_init()
    ac.cluster_sync()
    if how == 3:
        peer = ac.map_shared_rank(box, 1 - r)
        peer[t] = r * 100 + t
    else:
        ac.dsmem_store(box, 1 - r, t, r * 100 + t)
    if how == 1:  # the cluster barrier orders the store before the owner's read
        ac.cluster_sync()
    elif how == 2:  # an mbarrier handshake: arrive on the owner's barrier, the owner waits
        ac.mbarrier_arrive(bar[0:], cta_rank=1 - r)
        ac.mbarrier_wait_parity(bar[0:], 0)
    elif how == 4:  # BUG: the same handshake at CTA scope counts the arrival, publishes nothing
        ac.mbarrier_arrive(bar[0:], cta_rank=1 - r, scope="cta")
        ac.mbarrier_wait_parity(bar[0:], 0)
    # BUG when 0, 3 or 4: nothing orders the peer's store before this read
    out[cuda.blockIdx.x, t] = box[t]
    ac.cluster_sync()


DSMEM_RACE = (r"shared-memory read: race: thread \[block \((\d),0,0\) thread \(\d+,0,0\)\] reads "
              r"element \d+ of shared array allocated at .*test_sim_races.py:\d+, byte offset \d+ "
              r"at .*test_sim_races.py:\d+, which {api} by CTA \d at .*test_sim_races.py:\d+ "
              r"\[block \(\d,0,0\) thread \(\d+,0,0\)\] stored into this CTA's shared memory, "
              r"with no synchronization between that store and this read: a remote store "
              r"becomes visible to the owner only after the storing CTA's cluster_arrive "
              r"\(release\) and this thread's cluster_wait")


@pytest.mark.parametrize("how, api", [(0, "dsmem_store"), (3, "map_shared_rank"),
                                      (4, "dsmem_store")])
def test_remote_store_read_locally_without_sync_is_a_named_race(how, api):
    with pytest.raises(ac.sim.SimulatorError, match=DSMEM_RACE.format(api=api)):
        dsmem_to_peer[2, 32](np.zeros((2, 32), np.int32), how)


@pytest.mark.parametrize("how", [1, 2], ids=["cluster_sync", "mbarrier"])
def test_remote_store_read_after_sync(how, interleaving):
    out = np.zeros((2, 32), np.int32)
    dsmem_to_peer[2, 32](out, how)
    t = np.arange(32)
    np.testing.assert_array_equal(out, np.stack([100 + t, t]))


# --- a consumer that releases a slot without waiting for its fill (a ring by hand) ------

R_ROWS, R_COLS, R_STAGES, R_NT = 4, 32, 2, 4
R_BYTES = R_ROWS * R_COLS * 4


@cuda.jit
def ring_by_hand(tmap, out, wait):
    bars = cuda.shared.array((2, R_STAGES), np.uint64)  # full, empty
    ring = cuda.shared.array((R_STAGES, R_ROWS, R_COLS), np.float32, alignment=128)
    tid = cuda.threadIdx.x
    if tid == 0:
        for s in range(R_STAGES):
            ac.mbarrier_init(bars[0, s:], 1)
            ac.mbarrier_init(bars[1, s:], R_COLS)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if tid == 0:  # the producer
        for t in range(R_NT):
            s = t % R_STAGES
            if t >= R_STAGES:
                ac.mbarrier_wait_parity(bars[1, s:], (t // R_STAGES - 1) % 2)
            ac.mbarrier_arrive_expect_tx(bars[0, s:], R_BYTES)
            ac.cp_async_bulk_tensor_load(ring[s], tmap, (R_ROWS * t, 0), bars[0, s:])
    elif tid >= 32:  # the consumers: one warp
        c = tid - 32
        for t in range(R_NT):
            s = t % R_STAGES
            if wait:  # BUG when 0: the tile is read and the slot released without the wait
                ac.mbarrier_wait_parity(bars[0, s:], (t // R_STAGES) % 2)
            for r in range(R_ROWS):
                out[R_ROWS * t + r, c] = ring[s, r, c]
            ac.mbarrier_arrive(bars[1, s:])


def _ring():
    a = np.random.default_rng(3).standard_normal((R_ROWS * R_NT, R_COLS)).astype(np.float32)
    return a, ac.TensorMap(cuda.to_device(a), (R_ROWS, R_COLS)), np.full_like(a, np.nan)


RELEASED = r"the slot was released without a wait"


def test_ring_release_without_wait_is_named(interleaving):
    # whichever comes first (the release after reading the tile in flight, the
    # producer's refill of a fill nobody waited for), the error says so
    a, tmap, out = _ring()
    with pytest.raises(ac.sim.SimulatorError, match=RELEASED) as e:
        ring_by_hand[1, 64](tmap, out, 0)
    assert re.search(r"cp_async_bulk_tensor_load issued at .*test_sim_races.py:\d+ \[block "
                     r"\(0,0,0\) thread \(0,0,0\)\]", str(e.value)), str(e.value)


def test_ring_with_waits(interleaving):
    a, tmap, out = _ring()
    ring_by_hand[1, 64](tmap, out, 1)
    np.testing.assert_array_equal(out, a)


# --- the same through ac.pipeline: consumer_release names the missing consumer_wait ------

P_STAGES, P_CONS = 2, 32


@cuda.jit
def pipeline_ring(src, out, ntiles, wait):
    bars = cuda.shared.array((2, P_STAGES), np.uint64)
    ring = cuda.shared.array((P_STAGES, 64), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, P_STAGES, consumers=P_CONS)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    if tid == 0:
        st = ac.pipeline.producer_start(pipe)
        for t in range(ntiles):
            ac.pipeline.producer_acquire(pipe, st)
            ac.pipeline.copy_bulk(pipe, st, ring[st.slot], src[64 * t:64 * t + 64])
            ac.pipeline.producer_commit(pipe, st)
            st = ac.pipeline.advance(pipe, st)
    elif tid >= 32:
        st = ac.pipeline.consumer_start(pipe)
        for t in range(ntiles):
            if wait:  # BUG when 0: the slot is read and released without its wait
                ac.pipeline.consumer_wait(pipe, st)
            out[t, tid - 32] = ring[st.slot, tid - 32]
            ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)


@pytest.mark.parametrize("ntiles", [1, 4], ids=["one_tile", "several_tiles"])
def test_pipeline_release_without_wait_is_named(ntiles, interleaving):
    src = np.arange(64 * ntiles, dtype=np.float32)
    with pytest.raises(ac.sim.SimulatorError,
                       match=r"pipeline consumer_release: slot 0 \(step 0, phase 0\) of a tma "
                             r"pipeline \(2 stages, 1 copy per stage, 32 consumers\): "
                             r"consumer_release without a consumer_wait of this state"):
        pipeline_ring[1, 64](src, np.zeros((ntiles, 32), np.float32), ntiles, 0)


@pytest.mark.parametrize("ntiles", [1, 4], ids=["one_tile", "several_tiles"])
def test_pipeline_release_after_wait(ntiles, interleaving):
    src = np.random.default_rng(4).standard_normal(64 * ntiles).astype(np.float32)
    out = np.zeros((ntiles, 32), np.float32)
    pipeline_ring[1, 64](src, out, ntiles, 1)
    np.testing.assert_array_equal(out, src.reshape(ntiles, 64)[:, :32])
