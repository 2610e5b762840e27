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

from .. import _rules
from .. import mbarrier as _dev
from . import _runtime as rt
from ._mirror import mirrors


def _state(b: rt.Barrier, pending: int) -> np.uint64:
    return np.uint64(((b.phase & 0xFFFFFFFF) << 32) | (pending & 0xFFFFFFFF))


def _state_phase(state) -> int:
    return int(state) >> 32


# --- shared checks of the barrier's use (the copy families call them too) ------


def _check_tx_overflow(api: str, b: rt.Barrier) -> None:
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
    raise rt.violation(api, _rules.tx_overflow(
        extra=-tx, barrier=b.name(), phase=b.phase, expected=b.tx_expected,
        completed=b.tx_completed + flight, copies=copies))


def _issued(op: rt.AsyncOp, api: str) -> rt.AsyncOp:
    """Record where ``op`` was issued (file:line of the kernel, thread), for messages."""
    op.issued_at = f"{api} issued at {rt.caller_line()} {rt.where()}"
    return op


def _check_init_fenced(api: str, b: rt.Barrier) -> None:
    """The async proxy (a bulk or TMA copy completing on ``b``) may use a
    barrier only after its initialising thread fenced the init
    (``fence_proxy_async`` on shared memory, or ``fence_mbarrier_init``)."""
    if not getattr(b, "fenced", True):
        raise rt.violation(api, _rules.barrier_unfenced(barrier=b.name(), use=api))


def _fence_inits(th: rt.ThreadState, blk: rt.BlockState, cluster: bool = False) -> None:
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


def _check_cluster_fenced(api: str, b: rt.Barrier, cl, owner: tuple, me: tuple,
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
    raise rt.violation(api, _rules.barrier_unfenced_cluster(
        barrier=b.name(), user=cl.rank_of(me), use=api, why=why))


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
        _check_tx_overflow(api, b)
        return state


_REMOTE_NOTE = "with ``cta_rank`` it acts on the barrier of that CTA of the cluster."


@mirrors(_dev.mbarrier_arrive, _REMOTE_NOTE)
def mbarrier_arrive(bar, count=1, *, sem=None, scope=None, cta_rank=None):
    (b, n), _ = rt.validate(_dev.mbarrier_arrive, bar, count, sem=sem, scope=scope,
                            cta_rank=cta_rank)
    if cta_rank is not None:
        from .cluster import _arrive_remote

        return _arrive_remote("mbarrier_arrive", b, cta_rank, n)
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
        from .cluster import _expect_tx_remote

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
        _check_tx_overflow(api, bb)


@mirrors(_dev.mbarrier_arrive_expect_tx, _REMOTE_NOTE)
def mbarrier_arrive_expect_tx(bar, nbytes, *, sem=None, scope=None, cta_rank=None):
    (b, n), _ = rt.validate(_dev.mbarrier_arrive_expect_tx, bar, nbytes, sem=sem, scope=scope,
                            cta_rank=cta_rank)
    if cta_rank is not None:
        from .cluster import _arrive_remote

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
        raise rt.deadlock(blk,
            f"{rt.SIM_PREFIX}{api}: deadlock: every thread of the block is blocked, and "
            f"{b.name()} can never complete {_what(b, parity, value)}; it is in "
            f"{b.report()}{starved}; waiting at {line} {rt.where()}")
    return raise_it


def _blocking(api: str, bar, value, parity: bool) -> None:
    line = rt.caller_line()
    th, blk = rt.current(api)
    with blk.cond:
        b = rt.barrier_of(api, blk, bar)
        th.spin = None
        done = _done_fn(b, blk, parity, value)
        done.line = line
        blk.block_until(done, _deadlock(api, b, parity, value, line, blk))


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
            th.spin = None
            return True
        key = (line, b.addr, b.phase, bool(parity), int(value))  # a spin loop repeats the call site
        fail = _deadlock(api, b, parity, value, line, blk)
        if th.spin == (key, blk.progress):
            blk.block_until(done, fail)  # raises on a deadlock
            th.spin = None
            return True
        if blocking and blk.block_until(done, lambda: None):
            th.spin = None
            return True
        th.spin = (key, blk.progress)
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
        copies = th.pending_copies()
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
