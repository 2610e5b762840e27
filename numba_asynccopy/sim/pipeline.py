"""Pipelines in the simulator: the device protocol, every rule of it checked.

The operations run on the simulator's own intrinsics (so copies land only
when correctly waited for under the worst schedule), and the protocol is
checked as it runs; each broken rule is a
:class:`~numba_asynccopy.sim.SimulatorError` (a
:class:`~numba_asynccopy.sim.DeadlockError` for a wait that can never
finish) naming the pipeline operation, the slot, the state's step and phase,
and the counts involved:

- a consumer waiting on a slot no producer will fill (deadlock, with the
  barrier's arrivals and bytes; for a group pipeline, too few groups
  committed after the slot for its ``wait_group``);
- a ``consumer_release`` without a ``consumer_wait`` of that state;
- a second ``producer_acquire`` of a slot still in use (not committed, a
  state not advanced, or for a group pipeline a slot not released);
- a tma stage whose copies differ from the pipeline's ``copies``, or whose
  barrier got copies of more or fewer bytes than the pipeline armed;
- more producer or consumer threads than the pipeline was built for (fewer
  show up as a deadlock naming the missing arrivals), or a block too small;
- for a cluster pipeline, a launch whose cluster does not have ``ctas`` CTAs,
  and a slot no CTA's producer can refill because the consumers of some CTA
  never release it (the deadlock lists the releases of the fill by CTA).

Example::

    # NUMBA_ENABLE_CUDASIM=1
    kernel[1, 128](tmap, out)    # SimulatorError: ... pipeline consumer_release: slot 2 ...
"""

from __future__ import annotations

import threading

import numpy as np

from .. import _rules
from .. import pipeline as _dev
from . import _runtime as rt
from . import bulk as _bulk
from . import cluster as _cl
from . import cp_async as _cp
from . import fence as _fence
from . import mbarrier as _mb
from . import tensor as _tensor
from ._mirror import mirrors

# the device constructors (intrinsics): their typing validates the arguments
_DEV = {n: getattr(_dev, n) for n in ("group_pipeline", "cp_async_pipeline", "tma_pipeline",
                                       "cluster_tma_pipeline")}
PipelineState = _dev.PipelineState
GroupPipeline, CpAsyncPipeline, TmaPipeline = _dev.GroupPipeline, _dev.CpAsyncPipeline, _dev.TmaPipeline
ClusterTmaPipeline = _dev.ClusterTmaPipeline
barrier_count = _dev.barrier_count
U0, U1 = np.uint32(0), np.uint32(1)


# what each twin checks beyond the device operation (appended to its docstring)
_NOTES = {
    "init": (
        "also checks the barrier array and the block size like checked mode, and for a "
        "cluster pipeline that the cluster has ``ctas`` CTAs."),
    "producer_acquire": (
        "also raises a named error for a second acquire of a slot still in use, and a "
        "DeadlockError showing both barriers of the slot when it can never become free."),
    "producer_try_acquire": (
        "also raises a named error for a second acquire of a slot still in use."),
    "producer_commit": (
        "also checks a tma stage's copies and bytes against what the pipeline armed, and "
        "the producer count."),
    "consumer_wait": (
        "also raises a DeadlockError showing both barriers of the slot when no producer "
        "fills it, and for a group pipeline a named error when too few groups follow the "
        "slot."),
    "consumer_release": (
        "also raises a named error for a release without a wait and for more releases "
        "than consumers (in a cluster pipeline, on the slot's empty barrier of every CTA)."),
}


# --- constructors -------------------------------------------------------------------


@mirrors(_dev.group_pipeline)
def group_pipeline(stages, shared=False):
    rt.validate(_DEV["group_pipeline"], stages, shared)
    return GroupPipeline(int(stages), bool(shared))


@mirrors(_dev.cp_async_pipeline)
def cp_async_pipeline(bars, stages, producers, consumers):
    rt.validate(_DEV["cp_async_pipeline"], bars, stages, producers, consumers)
    return CpAsyncPipeline(rt.unwrap(bars).reshape(-1), int(stages), int(producers), int(consumers))


@mirrors(_dev.tma_pipeline)
def tma_pipeline(bars, stages, consumers, copies=1):
    rt.validate(_DEV["tma_pipeline"], bars, stages, consumers, copies)
    return TmaPipeline(rt.unwrap(bars).reshape(-1), int(stages), int(consumers), int(copies))


