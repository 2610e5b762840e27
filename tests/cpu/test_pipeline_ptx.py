"""ac.pipeline without a GPU: the PTX of every kind, compile-time errors that
name the argument, checked-mode traps, and zero overhead: rings written with
the pipeline assemble to no more SASS instructions than the same rings
written by hand."""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
import pytest
from numba import cuda, types
from numba.core.errors import TypingError

import numba_asynccopy as ac
from numba_asynccopy import toolchain

from ..conftest import tool_missing
from .helpers import instructions
from .test_cluster_ptx import ptx_strings
from .test_examples_ptx import sass_loops

STAGES = 4
AHEAD = STAGES - 1  # wait_group's N of the hand-written ring: a constant
ROWS, COLS = 32, 64  # one TMA box / bulk tile: 8192 bytes
NBYTES = ROWS * COLS * 4
CONSUMERS = 96
BLOCK = 32 + CONSUMERS


# --- TMA ring: one elected producer lane, three consumer warps -----------------------------


def tma_pipe(tmap, out, ntiles):
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, ROWS, COLS), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=CONSUMERS)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    n = np.uint32(ntiles)
    if tid < 32:
        if ac.elect_sync():
            st = ac.pipeline.producer_start(pipe)
            t = np.uint32(0)
            while t < n:
                ac.pipeline.producer_acquire(pipe, st)
                ac.pipeline.copy_tensor(pipe, st, ring[st.slot], tmap, (t * np.uint32(ROWS), 0), fence=False)
                ac.pipeline.producer_commit(pipe, st)
                st = ac.pipeline.advance(pipe, st)
                t = np.uint32(t + np.uint32(1))
    else:
        c = tid - 32
        st = ac.pipeline.consumer_start(pipe)
        t = np.uint32(0)
        while t < n:
            ac.pipeline.consumer_wait(pipe, st)
            out[t, c] = ring[st.slot, 0, c] + ring[st.slot, 1, c]
            ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)
            t = np.uint32(t + np.uint32(1))


def tma_hand(tmap, out, ntiles):
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, ROWS, COLS), np.float32, alignment=128)
    tid = cuda.threadIdx.x
    if tid == 0:
        for s in range(STAGES):
            ac.mbarrier_init(bars[0, s:], 1)
            ac.mbarrier_init(bars[1, s:], CONSUMERS)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    n = np.uint32(ntiles)
    last = np.uint32(STAGES - 1)
    if tid < 32:
        if ac.elect_sync():
            slot, phase = np.uint32(0), np.uint32(0)
            t = np.uint32(0)
            while t < n:
                ac.mbarrier_wait_parity(bars[1, slot:], phase ^ np.uint32(1))
                ac.mbarrier_arrive_expect_tx(bars[0, slot:], NBYTES)
                ac.cp_async_bulk_tensor_load(ring[slot], tmap, (t * np.uint32(ROWS), 0), bars[0, slot:],
                                             fence=False)
                if slot == last:
                    slot, phase = np.uint32(0), np.uint32(phase ^ np.uint32(1))
                else:
                    slot = np.uint32(slot + np.uint32(1))
                t = np.uint32(t + np.uint32(1))
    else:
        c = tid - 32
        slot, phase = np.uint32(0), np.uint32(0)
        t = np.uint32(0)
        while t < n:
            ac.mbarrier_wait_parity(bars[0, slot:], phase)
            out[t, c] = ring[slot, 0, c] + ring[slot, 1, c]
            ac.mbarrier_arrive(bars[1, slot:])
            if slot == last:
                slot, phase = np.uint32(0), np.uint32(phase ^ np.uint32(1))
            else:
                slot = np.uint32(slot + np.uint32(1))
            t = np.uint32(t + np.uint32(1))


TMA_SIG = (types.uint64[::1], types.float32[:, ::1], types.int64)


# --- cp.async ring on commit/wait groups (each thread its own chunks) -------------------------


