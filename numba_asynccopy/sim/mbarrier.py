"""mbarrier in the simulator: exact phase, arrival and transaction accounting.

A barrier is identified by the address of the first element of the shared
``uint64`` view (``bars[i:]``), per block.  States returned by arrives are
``(phase << 32) | pending arrivals before that arrive`` (what
``mbarrier_pending_count`` reads, as measured on the GPU).  Blocking waits block the Python
thread; when every thread of the block is blocked (in ``syncthreads`` or in
a wait that cannot be satisfied), the wait raises
:class:`~numba_asynccopy.sim.DeadlockError` naming the barrier, its phase,
the expected/arrived counts, the transaction bytes and the line of the wait.
``mbarrier_test_wait``/``try_wait`` polled again without any progress in
the block behave the same way, so a spin loop cannot hang either.
"""

from __future__ import annotations


import numpy as np

from .. import mbarrier as _dev
from . import _runtime as rt
from . import visibility as _vis
from ._mirror import mirrors
from .cluster import _arrive_remote, _expect_tx_remote
from .cp_async import Groups


def _state(b: rt.Barrier, pending: int) -> np.uint64:
    return np.uint64(((b.phase & 0xFFFFFFFF) << 32) | (pending & 0xFFFFFFFF))


def _state_phase(state) -> int:
    return int(state) >> 32


@mirrors(_dev.mbarrier_init,
         "records the initialising thread: a bulk or TMA copy that completes on the barrier "
         "before that thread fenced the init (``fence_proxy_async`` on shared memory or "
         "``fence_mbarrier_init``) is a :class:`SimulatorError`.")
def mbarrier_init(bar, count):
    (b, n), _ = rt.validate(_dev.mbarrier_init, bar, count)
    th, blk = rt.current("mbarrier_init")
    with blk.cond:
        bb = rt.barrier_of("mbarrier_init", blk, b, init_count=int(n))
        bb.init_by, bb.fenced, bb.cluster_fence_gen = th, False, None
        b[0] = 0  # the barrier word: phase 0 (its value is opaque on the GPU)
        blk.changed()


@mirrors(_dev.mbarrier_inval)
def mbarrier_inval(bar):
    (b,), _ = rt.validate(_dev.mbarrier_inval, bar)
    th, blk = rt.current("mbarrier_inval")
    with blk.cond:
        bb = rt.barrier_of("mbarrier_inval", blk, b)
        del blk.barriers[bb.addr]
        blk.changed()


def _arrive(api, bar, count, *, drop=False, no_complete=False, expect=None):
    th, blk = rt.current(api)
    with blk.cond:
        b = rt.barrier_of(api, blk, bar)
        if expect is not None:
            b.expect_tx(blk, int(expect))
        n = int(count)
        pend, tx = b.outstanding()
        if no_complete and n >= pend and tx == 0:
            raise rt.violation(
                api, f"{n} arrival(s) would complete phase {b.phase} of {b.name()} "
                f"({pend} pending): a noComplete arrive must leave the phase incomplete")
        if drop:
            b.expected -= n
        state = _state(b, b.pending)  # the barrier as it was before this arrive (as on the GPU)
        b.arrive(blk, n, api)
        rt.check_tx_overflow(api, b)
        return state


_REMOTE_NOTE = "with ``cta_rank`` it acts on the barrier of that CTA of the cluster."


@mirrors(_dev.mbarrier_arrive, _REMOTE_NOTE)
def mbarrier_arrive(bar, count=1, *, sem=None, scope=None, cta_rank=None):
    (b, n), _ = rt.validate(_dev.mbarrier_arrive, bar, count, sem=sem, scope=scope,
                            cta_rank=cta_rank)
    if cta_rank is not None:
        # a CTA-scope release reaches the peer's barrier but publishes nothing to it
        return _arrive_remote("mbarrier_arrive", b, cta_rank, n, publish=scope != "cta")
    return _arrive("mbarrier_arrive", b, n)


@mirrors(_dev.mbarrier_arrive_drop)
def mbarrier_arrive_drop(bar, count=1, *, sem=None, scope=None):
    (b, n), _ = rt.validate(_dev.mbarrier_arrive_drop, bar, count, sem=sem, scope=scope)
    return _arrive("mbarrier_arrive_drop", b, n, drop=True)


@mirrors(_dev.mbarrier_arrive_no_complete)
def mbarrier_arrive_no_complete(bar, count):
    (b, n), _ = rt.validate(_dev.mbarrier_arrive_no_complete, bar, count)
    return _arrive("mbarrier_arrive_no_complete", b, n, no_complete=True)


