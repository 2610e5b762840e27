"""cp.async in the simulator: chunk copies, commit/wait groups, createpolicy.

Each call is validated by the device intrinsic's own typing, then checked
like checked mode does on the GPU (address spaces, contiguity, whole chunks,
alignment, repeat axes, chunk counts, src_size range), with the same rule
text.  A copy is recorded in the thread's uncommitted group; under the worst
schedule its destination holds poison until ``wait_group``/``wait_all``
retires its group (or a barrier tracking it completes its phase).
"""

from __future__ import annotations

import numpy as np

from .. import _rules
from .._regions import CHUNKED_VIEWS, ValueView
# by name: the package's ``cp_async`` is the intrinsic, which hides the module
from ..cp_async import POLICY_PRIMARY, POLICY_SECONDARY, validate_cp_async
from ..cp_async import commit_group as _dev_commit_group
from ..cp_async import cp_async as _dev_cp_async
from ..cp_async import createpolicy_fractional as _dev_createpolicy_fractional
from ..cp_async import wait_all as _dev_wait_all
from ..cp_async import wait_group as _dev_wait_group
from . import _runtime as rt
from . import visibility as _vis
from ._mirror import mirrors


def _check_views(api: str, views, chunk: int, align: int | None = None) -> None:
    """The chunked views' contract (``_regions.CHUNKED_VIEWS``, checked mode's
    rules and words) on numpy views: ``(name, view, Numba type or None)``."""
    broken = CHUNKED_VIEWS.check_values(
        [ValueView(name, v, rt.address(v), "A" if ty is None else ty.layout)
         for name, v, ty in views], chunk, align)
    if broken:
        raise rt.violation(api, broken)


# --- destinations in flight ------------------------------------------------------------
#
# A block keeps the shared regions that asynchronous operations still write
# (copies not landed: under the worst schedule, until the program waits for
# them) or still read (bulk stores whose source was not read yet).  A new copy
# into one of them is a race the hardware resolves either way: an error at
# issue, naming both copies.


def _extent(v: np.ndarray) -> tuple[int, int]:
    """[lo, hi) byte bounds of view ``v``."""
    lo = hi = rt.address(v)
    for n, st in zip(v.shape, v.strides):
        if n == 0:
            return lo, lo
        if st >= 0:
            hi += (n - 1) * st
        else:
            lo += (n - 1) * st
    return lo, hi + v.itemsize


def _addresses(v: np.ndarray) -> np.ndarray:
    """Every byte address of ``v`` (only computed when two extents overlap)."""
    idx = np.indices(v.shape).reshape(v.ndim, -1)
    starts = rt.address(v) + (idx * np.asarray(v.strides)[:, None]).sum(0)
    return (starts[:, None] + np.arange(v.itemsize)).reshape(-1)


def _first_overlap(a: np.ndarray, b: np.ndarray, a_ext: tuple | None = None,
                   b_ext: tuple | None = None) -> int | None:
    """The lowest byte address both views hold, or None (``*_ext``: their
    :func:`_extent`, when known)."""
    (alo, ahi), (blo, bhi) = a_ext or _extent(a), b_ext or _extent(b)
    if alo >= bhi or blo >= ahi:
        return None
    both = np.intersect1d(_addresses(a), _addresses(b))
    return int(both[0]) if both.size else None


class Groups:
    """cp.async's slot of a thread's state: its copies not yet committed and
    its committed groups, oldest first."""

    def __init__(self, th):
        self.uncommitted: list = []
        self.committed: list[list] = []

    def commit(self) -> None:
        self.committed.append(self.uncommitted)
        self.uncommitted = []

    def pending(self) -> list:
        """This thread's copies that have not landed, oldest first."""
        out = [op for g in self.committed for op in g if not op.landed]
        return out + [op for op in self.uncommitted if not op.landed]


class InFlight:
    """A block's slot: the shared-memory writes (and bulk reads) of copies
    not landed yet, (op, views, site, reads, the views' extents): the
    extents are computed once, at issue, not at every later copy's check.
    ``pages`` indexes them by the 256-byte pages their extents touch, so a
    new copy's check reads only the copies near its bytes; ``seq`` keeps
    their issue order (the first one in it is the one an error names)."""

    def __init__(self, blk):
        self.ops: list = []
        self.pages: dict = {}
        self.seq: dict = {}
        self.count = 0
        self.pruned_at = 0


_PAGE = 8  # log2 of the index's page: 256 bytes of shared memory


def _in_flight(blk) -> list:
    return blk.slot(InFlight).ops


