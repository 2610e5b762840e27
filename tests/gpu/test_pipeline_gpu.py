"""ac.pipeline on the GPU: each kind runs a ring over several wraps on fresh
random data into poisoned outputs and matches numpy; checked-mode misuse
traps with the pipeline operation, slot and phase in the message."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

from ..conftest import SIM, SIM_TRAPS, run_python, skip_on_sim

pytestmark = pytest.mark.gpu
rng = np.random.default_rng()

# 11 tiles a block: the phase flips three times.  In the simulator every
# thread is a Python thread that polls its barrier: 5 tiles over 2 stages
# still wrap twice, with one block and two consumer warps.
STAGES, NT, BLOCKS = (2, 5, 1) if SIM else (3, 11, 2)
ROWS, COLS = 8, 64  # one TMA box: 2 KB
CONS = 64 if SIM else 96  # consumer warps
CWARPS = CONS // 32  # a constant: the pipeline takes literals


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def poisoned(shape):
    return cuda.to_device(np.full(shape, np.nan, np.float32))


@cuda.jit
def tma_ring(tmap, out):  # warp 0: one elected lane issues; warps 1..3 consume
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, ROWS, COLS), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=CONS)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    first = cuda.blockIdx.x * NT
    if tid < 32:
        if ac.elect_sync():
            ac.fence_proxy_tensormap(tmap)
            st = ac.pipeline.producer_start(pipe)
            for t in range(NT):
                ac.pipeline.producer_acquire(pipe, st)
                ac.pipeline.copy_tensor(pipe, st, ring[st.slot], tmap, (ROWS * (first + t), 0),
                                        fence=False)
                ac.pipeline.producer_commit(pipe, st)
                st = ac.pipeline.advance(pipe, st)
            ac.pipeline.producer_tail(pipe, st)
    else:
        c = tid - 32
        st = ac.pipeline.consumer_start(pipe)
        for t in range(NT):
            ac.pipeline.consumer_wait(pipe, st)
            for k in range(c, ROWS * COLS, CONS):
                out[ROWS * (first + t) + k // COLS, k % COLS] = ring[st.slot, k // COLS, k % COLS] * 2.0
            ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)


def test_tma_ring_warp_specialized():
    a = rand(ROWS * NT * BLOCKS, COLS)
    tmap = ac.TensorMap(cuda.to_device(a), (ROWS, COLS))
    out = poisoned(a.shape)
    tma_ring[BLOCKS, 32 + CONS](tmap, out)
    np.testing.assert_array_equal(out.copy_to_host(), 2 * a)


@cuda.jit
def tma_ring_warp_release(tmap, out):  # the three consumer warps release once each
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, ROWS, COLS), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=CWARPS)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    first = cuda.blockIdx.x * NT
    if tid < 32:
        if ac.elect_sync():
            st = ac.pipeline.producer_start(pipe)
            for t in range(NT):
                ac.pipeline.producer_acquire(pipe, st)
                ac.pipeline.copy_tensor(pipe, st, ring[st.slot], tmap, (ROWS * (first + t), 0))
                ac.pipeline.producer_commit(pipe, st)
                st = ac.pipeline.advance(pipe, st)
            ac.pipeline.producer_tail(pipe, st)
    else:
        c = tid - 32
        st = ac.pipeline.consumer_start(pipe)
        for t in range(NT):
            ac.pipeline.consumer_wait(pipe, st)
            for k in range(c, ROWS * COLS, CONS):
                out[ROWS * (first + t) + k // COLS, k % COLS] = ring[st.slot, k // COLS, k % COLS] - 1.0
            cuda.syncwarp()  # the whole warp has read the slot
            if tid % 32 == 0:
                ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)


def test_tma_ring_one_release_per_consumer_warp():
    a = rand(ROWS * NT * BLOCKS, COLS)
    tmap = ac.TensorMap(cuda.to_device(a), (ROWS, COLS))
    out = poisoned(a.shape)
    tma_ring_warp_release[BLOCKS, 32 + CONS](tmap, out)
    np.testing.assert_array_equal(out.copy_to_host(), a - 1)


@cuda.jit
def bulk_ring(src, out):  # two bulk copies a stage (the halves of a 512-float tile)
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 512), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=CONS, copies=2)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    first = cuda.blockIdx.x * NT
    if tid == 0:
        st = ac.pipeline.producer_start(pipe)
        for t in range(NT):
            b = 512 * (first + t)
            ac.pipeline.producer_acquire(pipe, st)
            ac.pipeline.copy_bulk(pipe, st, ring[st.slot, :256], src[b:b + 256])
            ac.pipeline.copy_bulk(pipe, st, ring[st.slot, 256:], src[b + 256:b + 512])
            ac.pipeline.producer_commit(pipe, st)
            st = ac.pipeline.advance(pipe, st)
        ac.pipeline.producer_tail(pipe, st)
    elif tid >= 32:
        c = tid - 32
        st = ac.pipeline.consumer_start(pipe)
        for t in range(NT):
            ac.pipeline.consumer_wait(pipe, st)
            for k in range(c, 512, CONS):
                out[512 * (first + t) + k] = ring[st.slot, 511 - k]
            ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)


def test_bulk_ring_two_copies_a_stage():
    a = rand(512 * NT * BLOCKS)
    out = poisoned(a.shape)
    bulk_ring[BLOCKS, 32 + CONS](cuda.to_device(a), out)
    want = a.reshape(-1, 512)[:, ::-1].reshape(-1)
    np.testing.assert_array_equal(out.copy_to_host(), want)


@cuda.jit
def cp_async_ring(src, out):  # src: float32[tiles, 32, 4]; warp 0 copies, warps 1..3 read
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 32, 4), np.float32, alignment=16)
    pipe = ac.pipeline.cp_async_pipeline(bars, STAGES, producers=32, consumers=CONS)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    first = cuda.blockIdx.x * NT
    if tid < 32:
        st = ac.pipeline.producer_start(pipe)
        for t in range(NT):
            ac.pipeline.producer_acquire(pipe, st)
            ac.cp_async(ring[st.slot, tid, :], src[first + t, tid, :], 16)
            ac.pipeline.producer_commit(pipe, st)
            st = ac.pipeline.advance(pipe, st)
        ac.pipeline.producer_tail(pipe, st)
    else:
        c = tid - 32
        st = ac.pipeline.consumer_start(pipe)
        for t in range(NT):
            while not ac.pipeline.consumer_try_wait(pipe, st):
                pass
            for k in range(c, 128, CONS):
                out[first + t, k // 4, k % 4] = ring[st.slot, 31 - k // 4, k % 4]
            ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)


def test_cp_async_ring_on_mbarriers():
    a = rand(NT * BLOCKS, 32, 4)
    out = poisoned(a.shape)
    cp_async_ring[BLOCKS, 32 + CONS](cuda.to_device(a), out)
    np.testing.assert_array_equal(out.copy_to_host(), a[:, ::-1, :])


def _group_ring(shared: bool):
    @cuda.jit
    def ring_kernel(src, out):  # src: float32[tiles, 128, 4]; 128 threads, one row each
        ring = cuda.shared.array((STAGES, 128, 4), np.float32, alignment=16)
        tid = cuda.threadIdx.x
        first = cuda.blockIdx.x * NT
        pipe = ac.pipeline.group_pipeline(STAGES, shared=shared)
        ps = ac.pipeline.producer_start(pipe)
        cs = ac.pipeline.consumer_start(pipe)
        for s in range(STAGES - 1):
            ac.pipeline.producer_acquire(pipe, ps)
            ac.cp_async(ring[ps.slot, tid, :], src[first + s, tid, :], 16)
            ac.pipeline.producer_commit(pipe, ps)
            ps = ac.pipeline.advance(pipe, ps)
        for t in range(NT):
            if not shared:  # refill first, then wait (each thread reads its own row)
                ac.pipeline.producer_acquire(pipe, ps)
                if t + STAGES - 1 < NT:
                    ac.cp_async(ring[ps.slot, tid, :], src[first + t + STAGES - 1, tid, :], 16)
                ac.pipeline.producer_commit(pipe, ps)
                ps = ac.pipeline.advance(pipe, ps)
            ac.pipeline.consumer_wait(pipe, cs)
            if shared:  # wait (and block barrier) first, then refill the slot read last
                ac.pipeline.producer_acquire(pipe, ps)
                if t + STAGES - 1 < NT:
                    ac.cp_async(ring[ps.slot, tid, :], src[first + t + STAGES - 1, tid, :], 16)
                ac.pipeline.producer_commit(pipe, ps)
                ps = ac.pipeline.advance(pipe, ps)
            row = (tid + 1) % 128 if shared else tid
            for j in range(4):
                out[first + t, tid, j] = ring[cs.slot, row, j]
            ac.pipeline.consumer_release(pipe, cs)
            cs = ac.pipeline.advance(pipe, cs)
        ac.pipeline.producer_tail(pipe, ps)

    return ring_kernel


@pytest.mark.parametrize("shared", [False, True])
def test_group_ring(shared):
    a = rand(NT * BLOCKS, 128, 4)
    out = poisoned(a.shape)
    _group_ring(shared)[BLOCKS, 128](cuda.to_device(a), out)
    want = np.roll(a, -1, axis=1) if shared else a
    np.testing.assert_array_equal(out.copy_to_host(), want)


# --- checked mode: misuse traps, in a subprocess -------------------------------------------------

TRAPS = """
import numpy as np
from numba import cuda
import numba_asynccopy as ac
ac.set_checked(True, timeout_ns=300_000_000)
CASE = {case!r}
STAGES = 3