@mirrors(_dev.cluster_tma_pipeline, (
    "the CTAs of the cluster run together: each copy lands in every CTA of the mask and "
    "releases arrive on every CTA's empty barrier, with the protocol checked as for "
    "tma_pipeline; a launch whose cluster does not have ``ctas`` CTAs is an error at init."))
def cluster_tma_pipeline(bars, stages, consumers, ctas, copies=1):
    rt.validate(_DEV["cluster_tma_pipeline"], bars, stages, consumers, ctas, copies)
    return ClusterTmaPipeline(rt.unwrap(bars).reshape(-1), int(stages), int(consumers), int(ctas),
                              int(copies))


# --- bookkeeping ----------------------------------------------------------------------


def _kind(api: str, pipe) -> _dev.PipelineKind:
    kind = _dev.KINDS.get(type(pipe))
    if kind is None:
        raise TypeError(f"{api}: `pipe` must be a pipeline built in the kernel by "
                        f"ac.pipeline.group_pipeline, cp_async_pipeline, tma_pipeline or "
                        f"cluster_tma_pipeline, got {pipe!r}")
    return kind


def _consts(pipe) -> dict:
    return {f: v for f, v in zip(pipe._fields, pipe) if f != "bars"}


def _desc(pipe) -> str:
    return _kind("pipeline", pipe).describe(_consts(pipe))


def _state(api: str, state) -> tuple[int, int, int]:
    if not isinstance(state, PipelineState):
        raise TypeError(f"{api}: `state` must be a PipelineState from ac.pipeline.producer_start, "
                        f"consumer_start or advance, got {state!r}")
    return int(state.slot), int(state.phase), int(state.step)


def _where(api: str, pipe, state) -> str:
    i, p, c = _state(api, state)
    return _rules.pipeline_where(slot=i, step=c, phase=p, pipeline=_desc(pipe))


def _fail(api: str, pipe, state, rule: str) -> rt.SimulatorError:
    return rt.violation(f"pipeline {api}", f"{_where(api, pipe, state)}: {rule}")


def _in_use(api: str, pipe, state, why: str) -> rt.SimulatorError:
    """The rule checked mode traps on at producer_acquire, with what the
    simulator knows of this thread."""
    return rt.violation(f"pipeline {api}", _rules.pipeline_slot_in_use(
        where=_where(api, pipe, state), why=why))


def _key(pipe):
    """Identity of a pipeline: its barrier array (a group pipeline: its shape)."""
    if isinstance(pipe, GroupPipeline):
        return ("group", pipe.stages, pipe.shared)
    return ("bars", rt.address(rt.unwrap(pipe.bars)))


class Records:
    """The pipeline family's slot of a thread's state: its record of each
    pipeline (:func:`_thread_rec`)."""

    def __init__(self, th):
        self.by_pipe: dict = {}


def _thread_rec(api: str, pipe) -> dict:
    """This thread's record of a pipeline: per slot, the step of the state it
    acquired and has not committed ("open"), committed and not released
    ("filled", group pipelines), waited for and not released ("waited"); the
    copies and bytes of the open stage; the last step acquired; the groups
    committed."""
    th, _ = rt.current(api)
    recs = th.slot(Records).by_pipe
    return recs.setdefault(_key(pipe), {"open": {}, "filled": {}, "waited": {}, "copies": {},
                                        "bytes": {}, "acquired": -1, "commits": 0})


def _solo(pipe) -> bool:
    """A tma pipeline run by one thread (``consumers=0``): no empty barriers;
    the thread frees a slot by its own order, checked like a group pipeline's."""
    return isinstance(pipe, TmaPipeline) and pipe.consumers == 0


def _bar(pipe, k: int) -> np.ndarray:
    return rt.unwrap(pipe.bars)[k:]


