"""Ordinary loads of shared memory, seen: which thread wrote the bytes a
thread reads, and whether a barrier made them visible to it.

The simulator's shared arrays are :class:`SharedArray`, a numpy array whose
element reads (``sh[i]``, ``tile[r, c]``) look at a per-allocation shadow
of unpublished writes, only while that allocation has one (otherwise a
read costs one flag test).  The shadow holds three kinds of writes:

- a ``cp_async`` copy still in flight (worst schedule: until the issuing
  thread's ``wait_group`` / ``wait_all`` retires its group, or the barrier
  phase tracking it completes);
- a ``cp_async`` copy that the issuing thread's ``wait_group`` retired:
  visible to that thread only, until a barrier orders the wait before the
  other threads' reads: ``cuda.syncthreads()``, an mbarrier phase the
  writer arrived on after its wait, a cluster barrier, or
  ``cuda.syncwarp`` among the writer's lanes;
- a ``dsmem_store`` / ``dsmem_atomic_add`` / ``map_shared_rank`` store by
  another CTA: visible to the owner's threads once the writer CTA arrived
  on a cluster barrier with release semantics after the store and the
  reading thread waited on that barrier, or once an mbarrier phase of the
  owner that the writer arrived on remotely after the store completed.

A read of such bytes by another thread (for DSMEM: by a thread of the
owning CTA) is a :class:`~numba_asynccopy.sim.SimulatorError` naming the
reader, the writer, the write's source line and the missing barrier.
What it cannot see: reads of whole slices or through numpy functions (only
element reads are checked), the issuing thread reading its own copy before
its wait (that reads poison, as before), and which of the writer's
arrivals preceded the write when an mbarrier publishes it (any arrival on
the completed phase counts).
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from . import _numba_sim_internals as _nbsim
from .errors import SIM_PREFIX, SimulatorError, caller_line, where
from .events import EVENTS
from .schedule import POISON_BYTE, eager

_get = np.ndarray.__getitem__
_POISON = {n: bytes([POISON_BYTE]) * n for n in (1, 2, 4, 8, 16)}  # an element in flight


class _Flag:
    """How many allocations have a shadow (the one test an unwatched read
    pays), and how many of the writes hold data (``real``: landed copies,
    DSMEM stores); the others are copies in flight, whose bytes are poison,
    so while there are none of the former only a poison-valued read needs a look."""
    n = 0
    real = 0


FLAG = _Flag()


class SharedArray(np.ndarray):
    """A simulated ``cuda.shared.array``: an ordinary numpy array whose
    element reads are checked against the writes not yet visible to the
    reading thread (:mod:`numba_asynccopy.sim.visibility`).

    Example::

        sh = cuda.shared.array(64, np.float32)   # a SharedArray in the simulator
        x = sh[cuda.threadIdx.x]                 # checked only while writes are pending
    """

    def __getitem__(self, idx):
        out = _get(self, idx)
        if FLAG.n and not isinstance(out, np.ndarray) and (
                FLAG.real or out.tobytes() == _POISON.get(out.itemsize)):
            check_read(self, idx)
        return out


class _Write:
    """One unpublished write: its kind (``"flight"``, ``"landed"``,
    ``"dsmem"``), the writing thread, where it was issued, and what
    publishes it."""

    __slots__ = ("id", "kind", "writer", "site", "waited_at", "offs", "shadow", "gen",
                 "visible_gen", "released_on", "op", "tracked", "released")

    def __init__(self, kind, writer, site, offs, shadow):
        self.id = next(_ids)
        self.kind, self.writer, self.site, self.offs, self.shadow = kind, writer, site, offs, shadow
        self.waited_at = None
        self.gen = 0  # dsmem: the cluster barrier generation the store precedes
        self.visible_gen = None  # dsmem: the generation whose waits make it visible
        self.released_on: set = set()  # ids of barriers the writer arrived on after it
        self.op = None
        self.tracked = None  # the barrier a cp_async_mbarrier_arrive tracks it on
        self.released = None  # an arrival on another barrier while it was in flight


_ids = itertools.count(1)


class _Shadow:
    """One allocation's unpublished writes: byte -> write id (0: none)."""

    def __init__(self, arr: np.ndarray, block: tuple, key):
        self.arr, self.block, self.key = arr, block, key
        self.ids = np.zeros(max(arr.nbytes, 1), np.int64)
        self.writes: dict[int, _Write] = {}