def groups_pipe(src, dst, ntiles):  # src, dst: uint32[ntiles, 128, 4]
    ring = cuda.shared.array((STAGES, 128, 4), np.uint32, alignment=16)
    tid = cuda.threadIdx.x
    n = np.uint32(ntiles)
    ahead = np.uint32(STAGES - 1)
    pipe = ac.pipeline.group_pipeline(STAGES)
    ps = ac.pipeline.producer_start(pipe)
    cs = ac.pipeline.consumer_start(pipe)
    for s in range(STAGES - 1):
        ac.pipeline.producer_acquire(pipe, ps)
        if s < ntiles:
            ac.cp_async(ring[ps.slot, tid, :], src[s, tid, :], 16)
        ac.pipeline.producer_commit(pipe, ps)
        ps = ac.pipeline.advance(pipe, ps)
    t = np.uint32(0)
    while t < n:
        ac.pipeline.producer_acquire(pipe, ps)
        nt = np.uint32(t + ahead)
        if nt < n:
            ac.cp_async(ring[ps.slot, tid, :], src[nt, tid, :], 16)
        ac.pipeline.producer_commit(pipe, ps)
        ps = ac.pipeline.advance(pipe, ps)
        ac.pipeline.consumer_wait(pipe, cs)
        for j in range(4):
            dst[t, tid, j] = ring[cs.slot, tid, j]
        ac.pipeline.consumer_release(pipe, cs)
        cs = ac.pipeline.advance(pipe, cs)
        t = np.uint32(t + np.uint32(1))
    ac.pipeline.producer_tail(pipe, ps)


def groups_hand(src, dst, ntiles):
    ring = cuda.shared.array((STAGES, 128, 4), np.uint32, alignment=16)
    tid = cuda.threadIdx.x
    n = np.uint32(ntiles)
    ahead = np.uint32(STAGES - 1)
    last = np.uint32(STAGES - 1)
    for s in range(STAGES - 1):
        if s < ntiles:
            ac.cp_async(ring[s, tid, :], src[s, tid, :], 16)
        ac.commit_group()
    rslot, wslot = np.uint32(0), last
    t = np.uint32(0)
    while t < n:
        nt = np.uint32(t + ahead)
        if nt < n:
            ac.cp_async(ring[wslot, tid, :], src[nt, tid, :], 16)
        ac.commit_group()
        ac.wait_group(AHEAD)
        for j in range(4):
            dst[t, tid, j] = ring[rslot, tid, j]
        rslot = np.uint32(0) if rslot == last else np.uint32(rslot + np.uint32(1))
        wslot = np.uint32(0) if wslot == last else np.uint32(wslot + np.uint32(1))
        t = np.uint32(t + np.uint32(1))
    ac.wait_all()


GROUPS_SIG = (types.uint32[:, :, ::1], types.uint32[:, :, ::1], types.int64)


# --- cp.async ring on mbarriers: a producer warp, three consumer warps --------------------------


def cpmb_pipe(src, out, ntiles):  # src: float32[ntiles, 32, 4]
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 32, 4), np.float32, alignment=16)
    pipe = ac.pipeline.cp_async_pipeline(bars, STAGES, producers=32, consumers=CONSUMERS)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    n = np.uint32(ntiles)
    if tid < 32:
        st = ac.pipeline.producer_start(pipe)
        t = np.uint32(0)
        while t < n:
            ac.pipeline.producer_acquire(pipe, st)
            ac.cp_async(ring[st.slot, tid, :], src[t, tid, :], 16)
            ac.pipeline.producer_commit(pipe, st)
            st = ac.pipeline.advance(pipe, st)
            t = np.uint32(t + np.uint32(1))
    else:
        c = tid - 32
        st = ac.pipeline.consumer_start(pipe)
        t = np.uint32(0)
        while t < n:
            ac.pipeline.consumer_wait(pipe, st)
            out[t, c] = ring[st.slot, c % 32, c // 32]
            ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)
            t = np.uint32(t + np.uint32(1))


