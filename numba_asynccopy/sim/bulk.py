"""1-D bulk copies in the simulator: loads on an mbarrier, stores and
reductions in bulk groups, the L2 prefetch.

Each call runs the device intrinsic's typing (same errors), then checked
mode's run-time rules (address spaces, 16-byte sizes and alignment, equal
sizes, matching rows) as :class:`~numba_asynccopy.sim.SimulatorError` with
the trap's text.

Completion under the worst schedule:

- a load (:func:`cp_async_bulk_g2s`) reads its global source at issue and
  completes its bytes on the barrier as transaction bytes
  (:meth:`Barrier.attach`): its shared destination holds poison until a
  wait observes the phase complete;
- a store (:func:`cp_async_bulk_s2g`) reads its shared source as late as
  the program allows, when ``bulk_wait_group(n, read=True)`` (or a full
  ``bulk_wait_group``) retires its group; a source changed in between is a
  :class:`SimulatorError` (on the GPU the copy could read either data).  Its
  global destination holds poison until ``bulk_wait_group(n)`` (not
  ``read``) retires the group, or the block ends;
- a reduction (:func:`cp_reduce_async_bulk_s2g`) reads its source the same
  way and combines into its destination when its group completes (the
  destination keeps its old values until then: they are the reduction's
  operands, so they are not poisoned).

A multicast load (``multicast_mask``) lands in the same destination and
completes the same bytes on the same barrier in every CTA of the mask.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .. import _rules
from .. import bulk as _dev
from . import _runtime as rt
from ._mirror import mirrors
from .cluster import _ctx, _local, _mapped, _multicast, _rank, _remote_barrier
from . import cp_async as _cp
from . import proxy as _proxy
from .cp_async import _bytes
from .cp_async import _check_views as _check_chunk_views

ALIGN = _dev.BULK_ALIGN


# --- run-time rules (checked mode's, same text) ------------------------------

def _check_space(api: str, name: str, v: np.ndarray, space: str) -> None:
    if rt.space_of(v) != space:
        raise rt.violation(api, _rules.not_in_space(name=name, space=space))


def _check_size(api: str, size: int, what: str) -> None:
    if size == 0 or size % ALIGN:
        raise rt.violation(api, _rules.bulk_size_multiple(what=what, size=size))
    if size >= 1 << 32:
        raise rt.violation(api, _rules.bulk_size_limit(what=what, size=size))


def _check_aligned(api: str, name: str, addr: int, align: int) -> None:
    if addr % align:
        raise rt.violation(api, _rules.not_aligned(name=name, align=align, addr=f"0x{addr:x}"))


def _check_mbar(api: str, blk: rt.BlockState, mbar: np.ndarray) -> rt.Barrier:
    """``check_barrier_value`` (names `mbar`), then the initialised barrier."""
    if not mbar.size:
        raise rt.violation(api, _rules.barrier_empty(name="mbar"))
    if rt.space_of(mbar) != "shared":
        raise rt.violation(api, _rules.not_in_space(name="mbar", space="shared"))
    _check_aligned(api, "mbar", rt.address(mbar), 8)
    return rt.barrier_of(api, blk, mbar)


def _check_views(api: str, lead: tuple, other: tuple | None, whole: bool) -> None:
    """``check_whole_views`` / ``check_row_views`` on (name, view, type) triples."""
    lname, lv, _ = lead
    if whole:
        size = lv.nbytes
        _check_size(api, size, f"`{lname}`")
        for name, v, _ in (lead, other) if other is not None else (lead,):
            _check_aligned(api, name, rt.address(v), ALIGN)
        if other is not None and other[1].nbytes != size:
            raise rt.violation(api, _rules.byte_counts_differ(
                a_name=lname, a=size, b_name=other[0], b=other[1].nbytes))
    else:
        _check_chunk_views(api, [lead] + ([other] if other is not None else []), ALIGN)
        _check_size(api, lv.shape[-1] * lv.itemsize, _rules.row_of(name=lname))


def _flat_bytes(v: np.ndarray, whole: bool) -> np.ndarray:
    """The bytes a copy moves: all of a C-contiguous view, or row by row."""
    if whole:
        return v.reshape(-1).view(np.uint8)
    return _bytes(v)


def _types(*vals):
    return [rt.numba_type(v) for v in vals]


# --- bulk groups --------------------------------------------------------------

class BulkOp(rt.AsyncOp):
    """A store or reduction of a bulk group.

    ``sources`` are shared uint8 views, snapshotted at issue; :meth:`read`
    takes their bytes (once) and checks that they did not change since
    issue; :meth:`land` reads, then ``write(payloads)`` updates global
    memory.  ``poison`` are global uint8 views that hold poison until
    landing (stores; reductions keep their operands).
    """

    def __init__(self, api: str, sources: list, write: Callable[[list], None], poison: list):
        super().__init__([])
        self.api, self.sources, self.write, self.poisoned = api, sources, write, poison
        self.snapshots = [s.copy() for s in sources]
        self.payloads: list | None = None
        self.issued_at = f"{rt.caller_line()} {rt.where()}"

    def poison(self) -> None:
        for dst in self.poisoned:
            dst[...] = rt.POISON_BYTE

    def read(self) -> None:
        """A bulk store or reduction reads its shared source once, and that
        source must still hold what it held at issue (a write in between
        raced with the copy: on the GPU it reads either data)."""
        if self.payloads is not None:
            return
        now = [s.copy() for s in self.sources]
        for i, (old, new) in enumerate(zip(self.snapshots, now)):
            if not np.array_equal(old, new):
                addr = rt.address(self.sources[i])
                raise rt.SimulatorError(
                    f"{rt.SIM_PREFIX}{self.api}: its shared source `src` "
                    f"({rt.describe_shared(addr)}) was overwritten while the copy could still "
                    "read it: call ac.bulk_wait_group(n, read=True) (after bulk_commit_group) "
                    "before writing the source again; on the GPU the copy reads either data. "
                    f"Copy issued at {self.issued_at}")
        self.payloads = now

    def land(self) -> None:
        if self.landed:
            return
        self.read()
        self.landed = True
        self.write(self.payloads)


class BulkGroups:
    """The bulk family's slot of a thread's state: stores and reductions not
    yet committed, and the committed bulk groups, oldest first."""

    def __init__(self, th):
        self.uncommitted: list = []
        self.committed: list[list] = []


@rt.EVENTS.on("block_exit")
def _complete_at_exit(blk: rt.BlockState) -> None:
    """The end of the kernel completes the block's bulk stores (on the GPU too)."""
    for th in rt.threads_of(blk):
        g = th.slot_if_any(BulkGroups)
        if g is None:
            continue
        ops = [op for grp in g.committed for op in grp] + g.uncommitted
        g.committed, g.uncommitted = [], []
        for op in ops:
            op.land()