_SHADOWS: dict[int, _Shadow] = {}  # allocation start address -> shadow


def _set_flag() -> None:
    FLAG.n = len(_SHADOWS)


def _shadow_of(addr: int, create: bool) -> _Shadow | None:
    hit = _nbsim.shared_allocation(addr)
    if hit is None:
        return None
    block, key, _off, arr = hit
    start = _nbsim.address(arr)
    sh = _SHADOWS.get(start)
    if sh is not None and sh.arr is not arr:  # a freed allocation's: stale
        del _SHADOWS[start]
        FLAG.real -= sum(w.kind in _REAL for w in sh.writes.values())
        sh = None
    if sh is None and create:
        sh = _SHADOWS[start] = _Shadow(arr, block, key)
        _set_flag()
    return sh


def _byte_offsets(v: np.ndarray, start: int) -> np.ndarray:
    base = _nbsim.address(v) - start
    if v.flags.c_contiguous:  # a chunk, a row: one run of bytes
        return np.arange(base, base + v.nbytes, dtype=np.int64)
    idx = np.indices(v.shape).reshape(v.ndim, -1)
    starts = _nbsim.address(v) + (idx * np.asarray(v.strides)[:, None]).sum(0)
    return ((starts[:, None] + np.arange(v.itemsize)).reshape(-1) - start).astype(np.int64)


def _add(kind: str, writer, site: str, views, byte_offsets=None, alloc_addr=None) -> list:
    """Record a write of ``views`` (numpy views of shared memory), or of
    ``byte_offsets`` of the allocation at ``alloc_addr``."""
    out = []
    if byte_offsets is not None:
        sh = _shadow_of(alloc_addr, True)
        if sh is not None:
            out.append(_mark(kind, writer, site, np.asarray(byte_offsets, np.int64), sh))
        return out
    for v in views:
        if v.size == 0:
            continue
        sh = _shadow_of(_nbsim.address(v), True)
        if sh is None:
            continue
        out.append(_mark(kind, writer, site, _byte_offsets(v, _nbsim.address(sh.arr)), sh))
    return out


_REAL = ("landed", "dsmem")


def _set_kind(w: _Write, kind: str) -> None:
    FLAG.real += (kind in _REAL) - (w.kind in _REAL)
    w.kind = kind


def _mark(kind, writer, site, offs, sh) -> _Write:
    w = _Write(kind, writer, site, offs, sh)
    FLAG.real += kind in _REAL
    sh.writes[w.id] = w
    sh.ids[offs] = w.id
    return w


def _drop(w: _Write) -> None:
    sh = w.shadow
    if sh.writes.pop(w.id, None) is None:
        return
    FLAG.real -= w.kind in _REAL
    mine = w.offs[sh.ids[w.offs] == w.id]
    sh.ids[mine] = 0
    if not sh.writes:
        start = _nbsim.address(sh.arr)
        if _SHADOWS.get(start) is sh:
            del _SHADOWS[start]
        _set_flag()


def _all_writes():
    for sh in list(_SHADOWS.values()):
        yield from list(sh.writes.values())


# --- the check of a read --------------------------------------------------------------


def check_read(view: SharedArray, idx) -> None:
    """A thread's element read of shared bytes that another thread's cp.async
    still writes or that only that thread's wait_group retired, with no
    barrier since (``cuda.syncthreads``, an mbarrier phase the writer arrived
    on, a cluster barrier, ``cuda.syncwarp`` among the lanes), or that
    another CTA stored into with DSMEM with no cluster barrier (release
    arrive, then this thread's wait) or mbarrier handshake since, is a
    :class:`SimulatorError` naming the reader, the writer, the line of the
    write and the missing barrier.  A read of the destination of a bulk or
    TMA copy in flight reads poison, and is remembered for :func:`released`."""
    d = view.__dict__
    loc = d.get("_ac_loc")
    if loc is None:
        hit = _nbsim.shared_allocation(_nbsim.address(view))
        if hit is None:
            return
        loc = d["_ac_loc"] = (_nbsim.address(hit[3]), hit[2])
    start, o = loc
    sh = _SHADOWS.get(start)
    if sh is None:
        return
    t_idx = idx if type(idx) is tuple else (idx,)
    try:
        for i, n, s in zip(t_idx, view.shape, view.strides):
            o += (int(i) % n) * s
    except TypeError:
        return  # not plain integer indices (a mask, Ellipsis): not checked
    ids = sh.ids
    first, last = ids.item(o), ids.item(o + view.itemsize - 1)
    if not first and not last:
        return  # writes cover whole elements: neither end written, none of it
    t = threading.current_thread()
    if first == last:
        w = sh.writes.get(first)
        if w is not None and w.writer is t and w.kind in ("flight", "landed"):
            return  # this thread's own copy (in flight: poison, as before)
    mgr = _nbsim.block_manager(t)
    cl = getattr(mgr, "_ac_cluster", None) if mgr is not None else None
    if cl is None:
        return
    with cl.lock:
        ids = sh.ids[o:o + view.itemsize]
        for k in set(ids[ids != 0].tolist()):
            w = sh.writes.get(k)
            if w is None:
                continue
            if w.kind == "async":  # poison, as before; releasing the slot next is the error
                early = t.__dict__.setdefault("_ac_early_reads", {})
                if w.id not in early:
                    early[w.id] = (w, _element(w, t_idx, o), caller_line())
            elif not _visible(w, t):
                raise SimulatorError(_race_text(w, view, t_idx, o, t))