@cuda.jit
def starved(src, out, fills, waits):
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 64), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=32)
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

@cuda.jit
def misuse(src, acquire_twice):
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 64), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=32)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    if tid == 0 and acquire_twice:
        st = ac.pipeline.producer_start(pipe)
        ac.pipeline.producer_acquire(pipe, st)
        ac.pipeline.copy_bulk(pipe, st, ring[st.slot], src[:64])
        ac.pipeline.producer_commit(pipe, st)
        while not ac.mbarrier_test_wait_parity(bars[0, 0:], 0):   # the fill landed
            pass
        ac.pipeline.producer_acquire(pipe, st)                    # BUG: the state not advanced
    elif tid >= 32 and not acquire_twice:
        st = ac.pipeline.consumer_start(pipe)
        ac.pipeline.consumer_release(pipe, st)                    # BUG: no consumer_wait (no fill)

src = cuda.to_device(np.ones(64 * 8, np.float32))
out = cuda.to_device(np.zeros((8, 32), np.float32))
try:
    if CASE == "acquire twice":
        misuse[1, 64](src, True)
    elif CASE == "release without wait":
        misuse[1, 64](src, False)
    elif CASE == "no producer":
        starved[1, 64](src, out, 4, 5)         # the fifth wait has no fill
    elif CASE == "few consumers":
        starved[1, 48](src, out, 8, 3)         # 16 consumer threads of the 32 built for
    else:
        starved[1, 32](src, out, 1, 1)         # no consumer warp at all
    cuda.synchronize()
    print("NO TRAP")