@mirrors(_dev.mbarrier_arrive_drop_no_complete)
def mbarrier_arrive_drop_no_complete(bar, count):
    (b, n), _ = rt.validate(_dev.mbarrier_arrive_drop_no_complete, bar, count)
    return _arrive("mbarrier_arrive_drop_no_complete", b, n, drop=True, no_complete=True)


@mirrors(_dev.mbarrier_expect_tx, _REMOTE_NOTE)
def mbarrier_expect_tx(bar, nbytes, *, scope=None, cta_rank=None):
    api = "mbarrier_expect_tx"
    (b, n), _ = rt.validate(_dev.mbarrier_expect_tx, bar, nbytes, scope=scope, cta_rank=cta_rank)
    if cta_rank is not None:
        return _expect_tx_remote(api, b, cta_rank, n)
    th, blk = rt.current(api)
    with blk.cond:
        rt.barrier_of(api, blk, b).expect_tx(blk, int(n))


@mirrors(_dev.mbarrier_complete_tx)
def mbarrier_complete_tx(bar, nbytes, *, scope=None):
    api = "mbarrier_complete_tx"
    (b, n), _ = rt.validate(_dev.mbarrier_complete_tx, bar, nbytes, scope=scope)
    th, blk = rt.current(api)
    with blk.cond:
        bb = rt.barrier_of(api, blk, b)
        bb.complete_tx(blk, int(n))
        rt.check_tx_overflow(api, bb)


@mirrors(_dev.mbarrier_arrive_expect_tx, _REMOTE_NOTE)
def mbarrier_arrive_expect_tx(bar, nbytes, *, sem=None, scope=None, cta_rank=None):
    (b, n), _ = rt.validate(_dev.mbarrier_arrive_expect_tx, bar, nbytes, sem=sem, scope=scope,
                            cta_rank=cta_rank)
    if cta_rank is not None:
        return _arrive_remote("mbarrier_arrive_expect_tx", b, cta_rank, 1, expect=n)
    return _arrive("mbarrier_arrive_expect_tx", b, 1, expect=n)


# --- waits ------------------------------------------------------------------


def _done_fn(b: rt.Barrier, blk: rt.BlockState, parity: bool, value):
    """Predicate: the awaited phase of ``b`` has completed (observing the
    barrier completes a phase that only waited for copies in flight)."""
    if parity:
        p = int(value)

        def done():
            b.observe(blk)
            return (b.phase & 1) != p
    else:
        ph = _state_phase(value)

        def done():
            b.observe(blk)
            return b.phase > ph
    done.key = b  # only a change of this barrier can make it true (sim/engine.py)
    done.barrier, done.what = b, _what(b, parity, value)  # for the deadlock report
    return done


def _what(b: rt.Barrier, parity: bool, value) -> str:
    if parity:
        return f"the phase of parity {int(value)}"
    return f"phase {_state_phase(value)} (state 0x{int(value):016x})"


def _deadlock(api: str, b: rt.Barrier, parity: bool, value, line: str, blk: rt.BlockState):
    def raise_it():
        pend, tx = b.outstanding()
        # every arrival in, bytes missing: no blocked thread can bring them
        starved = (f" (starved: every arrival is in but {tx} announced transaction bytes "
                   "never come)") if pend == 0 and tx > 0 else ""
        eager_ = _vis.arrived_without_wait(blk, only=b.name())
        ahead = (f" ({eager_}: the slot was released without a wait, and its releases ran "
                 "phases ahead)") if eager_ and b.phase > 1 else ""
        err = rt.deadlock(blk,
            f"{rt.SIM_PREFIX}{api}: deadlock: every thread of the block is blocked, and "
            f"{b.name()} can never complete {_what(b, parity, value)}; it is in "
            f"{b.report()}{starved}{ahead}; waiting at {line} {rt.where()}")
        # the launch's DeadlockError puts a root cause first (sim/engine.py)
        err.root_cause = bool(starved)
        raise err
    return raise_it


class Spin:
    """The mbarrier family's slot of a thread's state: its last failed
    test/try_wait, (call site and barrier phase, the block's progress then)."""

    def __init__(self, th):
        self.last = None


def forget_spin(th) -> None:
    """A blocking wait ends any spin loop of this thread."""
    th.slot(Spin).last = None


def _blocking(api: str, bar, value, parity: bool) -> None:
    line = rt.caller_line()
    th, blk = rt.current(api)
    with blk.cond:
        b = rt.barrier_of(api, blk, bar)
        th.slot(Spin).last = None
        done = _done_fn(b, blk, parity, value)
        done.line = line
        blk.block_until(done, _deadlock(api, b, parity, value, line, blk))
        _vis.waited()