def _gone(e) -> bool:
    """The copy landed (a write), or a bulk store has read its source."""
    op = e[0]
    return op.landed or (e[3] and getattr(op, "payloads", None) is not None)


def _pages(lo: int, hi: int) -> range:
    return range(lo >> _PAGE, ((hi - 1) >> _PAGE) + 1) if hi > lo else range(0)


def _track(blk, op, views: list, site: str, reads: bool = False) -> None:
    """Record that ``op`` writes (``reads``: reads) the shared ``views`` until it lands."""
    slot = blk.slot(InFlight)
    e = (op, views, site, reads, [_extent(v) for v in views])
    slot.count += 1
    slot.seq[id(e)] = slot.count
    slot.ops.append(e)
    for lo, hi in e[4]:
        for pg in _pages(lo, hi):
            slot.pages.setdefault(pg, []).append(e)
    if len(slot.ops) > 2 * slot.pruned_at + 256:
        # now and then, not at every copy: what is left is about what is in flight
        live = [x for x in slot.ops if not _gone(x)]
        slot.seq = {id(x): slot.seq[id(x)] for x in live}
        slot.ops = live
        slot.pruned_at = len(live)


@rt.EVENTS.on("block_exit")
def _check_landed_at_exit(blk) -> None:
    """A copy into this block's shared memory that nothing waited for is
    still in flight when the block exits: on the GPU it writes the shared
    memory of a block that is gone, and what it brought is never read (a
    missing wait_group, or a missing wait on its barrier's phase)."""
    for op, views, site, reads, _ in _in_flight(blk):
        if reads or op.landed:
            continue
        b = op.barrier
        how = (f"a wait on {b.name()} for phase {b.phase}" if b is not None else
               "wait_group / wait_all in the issuing thread, or a wait on the barrier its "
               "cp_async_mbarrier_arrive arrives on")
        released = _vis.released_while_in_flight(op, blk)
        then = f"; {released}: the slot was released without a wait" if released else ""
        p = blk.point
        raise rt.SimulatorError(
            f"{rt.SIM_PREFIX}block ({p[0]},{p[1]},{p[2]}) exited with a copy still in flight: "
            f"{site} still writes {rt.describe_shared(rt.address(views[0]))} and nothing "
            f"waited for it ({how} is missing; a thread that released the slot or read the "
            f"data without that wait read it before it landed{then})")


def _check_reuse(api: str, name: str, blk, views: list) -> None:
    """A copy into ``views`` (shared) while an earlier copy still writes an
    overlapping region, or a bulk store still reads one: a named error."""
    slot = blk.slot(InFlight)
    exts = [_extent(v) for v in views]
    # the copies in flight whose extents share a page with these bytes
    found: dict = {}
    for lo, hi in exts:
        for pg in _pages(lo, hi):
            lst = slot.pages.get(pg)
            if not lst:
                continue
            keep = [e for e in lst if not _gone(e)]
            if len(keep) != len(lst):
                slot.pages[pg] = keep
            for e in keep:
                found[id(e)] = e
    near = sorted(found.values(), key=lambda e: slot.seq.get(id(e), 0))
    for op, others, site, reads, other_exts in near:
        for v, (lo, hi) in zip(views, exts):
            for o, (olo, ohi) in zip(others, other_exts):
                if lo >= ohi or olo >= hi:
                    continue  # disjoint extents: no byte in common
                hit = _first_overlap(v, o, (lo, hi), (olo, ohi))
                if hit is None:
                    continue
                where = rt.describe_shared(hit)
                rule = _rules.src_being_read if reads else _rules.dst_in_flight
                raise rt.violation(api, rule(name=name, where=where, other=site))


def _bytes(v: np.ndarray) -> np.ndarray:
    """uint8 view of ``v`` whose last axis is the row's bytes."""
    if v.shape[-1] == 1 and v.strides[-1] != v.itemsize:
        v = np.lib.stride_tricks.as_strided(v, strides=v.strides[:-1] + (v.itemsize,))
    return v.view(np.uint8)