def _visible(w: _Write, t) -> bool:
    if w.kind == "dsmem":
        if tuple(t.blockIdx) == tuple(w.writer.blockIdx):
            return True  # the writer's own CTA: the remote-read rules apply there
        th = t.__dict__.get("_ac_thread")
        waited = getattr(th, "_ac_cluster_waited", -1) if th is not None else -1
        return w.visible_gen is not None and waited >= w.visible_gen
    if w.writer is t:
        return True  # a thread sees its own copies (in flight: poison, as before)
    return False


def _element(w: _Write, idx, o: int) -> str:
    from .state import describe_shared

    elem = int(idx[0]) if len(idx) == 1 else tuple(int(i) for i in idx)
    return f"element {elem} of {describe_shared(_nbsim.address(w.shadow.arr) + o)}"


def _race_text(w: _Write, view, idx, o: int, t) -> str:
    where_r = where(t)
    what = _element(w, idx, o)
    line = caller_line()
    head = f"{SIM_PREFIX}shared-memory read: race: thread {where_r} reads {what} at {line}"
    if w.kind == "flight" and w.tracked:
        return (f"{head}, which a copy of another thread still writes: {w.site}, tracked by "
                f"{w.tracked} through cp_async_mbarrier_arrive: wait on that barrier's phase "
                f"(mbarrier_wait) before reading what the copies of other threads bring")
    if w.kind == "flight":
        return (f"{head}, which a copy of another thread still writes: {w.site}, not retired "
                f"yet (its bytes land when that thread's wait_group / wait_all retires the "
                f"group). wait_group makes a copy visible only to the thread that issued it: "
                f"after the issuing threads' wait_group, call cuda.syncthreads() (a "
                f"group_pipeline(shared=True) does) or arrive on an mbarrier the readers wait "
                f"on, before other threads read the data")
    if w.kind == "landed":
        return (f"{head}, which another thread's copy wrote ({w.site}, landed at "
                f"{w.waited_at}), with no barrier between that and this read: wait_group makes a copy visible only to the thread that issued it. "
                f"Call cuda.syncthreads() after the wait_group (a group_pipeline(shared=True) "
                f"does), or have the issuing thread arrive on an mbarrier this thread waits on")
    return (f"{head}, which {w.site} stored into this CTA's shared memory, with no "
            f"synchronization between that store and this read: a remote store becomes "
            f"visible to the owner only after the storing CTA's cluster_arrive (release) and "
            f"this thread's cluster_wait (cluster_sync does both), or after a phase of an "
            f"mbarrier of this CTA that the storing thread arrived on after the store and "
            f"this thread waited on; on the GPU the read may return the old value")


# --- writes -----------------------------------------------------------------------------


def copy_issued(op, views, site: str) -> None:
    """A cp.async copy by the calling thread into shared ``views`` (worst
    schedule: in flight until its group is retired); caller holds the lock."""
    t = threading.current_thread()
    if eager():
        # landed at issue: unpublished until a barrier
        for w in _add("landed", t, site, views):
            w.waited_at, w.op = "its issue (the eager schedule lands copies at issue)", op
        return
    ws = _add("flight", t, site, views)
    if not ws:
        return
    for w in ws:
        w.op = op

    def landed(_op, ws=ws):
        by = getattr(_op, "_ac_retired_at", None)
        for w in ws:
            if by is None or w.shadow.writes.get(w.id) is not w:
                _drop(w)  # landed by a barrier's phase: its waiters see it
            else:
                _set_kind(w, "landed")
                w.waited_at = f"that thread's {by}"

    op.then.append(landed)


