"""Thread-block clusters in the simulator: special registers, the cluster
barrier, distributed shared memory, mbarrier operations on another CTA and
the cluster bulk copy.

The CTAs of a cluster run together (``sim/engine.py``), each with its own
shared memory; a *local* view names the same ``cuda.shared.array`` (same
line, same offset) in another CTA, as ``mapa`` does on the GPU.

Worst-case rules for clusters:

- a DSMEM access (``dsmem_load/store/atomic_add``, ``map_shared_rank``, a
  remote mbarrier operation, ``cp_async_bulk_cluster``) before this CTA has
  waited on a cluster barrier is an error: the other CTA may not have
  started;
- ``dsmem_load`` of another CTA's shared memory returns what that CTA
  published to this one: its shared memory as of its last ``.release``
  cluster-barrier arrival that this CTA waited for (or the last phase
  completion of one of this CTA's mbarriers that it arrived on remotely).
  A value that differs (the writer's store is not ordered before the read)
  raises :class:`~numba_asynccopy.sim.SimulatorError` naming both CTAs, the
  shared array and the missing synchronization;
- a CTA that exits while another CTA can still access its shared memory
  (an access not followed by a cluster barrier that the exiting CTA waited
  on) is an error, and so is an access to a CTA that already exited.

``map_shared_rank`` returns a :class:`RemoteView`, a numpy view of the
other CTA's memory whose element reads and writes follow the same rules as
``dsmem_load`` and ``dsmem_store`` (ordering, access before the first
cluster barrier, access to an exited CTA), in the same words.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from .. import _rules
from .. import cluster as _dev
from . import _numba_sim_internals as _nbsim
from . import _runtime as rt
from . import cp_async as _cp
from . import visibility as _vis
from . import _mirror
from ._mirror import mirrors
from .engine import current_cluster
from .fence import _converge


_MIRROR_FILE = _mirror.__file__

# --- per-cluster state ---------------------------------------------------------------


class _ClusterState:
    """Cluster barrier bookkeeping and what each CTA published to the others."""

    def __init__(self, cl):
        self.cl = cl
        self.arrived: set = set()  # threads arrived in the current generation
        self.relaxed: set = set()  # CTAs with a .relaxed arrive in the current generation
        self.published: dict = {}  # gen -> {point: {key: bytes}}
        self.views: dict = {}  # (reader point, owner point) -> {key: bytes}
        self.acquired: dict = {}  # point -> last generation acquired
        self.synced: set = set()  # points that completed a cluster wait
        self.waited: dict = {}  # point -> highest generation completed by one of its waits + 1
        self.accesses: dict = {}  # owner point -> [(reader point, protected gen, what)]
        # DSMEM reads not yet followed by a release of the owner:
        # (reader, owner, key, byte offset, bytes read, message head)
        self.reads: list = []
        # CTAs that arrived remotely on a barrier in its current phase (a release)
        self.releasers: dict = {}  # Barrier -> {point}
        cl.events.on("thread_exit", self.thread_exit)
        cl.events.on("block_exit", self.block_exit)

    # the cluster barrier --------------------------------------------------------------

    def maybe_complete(self) -> None:
        cl = self.cl
        if self.arrived and len(self.arrived) >= cl.live:
            g = cl.cbar_gen
            self.check_reads()
            self.published[g] = {p: _snapshot(p) for p in cl.points
                                 if p not in self.relaxed and p not in cl.exited}
            _vis.cluster_barrier(g, set(self.published[g]), cl.points)
            self.published.pop(g - 2, None)
            self.arrived = set()
            self.relaxed = set()
            cl.cbar_gen = g + 1
            cl.changed(cl.cbar_key)

    def thread_exit(self, t) -> None:
        self.arrived.discard(t)  # an exited thread no longer counts
        if self.arrived:
            self.maybe_complete()

    def acquire(self, me: tuple, g: int) -> None:
        """CTA ``me`` completed a wait on generation ``g``."""
        self.synced.add(me)
        self.waited[me] = max(self.waited.get(me, 0), g + 1)
        if self.acquired.get(me, -1) >= g:
            return
        self.acquired[me] = g
        for p, snap in self.published.get(g, {}).items():
            if p != me:
                self.views[(me, p)] = dict(snap)

    def publish_to(self, reader: tuple, owner: tuple) -> None:
        """``owner``'s release (a remote mbarrier arrive) acquired by ``reader``:
        ``reader`` sees ``owner``'s memory, and ``owner``'s earlier reads of
        ``reader``'s memory are ordered before ``reader``'s later writes."""
        self.views[(reader, owner)] = _snapshot(owner)
        _vis.mbarrier_published(reader, owner)  # owner's stores into reader, visible there
        self.reads = [r for r in self.reads if not (r[0] == owner and r[1] == reader)]

    def check_reads(self, only: tuple | None = None) -> None:
        """A DSMEM read whose bytes the owner changed before its next
        release raced with that write (the write was not ordered after the
        read): the read could return either value on the GPU."""
        keep = []
        for r in self.reads:
            reader, owner, key, o, got, head = r
            if only is not None and owner != only:
                keep.append(r)
                continue
            now = _nbsim.shared_counterpart(key, owner).view(np.uint8).reshape(-1)[o:o + len(got)]
            if not np.array_equal(now, got):
                self.reads = []
                raise rt.SimulatorError(
                    f"{head}, and CTA {self.cl.rank_of(owner)} (block {_pt(owner)}) wrote that "
                    "element before its next release: the write is not ordered after the read "
                    "(missing synchronization between them: cluster_sync, cluster_arrive(release)"
                    " + cluster_wait, or an mbarrier handshake)")
        self.reads = keep

    # the exit rule --------------------------------------------------------------------

    def record(self, api: str, me: tuple, th, owner: tuple) -> None:
        """CTA ``me`` accesses ``owner``'s shared memory now."""
        if owner == me:
            return
        cl = self.cl
        if owner in cl.exited:
            raise rt.violation(api, (
                f"CTA {cl.rank_of(owner)} (block {_pt(owner)}) has exited: its shared memory no "
                f"longer exists. A CTA must not exit while other CTAs of the cluster can still "
                f"access its shared memory: end the kernel with cluster_sync() after the last "
                f"access"))
        if me not in self.synced:
            raise rt.violation(api, (
                f"CTA {cl.rank_of(me)} (block {_pt(me)}) accesses the shared memory of CTA "
                f"{cl.rank_of(owner)} (block {_pt(owner)}) before waiting on any cluster barrier: "
                "that CTA may not have started. Call cluster_sync() (or cluster_arrive + "
                "cluster_wait) before the first DSMEM access"))
        g = cl.cbar_gen + (1 if threading.current_thread() in self.arrived else 0)
        self.accesses.setdefault(owner, []).append(
            (me, g, f"{api} at {rt.caller_line()} {rt.where()}"))

    def block_exit(self, p: tuple) -> None:
        cl = self.cl
        self.check_reads(only=p)
        done = self.waited.get(p, 0)
        for reader, g, what in self.accesses.pop(p, []):
            if reader == p or done > g:
                continue
            raise rt.SimulatorError(
                f"{rt.SIM_PREFIX}CTA {cl.rank_of(p)} (block {_pt(p)}) exited while CTA "
                f"{cl.rank_of(reader)} (block {_pt(reader)}) could still access its shared "
                f"memory ({what}): no cluster barrier that CTA {cl.rank_of(p)} waited on "
                f"follows that access. Keep every CTA alive until the others are done with its "
                f"shared memory: end the kernel with cluster_sync()")
        # its memory is gone: later views through map_shared_rank read poison
        for _key, arr in _nbsim.block_shared_arrays(p):
            arr.view(np.uint8).reshape(-1)[...] = rt.POISON_BYTE