def _issue(th: rt.ThreadState, blk: rt.BlockState, op: BulkOp) -> None:
    """Record ``op`` in the thread's uncommitted bulk group."""
    with blk.cond:
        for s in op.sources:  # the async proxy reads them: fenced after ordinary stores?
            _proxy.check_source(op.api, blk, s)
        if rt.eager():
            op.land()
        else:
            op.poison()
            _cp._track(blk, op, op.sources, f"{op.api} issued at {op.issued_at}", reads=True)
        th.slot(BulkGroups).uncommitted.append(op)
        blk.changed()


# --- element-wise reductions --------------------------------------------------

def _bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint16).astype(np.uint32) << 16).view(np.float32)


def _f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round to nearest even (NaN stays a quiet NaN)."""
    b = np.asarray(x, np.float32).view(np.uint32)
    rounded = (b + (0x7FFF + ((b >> 16) & 1))) >> 16
    out = np.where(np.isnan(x), (b >> 16) | 0x40, rounded)
    return out.astype(np.uint16)


def _combine(op: str, ptx_type: str, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``op(old, new)`` element-wise as PTX's ``.op.type`` does (same dtype out)."""
    if ptx_type == "bf16":
        x, y = _bf16_to_f32(old), _bf16_to_f32(new)
        if op == "add":
            r = (x.astype(np.float64) + y.astype(np.float64)).astype(np.float32)
        else:
            r = np.fmin(x, y) if op == "min" else np.fmax(x, y)
        return _f32_to_bf16(r).view(old.dtype)
    if old.dtype.kind == "f":
        if op == "add":
            if old.dtype == np.float16:  # one correctly rounded addition
                return (old.astype(np.float64) + new.astype(np.float64)).astype(np.float16)
            return old + new
        return np.fmin(old, new) if op == "min" else np.fmax(old, new)
    if op == "add":
        return np.add(old, new, dtype=old.dtype)  # wraps, as the hardware does
    if op == "min":
        return np.minimum(old, new)
    if op == "max":
        return np.maximum(old, new)
    if op == "inc":
        return np.where(old >= new, 0, old + np.ones_like(old)).astype(old.dtype)
    if op == "dec":
        return np.where((old == 0) | (old > new), new, old - np.ones_like(old)).astype(old.dtype)
    return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op](old, new)