def _blocking_wait(api: str, pipe, state, k: int, parity: int, side: str) -> None:
    """Wait for the phase of parity ``parity`` of barrier ``k``; a deadlock
    names the pipeline operation, the slot, the side that never came and
    both barriers of the slot (whichever thread of a stuck ring reports it,
    the counts of the missing arrivals are in the message)."""
    line = rt.caller_line()
    th, blk = rt.current(api)
    i = int(state.slot)
    with blk.cond:
        b = rt.barrier_of(f"pipeline {api}", blk, _bar(pipe, k))
        full = rt.barrier_of(f"pipeline {api}", blk, _bar(pipe, i))
        empty = (None if _solo(pipe) else
                 rt.barrier_of(f"pipeline {api}", blk, _bar(pipe, pipe.stages + i)))
        _mb.forget_spin(th)

        def fail():
            second = "" if empty is None else f"; its empty barrier is in {empty.report()}"
            who, at = "block", ""
            if isinstance(pipe, ClusterTmaPipeline):  # each CTA has the slot: say whose
                second += _releases_by_cta(pipe, blk, empty)
                p = blk.point
                who, at = "cluster", f" in CTA {blk.cluster.rank_of(p)} (block ({p[0]},{p[1]},{p[2]}))"
            pend, tx = b.outstanding()
            starved = (f" (starved: every arrival is in but {tx} announced transaction bytes "
                       "never come)") if pend == 0 and tx > 0 else ""
            err = rt.deadlock(blk,
                f"{rt.SIM_PREFIX}pipeline {api}: deadlock: every thread of the {who} is blocked "
                f"and {_where(api, pipe, state)}{at} can never become {side}: its full barrier is in "
                f"{full.report()}{starved}{second}; waiting at {line} {rt.where()}")
            err.root_cause = bool(starved)  # first in the launch's DeadlockError
            raise err

        done = _mb._done_fn(b, blk, True, parity)
        done.line = line
        blk.block_until(done, fail)
        _mb._vis.waited()  # a completed wait (for the messages of sim/visibility.py)


def _releases_by_cta(pipe, blk, empty) -> str:
    """Which CTAs' consumers released the fill an empty barrier of a cluster
    pipeline waits for (its arrivals come from every CTA)."""
    phase, got = getattr(empty, "_ac_releases", (None, {}))
    got = got if phase == empty.phase else {}
    cl = blk.cluster
    parts = [f"CTA {r} {got.get(r, 0)} of {pipe.consumers}" for r in range(min(pipe.ctas, cl.size))]
    short = [str(r) for r in range(min(pipe.ctas, cl.size)) if got.get(r, 0) < pipe.consumers]
    return (f"; releases of this fill by CTA: {', '.join(parts)} (the consumers of CTA "
            f"{', '.join(short)} never released it)" if short else "")


def _record_release(ob, rank: int) -> None:
    """One release by a consumer of CTA ``rank`` on empty barrier ``ob`` (for
    the deadlock message)."""
    phase, got = getattr(ob, "_ac_releases", (None, {}))
    if phase != ob.phase:
        got = {}
    got[rank] = got.get(rank, 0) + 1
    ob._ac_releases = (ob.phase, got)


# --- operations -------------------------------------------------------------------------


@mirrors(_dev.init, _NOTES["init"])
def init(pipe):
    kind = _kind("init", pipe)
    if not kind.barriers:
        return
    c = _consts(pipe)
    bars = rt.unwrap(pipe.bars)
    need = c["stages"] if _solo(pipe) else 2 * c["stages"]
    if bars.size < need:
        raise rt.violation("pipeline init", _rules.pipeline_bars(held=bars.size, pipeline=_desc(pipe),
                                                                need=need))
    th, blk = rt.current("pipeline init")
    threads = c["consumers"] + kind.producer_threads(c)
    if blk.nthreads < threads:
        raise rt.violation("pipeline init", _rules.pipeline_threads(threads=blk.nthreads,
                                                                   pipeline=_desc(pipe), need=threads))
    t = threading.current_thread()
    if kind.cluster:
        # the copies multicast to ranks 0..ctas-1 and the releases arrive there:
        # any other cluster size loses bytes or arrivals
        if blk.cluster.size != c["ctas"]:
            raise rt.violation("pipeline init", _rules.pipeline_cluster_size(
                ctas=blk.cluster.size, pipeline=_desc(pipe), need=c["ctas"]))
        if tuple(t.threadIdx) == (0, 0, 0):
            for s in range(c["stages"]):
                _mb.mbarrier_init(bars[s:], c["copies"])
                _mb.mbarrier_init(bars[c["stages"] + s:], c["consumers"] * c["ctas"])
            _fence.fence_mbarrier_init()  # visible to the cluster's remote arrivals
            _fence.fence_proxy_async("shared::cta")  # and to the copy engine
        _cl.cluster_sync()  # no peer arrives or multicasts before every CTA initialised
        return
    if _solo(pipe):  # called by the ring's one thread: no block barrier
        for s in range(c["stages"]):
            _mb.mbarrier_init(bars[s:], c["copies"])
        _fence.fence_proxy_async("shared::cta")  # as the device: the inits, before the copy engine
        return
    if tuple(t.threadIdx) == (0, 0, 0):
        full = kind.full_count(c)
        for s in range(c["stages"]):
            _mb.mbarrier_init(bars[s:], full)
            _mb.mbarrier_init(bars[c["stages"] + s:], c["consumers"])
        if kind.tx:  # the device's init fences the inits for the copy engine
            with blk.cond:
                rt.fence_inits(th, blk)
    t.syncthreads()