def cpmb_hand(src, out, ntiles):
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 32, 4), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    if tid == 0:
        for s in range(STAGES):
            ac.mbarrier_init(bars[0, s:], 32)
            ac.mbarrier_init(bars[1, s:], CONSUMERS)
    cuda.syncthreads()
    n = np.uint32(ntiles)
    last = np.uint32(STAGES - 1)
    if tid < 32:
        slot, phase = np.uint32(0), np.uint32(0)
        t = np.uint32(0)
        while t < n:
            ac.mbarrier_wait_parity(bars[1, slot:], phase ^ np.uint32(1))
            ac.cp_async(ring[slot, tid, :], src[t, tid, :], 16)
            ac.cp_async_mbarrier_arrive(bars[0, slot:], noinc=True)
            if slot == last:
                slot, phase = np.uint32(0), np.uint32(phase ^ np.uint32(1))
            else:
                slot = np.uint32(slot + np.uint32(1))
            t = np.uint32(t + np.uint32(1))
    else:
        c = tid - 32
        slot, phase = np.uint32(0), np.uint32(0)
        t = np.uint32(0)
        while t < n:
            ac.mbarrier_wait_parity(bars[0, slot:], phase)
            out[t, c] = ring[slot, c % 32, c // 32]
            ac.mbarrier_arrive(bars[1, slot:])
            if slot == last:
                slot, phase = np.uint32(0), np.uint32(phase ^ np.uint32(1))
            else:
                slot = np.uint32(slot + np.uint32(1))
            t = np.uint32(t + np.uint32(1))


# --- the other kinds: cp.async on mbarriers, 1-D bulk, sgemm-style shared groups ---------------


def cp_async_pipe(src, out, ntiles):  # src: float32[ntiles, 32, 4]
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 32, 4), np.float32, alignment=16)
    pipe = ac.pipeline.cp_async_pipeline(bars, STAGES, producers=32, consumers=CONSUMERS)
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
        st = ac.pipeline.consumer_start(pipe)
        for t in range(ntiles):
            while not ac.pipeline.consumer_try_wait(pipe, st):
                pass
            out[t, tid - 32] = ring[st.slot, (tid - 32) % 32, 0]
            ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)


CP_ASYNC_SIG = (types.float32[:, :, ::1], types.float32[:, ::1], types.int64)


def bulk_pipe(src, out, ntiles):  # src: float32[ntiles * 2048]
    bars = cuda.shared.array((2, STAGES), np.uint64)
    ring = cuda.shared.array((STAGES, 2048), np.float32, alignment=128)
    pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=CONSUMERS, copies=2)
    ac.pipeline.init(pipe)
    tid = cuda.threadIdx.x
    if tid == 0:
        st = ac.pipeline.producer_start(pipe)
        for t in range(ntiles):
            ac.pipeline.producer_acquire(pipe, st)
            ac.pipeline.copy_bulk(pipe, st, ring[st.slot, :1024], src[t * 2048:t * 2048 + 1024])
            ac.pipeline.copy_bulk(pipe, st, ring[st.slot, 1024:], src[t * 2048 + 1024:(t + 1) * 2048])
            ac.pipeline.producer_commit(pipe, st)
            st = ac.pipeline.advance(pipe, st)
        ac.pipeline.producer_tail(pipe, st)
    elif tid >= 32:
        st = ac.pipeline.consumer_start(pipe)
        for t in range(ntiles):
            ac.pipeline.consumer_wait(pipe, st)
            out[t, tid - 32] = ring[st.slot, tid - 32]
            ac.pipeline.consumer_release(pipe, st)
            st = ac.pipeline.advance(pipe, st)


BULK_SIG = (types.float32[::1], types.float32[:, ::1], types.int64)