@mirrors(_dev_cp_async)
def cp_async(dst, src, chunk_bytes, *, cache=None, prefetch=None, src_size=None,
             ignore_src=False, pred=True, cache_policy=None, scope="thread"):
    api = "cp_async"
    (d, s, chunk), kw = rt.validate(
        _dev_cp_async, dst, src, chunk_bytes, cache=cache, prefetch=prefetch,
        src_size=src_size, ignore_src=ignore_src, pred=pred, cache_policy=cache_policy,
        scope=scope)
    targs, tkw = rt.last_types()  # the types validate typed (typeof of an array is not free)
    tys = list(targs) + [tkw[k] for k in ("cache", "prefetch", "src_size", "ignore_src", "pred",
                                          "cache_policy", "scope")]
    o = validate_cp_async(*tys)
    if o.pred == "never":
        return
    th, blk = rt.current(api)
    if rt.space_of(d) != "shared":
        raise rt.violation(api, _rules.not_in_space(name="dst", space="shared"))
    if rt.space_of(s) != "global":
        raise rt.violation(api, _rules.not_in_space(name="src", space="global"))
    _check_views(api, [("dst", d, tys[0]), ("src", s, tys[1])], o.chunk_bytes)
    size = o.chunk_bytes
    if o.src_size:
        size = int(src_size)
        if not 0 <= size <= o.chunk_bytes:
            # the trap prints the operand as %u: a negative size shows as its u32
            raise rt.violation(api, _rules.src_size_outside(size=size % 2**32, chunk=o.chunk_bytes))
    if o.pred == "runtime" and not pred:
        return
    if o.ignore_src and ignore_src:
        size = 0
    c = o.chunk_bytes
    db, sb = _bytes(d), _bytes(s)
    nch = db.shape[-1] // c

    def piece(outer, k):
        cols = slice(k * c, (k + 1) * c)
        payload = sb[outer + (cols,)].copy()
        payload[..., size:] = 0
        return db[outer + (cols,)], payload

    if o.scope == "thread":
        payload = sb.copy()
        if size < c:
            payload.reshape(payload.shape[:-1] + (nch, c))[..., size:] = 0
        pieces = [(db, payload)]
    else:
        # linear chunk k (C order over (repeats..., chunk)) -> thread k % block size
        tid, nthreads = th.thread.thread_id, blk.nthreads
        dims = db.shape[:-1] + (nch,)
        pieces = []
        for k in range(tid, int(np.prod(dims, dtype=np.int64)), nthreads):
            idx = np.unravel_index(k, dims)
            pieces.append(piece(tuple(int(i) for i in idx[:-1]), int(idx[-1])))
    op = rt.AsyncOp(pieces)
    with blk.cond:
        views = [dst for dst, _ in pieces]
        _check_reuse(api, "dst", blk, views)
        site = f"{api} issued at {rt.caller_line()} {rt.where()}"
        if rt.eager():
            op.land()
        else:
            op.poison()
            _track(blk, op, views, site)
        _vis.copy_issued(op, views, site)  # what other threads' reads may see of it
        th.slot(Groups).uncommitted.append(op)
        blk.changed()


@mirrors(_dev_commit_group)
def commit_group():
    rt.validate(_dev_commit_group)
    th, blk = rt.current("commit_group")
    with blk.cond:
        _commit(th)


def _commit(th) -> None:
    th.slot(Groups).commit()


def _retire(th, blk, keep: int, api: str = "wait_group") -> None:
    groups = th.slot(Groups).committed
    line = f"{api} at {rt.caller_line()}"
    with blk.cond:
        while len(groups) > keep:
            for op in groups.pop(0):
                if not op.landed:
                    _vis.retiring(op, line)  # visible to this thread only, until a barrier
                op.land()
        blk.changed()


@mirrors(_dev_wait_group, "lands every committed group but the newest ``n``.")
def wait_group(n):
    rt.validate(_dev_wait_group, n)
    th, blk = rt.current("wait_group")
    _retire(th, blk, int(n))


@mirrors(_dev_wait_all)
def wait_all():
    rt.validate(_dev_wait_all)
    th, blk = rt.current("wait_all")
    with blk.cond:
        _commit(th)
        _retire(th, blk, 0, "wait_all")


@mirrors(
    _dev_createpolicy_fractional,
    "the policy is an opaque uint64 (a hint: copies are unaffected).")
def createpolicy_fractional(primary="evict_last", secondary=None, fraction=1.0):
    api = "createpolicy_fractional"
    rt.validate(_dev_createpolicy_fractional, primary, secondary, fraction)
    frac = float(np.float32(fraction))
    if not 0.0 < frac <= 1.0:
        raise rt.violation(api, _rules.fraction_range(fraction=f"{frac:f}"))
    prim = POLICY_PRIMARY.index(primary)
    sec = 0 if secondary is None else 1 + POLICY_SECONDARY.index(secondary)
    return np.uint64((prim << 40) | (sec << 36) | int(frac * 0xFFFF))