@mirrors(_dev.producer_start)
def producer_start(pipe):
    _kind("producer_start", pipe)
    return PipelineState(U0, U1, U0)


@mirrors(_dev.consumer_start)
def consumer_start(pipe):
    _kind("consumer_start", pipe)
    return PipelineState(U0, U0, U0)


@mirrors(_dev.advance)
def advance(pipe, state):
    _kind("advance", pipe)
    i, p, c = _state("advance", state)
    wrap = i == pipe.stages - 1
    return PipelineState(np.uint32(0 if wrap else i + 1), np.uint32(p ^ 1 if wrap else p),
                         np.uint32((c + 1) & 0xFFFFFFFF))


@mirrors(_dev.producer_acquire, _NOTES["producer_acquire"])
def producer_acquire(pipe, state):
    api = "producer_acquire"
    kind = _kind(api, pipe)
    i, p, c = _state(api, state)
    rec = _thread_rec(api, pipe)
    if i in rec["open"]:
        raise _in_use(api, pipe, state, f"this thread acquired it at state step {rec['open'][i]} and "
                      "has not committed it")
    if c <= rec["acquired"]:
        raise _in_use(api, pipe, state, f"this thread already acquired state step {rec['acquired']} "
                      "(advance the state after each stage)")
    if (not kind.barriers or _solo(pipe)) and i in rec["filled"]:
        raise _in_use(api, pipe, state, f"the fill of state step {rec['filled'][i]} was not "
                      "consumer_release'd by this thread")
    if kind.barriers and not _solo(pipe):
        _blocking_wait(api, pipe, state, pipe.stages + i, p, "free (its consumers never release it)")
    _acquired(rec, i, c)


def _acquired(rec: dict, i: int, c: int) -> None:
    rec["open"][i] = c
    rec["acquired"] = c
    rec["copies"][i], rec["bytes"][i] = 0, 0


@mirrors(_dev.producer_try_acquire, _NOTES["producer_try_acquire"])
def producer_try_acquire(pipe, state):
    api = "producer_try_acquire"
    if not _kind(api, pipe).barriers or _solo(pipe):
        what = "a tma pipeline run by one thread (consumers=0)" if _solo(pipe) else "a group pipeline"
        raise TypeError(f"producer_try_acquire: {what} has nothing to test")
    i, p, c = _state(api, state)
    rec = _thread_rec(api, pipe)
    if i in rec["open"] or c <= rec["acquired"]:
        raise _in_use(api, pipe, state, "this thread already acquired this state or a later one")
    ok = bool(_mb.mbarrier_test_wait_parity(_bar(pipe, pipe.stages + i), p))
    if ok:
        _acquired(rec, i, c)
    return ok


def _committing(api: str, pipe, state, rec: dict) -> int:
    i, _, c = _state(api, state)
    if rec["open"].get(i) != c:
        raise _fail(api, pipe, state, f"{api} without a producer_acquire of this state")
    return i


def _copy(api: str, pipe, state, dst) -> tuple[np.ndarray, np.uint16 | None]:
    """Checks of a copy through a tma pipeline; returns the slot's barrier
    after arming it (one arrival and ``dst``'s bytes; in a cluster pipeline
    its bytes times the CTAs, which multicast the same size there) and the
    multicast mask (None outside a cluster pipeline)."""
    if not _kind(api, pipe).tx:
        raise TypeError(f"{api}: copies through the pipeline need a tma_pipeline, got a "
                        f"{_kind(api, pipe)} pipeline")
    rec = _thread_rec(api, pipe)
    i = _committing(api, pipe, state, rec)
    cluster = isinstance(pipe, ClusterTmaPipeline)
    nbytes = rt.unwrap(dst).nbytes * (pipe.ctas if cluster else 1)
    rec["copies"][i] += 1
    rec["bytes"][i] += nbytes
    if rec["copies"][i] > pipe.copies:
        raise _fail(api, pipe, state, f"copy {rec['copies'][i]} of this stage, but the pipeline was "
                    f"built for copies={pipe.copies} a stage")
    bar = _bar(pipe, i)
    _mb.mbarrier_arrive_expect_tx(bar, nbytes)
    return bar, (np.uint16((1 << pipe.ctas) - 1) if cluster else None)