# --- intrinsics -------------------------------------------------------------------


@mirrors(
    _dev.cp_async_bulk_g2s,
    "lands (and completes its bytes on ``mbar``) when a wait sees the phase complete; ``dst`` "
    "holds poison until then. With ``multicast_mask`` it lands (and completes its bytes) "
    "in every CTA of the mask.")
def cp_async_bulk_g2s(dst, src, mbar, *, multicast_mask=None, cache_policy=None):
    api = "cp_async_bulk_g2s"
    (d, s, b), kw = rt.validate(_dev.cp_async_bulk_g2s, dst, src, mbar,
                                multicast_mask=multicast_mask, cache_policy=cache_policy)
    td, ts = _types(d, s)
    o = _dev.validate_bulk_g2s(td, ts, *_types(b, kw["multicast_mask"], kw["cache_policy"]))
    th, blk = rt.current(api)
    _check_space(api, "dst", d, "shared")
    _check_space(api, "src", s, "global")
    with blk.cond:
        bar = _check_mbar(api, blk, b)
        _check_views(api, ("dst", d, td), ("src", s, ts), o.whole)
        payload = _flat_bytes(s, o.whole).copy()  # the copy engine reads the source now
        if o.multicast:
            _multicast(api, kw["multicast_mask"], d, b, payload, int(d.nbytes),
                      lambda v: _flat_bytes(v, o.whole))
            return
        db = _flat_bytes(d, o.whole)
        rt.check_init_fenced(api, bar)
        _cp._check_reuse(api, "dst", blk, [db])
        op = rt.issued(rt.AsyncOp([(db, payload)], tx_bytes=int(d.nbytes)), api)
        bar.attach(blk, op)
        _cp._track(blk, op, [db], op.issued_at)
        rt.check_tx_overflow(api, bar)


def _s2g(api: str, d, s, o, op: str | None, ptx_type: str | None) -> None:
    th, blk = rt.current(api)
    _check_space(api, "src", s, "shared")
    _check_space(api, "dst", d, "global")
    td, ts = _types(d, s)
    _check_views(api, ("src", s, ts), ("dst", d, td), o.whole)
    sb = _flat_bytes(s, o.whole)
    db = _flat_bytes(d, o.whole)
    if op is None:
        def write(payloads, db=db):
            db[...] = payloads[0]

        poison = [db]
    else:
        dv = d.reshape(-1) if o.whole else d

        def write(payloads, dv=dv, shape=sb.shape):
            new = payloads[0].reshape(shape).view(dv.dtype).reshape(dv.shape)
            dv[...] = _combine(op, ptx_type, dv.copy(), new)

        poison = []
    _issue(th, blk, BulkOp(api, [sb], write, poison))


@mirrors(
    _dev.cp_async_bulk_s2g,
    "reads ``src`` at ``bulk_wait_group(n, read=True)`` (raising if it was overwritten since "
    "issue), writes ``dst`` at ``bulk_wait_group(n)``; ``dst`` holds poison until then.")