def shared_groups_pipe(src, out, ntiles):  # src: float32[ntiles, 128, 4]
    ring = cuda.shared.array((3, 128, 4), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    pipe = ac.pipeline.group_pipeline(3, shared=True)
    ps = ac.pipeline.producer_start(pipe)
    cs = ac.pipeline.consumer_start(pipe)
    for s in range(2):
        ac.pipeline.producer_acquire(pipe, ps)
        if s < ntiles:
            ac.cp_async(ring[ps.slot, tid, :], src[s, tid, :], 16)
        ac.pipeline.producer_commit(pipe, ps)
        ps = ac.pipeline.advance(pipe, ps)
    for t in range(ntiles):
        ac.pipeline.consumer_wait(pipe, cs)
        ac.pipeline.producer_acquire(pipe, ps)
        if t + 2 < ntiles:
            ac.cp_async(ring[ps.slot, tid, :], src[t + 2, tid, :], 16)
        ac.pipeline.producer_commit(pipe, ps)
        ps = ac.pipeline.advance(pipe, ps)
        out[t, tid] = ring[cs.slot, (tid + 1) % 128, 0]   # another thread's copy
        ac.pipeline.consumer_release(pipe, cs)
        cs = ac.pipeline.advance(pipe, cs)
    ac.pipeline.producer_tail(pipe, ps)


SHARED_SIG = (types.float32[:, :, ::1], types.float32[:, ::1], types.int64)

KERNELS = {
    "tma_pipe": (tma_pipe, TMA_SIG), "tma_hand": (tma_hand, TMA_SIG),
    "groups_pipe": (groups_pipe, GROUPS_SIG), "groups_hand": (groups_hand, GROUPS_SIG),
    "cp_async_pipe": (cp_async_pipe, CP_ASYNC_SIG), "bulk_pipe": (bulk_pipe, BULK_SIG),
    "shared_groups_pipe": (shared_groups_pipe, SHARED_SIG),
    "cpmb_pipe": (cpmb_pipe, CP_ASYNC_SIG), "cpmb_hand": (cpmb_hand, CP_ASYNC_SIG),
}


@lru_cache(maxsize=None)
def ptx(name: str, checked: bool = False, cc=(9, 0)) -> str:
    fn, sig = KERNELS[name]
    with ac.checked_mode(checked):
        return cuda.compile_ptx(fn, sig, cc=cc)[0]


@lru_cache(maxsize=None)
def sass(name: str) -> str:
    try:
        cubin, _ = toolchain.assemble(ptx(name))
        return toolchain.disassemble(cubin)
    except toolchain.ToolMissing as e:
        tool_missing(e)


def count(text, regex):
    return len(instructions(text, regex))


# --- PTX of each kind ---------------------------------------------------------------------------


def test_tma_pipeline_ptx():
    text = ptx("tma_pipe")
    assert count(text, r"mbarrier\.init") == 2 * STAGES  # full and empty, unrolled
    assert count(text, r"fence\.proxy\.async\.shared::cta") == 1
    # the producer arms its bytes in its arrive, a constant, before the copy
    arms = instructions(text, r"mbarrier\.arrive\.expect_tx")
    assert len(arms) == 1, arms
    assert re.search(rf"mov\.u32\s+(%r\d+), {NBYTES};", text)
    body = text[text.index("mbarrier.arrive.expect_tx"):]
    assert "cp.async.bulk.tensor.2d" in body  # the copy after the arm
    assert count(text, r"cp\.async\.bulk\.tensor\.2d") == 1
    assert count(text, r"mbarrier\.try_wait\.parity") == 2  # producer acquire, consumer wait
    assert count(text, r"mbarrier\.arrive\.shared\.b64") == 1  # consumer release
    assert count(text, r"fence\.proxy\.tensormap") == 0  # fence=False
    assert "ld.local" not in text and "st.local" not in text
    assert "%globaltimer" not in text  # unchecked: unbounded waits


def test_groups_pipeline_ptx():
    text = ptx("groups_pipe")
    assert set(instructions(text, r"cp\.async\.wait_group")) == {f"cp.async.wait_group {STAGES - 1}"}
    assert count(text, r"cp\.async\.commit_group") >= 2
    assert count(text, r"cp\.async\.wait_all") == 1  # producer_tail
    assert count(text, r"mbarrier") == 0 and count(text, r"bar\.sync") == 0


def test_shared_groups_pipeline_ptx():
    text = ptx("shared_groups_pipe")
    # sgemm's order: wait for all but the newest stages - 2 groups, one block barrier
    waits = instructions(text, r"cp\.async\.wait_group")
    assert set(waits) == {"cp.async.wait_group 1"}
    assert count(text, r"bar\.sync") == len(waits)  # the loop may be unrolled


def test_cp_async_pipeline_ptx():
    text = ptx("cp_async_pipe")
    arrives = instructions(text, r"cp\.async\.mbarrier\.arrive")
    assert len(arrives) == 1 and ".noinc" in arrives[0], arrives
    assert count(text, r"mbarrier\.test_wait\.parity") >= 2  # the try_acquire and try_wait
    assert count(text, r"mbarrier\.try_wait\.parity") == 0
    assert count(text, r"mbarrier\.arrive\.shared\.b64") >= 1


def test_cp_async_pipeline_runs_on_sm80():
    text = ptx("cp_async_pipe", cc=(8, 0))
    assert count(text, r"mbarrier\.try_wait") == 0 and count(text, r"mbarrier\.test_wait\.parity") >= 2
    assert count(text, r"fence\.proxy") == 0
    toolchain_assemble(text)


def test_bulk_pipeline_ptx():
    text = ptx("bulk_pipe")
    arms = instructions(text, r"mbarrier\.arrive\.expect_tx")
    assert len(arms) == 2, arms  # one per copy of the stage, 4096 bytes each
    assert len(re.findall(r"mov\.u32\s+%r\d+, 4096;", text)) >= 1
    assert count(text, r"cp\.async\.bulk\.shared::c\w+\.global") == 2
    # producer_tail: the empty barriers of every slot, unrolled
    assert count(text, r"mbarrier\.try_wait\.parity") >= 1 + STAGES


def test_tma_pipeline_run_by_one_thread_ptx():
    # consumers=0 (the copy examples' ring): full barriers only, initialised by
    # the ring's thread without a block barrier; acquire, release and tail emit nothing
    from numba_asynccopy.examples import tma_copy as tc

    with ac.checked_mode(False):
        text = cuda.compile_ptx(tc.make_tma_copy(4, (32, 64)), tc.SIGNATURE, cc=(9, 0, "a"))[0]
    assert count(text, r"mbarrier\.init") == 4
    assert count(text, r"bar\.sync") == 0
    assert count(text, r"mbarrier\.try_wait\.parity") == 1  # consumer_wait only
    assert count(text, r"mbarrier\.arrive\.shared") == 0    # no empty barriers to release
    arms = instructions(text, r"mbarrier\.arrive\.expect_tx")
    assert len(arms) == 5, arms  # the unrolled prologue (4) and the refill
    assert re.search(rf"mov\.u32\s+(%r\d+), {NBYTES};", text)  # the box's bytes, a constant


def test_checked_tma_pipeline_run_by_one_thread_names_itself():
    from numba_asynccopy.examples import bulk_copy as bc

    with ac.checked_mode(True):
        raw = cuda.compile_ptx(bc.make_bulk_copy(4, 4096), bc.SIGNATURE, cc=(9, 0, "a"))[0]
    text = ptx_strings(raw)
    assert re.search(r"checked mode: pipeline consumer_wait: timed out after \d+ ns on slot %u "
                     r"\(step %u, phase %u\) of a tma pipeline \(4 stages, 1 copy per stage, run by "
                     r"one thread\)", text), text
    assert "pipeline producer_acquire: timed out" not in text  # nothing to wait for
    # but the protocol is checked: a slot acquired again before it was consumed
    assert "pipeline producer_acquire: slot %u (step %u, phase %u) of a tma pipeline (4 stages, 1 copy " \
           "per stage, run by one thread): second producer_acquire of a slot still in use" in text


@pytest.mark.parametrize("ctas", [2, 4])
def test_cluster_pipeline_ptx(ctas):
    # examples/ws_reduce: a multicast TMA part per CTA, armed with its bytes
    # times the CTAs; releases on the empty barrier of every CTA of the cluster
    from numba_asynccopy.examples import ws_reduce as wr

    rows = 16
    with ac.checked_mode(False):
        text = cuda.compile_ptx(wr.make_ws_reduce(ctas, 4, rows), wr.SIGNATURE, cc=(9, 0, "a"))[0]
    loads = instructions(text, r"cp\.async\.bulk\.tensor")
    assert len(loads) == 1 and ".multicast::cluster" in loads[0], loads
    assert re.search(rf"mov\.u16\s+%rs\d+, {(1 << ctas) - 1};", text), "the multicast mask"
    arms = instructions(text, r"mbarrier\.arrive\.expect_tx")
    assert len(arms) == 1 and "shared::cta" in arms[0], arms
    part = rows // ctas * wr.BC * 4
    assert re.search(rf"mov\.u32\s+%r\d+, {part * ctas};", text), "box bytes times the CTAs"
    # init: full barriers count the one producer arrival, empty ones WARPS per CTA
    assert re.search(rf"mov\.u32\s+%r\d+, {wr.WARPS * ctas};", text)
    assert count(text, r"mbarrier\.init") == 2 * 4
    assert count(text, r"fence\.mbarrier_init\.release\.cluster") == 1
    # consumer_release: one arrive per CTA, unrolled, CTA-scope (it publishes nothing)
    remote = instructions(text, r"mbarrier\.arrive\.release\.cta\.shared::cluster")
    assert len(remote) == ctas, remote
    assert not instructions(text, r"mbarrier\.arrive\.release\.cluster")
    assert count(text, r"mapa\.shared::cluster") == ctas
    # init and the end of the kernel synchronise the cluster
    assert count(text, r"barrier\.cluster\.arrive") == 2
    assert count(text, r"elect\.sync") == 1
    toolchain_assemble(text)


@pytest.mark.parametrize("cfg", [(4, 2, 32), (8, 2, 32), (2, 2, 16)])
def test_ws_reduce_configs_assemble(cfg):
    # the GPU test's configurations: assemble without local memory, and in
    # checked mode (whose printf arguments take a stack frame)
    from numba_asynccopy.examples import ws_reduce as wr

    for checked in (False, True):
        with ac.checked_mode(checked):
            text = cuda.compile_ptx(wr.make_ws_reduce(*cfg), wr.SIGNATURE, cc=(9, 0, "a"))[0]
        assert count(text, r"mbarrier\.arrive\.release\.cta\.shared::cluster") == cfg[0]
        if checked:
            try:
                toolchain.assemble(text)
            except toolchain.ToolMissing as e:
                tool_missing(e)
        else:
            toolchain_assemble(text)


def test_ws_reduce_rejects_bad_parameters():
    from numba_asynccopy.examples import ws_reduce as wr

    with pytest.raises(ValueError, match="ctas must be 2, 4 or 8"):
        wr.make_ws_reduce(3)
    with pytest.raises(ValueError, match="static shared memory"):
        wr.make_ws_reduce(8, 2, 64)
    with pytest.raises(ValueError, match="must split into 4 TMA boxes"):
        wr.make_ws_reduce(4, 2, 18)
    assert wr.grid(300, 4) == 12 and wr.BLOCK == 160
    w, x = np.ones((4, 3), np.float32), np.arange(6, dtype=np.float32).reshape(3, 2)
    assert np.array_equal(wr.reference(w, x), np.full((4, 2), [6.0, 9.0]))


def test_cluster_pipeline_compile_errors():
    assert ("cluster_tma_pipeline: `ctas`=17 is outside 1..16" in compile_error(
        "bars = cuda.shared.array((2, 4), np.uint64)\n"
        "pipe = ac.pipeline.cluster_tma_pipeline(bars, 4, 4, 17)"))
    assert ("cluster_tma_pipeline: `consumers`=600000 is outside 1..65535" in compile_error(
        "bars = cuda.shared.array((2, 4), np.uint64)\n"
        "pipe = ac.pipeline.cluster_tma_pipeline(bars, 4, 600000, 16)"))


def test_copy_cache_policy_is_passed_to_the_copy():
    def k(a, out):
        bars = cuda.shared.array((2, STAGES), np.uint64)
        ring = cuda.shared.array((STAGES, 64), np.float32, alignment=128)
        pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=32)
        ac.pipeline.init(pipe)
        if cuda.threadIdx.x == 0:
            st = ac.pipeline.producer_start(pipe)
            ac.pipeline.producer_acquire(pipe, st)
            ac.pipeline.copy_bulk(pipe, st, ring[st.slot], a[:64],
                                  cache_policy=ac.createpolicy_fractional("evict_first"))
            ac.pipeline.producer_commit(pipe, st)

    text = cuda.compile_ptx(k, (types.float32[::1], types.float32[::1]), cc=(9, 0))[0]
    copies = instructions(text, r"cp\.async\.bulk\.shared")
    assert len(copies) == 1 and ".L2::cache_hint" in copies[0], copies
    assert count(text, r"createpolicy\.fractional\.L2::evict_first") == 1