@mirrors(_dev.copy_bulk)
def copy_bulk(pipe, state, dst, src, cache_policy=None):
    bar, mask = _copy("copy_bulk", pipe, state, dst)
    _bulk.cp_async_bulk_g2s(dst, src, bar, multicast_mask=mask, cache_policy=cache_policy)


@mirrors(_dev.copy_tensor)
def copy_tensor(pipe, state, dst, tensor_map, coords, fence=True, cache_policy=None):
    bar, mask = _copy("copy_tensor", pipe, state, dst)
    _tensor.cp_async_bulk_tensor_load(dst, tensor_map, coords, bar, multicast_mask=mask, fence=fence,
                                      cache_policy=cache_policy)


@mirrors(_dev.copy_tensor_im2col)
def copy_tensor_im2col(pipe, state, dst, tensor_map, coords, offsets, fence=True,
                       cache_policy=None):
    bar, mask = _copy("copy_tensor_im2col", pipe, state, dst)
    _tensor.cp_async_bulk_tensor_load_im2col(dst, tensor_map, coords, offsets, bar,
                                             multicast_mask=mask, fence=fence,
                                             cache_policy=cache_policy)


@mirrors(_dev.producer_commit, _NOTES["producer_commit"])
def producer_commit(pipe, state):
    api = "producer_commit"
    kind = _kind(api, pipe)
    rec = _thread_rec(api, pipe)
    i = _committing(api, pipe, state, rec)
    c = rec["open"].pop(i)
    if not kind.barriers:
        _cp.commit_group()
        rec["filled"][i] = c
        rec["commits"] += 1
        return
    th, blk = rt.current(api)
    with blk.cond:
        b = rt.barrier_of(f"pipeline {api}", blk, _bar(pipe, i))
        if kind.tx:
            n, armed = rec["copies"][i], rec["bytes"][i]
            _, flight = b.in_flight()
            landed = b.tx_completed + flight
            # in a cluster pipeline the peers' parts may come later: only more
            # bytes than armed are wrong yet (fewer starve the wait, a deadlock)
            short = landed > armed if kind.cluster else landed != armed
            # still this fill's phase (a completed phase has reset its counts)
            if b.phase == int(state.step) // pipe.stages and (b.tx_expected != armed or short):
                raise _fail(api, pipe, state, f"the stage's copies carry {landed} bytes but the "
                            f"pipeline armed {armed} (barrier: {b.report()}); issue every copy "
                            "of the stage through copy_bulk/copy_tensor"
                            + (", the same sizes in every CTA" if kind.cluster else ""))
            if n != pipe.copies:
                raise _fail(api, pipe, state, f"{n} cop{'y' if n == 1 else 'ies'} ({armed} bytes) "
                            f"issued into the stage, but the pipeline was built for copies="
                            f"{pipe.copies}: the stage would never complete")
            if _solo(pipe):
                rec["filled"][i] = c
            return
        pend, _ = b.outstanding()
        if pend < 1 or b.phase != c // pipe.stages:
            raise _fail(api, pipe, state, f"all {pipe.producers} producer arrivals of this fill "
                        f"already came (its full barrier is in phase {b.phase}): more threads "
                        f"commit than the producers={pipe.producers} the pipeline was built for")
    _mb.cp_async_mbarrier_arrive(_bar(pipe, i), noinc=True)


