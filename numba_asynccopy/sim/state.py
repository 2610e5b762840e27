"""Per-block and per-thread state of a simulated kernel: asynchronous
operations in flight, mbarriers with exact phase, arrival and
transaction-byte counts, and deadlock detection.  What one family keeps
per thread or per block (cp.async groups, bulk groups, ...) is that
family's slot (``th.slot(kind)``, :mod:`.events`), declared by its twin.

numba-cuda's simulator runs every CUDA thread of a block as a Python thread
(``BlockThread``) under a ``BlockManager``; the package's launch loop
(``sim/engine.py``) runs the blocks of one cluster together.  This module
keeps one :class:`BlockState` per ``BlockManager`` and one
:class:`ThreadState` per ``BlockThread``; everything that changes them holds
the cluster's lock, so the copies, groups and barrier counts are exact.
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from .. import _rules
from .. import checked as _checked
from . import _numba_sim_internals as _nbsim
from ._numba_sim_internals import address
from .errors import SIM_PREFIX, SimulatorError, caller_line, violation, where
from .events import EVENTS, Slots
from .schedule import POISON_BYTE, eager

_create_lock = threading.Lock()


def current(api: str) -> tuple[ThreadState, BlockState]:
    """(ThreadState, BlockState) of the calling simulated CUDA thread.

    Example::

        th, blk = current("commit_group")
        with blk.cond:
            th.slot(Groups).commit()    # Groups: cp.async's slot (sim/cp_async.py)
    """
    t = threading.current_thread()
    mgr = _nbsim.block_manager(t)
    if mgr is None:
        raise SimulatorError(f"{SIM_PREFIX}{api}: called outside a simulated kernel")
    blk = mgr.__dict__.get("_ac_block")
    if blk is None:
        with _create_lock:
            blk = mgr.__dict__.get("_ac_block")
            if blk is None:
                blk = mgr._ac_block = BlockState(mgr)
    th = t.__dict__.get("_ac_thread")
    if th is None:
        th = t._ac_thread = ThreadState(t)
    return th, blk


def space_of(a: np.ndarray) -> str:
    """"shared", "local" or "global" (anything else a kernel can see)."""
    addr = address(a)
    if _nbsim.find_range("shared", addr):
        return "shared"
    if _nbsim.find_range("local", addr):
        return "local"
    return "global"


def describe_shared(addr: int) -> str:
    """Which shared array ``addr`` is in, and where, for messages."""
    hit = _nbsim.find_range("shared", addr)
    if hit is None:
        return f"at address 0x{addr:x}"
    start, label = hit
    return f"{label}, byte offset {addr - start}"


class ThreadState(Slots):
    """One simulated CUDA thread's state: its families' slots."""

    def __init__(self, thread):
        self.thread = thread


class BlockState(Slots):
    """One CTA's simulator state.  Its lock and wake-ups are those of the
    cluster it runs in (``sim/engine.py``): a CTA may change another CTA's
    barrier, so the CTAs of a cluster share one lock."""

    def __init__(self, mgr):
        # the mode a GPU compile of this kernel reads: a bad
        # NUMBA_ASYNCCOPY_CHECKED is the same ValueError here as there
        _checked.is_checked()
        self.mgr = mgr
        self.cluster = getattr(mgr, "_ac_cluster", None)
        self.cond = self.cluster.cond if self.cluster is not None else \
            threading.Condition(threading.RLock())
        self.barriers: dict[int, Barrier] = {}

    @property
    def point(self) -> tuple:
        """This CTA's block index (grid point)."""
        return getattr(self.mgr, "_ac_point", (0, 0, 0))

    @property
    def progress(self) -> int:
        return self.cluster.progress if self.cluster is not None else 0

    @property
    def nthreads(self) -> int:
        return int(np.prod(_nbsim.block_dim(self.mgr)))

    def changed(self, key=None) -> None:
        """Wake the waiters whose predicate became true: those waiting on
        ``key`` (a Barrier) and those without one; all when ``key`` is None."""
        if self.cluster is not None:
            self.cluster.changed(key)

    def at_exit(self, grid_point) -> None:
        """The block finished: transaction bytes must balance on every barrier
        (a phase whose tx-count is not zero was announced more or fewer bytes
        than were completed; on the GPU its data is missing or a later phase
        completes early).  First the ``"block_exit"`` event: what the families
        still have in flight completes (bulk stores: the end of the kernel
        completes them on the GPU too)."""
        with self.cond:
            EVENTS.emit("block_exit", self)
        for b in self.barriers.values():
            pend, tx = b.outstanding()
            if tx != 0:
                arr, flight = b.in_flight()
                raise SimulatorError(
                    f"{SIM_PREFIX}block ({','.join(map(str, grid_point))}) exited with "
                    f"{b.name()} in {b.report()}: the transaction bytes announced with "
                    f"expect_tx ({b.tx_expected}) do not match the bytes completed "
                    f"({b.tx_completed + flight})")

    def block_until(self, pred: Callable[[], bool], on_deadlock: Callable[[], None]) -> bool:
        """Wait (the lock held) until ``pred()``; woken when the state it
        reads changes, never polling.

        When every thread of the cluster is blocked: ``on_deadlock()``
        either returns (then this returns False) or raises the
        :class:`DeadlockError` text of this wait, which goes, with every
        other blocked wait's, into the launch's one DeadlockError.
        """
        return self.cluster.wait_until(pred, on_deadlock)