def _poll(api: str, bar, value, parity: bool, blocking: bool) -> bool:
    """test_wait/try_wait: True when done.  A failed poll repeated from the
    same line for the same phase with no progress in the block in between
    (a spin loop) waits like mbarrier_wait and reports a deadlock the same
    way, so spin loops cannot hang."""
    line = rt.caller_line()
    th, blk = rt.current(api)
    with blk.cond:
        b = rt.barrier_of(api, blk, bar)
        done = _done_fn(b, blk, parity, value)
        done.line = line
        if done():
            th.slot(Spin).last = None
            _vis.waited()
            return True
        key = (line, b.addr, b.phase, bool(parity), int(value))  # a spin loop repeats the call site
        fail = _deadlock(api, b, parity, value, line, blk)
        if th.slot(Spin).last == (key, blk.progress):
            blk.block_until(done, fail)  # raises on a deadlock
            th.slot(Spin).last = None
            _vis.waited()
            return True
        if blocking and blk.block_until(done, lambda: None):
            th.slot(Spin).last = None
            _vis.waited()
            return True
        th.slot(Spin).last = (key, blk.progress)
        return False


@mirrors(_dev.mbarrier_test_wait)
def mbarrier_test_wait(bar, state, *, sem=None, scope=None):
    (b, v), _ = rt.validate(_dev.mbarrier_test_wait, bar, state, sem=sem, scope=scope)
    return _poll("mbarrier_test_wait", b, v, False, False)


@mirrors(_dev.mbarrier_test_wait_parity)
def mbarrier_test_wait_parity(bar, parity, *, sem=None, scope=None):
    (b, v), _ = rt.validate(_dev.mbarrier_test_wait_parity, bar, parity, sem=sem, scope=scope)
    return _poll("mbarrier_test_wait_parity", b, v, True, False)


@mirrors(_dev.mbarrier_try_wait, "waits until the phase completes or the whole block is blocked.")
def mbarrier_try_wait(bar, state, suspend_hint_ns=None, *, sem=None, scope=None):
    (b, v, _h), _ = rt.validate(_dev.mbarrier_try_wait, bar, state, suspend_hint_ns,
                                sem=sem, scope=scope)
    return _poll("mbarrier_try_wait", b, v, False, True)


@mirrors(_dev.mbarrier_try_wait_parity)
def mbarrier_try_wait_parity(bar, parity, suspend_hint_ns=None, *, sem=None, scope=None):
    (b, v, _h), _ = rt.validate(_dev.mbarrier_try_wait_parity, bar, parity, suspend_hint_ns,
                                sem=sem, scope=scope)
    return _poll("mbarrier_try_wait_parity", b, v, True, True)


@mirrors(_dev.mbarrier_wait, "raises ``DeadlockError`` instead of hanging.")
def mbarrier_wait(bar, state):
    (b, v), _ = rt.validate(_dev.mbarrier_wait, bar, state)
    _blocking("mbarrier_wait", b, v, False)


@mirrors(_dev.mbarrier_wait_parity)
def mbarrier_wait_parity(bar, parity):
    (b, v), _ = rt.validate(_dev.mbarrier_wait_parity, bar, parity)
    _blocking("mbarrier_wait_parity", b, v, True)


@mirrors(_dev.mbarrier_pending_count)
def mbarrier_pending_count(state):
    rt.validate(_dev.mbarrier_pending_count, state)
    return np.uint32(int(state) & 0xFFFFFFFF)


@mirrors(
    _dev.cp_async_mbarrier_arrive,
    "the arrival happens when every cp.async copy this thread issued before it has landed "
    "(worst schedule: when its group is retired, or at the latest when the phase completes, "
    "which lands them).")
def cp_async_mbarrier_arrive(bar, noinc=False):
    api = "cp_async_mbarrier_arrive"
    (b, flag), _ = rt.validate(_dev.cp_async_mbarrier_arrive, bar, noinc)
    th, blk = rt.current(api)
    with blk.cond:
        bb = rt.barrier_of(api, blk, b)
        if not flag:
            bb.pending += 1  # the increment that makes the arrival net zero
        copies = th.slot(Groups).pending()
        _vis.tracked_by(copies, bb)  # the phase this arrival completes publishes them
        if not copies:
            bb.arrive(blk, 1, api)
            return
        op = rt.AsyncOp([], arrivals=1)
        op.requires = copies

        def prerequisite_landed(_copy, op=op, copies=copies):
            if all(c.landed for c in copies):
                op.land()

        for c in copies:
            c.then.append(prerequisite_landed)
        bb.attach(blk, op)