def tracked_by(copies, b) -> None:
    """``cp_async_mbarrier_arrive``: the phase of barrier ``b`` that the calling
    thread's arrival completes publishes its ``copies``."""
    if not FLAG.n:
        return
    ops = {id(c) for c in copies}
    for w in _all_writes():
        if w.op is not None and id(w.op) in ops:
            w.released_on.add(id(b))
            w.tracked = b.name()


def retiring(op, line: str) -> None:
    """``op`` lands now because its issuing thread's wait (``line``: ``"wait_group at
    file:line"``) retires it."""
    op._ac_retired_at = line


def remote_store(writer, owner: tuple, key, offsets, itemsize: int, site: str, gen: int) -> None:
    """A DSMEM store of the calling thread into CTA ``owner``'s allocation
    ``key`` at byte ``offsets``, before cluster barrier generation ``gen``."""
    arr = _nbsim.shared_counterpart(key, owner)
    offs = (np.asarray(offsets, np.int64)[:, None] + np.arange(itemsize)).reshape(-1)
    for w in _add("dsmem", writer, site, None, offs, _nbsim.address(arr)):
        w.gen = gen


# --- what publishes them -----------------------------------------------------------------


@EVENTS.on("block_barrier")
def block_barrier(point: tuple) -> None:
    """``cuda.syncthreads()`` completed in block ``point``: its threads' landed copies are
    visible to the block."""
    if not FLAG.n:
        return
    for w in _all_writes():
        if w.kind == "landed" and tuple(w.writer.blockIdx) == point:
            _drop(w)


def warp_barrier(t, mask: int) -> None:
    """``cuda.syncwarp(mask)`` completed for thread ``t``'s warp: the landed copies of
    the lanes of ``mask`` are visible to those lanes."""
    if not FLAG.n:
        return
    me = tuple(t.blockIdx)
    base = t.thread_id - t.thread_id % 32
    for w in _all_writes():
        if w.kind == "landed" and tuple(w.writer.blockIdx) == me:
            tid = w.writer.thread_id
            if base <= tid < base + 32 and (mask >> (tid - base)) & 1:
                _drop(w)


@EVENTS.on("copy_tracked")
def _tracked(op, b) -> None:
    """A bulk, TMA or cluster copy in flight until a wait sees barrier ``b``'s phase."""
    if op.landed:
        return
    ws = _add("async", threading.current_thread(), getattr(op, "issued_at", "a copy"),
              [dst for dst, _ in op.pieces])
    for w in ws:
        w.tracked, w.gen, w.op = b.name(), b.phase, op

    def landed(_op, ws=ws):
        for w in ws:
            _drop(w)

    op.then.append(landed)


def released_while_in_flight(op, blk) -> str | None:
    """The first arrival on another barrier while ``op`` (a bulk or TMA copy) was in
    flight, or else the threads of ``blk`` that arrived on a barrier without ever
    completing a wait, for the message of a copy nothing waited for."""
    for w in _all_writes():
        if w.op is op and w.released:
            return f"{w.released} while it was in flight"
    return arrived_without_wait(blk, other_than=op.barrier.name() if op.barrier else None)


def arrived_without_wait(blk, only: str | None = None, other_than: str | None = None) -> str | None:
    """The threads of ``blk`` that arrived on a barrier (``only`` that one, or any
    but ``other_than``) without ever completing an mbarrier wait, for messages."""
    from .errors import _ids

    by: dict = {}
    for t in _nbsim.block_threads(blk.mgr):
        if t.__dict__.get("_ac_waited"):
            continue
        for name, line in t.__dict__.get("_ac_arrivals", {}).items():
            if name != other_than and (only is None or name == only):
                by.setdefault((name, line), []).append(t)
                break
    if not by:
        return None
    (name, line), ts = next(iter(by.items()))
    return f"threads {_ids(ts)} arrived on {name} (at {line}) without ever completing a wait"


def waited() -> None:
    """The calling thread completed an mbarrier wait."""
    threading.current_thread().__dict__["_ac_waited"] = True