@mirrors(_dev.consumer_wait, _NOTES["consumer_wait"])
def consumer_wait(pipe, state):
    api = "consumer_wait"
    kind = _kind(api, pipe)
    i, p, c = _state(api, state)
    rec = _thread_rec(api, pipe)
    if not kind.barriers:
        n = pipe.stages - (2 if pipe.shared else 1)
        done = rec["commits"]
        if done <= c:
            raise _fail(api, pipe, state, f"no producer will fill it: this thread committed "
                        f"{done} stage(s), state step {c} is stage {c + 1}")
        after = done - c - 1
        if after < n:
            raise _fail(api, pipe, state, f"only {after} group(s) were committed after this stage, "
                        f"but the pipeline waits with wait_group({n}), which would not wait for "
                        f"it: commit every stage (empty ones too) and keep the producer "
                        f"{pipe.stages - 1 if not pipe.shared else pipe.stages - 2} stage(s) ahead")
        _cp.wait_group(n)
        if pipe.shared:
            threading.current_thread().syncthreads()
    else:
        _blocking_wait(api, pipe, state, i, p, "full (no producer commits it)")
    rec["waited"][i] = c


@mirrors(_dev.consumer_try_wait)
def consumer_try_wait(pipe, state):
    api = "consumer_try_wait"
    if not _kind(api, pipe).barriers:
        raise TypeError("consumer_try_wait: a group pipeline cannot test its slots")
    i, p, c = _state(api, state)
    ok = bool(_mb.mbarrier_test_wait_parity(_bar(pipe, i), p))
    if ok:
        _thread_rec(api, pipe)["waited"][i] = c
    return ok


@mirrors(_dev.consumer_release, _NOTES["consumer_release"])
def consumer_release(pipe, state):
    api = "consumer_release"
    kind = _kind(api, pipe)
    i, p, c = _state(api, state)
    rec = _thread_rec(api, pipe)
    if rec["waited"].get(i) != c:
        raise rt.violation(f"pipeline {api}", _rules.pipeline_release_without_wait(
            where=_where(api, pipe, state), why=" in this thread"))
    del rec["waited"][i]
    if not kind.barriers or _solo(pipe):
        prod = rec["filled"].get(i)
        if prod is not None and prod <= c:
            del rec["filled"][i]
        return
    th, blk = rt.current(api)
    if kind.cluster:
        _cluster_release(api, pipe, state, blk)
        return
    with blk.cond:
        b = rt.barrier_of(f"pipeline {api}", blk, _bar(pipe, pipe.stages + i))
        pend, _ = b.outstanding()
        if pend < 1 or b.phase != c // pipe.stages:
            raise _fail(api, pipe, state, f"all {pipe.consumers} consumer releases of this fill "
                        f"already came (its empty barrier is in phase {b.phase}): more threads "
                        f"release than the consumers={pipe.consumers} the pipeline was built for")
    with blk.cond:  # an MMA may still read the slot's tiles
        rt.EVENTS.emit("slot_release", f"pipeline {api}", blk,
                       rt.address(rt.unwrap(_bar(pipe, i))), _where(api, pipe, state))
    _mb.mbarrier_arrive(_bar(pipe, pipe.stages + i))


def _cluster_release(api: str, pipe, state, blk) -> None:
    """The release of a cluster pipeline: one arrival on the slot's empty
    barrier in every CTA (each CTA's producer multicasts into this slot),
    each checked like a local release first."""
    i, _, c = _state(api, state)
    cl = blk.cluster
    bar = _bar(pipe, pipe.stages + i)
    me = cl.rank_of(blk.point)
    with blk.cond:  # the cluster's lock: no peer moves between the checks and the arrivals
        targets = []
        for r in range(pipe.ctas):
            _, _, ob, _, _ = _cl._remote_barrier(f"pipeline {api}", bar, np.uint32(r))
            pend, _ = ob.outstanding()
            if pend < 1 or ob.phase != c // pipe.stages:
                raise _fail(api, pipe, state, f"all {pipe.consumers * pipe.ctas} consumer "
                            f"releases of this fill already came to CTA {r} (its empty barrier "
                            f"is in phase {ob.phase}): more threads release than the consumers="
                            f"{pipe.consumers} per CTA the pipeline was built for")
            targets.append(ob)
        for r, ob in enumerate(targets):
            _record_release(ob, me)
            _mb.mbarrier_arrive(bar, cta_rank=np.uint32(r), scope="cta")


@mirrors(_dev.producer_tail)
def producer_tail(pipe, state):
    api = "producer_tail"
    if not _kind(api, pipe).barriers:
        _cp.wait_all()
        return
    if _solo(pipe):
        return  # the thread's own order freed its slots
    for _ in range(pipe.stages):
        i, p, _c = _state(api, state)
        _blocking_wait(api, pipe, state, pipe.stages + i, p, "free (its consumers never release it)")
        state = advance(pipe, state)
