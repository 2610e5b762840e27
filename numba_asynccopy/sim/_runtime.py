"""The simulator's machinery: argument typing, memory spaces, per-block state,
the completion schedule, barriers and deadlock detection.

numba-cuda's simulator runs every CUDA thread of a block as a Python thread
(``BlockThread``) under a ``BlockManager`` and the blocks one after another.
This module keeps one :class:`BlockState` per ``BlockManager`` and one
:class:`ThreadState` per ``BlockThread``; everything that changes them holds
the block's lock, so the copies, groups and barrier counts are exact.

The family modules (``sim/cp_async.py``, ``sim/mbarrier.py``, ...) build on
four pieces: :func:`validate` (the device intrinsic's own typing, fed
Numba types made from Python values), :func:`current` (this thread and its
block), :class:`AsyncOp` (a copy that lands later, under the schedule) and
:class:`Barrier` (exact phase/arrival/transaction accounting).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Callable, Iterator

import numba
import numpy as np
from numba.core import types

from .. import checked as _checked
from .._lowering import TRAP_PREFIX

#: every byte of a destination that an asynchronous copy has not yet
#: landed in holds this value (float NaN, integer -1 / all ones)
POISON_BYTE = 0xFF
SCHEDULES = ("worst", "eager")
SIM_PREFIX = "numba_asynccopy simulator: "
_SIM_DIR = os.path.dirname(os.path.abspath(__file__))


class SimulatorError(RuntimeError):
    """A contract violation the simulator found while running a kernel."""


class DeadlockError(SimulatorError):
    """A wait that can never be satisfied: every thread of the block blocks."""


# --- schedule -----------------------------------------------------------------

def _env_schedule() -> str:
    s = os.environ.get("NUMBA_ASYNCCOPY_SIM_SCHEDULE", "worst").strip() or "worst"
    if s not in SCHEDULES:
        raise ValueError(
            f"NUMBA_ASYNCCOPY_SIM_SCHEDULE={s!r} is not a schedule; use 'worst' or 'eager'")
    return s


_settings = {"schedule": _env_schedule()}


def set_schedule(name: str) -> None:
    """Choose when simulated asynchronous copies land.

    ``"worst"`` (default): a copy lands only when the program waits for it
    correctly (its group retired by ``wait_group``/``wait_all``, or its
    barrier phase completed); until then its destination holds
    :data:`POISON_BYTE`.  ``"eager"``: copies land when issued.  The
    environment variable ``NUMBA_ASYNCCOPY_SIM_SCHEDULE`` sets the initial
    value.  Takes effect for copies issued from now on.

    Example::

        import numba_asynccopy as ac
        ac.sim.set_schedule("eager")   # does the bug depend on the schedule?
    """
    if name not in SCHEDULES:
        raise ValueError(f"schedule must be 'worst' or 'eager', got {name!r}")
    _settings["schedule"] = name


def get_schedule() -> str:
    """The current completion schedule, ``"worst"`` or ``"eager"``."""
    return _settings["schedule"]


@contextlib.contextmanager
def schedule(name: str) -> Iterator[None]:
    """Context-manager form of :func:`set_schedule`; restores the old one.

    Example::

        with ac.sim.schedule("eager"):
            kernel[1, 64](a, b)
    """
    old = get_schedule()
    set_schedule(name)
    try:
        yield
    finally:
        _settings["schedule"] = old


def eager() -> bool:
    return _settings["schedule"] == "eager"


# --- arguments ------------------------------------------------------------------

def unwrap(x):
    """The numpy array behind a simulator device array, or ``x`` itself."""
    buf = getattr(x, "__dict__", {}).get("_ac_sim_buffer")  # sim TensorMap -> its buffer
    if buf is not None:
        return buf
    item = getattr(x, "__dict__", {}).get("_item")  # FakeWithinKernelCUDAArray
    if item is not None:
        x = item
    ary = getattr(x, "__dict__", {}).get("_ary")  # FakeCUDAArray
    return ary if ary is not None else x


def numba_type(v):
    """The Numba type the GPU compiler would see for ``v``.

    Scalars become literal types: the simulator cannot tell a compile-time
    constant from a run-time value, so every value gets the compile-time
    checks (same messages as the device's typing and checked mode).
    """
    if v is None:
        return types.none
    if isinstance(v, (bool, np.bool_)):
        return types.BooleanLiteral(bool(v))
    if isinstance(v, (int, np.integer)):
        return types.literal(int(v))
    if isinstance(v, str):
        return types.literal(v)
    try:
        return numba.typeof(v)
    except (ValueError, TypeError):
        return types.pyobject


_typing_cache: dict = {}


def validate(intrinsic, *args, **kwargs):
    """Run ``intrinsic``'s own typing (validation) on these Python values.

    Raises the same ``TypingError`` (same text) the GPU compile would.
    Returns ``(args, kwargs)`` with simulator arrays unwrapped to numpy.
    """
    args = tuple(unwrap(a) for a in args)
    kwargs = {k: unwrap(v) for k, v in kwargs.items()}
    targs = tuple(numba_type(a) for a in args)
    tkw = tuple(sorted((k, numba_type(v)) for k, v in kwargs.items()))
    key = (id(intrinsic), targs, tkw)
    if key not in _typing_cache:
        intrinsic._defn(None, *targs, **dict(tkw))
        _typing_cache[key] = True
    return args, kwargs


# --- where we are -------------------------------------------------------------

def _sim_kernel():
    from numba.cuda.simulator import kernel as simkernel

    return simkernel


def current(api: str):
    """(ThreadState, BlockState) of the calling simulated CUDA thread."""
    t = threading.current_thread()
    mgr = getattr(t, "_manager", None)
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


_create_lock = threading.Lock()


def where(t=None) -> str:
    t = t or threading.current_thread()
    b, i = tuple(t.blockIdx), tuple(t.threadIdx)
    return "[block ({},{},{}) thread ({},{},{})]".format(*b, *i)


def violation(api: str, rule: str) -> SimulatorError:
    """The exception for a broken run-time rule: the device trap's text."""
    prefix = TRAP_PREFIX if _checked.is_checked() else SIM_PREFIX
    return SimulatorError(f"{prefix}{api}: {rule} {where()}")


def caller_line() -> str:
    """file:line of the kernel code that called into the simulator."""
    f = sys._getframe(1)
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == _SIM_DIR:
        f = f.f_back
    if f is None:
        return "<unknown>"
    return f"{f.f_code.co_filename}:{f.f_lineno}"


# --- memory spaces ------------------------------------------------------------

def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _ranges(obj) -> list:
    return obj.__dict__.setdefault("_ac_ranges", [])


def _lookup(obj, addr: int):
    for start, end, label in _ranges(obj):
        if start <= addr < end:
            return start, label
    return None


def space_of(a: np.ndarray) -> str:
    """"shared", "local" or "global" (anything else a kernel can see)."""
    mod = _sim_kernel()._get_kernel_context()
    if mod is None:
        return "global"
    addr = address(a)
    if _lookup(mod._shared, addr):
        return "shared"
    if _lookup(mod._local, addr):
        return "local"
    return "global"


def describe_shared(addr: int) -> str:
    mod = _sim_kernel()._get_kernel_context()
    hit = _lookup(mod._shared, addr) if mod is not None else None
    if hit is None:
        return f"at address 0x{addr:x}"
    start, label = hit
    return f"{label}, byte offset {addr - start}"


def _aligned_empty(shape, dtype: np.dtype, alignment: int | None, keep: list) -> np.ndarray:
    """An uninitialised array aligned to ``alignment``.

    Without ``alignment=`` an array gets only its dtype's alignment: it is
    placed off every larger boundary (the worst case the GPU allows), so a
    missing ``alignment=16`` shows up as a misaligned chunk.
    """
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = np.empty(nbytes + 2048, np.uint8)
    base = address(buf)
    if alignment is not None:
        off = (-base) % alignment
    else:
        natural = dtype.alignment
        off = (-base) % 1024
        if natural < 16:
            off += natural  # a multiple of the dtype's alignment, of nothing larger
    keep.append(buf)
    return buf[off:off + nbytes].view(dtype).reshape(shape)


def _validate_alignment(alignment) -> None:
    # numba-cuda's rules and messages (cudaimpl._validate_alignment)
    if alignment is None:
        return
    if not isinstance(alignment, int):
        raise ValueError("Alignment must be an integer")
    if alignment <= 0:
        raise ValueError("Alignment must be positive")
    if alignment & (alignment - 1):
        raise ValueError("Alignment must be a power of 2")
    if alignment % 8:
        raise ValueError("Alignment must be a multiple of 8")


def install() -> None:
    """Teach numba-cuda's simulator what the kernels need: ``alignment=`` on
    shared/local arrays, a registry of shared/local address ranges (for the
    address-space rules) and a list of each block's threads (for deadlock
    detection).  Idempotent."""
    from numba.cuda.np import numpy_support
    from numba.cuda.simulator import kernel as simkernel
    from numba.cuda.simulator import kernelapi

    Shared, Local = kernelapi.FakeCUDAShared, kernelapi.FakeCUDALocal
    if getattr(Shared, "_ac_installed", False):
        return
    alloc_lock = threading.Lock()

    def as_dtype(dtype):
        return np.dtype(numpy_support.as_dtype(dtype) if isinstance(dtype, types.Type) else dtype)

    def shared_init(self, dynshared_size):
        self._allocations = {}
        self._dynshared_size = dynshared_size
        self._ac_keep = []
        # dynamic shared memory: one 1024-byte aligned buffer for every view
        self._dynshared = _aligned_empty((dynshared_size,), np.dtype(np.byte), 1024, self._ac_keep)
        self._dynshared[...] = 0
        if dynshared_size:
            start = address(self._dynshared)
            _ranges(self).append((start, start + dynshared_size, "dynamic shared memory"))

    def shared_array(self, shape, dtype, alignment=None):
        _validate_alignment(alignment)
        dtype = as_dtype(dtype)
        if shape == 0:
            count = self._dynshared_size // dtype.itemsize
            return np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
        f = sys._getframe(1)
        caller = (f.f_code.co_filename, f.f_lineno)
        with alloc_lock:  # threads of a block reach the line together
            res = self._allocations.get(caller)
            if res is None:
                res = _aligned_empty(shape, dtype, alignment, self._ac_keep)
                res.view(np.uint8)[...] = POISON_BYTE  # uninitialised shared memory
                self._allocations[caller] = res
                start = address(res)
                _ranges(self).append(
                    (start, start + max(res.nbytes, 1),
                     f"shared array allocated at {caller[0]}:{caller[1]}"))
        return res

    def local_array(self, shape, dtype, alignment=None):
        _validate_alignment(alignment)
        dtype = as_dtype(dtype)
        keep = self.__dict__.setdefault("_ac_keep", [])
        res = _aligned_empty(shape, dtype, alignment, keep)
        start = address(res)
        with alloc_lock:
            _ranges(self).append((start, start + max(res.nbytes, 1), "local array"))
        return res

    Shared.__init__ = shared_init
    Shared.array = shared_array
    Local.array = local_array

    orig_thread_init = simkernel.BlockThread.__init__

    def thread_init(self, f, manager, *args, **kwargs):
        orig_thread_init(self, f, manager, *args, **kwargs)
        # created (then started) one by one by the manager's thread
        manager.__dict__.setdefault("_ac_threads", []).append(self)

    simkernel.BlockThread.__init__ = thread_init

    orig_run = simkernel.BlockManager.run

    def block_run(self, grid_point, *args):
        orig_run(self, grid_point, *args)
        blk = self.__dict__.get("_ac_block")
        if blk is not None:
            blk.at_exit(grid_point)

    simkernel.BlockManager.run = block_run
    Shared._ac_installed = True


# --- per-block and per-thread state ---------------------------------------------

class ThreadState:
    def __init__(self, thread):
        self.thread = thread
        self.uncommitted: list[AsyncOp] = []
        self.groups: list[list[AsyncOp]] = []
        self.spin = None  # last failed test/try_wait: (barrier key, progress)
        # bulk stores/reductions (sim/bulk.py): committed groups, oldest first
        self.bulk_uncommitted: list = []
        self.bulk_groups: list[list] = []

    def pending_copies(self) -> list:
        out = [op for g in self.groups for op in g if not op.landed]
        return out + [op for op in self.uncommitted if not op.landed]


class BlockState:
    def __init__(self, mgr):
        self.mgr = mgr
        self.cond = threading.Condition(threading.RLock())
        self.barriers: dict[int, Barrier] = {}
        self.progress = 0  # bumped by every change of async/barrier state
        self.waiting: dict = {}  # thread -> predicate of its blocking wait

    @property
    def nthreads(self) -> int:
        return int(np.prod(self.mgr._block_dim))

    def changed(self) -> None:
        self.progress += 1
        self.cond.notify_all()

    def all_blocked(self) -> bool:
        """Every thread of the block is blocked (syncthreads or a wait of
        ours that cannot be satisfied now) or has exited.  Holds the lock."""
        threads = self.mgr.__dict__.get("_ac_threads", [])
        if len(threads) < self.nthreads:
            return False  # the manager is still starting threads
        for t in threads:
            if t.ident is None:
                return False  # created, not started yet
            if not t.is_alive():
                continue
            pred = self.waiting.get(t)
            if pred is not None:
                if pred():
                    return False
            elif not t.syncthreads_blocked:
                return False
        return True

    def at_exit(self, grid_point) -> None:
        """The block finished: transaction bytes must balance on every barrier
        (a phase whose tx-count is not zero was announced more or fewer bytes
        than were completed; on the GPU its data is missing or a later phase
        completes early).  Bulk stores still in flight complete first (the
        end of the kernel completes them on the GPU too)."""
        with self.cond:
            for t in self.mgr.__dict__.get("_ac_threads", []):
                th = t.__dict__.get("_ac_thread")
                if th is None:
                    continue
                ops = [op for g in th.bulk_groups for op in g] + th.bulk_uncommitted
                th.bulk_groups, th.bulk_uncommitted = [], []
                for op in ops:
                    op.land()
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
        """Wait (holding the lock between polls) until ``pred()``.

        If the whole block stays blocked, call ``on_deadlock()`` (which
        raises, or returns to give up) and return False.
        """
        me = threading.current_thread()
        self.waiting[me] = pred
        try:
            seen, strikes = None, 0
            while not pred():
                if getattr(me, "abort", False):
                    raise RuntimeError("aborted: another thread of the block failed")
                if self.all_blocked():
                    # stable over a few polls with no state change: a deadlock
                    strikes = strikes + 1 if seen == self.progress else 1
                    seen = self.progress
                    if strikes >= 3:
                        on_deadlock()
                        return False
                else:
                    strikes = 0
                self.cond.wait(0.002)
            return True
        finally:
            del self.waiting[me]


# --- asynchronous operations ----------------------------------------------------

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
        blk.changed()

    def observe(self, blk: BlockState) -> None:
        """A wait looks at the barrier: a ready phase completes now."""
        if self._completing:
            return
        pend, tx = self.outstanding()
        if pend == 0 and tx == 0:
            self._complete()
            blk.changed()

    def _complete(self) -> None:
        self._completing = True
        try:
            for op in list(self.deferred):
                op.land()  # its arrivals/tx bytes are part of this completion
        finally:
            self._completing = False
        self.phase += 1
        self._new_phase()

    def arrive(self, blk: BlockState, count: int, api: str) -> None:
        pend, tx = self.outstanding()
        if count > pend:
            raise violation(
                api,
                f"{count} arrival(s) on {self.name()} in phase {self.phase}, but only {pend} "
                f"of its expected {self.expected} arrivals are still pending "
                "(the arrival count is wrong: on the GPU the extra arrivals leak into the "
                "next phase)")
        self.pending -= count
        self.settle(blk)

    def expect_tx(self, blk: BlockState, nbytes: int) -> None:
        self.tx += nbytes
        self.tx_expected += nbytes
        blk.changed()

    def complete_tx(self, blk: BlockState, nbytes: int) -> None:
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
        self.deferred.append(op)
        if eager():
            op.land()
        else:
            op.poison()
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


def barrier_of(api: str, blk: BlockState, bar: np.ndarray, *, init_count: int | None = None) -> Barrier:
    """The Barrier at the first element of ``bar`` (a shared uint64 view)."""
    if bar.size == 0:
        raise violation(api, "`bar` is an empty view; its first element is the barrier")
    if space_of(bar) != "shared":
        raise violation(api, "`bar` is not in shared memory")
    addr = address(bar)
    if addr % 8:
        raise violation(api, f"`bar` is not 8-byte aligned (address 0x{addr:x})")
    if init_count is not None:
        b = blk.barriers[addr] = Barrier(addr, describe_shared(addr), init_count)
        return b
    b = blk.barriers.get(addr)
    if b is None:
        raise violation(
            api, f"the barrier ({describe_shared(addr)}) is not initialised in this block "
            "(call mbarrier_init first, then cuda.syncthreads())")
    return b