def toolchain_assemble(text):
    try:
        _, log = toolchain.assemble(text, verbose=True)
    except toolchain.ToolMissing as e:
        tool_missing(e)
    assert "0 bytes stack frame" in log, log


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_assembles(name):
    toolchain_assemble(ptx(name))


# --- zero overhead ---------------------------------------------------------------------------------


def _loop_with(sass_text: str, marker: str) -> list[str]:
    """The innermost loop whose body holds ``marker`` (a SASS opcode): the ring
    loop (the wait retry loops sit out of line)."""
    loops = [b for b in sass_loops(sass_text) if any(marker in t for t in b)]
    assert loops, marker
    return min(loops, key=len)


def _ops(sass_text: str) -> int:
    return len([op for op in toolchain.sass_opcodes(sass_text) if op != "NOP"])


@pytest.mark.parametrize("ring, loops", [
    ("tma", (("producer", "UTMALDG"), ("consumer", "STG"))),
    ("groups", (("ring", "LDGSTS"),)),
    ("cpmb", (("producer", "LDGSTS"), ("consumer", "STG"))),
])
def test_pipeline_has_no_overhead(ring, loops, capsys):
    pipe, hand = sass(f"{ring}_pipe"), sass(f"{ring}_hand")
    report = []
    for role, marker in loops:
        p, h = len(_loop_with(pipe, marker)), len(_loop_with(hand, marker))
        report.append(f"{ring} {role} loop: pipeline {p}, hand-written {h} SASS instructions")
        assert p <= h, report
    p, h = _ops(pipe), _ops(hand)
    report.append(f"{ring} kernel: pipeline {p}, hand-written {h} SASS instructions")
    assert p <= h, report
    with capsys.disabled():
        print("\n" + "\n".join(report))