@EVENTS.on("arrive")
def released(b, api: str) -> None:
    """A thread that arrives on an mbarrier after reading the destination of a
    bulk or TMA copy still in flight (a consumer releasing a slot without
    waiting for its fill) is a :class:`SimulatorError` saying the slot was
    released without a wait, naming the element, the copy and its barrier
    phase; so is an arrival that refills a phase whose copies nobody waited
    for (``state.Barrier.arrive``), and a copy nothing waited for at the
    block's exit names the arrivals made without a wait.

    Otherwise the arriving thread's landed copies, and its DSMEM stores into
    ``b``'s CTA, are released on ``b``: visible once the phase completes
    (not by a CTA-scope arrive on another CTA's barrier, which releases
    nothing to that CTA)."""
    t = threading.current_thread()
    arrivals = t.__dict__.setdefault("_ac_arrivals", {})
    if len(arrivals) < 4 and b.name() not in arrivals:  # for the message of a copy nothing waited for
        arrivals[b.name()] = caller_line()
    if not FLAG.n:
        return
    for w in _all_writes():  # what a consumer's arrival released while the fill was in flight
        if w.kind == "async" and w.released is None and w.tracked != b.name():
            w.released = f"{b.name()} was arrived on ({api}) at {caller_line()} {where(t)}"
    early = t.__dict__.get("_ac_early_reads")
    if early:
        for k, (w, what, line) in list(early.items()):
            if w.shadow.writes.get(w.id) is not w:
                del early[k]  # landed since: its bytes were poison all the same
                continue
            early.clear()
            raise SimulatorError(
                f"{SIM_PREFIX}{api}: the slot was released without a wait: this thread arrives "
                f"on {b.name()} after reading {what} at {line} before the copy that fills it "
                f"landed ({w.site}, tracked by {w.tracked} in phase {w.gen}); it read poison. "
                f"Wait for that phase (mbarrier_wait_parity on the slot's full barrier) before "
                f"reading the tile and releasing the slot {where(t)}")
    if getattr(t, "_ac_publishes_nothing", False):
        return  # a CTA-scope arrive on another CTA's barrier: no release to its waiters
    for w in _all_writes():
        if w.writer is t and w.kind in ("landed", "dsmem"):
            if w.kind == "landed" or tuple(w.shadow.block) == tuple(b.owner or ()):
                w.released_on.add(id(b))


@EVENTS.on("phase_complete")
def _phase(b) -> None:
    if not FLAG.n:
        return
    for w in _all_writes():
        if id(b) in w.released_on:
            _drop(w)


def cluster_barrier(g: int, released: set, points) -> None:
    """Generation ``g`` of the cluster barrier completed; ``released``: the CTAs that
    arrived with release semantics."""
    if not FLAG.n:
        return
    pts = set(points)
    for w in _all_writes():
        wp = tuple(w.writer.blockIdx)
        if wp not in pts:
            continue
        if w.kind == "landed" and wp in released:
            _drop(w)
        elif w.kind == "dsmem":
            if w.visible_gen is None and w.gen <= g and wp in released:
                w.visible_gen = g
            elif w.visible_gen is not None and w.visible_gen < g:
                _drop(w)  # every live thread waited on it before arriving at ``g``


def cluster_waited(th, g: int) -> None:
    """Thread state ``th`` completed a wait on cluster barrier generation ``g``."""
    th._ac_cluster_waited = max(getattr(th, "_ac_cluster_waited", -1), g)


def mbarrier_published(owner: tuple, writer_cta: tuple) -> None:
    """A phase of CTA ``owner``'s mbarrier that CTA ``writer_cta`` arrived on remotely
    completed: that CTA's stores into ``owner`` before it are visible there."""
    if not FLAG.n:
        return
    for w in _all_writes():
        if w.kind == "dsmem" and tuple(w.shadow.block) == owner \
                and tuple(w.writer.blockIdx) == writer_cta:
            _drop(w)


@EVENTS.on("blocks_freed")
def _freed(points) -> None:
    """The blocks' shared memory is gone: so are its shadows."""
    pts = set(points)
    for start, sh in list(_SHADOWS.items()):
        if sh.block in pts:
            del _SHADOWS[start]
    _set_flag()
    FLAG.real = sum(w.kind in _REAL for sh in _SHADOWS.values() for w in sh.writes.values())