class AsyncOp:
    """One asynchronous operation: byte pieces to write when it lands, the
    transaction bytes it completes on a barrier, arrivals it makes.

    ``pieces`` are (destination uint8 view, payload uint8 array) pairs.
    Under the worst schedule the destinations hold poison from issue until
    the op lands; under the eager one the op lands at issue.
    """

    def __init__(self, pieces, *, tx_bytes: int = 0, arrivals: int = 0):
        self.pieces = pieces
        self.tx_bytes = tx_bytes
        self.arrivals = arrivals
        self.landed = False
        self.barrier: Barrier | None = None
        self.then: list[Callable[[AsyncOp], None]] = []  # run once, at landing
        self.requires: list[AsyncOp] = []  # land before this one (and make it land)

    def poison(self) -> None:
        for dst, _ in self.pieces:
            dst[...] = POISON_BYTE

    def land(self) -> None:
        """Write the data (once), after the ops it requires.  Caller holds
        the block lock."""
        if self.landed:
            return
        self.landed = True
        for op in self.requires:
            op.land()
        for dst, payload in self.pieces:
            dst[...] = payload
        for fn in self.then:
            fn(self)


class Barrier:
    """Exact mbarrier accounting for one barrier of one block.

    A phase completes when its pending arrivals and its transaction count
    both reach zero.  Operations still in flight under the worst schedule
    (``deferred``) count as if done: the phase completes, and they land, the
    moment nothing else is missing.
    """

    def __init__(self, addr: int, label: str, count: int):
        self.addr, self.label = addr, label
        self.expected = count  # arrivals per phase (arrive_drop lowers it)
        self.phase = 0
        self.owner = None  # grid point of the owning CTA (cluster launches)
        self.cluster = None
        self._completing = False
        self._new_phase()

    def _new_phase(self) -> None:
        self.pending = self.expected
        self.tx = 0  # expect_tx adds, complete_tx subtracts
        self.tx_expected = 0
        self.tx_completed = 0
        self.deferred: list[AsyncOp] = []

    def in_flight(self) -> tuple[int, int]:
        """(arrivals, tx bytes) of deferred operations of this phase."""
        live = [op for op in self.deferred if not op.landed]
        return sum(op.arrivals for op in live), sum(op.tx_bytes for op in live)

    def outstanding(self) -> tuple[int, int]:
        arr, tx = self.in_flight()
        return self.pending - arr, self.tx - tx

    def settle(self, blk: BlockState) -> None:
        """Complete the phase when nothing is missing.  When only operations
        in flight are missing the phase is ready but completes (and they land)
        when a wait observes it (:meth:`observe`): the latest moment the GPU
        allows, so a thread that reads without waiting reads poison."""
        if self._completing:
            return
        pend, tx = self.outstanding()
        if pend == 0 and tx == 0 and all(op.landed for op in self.deferred):
            self._complete()
        blk.changed(self)

    def observe(self, blk: BlockState) -> None:
        """A wait looks at the barrier: a ready phase completes now."""
        if self._completing:
            return
        pend, tx = self.outstanding()
        if pend == 0 and tx == 0:
            self._complete()
            blk.changed(self)

    def _complete(self) -> None:
        self._completing = True
        try:
            for op in list(self.deferred):
                op.land()  # its arrivals/tx bytes are part of this completion
        finally:
            self._completing = False
        self.phase += 1
        self._new_phase()
        EVENTS.emit("phase_complete", self)

    def arrive(self, blk: BlockState, count: int, api: str) -> None:
        pend, tx = self.outstanding()
        live = [op for op in self.deferred if not op.landed and op.pieces]
        if count > pend and pend == 0 and live:
            # every arrival in, only copies in flight missing, and no wait observed
            # the phase (a wait completes it): nothing consumed this fill
            sites = "; ".join(getattr(op, "issued_at", "a copy") for op in live)
            raise violation(
                api,
                f"{count} arrival(s) on {self.name()} in phase {self.phase}, whose arrivals are "
                f"all in and whose copies in flight ({sites}) no thread waited for: the slot was "
                "released without a wait (its consumers arrived on the slot's empty barrier "
                "without waiting on this phase with mbarrier_wait_parity), and this arrival "
                "refills a slot whose fill nobody consumed")
        if count > pend:
            raise violation(
                api,
                f"{count} arrival(s) on {self.name()} in phase {self.phase}, but only {pend} "
                f"of its expected {self.expected} arrivals are still pending "
                "(the arrival count is wrong: on the GPU the extra arrivals leak into the "
                "next phase)")
        EVENTS.emit("arrive", self, api)  # what the arriving thread wrote is released on it
        self.pending -= count
        self.settle(blk)

    def expect_tx(self, blk: BlockState, nbytes: int) -> None:
        self.tx += nbytes
        self.tx_expected += nbytes
        blk.changed(self)

    def complete_tx(self, blk: BlockState, nbytes: int) -> None:
        # a thread's complete_tx signals the phase like an arrival: what it wrote
        # before is released on it (the waiters of the phase see it)
        EVENTS.emit("arrive", self, "mbarrier_complete_tx")
        self.tx -= nbytes
        self.tx_completed += nbytes
        self.settle(blk)

    def attach(self, blk: BlockState, op: AsyncOp) -> None:
        """Track ``op`` on the current phase: its arrivals and tx bytes happen
        when it lands (eager: now; worst: at the latest, when the phase
        completes)."""
        op.barrier = self

        def done(o: AsyncOp, bar=self) -> None:
            bar.pending -= o.arrivals
            bar.tx -= o.tx_bytes
            bar.tx_completed += o.tx_bytes
            bar.settle(blk)  # no-op while the phase is completing

        op.then.insert(0, done)
        if op.pieces and "async_write" in EVENTS:  # an async-proxy write (sim/proxy.py)
            op.then.append(lambda o: EVENTS.emit("async_write", blk, o))
        self.deferred.append(op)
        if eager():
            op.land()
        else:
            op.poison()
            if op.pieces:
                EVENTS.emit("copy_tracked", op, self)  # in flight until a wait (sim/visibility.py)
            self.settle(blk)

    def name(self) -> str:
        return f"the barrier ({self.label})"

    def report(self) -> str:
        arr, tx_flight = self.in_flight()
        arrived = self.expected - self.pending
        return (
            f"phase {self.phase}: expected {self.expected} arrivals, {arrived} arrived"
            + (f" ({arr} more from copies in flight)" if arr else "")
            + f"; transaction bytes: expected {self.tx_expected}, completed "
            f"{self.tx_completed}, in flight {tx_flight}, tx-count {self.tx - tx_flight} "
            "after the copies in flight land"
        )