def _exited(cl) -> set:
    return cl.exited_threads


def _pt(p) -> str:
    return "({},{},{})".format(*p)


def _snapshot(p: tuple) -> dict:
    return {key: arr.view(np.uint8).reshape(-1).copy() for key, arr in _nbsim.block_shared_arrays(p)}


def _cs(cl) -> _ClusterState:
    """The cluster family's slot of a cluster run."""
    return cl.slot(_ClusterState)


def _ctx(api: str):
    th, blk = rt.current(api)
    cl = blk.cluster
    return th, blk, cl, blk.point


def _rank(api: str, name: str, rank, cl) -> tuple:
    """The grid point of CTA ``rank``, with checked mode's rule and text."""
    r = int(rank)
    n = cl.size
    if not 0 <= r < n:
        raise rt.violation(api, f"`{name}`={r} is outside the cluster ({n} CTAs: ranks 0..{n - 1})")
    return cl.points[r]


def _local(api: str, name: str, view: np.ndarray, me: tuple):
    """(allocation key, byte offset) of a local shared view of CTA ``me``."""
    hit = _nbsim.shared_allocation(rt.address(view)) if view.size else None
    if hit is None or hit[0] != me:
        raise rt.violation(api, f"`{name}` is not a local shared-memory view (base "
                           f"0x{rt.address(view):x})")
    blk, key, off, arr = hit
    return key, off