# --- checked mode ------------------------------------------------------------------------------------


def test_checked_waits_name_the_pipeline_operation():
    raw = ptx("tma_pipe", checked=True)
    text = ptx_strings(raw)
    for op in ("producer_acquire", "consumer_wait"):
        assert re.search(rf"checked mode: pipeline {op}: timed out after \d+ ns on slot %u "
                         rf"\(step %u, phase %u\) of a tma pipeline \({STAGES} stages, 1 copy per "
                         rf"stage, {CONSUMERS} consumers\)", text), op
    assert "`bars` holds" not in text  # 8 barriers: the check folded away
    assert f"is built for {CONSUMERS + 1} producer and consumer threads" in text
    try:
        toolchain.assemble(raw)  # printf's arguments take a stack frame in checked mode
    except toolchain.ToolMissing as e:
        tool_missing(e)


def test_checked_protocol_traps_name_operation_slot_and_phase():
    # a second acquire of a slot in use, a release without a wait: read off
    # the slot's full barrier (test_wait) in checked mode, nothing without it
    text = ptx_strings(ptx("tma_pipe", checked=True))
    desc = f"a tma pipeline ({STAGES} stages, 1 copy per stage, {CONSUMERS} consumers)"
    assert (f"checked mode: pipeline producer_acquire: slot %u (step %u, phase %u) of {desc}: second "
            "producer_acquire of a slot still in use: its full barrier already completed the phase "
            "(parity %u) this fill is to complete (acquired again without advancing the state)") in text
    assert (f"checked mode: pipeline consumer_release: slot %u (step %u, phase %u) of {desc}: "
            "consumer_release without a consumer_wait of this state: the slot's fill has not landed "
            "(its full barrier's phase of parity %u is incomplete)") in text
    raw = ptx("tma_pipe", checked=True)
    assert count(raw, r"mbarrier\.test_wait\.parity") == 2
    assert count(ptx("tma_pipe"), r"mbarrier\.test_wait\.parity") == 0