# --- rules of a barrier's use that the families share --------------------------------


def check_tx_overflow(api: str, b: Barrier) -> None:
    """Every arrival of the phase is in but more transaction bytes completed
    (or are in flight) than expect_tx announced: a wrong byte count, reported
    with the copies of the phase and where they were issued."""
    pend, tx = b.outstanding()
    if pend != 0 or tx >= 0:
        return
    live = [op for op in b.deferred if not op.landed and op.tx_bytes]
    copies = "; ".join(f"{getattr(op, 'issued_at', 'a copy')} ({op.tx_bytes} bytes)"
                       for op in live) or "none in flight (complete_tx brought them)"
    _, flight = b.in_flight()
    raise violation(api, _rules.tx_overflow(
        extra=-tx, barrier=b.name(), phase=b.phase, expected=b.tx_expected,
        completed=b.tx_completed + flight, copies=copies))


def issued(op: AsyncOp, api: str) -> AsyncOp:
    """Record where ``op`` was issued (file:line of the kernel, thread), for messages."""
    op.issued_at = f"{api} issued at {caller_line()} {where()}"
    return op


def check_init_fenced(api: str, b: Barrier) -> None:
    """The async proxy (a bulk or TMA copy completing on ``b``) may use a
    barrier only after its initialising thread fenced the init
    (``fence_proxy_async`` on shared memory, or ``fence_mbarrier_init``)."""
    if not getattr(b, "fenced", True):
        raise violation(api, _rules.barrier_unfenced(barrier=b.name(), use=api))