def _mapped(view: np.ndarray, key, off: int, owner: tuple) -> np.ndarray:
    """The same view in CTA ``owner``'s copy of the allocation (``mapa``)."""
    target = _nbsim.shared_counterpart(key, owner)
    base = target.view(np.uint8).reshape(-1)
    return np.ndarray(view.shape, view.dtype, buffer=base, offset=off, strides=view.strides)


def _block_state(cl, owner: tuple) -> rt.BlockState:
    mgr = cl.managers[cl.points.index(owner)]
    blk = mgr.__dict__.get("_ac_block")
    if blk is None:
        with rt.state._create_lock:
            blk = mgr.__dict__.get("_ac_block")
            if blk is None:
                blk = mgr._ac_block = rt.BlockState(mgr)
    return blk


# --- special registers ---------------------------------------------------------------


def _launch():
    return current_cluster("cluster special register")


@mirrors(_dev.cluster_cta_rank)
def cluster_cta_rank():
    rt.validate(_dev.cluster_cta_rank)
    cl = _launch()
    return cl.rank_of(tuple(threading.current_thread().blockIdx))


@mirrors(_dev.cluster_num_ctas)
def cluster_num_ctas():
    rt.validate(_dev.cluster_num_ctas)
    return _launch().size


@mirrors(_dev.cluster_cta_id)
def cluster_cta_id():
    rt.validate(_dev.cluster_cta_id)
    cl = _launch()
    b = tuple(threading.current_thread().blockIdx)
    return tuple(p % c for p, c in zip(b, cl.launch.cluster))


@mirrors(_dev.cluster_dim)
def cluster_dim():
    rt.validate(_dev.cluster_dim)
    return tuple(_launch().launch.cluster)


@mirrors(_dev.cluster_id)
def cluster_id():
    rt.validate(_dev.cluster_id)
    cl = _launch()
    return cl.launch.cluster_of(tuple(threading.current_thread().blockIdx))