except Exception as e:
    print("LAUNCH FAILED:", type(e).__name__)
"""


@skip_on_sim(SIM_TRAPS)
@pytest.mark.traps
@pytest.mark.parametrize("case, message", [
    ("no producer", "numba_asynccopy checked mode: pipeline consumer_wait: timed out after 300000000 ns "
                    "on slot 1 (step 4, phase 1) of a tma pipeline (3 stages, 1 copy per stage, "
                    "32 consumers): its producers' commit never came"),
    ("few consumers", "numba_asynccopy checked mode: pipeline producer_acquire: timed out after "
                      "300000000 ns on slot 0 (step 3, phase 0) of a tma pipeline (3 stages, 1 copy "
                      "per stage, 32 consumers): its consumers' release never came"),
    ("small block", "numba_asynccopy checked mode: pipeline init: the block has 32 threads; a tma "
                    "pipeline (3 stages, 1 copy per stage, 32 consumers) is built for 33 producer "
                    "and consumer threads"),
    ("acquire twice", "numba_asynccopy checked mode: pipeline producer_acquire: slot 0 (step 0, phase 1) "
                      "of a tma pipeline (3 stages, 1 copy per stage, 32 consumers): second "
                      "producer_acquire of a slot still in use: its full barrier already completed the "
                      "phase (parity 0) this fill is to complete (acquired again without advancing "
                      "the state)"),
    ("release without wait", "numba_asynccopy checked mode: pipeline consumer_release: slot 0 (step 0, "
                             "phase 0) of a tma pipeline (3 stages, 1 copy per stage, 32 consumers): "
                             "consumer_release without a consumer_wait of this state: the slot's fill "
                             "has not landed (its full barrier's phase of parity 0 is incomplete)"),
])
def test_checked_misuse_traps_naming_the_pipeline(case, message):
    proc = run_python(TRAPS.format(case=case), timeout=120)
    out = proc.stdout + proc.stderr
    assert "LAUNCH FAILED" in out, out
    assert message in out, out


# --- the cluster pipeline: examples/ws_reduce (multicast TMA, releases across the cluster) ----


@pytest.mark.parametrize("ctas, stages, rows, checked", [
    (2, 4, 16, False), (4, 2, 32, False), (8, 2, 32, False), (2, 2, 16, True)])
def test_ws_reduce_cluster_multicast(ctas, stages, rows, checked):
    from numba_asynccopy.examples import ws_reduce as wr

    with ac.checked_mode(checked):
        kernel = cuda.jit(wr.SIGNATURE)(wr.make_ws_reduce(ctas, stages, rows))
    # a partial last tile (zero-filled rows) and a partial column block;
    # more tiles than stages: every slot wraps several times.  In the
    # simulator (a Python thread per GPU thread) one cluster, wrapping twice
    n = rows * (2 * stages if SIM else 3 * stages + 2) + 5
    cols = wr.BC - 28 if SIM else 2 * wr.BC + 36
    x, w = rand(n, cols), rand(ctas * wr.HEADS, n)
    d_x, d_y = cuda.to_device(x), poisoned((ctas * wr.HEADS, cols))
    kernel[wr.grid(cols, ctas), wr.BLOCK](wr.make_map(d_x, ctas, rows), cuda.to_device(w), d_y, n)
    np.testing.assert_allclose(d_y.copy_to_host(), wr.reference(w, x), rtol=1e-4, atol=1e-4)