def cp_async_bulk_s2g(dst, src, *, cache_policy=None):
    api = "cp_async_bulk_s2g"
    (d, s), kw = rt.validate(_dev.cp_async_bulk_s2g, dst, src, cache_policy=cache_policy)
    o = _dev.validate_bulk_s2g(api, *_types(d, s, kw["cache_policy"]))
    _s2g(api, d, s, o, None, None)


@mirrors(_dev.cp_reduce_async_bulk_s2g, "combines ``src`` into ``dst`` when the group completes.")
def cp_reduce_async_bulk_s2g(dst, src, op, *, bf16=False, cache_policy=None):
    api = "cp_reduce_async_bulk_s2g"
    (d, s, name), kw = rt.validate(_dev.cp_reduce_async_bulk_s2g, dst, src, op, bf16=bf16,
                                   cache_policy=cache_policy)
    o = _dev.validate_bulk_s2g(api, *_types(d, s, kw["cache_policy"]), op=rt.numba_type(name),
                               bf16=rt.numba_type(kw["bf16"]))
    _s2g(api, d, s, o, name, o.ptx_type)


@mirrors(_dev.cp_async_bulk_prefetch_l2, "checks its rules; a hint, so no data moves.")
def cp_async_bulk_prefetch_l2(src, *, cache_policy=None):
    api = "cp_async_bulk_prefetch_l2"
    (s,), _ = rt.validate(_dev.cp_async_bulk_prefetch_l2, src, cache_policy=cache_policy)
    ts = rt.numba_type(s)
    rt.current(api)
    _check_space(api, "src", s, "global")
    _check_views(api, ("src", s, ts), None, ts.layout == "C")


@mirrors(_dev.bulk_commit_group)
def bulk_commit_group():
    rt.validate(_dev.bulk_commit_group)
    th, blk = rt.current("bulk_commit_group")
    g = th.slot(BulkGroups)
    with blk.cond:
        g.committed.append(g.uncommitted)
        g.uncommitted = []


@mirrors(
    _dev.bulk_wait_group,
    "every committed group but the newest ``n`` reads its sources (``read=True``: the shared "
    "memory may be reused, global writes still pending) or completes (writes land).")
def bulk_wait_group(n, read=False):
    rt.validate(_dev.bulk_wait_group, n, read)
    th, blk = rt.current("bulk_wait_group")
    keep = int(n)
    groups = th.slot(BulkGroups).committed
    with blk.cond:
        older = groups[:max(len(groups) - keep, 0)]
        if read:
            for g in older:
                for op in g:
                    op.read()
        else:
            del groups[:len(older)]
            for g in older:
                for op in g:
                    op.land()
        blk.changed()


# --- the cluster bulk copy (rules and state shared with sim/cluster.py) ---------------


@mirrors(_dev.cp_async_bulk_cluster,
         "``src`` is read at issue; the chunks land in CTA ``remote_cta_id`` (poison until then) "
         "and complete their bytes on its barrier when a wait there sees the phase complete.")
def cp_async_bulk_cluster(dst, src, chunk_bytes, mbar, remote_cta_id, pred=True):
    api = "cp_async_bulk_cluster"
    (d, s, c, b, r, p), _ = rt.validate(_dev.cp_async_bulk_cluster, dst, src, chunk_bytes, mbar,
                                        remote_cta_id, pred)
    if not p:
        return

    th, blk, cl, me = _ctx(api)
    with cl.lock:
        owner = _rank(api, "remote_cta_id", r, cl)
        dkey, doff = _local(api, "dst", d, me)
        _local(api, "src", s, me)
        _check_chunk_views(api, [("src", s, None), ("dst", d, None)], int(c), ALIGN)
        th, oblk, ob, owner, me = _remote_barrier(api, b, r, "remote_cta_id")
        target = _mapped(d, dkey, doff, owner)
        payload = _bytes(s).copy()  # the copy reads its source at issue
        ob.attach(oblk, rt.AsyncOp([(_bytes(target), payload)], tx_bytes=int(s.nbytes)))