@mirrors(_dev.num_clusters)
def num_clusters():
    rt.validate(_dev.num_clusters)
    cl = _launch()
    return tuple(g // c for g, c in zip(cl.launch.grid, cl.launch.cluster))


@mirrors(_dev.is_explicit_cluster)
def is_explicit_cluster():
    rt.validate(_dev.is_explicit_cluster)
    return bool(_launch().launch.explicit)


@mirrors(_dev.cluster_dims, "the shape is read from the kernel's source before the launch; the "
         "call checks that it runs in the kernel body and matches the launch.")
def cluster_dims(x, y=1, z=1, *, non_portable=False):
    rt.validate(_dev.cluster_dims, x, y, z, non_portable=non_portable)
    dims = (int(x), int(y), int(z))
    cl = _launch()
    f = sys._getframe(1)
    while f.f_code.co_filename == _MIRROR_FILE:  # the twin's call wrapper (sim/_mirror.py)
        f = f.f_back
    caller = f.f_code
    kfn = cl.launch.kernel_fn
    if getattr(kfn, "__code__", None) is not caller:
        # the GPU compile refuses it (its typing error, the same words)
        raise _dev.TypingError(_rules.cluster_dims_in_device_function(
            dims=dims, function=caller.co_name))
    if not cl.launch.explicit or tuple(cl.launch.cluster) != dims:
        raise rt.SimulatorError(
            f"{rt.SIM_PREFIX}cluster_dims{dims}: the launch runs with cluster shape "
            f"{tuple(cl.launch.cluster)}; the simulator reads cluster_dims from the kernel's "
            "source before the launch: call it with constants (or globals) in the kernel body")


# --- the cluster barrier ----------------------------------------------------------------


def _arrive(api: str, sem: str) -> None:
    th, blk, cl, me = _ctx(api)
    st = _cs(cl)
    t = threading.current_thread()
    with cl.lock:
        if t in st.arrived:
            raise rt.violation(api, "this thread arrives at the cluster barrier twice without a "
                               "cluster_wait in between")
        st.arrived.add(t)
        th.cbar = cl.cbar_gen
        if sem == "relaxed":
            st.relaxed.add(me)
        st.maybe_complete()


def _wait(api: str) -> None:
    th, blk, cl, me = _ctx(api)
    st = _cs(cl)
    line = rt.caller_line()
    with cl.lock:
        g = getattr(th, "cbar", None)
        if g is None:
            raise rt.violation(api, "cluster_wait without a cluster_arrive of this thread in "
                               "this phase of the cluster barrier (on the GPU it does not wait)")

        def stuck():
            live = [x for x in cl.threads if x not in _exited(cl)]
            raise rt.DeadlockError(
                f"{rt.SIM_PREFIX}{api}: deadlock: every thread of the cluster is blocked, and "
                f"the cluster barrier can never complete phase {g}: "
                f"{len(st.arrived)} of the cluster's {len(live)} live threads arrived; waiting "
                f"at {line} {rt.where()}")

        def passed():
            return cl.cbar_gen > g

        passed.key = cl.cbar_key
        cl.wait_until(passed, stuck)
        th.cbar = None
        st.acquire(me, g)
        _vis.cluster_waited(th, g)


@mirrors(_dev.cluster_arrive, "``sem='release'`` publishes this CTA's shared memory to the CTAs "
         "that wait on this phase (what dsmem_load reads); ``'relaxed'`` publishes nothing.")
def cluster_arrive(sem="release", *, aligned=False):
    rt.validate(_dev.cluster_arrive, sem, aligned=aligned)
    _aligned("cluster_arrive", aligned, "barrier.cluster.arrive.aligned")
    _arrive("cluster_arrive", sem)


def _aligned(api: str, aligned, instr: str) -> None:
    """``.aligned``: every lane of the warp executes this same instruction
    (the warp meets here; a lane elsewhere is an error, a lane that never
    comes a DeadlockError naming it)."""
    if aligned:
        _converge(api, instr, 0xFFFFFFFF, same_site=True)


@mirrors(_dev.cluster_wait, "raises ``DeadlockError`` when the phase can never complete.")
def cluster_wait(*, aligned=False):
    rt.validate(_dev.cluster_wait, aligned=aligned)
    _aligned("cluster_wait", aligned, "barrier.cluster.wait.aligned")
    _wait("cluster_wait")


@mirrors(_dev.cluster_sync)
def cluster_sync(*, aligned=False):
    rt.validate(_dev.cluster_sync, aligned=aligned)
    _aligned("cluster_sync", aligned, "barrier.cluster.arrive.aligned")
    _arrive("cluster_sync", "release")
    _wait("cluster_sync")


# --- distributed shared memory -----------------------------------------------------------


def _index(api: str, view: np.ndarray, index) -> tuple:
    idx = tuple(int(i) for i in index) if isinstance(index, tuple) else (int(index),)
    for axis, (i, n) in enumerate(zip(idx, view.shape)):
        if not 0 <= i < n:
            raise rt.violation(api, f"index {i} is out of range for axis {axis} of `view` "
                               f"(size {n})")
    return idx


def _dsmem(api: str, view, rank, index):
    th, blk, cl, me = _ctx(api)
    key, off = _local(api, "view", view, me)
    owner = _rank(api, "rank", rank, cl)
    idx = _index(api, view, index)
    st = _cs(cl)
    st.record(api, me, th, owner)
    return th, cl, st, me, owner, key, off, _mapped(view, key, off, owner), idx


def _elem_offset(view: np.ndarray, off: int, idx: tuple) -> int:
    return off + sum(i * s for i, s in zip(idx, view.strides))


def _ordered_read(api: str, st, cl, me, owner, key, o: int, val, dtype, idx, label: str) -> None:
    """The read of ``val`` (element ``idx`` at byte ``o`` of allocation
    ``key``) in CTA ``owner`` must be what ``owner`` published to ``me``;
    remembered until ``owner``'s next release (a later overwrite raced)."""
    if owner == me:
        return
    seen = st.views.get((me, owner), {}).get(key)
    now = np.array(val, dtype).reshape(1).view(np.uint8)
    if seen is None or not np.array_equal(seen[o:o + now.size], now):
        raise rt.violation(api, (
            f"CTA {cl.rank_of(me)} (block {_pt(me)}) reads element {idx} of {label} in "
            f"CTA {cl.rank_of(owner)} (block {_pt(owner)}), but that value is not ordered "
            f"after CTA {cl.rank_of(owner)}'s write: missing synchronization between the "
            f"write and this read (cluster_sync, cluster_arrive(release) + cluster_wait, "
            f"or a remote mbarrier arrive and a wait)"))
    where = f"{rt.SIM_PREFIX}{api}: CTA {cl.rank_of(me)} (block {_pt(me)}) read element " \
        f"{idx} of {label} in CTA {cl.rank_of(owner)} at {rt.caller_line()} {rt.where()}"
    st.reads.append((me, owner, key, o, now.copy(), where))


@mirrors(_dev.dsmem_load, "reads what CTA ``rank`` published to this CTA; a value not ordered "
         "after its write raises SimulatorError naming both CTAs and the missing synchronization.")
def dsmem_load(view, rank, index):
    api = "dsmem_load"
    (v, r, i), _ = rt.validate(_dev.dsmem_load, view, rank, index)
    th, cl, st, me, owner, key, off, remote, idx = _dsmem(api, v, r, i)
    with cl.lock:
        val = remote[idx]
        _ordered_read(api, st, cl, me, owner, key, _elem_offset(v, off, idx), val, v.dtype, idx,
                      rt.describe_shared(rt.address(v)))
        return val


def _note_written(st, me, owner, key, offsets, itemsize: int) -> None:
    """This CTA sees its own DSMEM writes (same thread order): the elements
    at byte ``offsets`` of allocation ``key`` in CTA ``owner``."""
    if owner == me:
        return
    now = _nbsim.shared_counterpart(key, owner).view(np.uint8).reshape(-1)
    view = st.views.setdefault((me, owner), {})
    seen = view.get(key)
    if seen is None:  # nothing of that array published yet: only these elements are known
        seen = view[key] = np.full(now.size, rt.POISON_BYTE, np.uint8)
    for o in offsets:
        seen[o:o + itemsize] = now[o:o + itemsize]


def _note_own_write(st, me, owner, key, v, off, idx, api: str) -> None:
    o = _elem_offset(v, off, idx)
    _note_written(st, me, owner, key, [o], v.itemsize)
    _note_remote_store(st, me, owner, key, [o], v.itemsize, api)


def _note_remote_store(st, me, owner, key, offsets, itemsize: int, api: str) -> None:
    """A store into CTA ``owner``'s memory: unpublished to its threads until a
    cluster barrier (or an mbarrier handshake) orders it before their reads."""
    if owner == me:
        return
    cl = st.cl
    t = threading.current_thread()
    gen = cl.cbar_gen + (1 if t in st.arrived else 0)
    site = (f"{api} by CTA {cl.rank_of(me)} at {rt.caller_line()} {rt.where()}")
    _vis.remote_store(t, owner, key, offsets, itemsize, site, gen)


@mirrors(_dev.dsmem_store)
def dsmem_store(view, rank, index, value):
    api = "dsmem_store"
    (v, r, i, x), _ = rt.validate(_dev.dsmem_store, view, rank, index, value)
    th, cl, st, me, owner, key, off, remote, idx = _dsmem(api, v, r, i)
    with cl.lock:
        remote[idx] = x
        _note_own_write(st, me, owner, key, v, off, idx, api)


@mirrors(_dev.dsmem_atomic_add)
def dsmem_atomic_add(view, rank, index, value):
    api = "dsmem_atomic_add"
    (v, r, i, x), _ = rt.validate(_dev.dsmem_atomic_add, view, rank, index, value)
    th, cl, st, me, owner, key, off, remote, idx = _dsmem(api, v, r, i)
    with cl.lock:
        old = remote[idx]
        cell = np.array([old], v.dtype)
        cell += np.array([x]).astype(v.dtype)  # wraps as the hardware does
        remote[idx] = cell[0]
        _note_own_write(st, me, owner, key, v, off, idx, api)
        return old


@mirrors(_dev.map_shared_rank, "a :class:`RemoteView` of CTA ``rank``'s memory: element reads "
         "and writes through it follow ``dsmem_load``'s and ``dsmem_store``'s rules.")
def map_shared_rank(view, rank):
    api = "map_shared_rank"
    (v, r), _ = rt.validate(_dev.map_shared_rank, view, rank)
    th, blk, cl, me = _ctx(api)
    key, off = _local(api, "view", v, me)
    owner = _rank(api, "rank", r, cl)
    with cl.lock:
        # mapa only computes an address: the access rules apply to each
        # element access through the view (RemoteView), not to the call
        out = _mapped(v, key, off, owner).view(RemoteView)
        base = rt.address(_nbsim.shared_counterpart(key, owner))
        out._ac_remote = (key, owner, base, rt.describe_shared(rt.address(v)))
        return out


class RemoteView(np.ndarray):
    """What ``map_shared_rank`` returns in the simulator: a numpy view of
    another CTA's copy of a shared array whose element reads and writes
    follow ``dsmem_load``'s and ``dsmem_store``'s rules, in their words
    (api ``map_shared_rank``): a read must be ordered after the owner's
    write, no access before this CTA's first cluster barrier or after the
    owner exited.  Slicing keeps the checks; ``np.asarray`` drops them.

    Example::

        peer = ac.map_shared_rank(box, (rank + 1) % n)
        ac.cluster_sync()
        x = peer[tid]        # checked like ac.dsmem_load(box, nxt, tid)
    """

    _ac_remote = None

    def __array_finalize__(self, obj):
        self._ac_remote = getattr(obj, "_ac_remote", None)

    def _offset(self, idx) -> tuple[int, tuple]:
        """(byte offset in the owner's allocation, normalized index) of the
        element ``self[idx]``."""
        t = idx if isinstance(idx, tuple) else (idx,)
        t = tuple(int(i) % n for i, n in zip(t, self.shape))
        return _elem_offset(self, rt.address(self) - self._ac_remote[2], t), t

    def __getitem__(self, idx):
        ctx = self._ac_remote
        if ctx is None:
            return super().__getitem__(idx)
        api = "map_shared_rank"
        th, blk, cl, me = _ctx(api)
        st = _cs(cl)
        with cl.lock:
            out = super().__getitem__(idx)
            if isinstance(out, np.ndarray):  # a sub-view keeps the checks
                return out
            key, owner, _, label = ctx
            st.record(api, me, th, owner)
            o, t = self._offset(idx)
            _ordered_read(api, st, cl, me, owner, key, o, out, self.dtype, t if len(t) > 1 else t[0],
                          label)
            return out

    def __setitem__(self, idx, value):
        ctx = self._ac_remote
        if ctx is None:
            return super().__setitem__(idx, value)
        api = "map_shared_rank"
        th, blk, cl, me = _ctx(api)
        st = _cs(cl)
        key, owner, base, _ = ctx
        with cl.lock:
            st.record(api, me, th, owner)
            super().__setitem__(idx, value)
            if owner == me:
                return
            sub = np.asarray(self)[idx]
            if np.ndim(sub) == 0:
                offs = [self._offset(idx)[0]]
            else:
                grid = np.indices(sub.shape).reshape(sub.ndim, -1)
                offs = (rt.address(sub) - base
                        + (np.array(sub.strides)[:, None] * grid).sum(0)).tolist()
            _note_written(st, me, owner, key, offs, self.itemsize)
            _note_remote_store(st, me, owner, key, offs, self.itemsize, api)


# --- mbarrier operations on another CTA --------------------------------------------------


def _remote_barrier(api: str, bar: np.ndarray, rank, name: str = "cta_rank"):
    """(ThreadState, the owner's BlockState, its Barrier, owner point, my point)
    of the local barrier view ``bar`` mapped to CTA ``rank``."""
    th, blk, cl, me = _ctx(api)
    if bar.size == 0:
        raise rt.violation(api, "`bar` is an empty view; its first element is the barrier")
    key, off = _local(api, "bar", bar, me)
    if rt.address(bar) % 8:
        raise rt.violation(api, _rules.not_aligned(name="bar", align=8,
                                                   addr=f"0x{rt.address(bar):x}"))
    owner = _rank(api, name, rank, cl)
    st = _cs(cl)
    st.record(api, me, th, owner)
    oblk = _block_state(cl, owner)
    ob = rt.barrier_of(api, oblk, _mapped(bar, key, off, owner))
    rt.check_cluster_fenced(api, ob, cl, owner, me, st.waited.get(me, 0))
    return th, oblk, ob, owner, me


def _release(ob: rt.Barrier, owner: tuple, me: tuple) -> None:
    if owner != me:
        _cs(ob.cluster).releasers.setdefault(ob, set()).add(me)


def _arrive_remote(api: str, bar, rank, count: int, expect: int | None = None,
                   publish: bool = True) -> None:
    """``publish``: a cluster-scope release (the owner acquires this CTA's
    memory when the phase completes); False: CTA scope, the arrival only."""
    th, blk, cl, me = _ctx(api)
    with cl.lock:
        th, oblk, ob, owner, me = _remote_barrier(api, bar, rank)
        if expect is not None:
            ob.expect_tx(oblk, int(expect))
        if publish:
            _release(ob, owner, me)
            ob.arrive(oblk, int(count), api)
            return
        # the arrival counts; this thread's writes are not released to the peer's waiters
        t = threading.current_thread()
        t._ac_publishes_nothing = owner != me
        try:
            ob.arrive(oblk, int(count), api)
        finally:
            t._ac_publishes_nothing = False


def _expect_tx_remote(api: str, bar, rank, nbytes: int) -> None:
    th, blk, cl, me = _ctx(api)
    with cl.lock:
        th, oblk, ob, owner, me = _remote_barrier(api, bar, rank)
        ob.expect_tx(oblk, int(nbytes))


@mirrors(_dev.mbarrier_arrive_remote)
def mbarrier_arrive_remote(bar, cta_rank, count=1):
    (b, r, n), _ = rt.validate(_dev.mbarrier_arrive_remote, bar, cta_rank, count)
    _arrive_remote("mbarrier_arrive_remote", b, r, n)


@mirrors(_dev.mbarrier_expect_tx_remote)
def mbarrier_expect_tx_remote(bar, cta_rank, nbytes):
    (b, r, n), _ = rt.validate(_dev.mbarrier_expect_tx_remote, bar, cta_rank, nbytes)
    _expect_tx_remote("mbarrier_expect_tx_remote", b, r, n)


@mirrors(_dev.mbarrier_arrive_expect_tx_remote)
def mbarrier_arrive_expect_tx_remote(bar, cta_rank, nbytes):
    (b, r, n), _ = rt.validate(_dev.mbarrier_arrive_expect_tx_remote, bar, cta_rank, nbytes)
    _arrive_remote("mbarrier_arrive_expect_tx_remote", b, r, 1, expect=n)


@rt.EVENTS.on("phase_complete")
def _on_phase_complete(b: rt.Barrier) -> None:
    """A phase of ``b`` completed: remote arrivers' releases are acquired by its owner."""
    st = b.cluster.slot_if_any(_ClusterState) if b.cluster is not None else None
    if b.owner is None or st is None:
        return
    for p in st.releasers.pop(b, ()):
        st.publish_to(b.owner, p)


# --- the cluster bulk copy and multicast ------------------------------------------------------


def _multicast(api: str, mask, d: np.ndarray, b: np.ndarray, payload: np.ndarray,
              tx_bytes: int, dst_bytes) -> None:
    """Deliver ``payload`` to the same ``d`` and barrier ``b`` in every CTA of
    ``mask`` (caller holds the lock)."""
    th, blk, cl, me = _ctx(api)
    m = int(mask) & 0xFFFF
    n = cl.size
    if m >> n:
        raise rt.violation(api, f"`multicast_mask`=0x{m:04x} names CTAs outside the cluster "
                           f"({n} CTAs: ranks 0..{n - 1})")
    dkey, doff = _local(api, "dst", d, me)
    for rank in range(n):
        if not (m >> rank) & 1:
            continue
        th, oblk, ob, owner, me = _remote_barrier(api, b, rank, "multicast_mask")
        target = _mapped(d, dkey, doff, owner)
        rt.check_init_fenced(api, ob)
        tile = dst_bytes(target)
        _cp._check_reuse(api, "dst", oblk, [tile])
        op = rt.issued(rt.AsyncOp([(tile, payload)], tx_bytes=tx_bytes), api)
        ob.attach(oblk, op)
        _cp._track(oblk, op, [tile], op.issued_at)
        rt.check_tx_overflow(api, ob)