def fence_inits(th: ThreadState, blk: BlockState, cluster: bool = False) -> None:
    """A fence by this thread orders every mbarrier_init it did before;
    ``fence_mbarrier_init`` (``cluster``) also releases them to the cluster,
    for the CTAs that wait on a cluster barrier after it (the generation
    being collected now is recorded)."""
    gen = getattr(getattr(blk, "cluster", None), "cbar_gen", 0)
    for b in blk.barriers.values():
        if getattr(b, "init_by", None) is th:
            b.fenced = True
            if cluster and getattr(b, "cluster_fence_gen", -1) is None:
                b.cluster_fence_gen = gen


def check_cluster_fenced(api: str, b: Barrier, cl, owner: tuple, me: tuple,
                          waited: int) -> None:
    """CTA ``me`` may use CTA ``owner``'s barrier ``b`` only after the
    initialising thread's fence_mbarrier_init and a cluster barrier that
    ``me`` waited on after it (``waited``: one past the highest cluster
    barrier generation ``me`` completed)."""
    gen = getattr(b, "cluster_fence_gen", -1)  # -1: not initialised here (not tracked)
    if owner == me or gen == -1:
        return
    if gen is None:
        why = "its initialising thread has not called fence_mbarrier_init() since mbarrier_init"
    elif waited <= gen:
        why = (f"CTA {cl.rank_of(me)} has not waited on a cluster barrier since that thread's "
               "fence_mbarrier_init()")
    else:
        return
    raise violation(api, _rules.barrier_unfenced_cluster(
        barrier=b.name(), user=cl.rank_of(me), use=api, why=why))


def threads_of(blk: BlockState) -> list[ThreadState]:
    """The states of ``blk``'s threads that called into the simulator."""
    out = []
    for t in _nbsim.block_threads(blk.mgr):
        th = t.__dict__.get("_ac_thread")
        if th is not None:
            out.append(th)
    return out


def barrier_of(api: str, blk: BlockState, bar: np.ndarray, *, init_count: int | None = None) -> Barrier:
    """The Barrier at the first element of ``bar`` (a shared uint64 view)."""
    # checked mode's rules on the barrier view, in its order and words
    if bar.size == 0:
        raise violation(api, _rules.barrier_empty(name="bar"))
    if space_of(bar) != "shared":
        raise violation(api, _rules.not_in_space(name="bar", space="shared"))
    addr = address(bar)
    if addr % 8:
        raise violation(api, _rules.not_aligned(name="bar", align=8, addr=f"0x{addr:x}"))
    if init_count is not None:
        label = describe_shared(addr)
        cl = blk.cluster
        if cl is not None and cl.clustered:
            p = blk.point
            label += f", in CTA {cl.rank_of(p)} (block ({p[0]},{p[1]},{p[2]}))"
        b = blk.barriers[addr] = Barrier(addr, label, init_count)
        b.owner, b.cluster = blk.point, cl
        return b
    b = blk.barriers.get(addr)
    if b is None:
        raise violation(
            api, f"the barrier ({describe_shared(addr)}) is not initialised in this block "
            "(call mbarrier_init first, then cuda.syncthreads())")
    return b