def small_bars(a):
    bars = cuda.shared.array((2, 2), np.uint64)
    pipe = ac.pipeline.cp_async_pipeline(bars, 4, producers=32, consumers=32)
    ac.pipeline.init(pipe)


def test_checked_init_traps_on_a_small_barrier_array():
    with ac.checked_mode():
        text = ptx_strings(cuda.compile_ptx(small_bars, (types.float32[::1],), cc=(9, 0))[0])
    assert ("pipeline init: `bars` holds %lld barriers; a cp_async pipeline (4 stages, 32 producers, "
            "32 consumers) needs 8") in text


def test_checked_group_pipeline_has_no_barrier_checks():
    assert "pipeline" not in ptx_strings(ptx("groups_pipe", checked=True))


# --- compile-time errors ------------------------------------------------------------------------------


def compile_error(body: str, sig=(types.float32[::1],)) -> str:
    src = "def k(a):\n" + "\n".join("    " + line for line in body.strip().splitlines())
    g = {"cuda": cuda, "np": np, "ac": ac}
    exec(src, g)
    with pytest.raises(TypingError) as e:
        cuda.compile_ptx(g["k"], sig, cc=(9, 0))
    return str(e.value)


@pytest.mark.parametrize("body, message", [
    ("bars = cuda.shared.array((2, 4), np.uint64)\n"
     "pipe = ac.pipeline.tma_pipeline(bars, 0, consumers=32)",
     "tma_pipeline: `stages`=0 is outside 1..64"),
    ("bars = cuda.shared.array((2, 4), np.uint64)\n"
     "pipe = ac.pipeline.tma_pipeline(bars, 4, consumers=a.size)",
     "tma_pipeline: `consumers` must be a compile-time constant"),
    ("bars = cuda.shared.array((2, 4), np.uint32)\n"
     "pipe = ac.pipeline.cp_async_pipeline(bars, 4, 32, 32)",
     "cp_async_pipeline: `bars` must be a uint64 shared-memory array view"),
    ("pipe = ac.pipeline.group_pipeline(1, shared=True)",
     "group_pipeline: `stages`=1: a shared group pipeline needs 2 or more stages"),
    ("pipe = ac.pipeline.group_pipeline(4)\n"
     "st = ac.pipeline.consumer_start(pipe)\n"
     "ac.pipeline.consumer_try_wait(pipe, st)",
     "consumer_try_wait: a group pipeline cannot test its slots"),
    ("pipe = ac.pipeline.group_pipeline(4)\n"
     "st = ac.pipeline.producer_start(pipe)\n"
     "ac.pipeline.producer_try_acquire(pipe, st)",
     "producer_try_acquire: a group pipeline has nothing to test"),
    ("pipe = ac.pipeline.group_pipeline(4)\n"
     "st = ac.pipeline.producer_start(pipe)\n"
     "ac.pipeline.copy_bulk(pipe, st, a, a)",
     "copy_bulk: copies through the pipeline need a tma_pipeline"),
    ("ac.pipeline.producer_acquire((1, 2), (0, 0, 0))",
     "producer_acquire: `pipe` must be a pipeline built in the kernel"),
    ("pipe = ac.pipeline.group_pipeline(4)\n"
     "ac.pipeline.consumer_wait(pipe, (0, 0, 0))",
     "consumer_wait: `state` must be a PipelineState"),
    ("bars = cuda.shared.array((2, 4), np.uint64)\n"
     "sh = cuda.shared.array(64, np.float32)\n"
     "pipe = ac.pipeline.tma_pipeline(bars, 4, consumers=32)\n"
     "st = ac.pipeline.producer_start(pipe)\n"
     "ac.pipeline.copy_tensor(pipe, st, sh, a, (0,))",
     "cp_async_bulk_tensor_load: `tensor_map` must be an ac.TensorMap"),
])
def test_compile_errors_name_the_argument(body, message):
    assert message in compile_error(body)
