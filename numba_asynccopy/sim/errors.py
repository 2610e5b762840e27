"""The simulator's exceptions and how a message names the thread and the
kernel line that broke a rule."""

from __future__ import annotations

import os
import re
import sys
import threading

from .. import checked as _checked
from .._lowering import TRAP_PREFIX
from . import _numba_sim_internals as _nbsim

SIM_PREFIX = "numba_asynccopy simulator: "
_SIM_DIR = os.path.dirname(os.path.abspath(__file__))


# --- acting on behalf of another thread (deadlock messages) ------------------------------

_acting = threading.local()


class acting_as:
    """``with acting_as(t):`` messages made inside name thread ``t`` (a
    deadlock described on behalf of a blocked thread)."""

    def __init__(self, t):
        self.t = t

    def __enter__(self):
        self.old = getattr(_acting, "thread", None)
        _acting.thread = self.t

    def __exit__(self, *exc):
        _acting.thread = self.old


def acting_thread():
    """The simulated thread a message is about: the current one, or the one
    whose deadlock is being described."""
    return getattr(_acting, "thread", None) or threading.current_thread()


class SimulatorError(RuntimeError):
    """A contract violation the simulator found while running a kernel."""


class DeadlockError(SimulatorError):
    """A wait that can never be satisfied: every thread of the block blocks."""


def where(t=None) -> str:
    """``[block (x,y,z) thread (x,y,z)]`` of ``t``, default the calling thread."""
    if t is None:
        t = acting_thread()
    b, i = _nbsim.block_idx(t), _nbsim.thread_idx(t)
    return "[block ({},{},{}) thread ({},{},{})]".format(*b, *i)


def violation(api: str, rule: str) -> SimulatorError:
    """The exception for a broken run-time rule: the device trap's text.

    Example::

        raise violation("cp_async", "`dst` is not in shared memory")
    """
    prefix = TRAP_PREFIX if _checked.is_checked() else SIM_PREFIX
    return SimulatorError(f"{prefix}{api}: {rule} {where()}")


_in_sim: dict = {}  # id(code) -> (code, it is the simulator's own code)


def in_sim(code) -> bool:
    """Whether a code object is the simulator's own (a module of this
    directory), cached by the code object: every intrinsic call asks it of
    each frame it walks.

    Example::

        f = sys._getframe(1)
        while f is not None and in_sim(f.f_code):  # the kernel's frame
            f = f.f_back
    """
    # by id: hashing a code object hashes its constants and names each time
    hit = _in_sim.get(id(code))
    if hit is None or hit[0] is not code:
        hit = _in_sim[id(code)] = (code, os.path.dirname(os.path.abspath(code.co_filename)) == _SIM_DIR)
    return hit[1]


def caller_line() -> str:
    """file:line of the kernel code that called into the simulator."""
    f = sys._getframe(1)
    while f is not None and in_sim(f.f_code):
        f = f.f_back
    if f is None:
        return "<unknown>"
    return f"{f.f_code.co_filename}:{f.f_lineno}"


# --- deadlocks: the root cause first, then every blocked wait ---------------------


def _ids(threads) -> str:
    """Linear thread ids as ranges: ``0-31, 64``."""
    ids = sorted(t.thread_id for t in threads)
    out, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ", ".join(out)


def _aborted(exc: BaseException) -> bool:
    # the simulator's own "stop, another thread failed" errors are no causes
    return isinstance(exc, RuntimeError) and "abort" in str(exc)


def root_cause(threads) -> tuple[object, BaseException] | None:
    """(thread, error) of the lowest thread of ``threads`` that stopped on an
    error of its own (a rule violation, a Python error in the kernel), not a
    deadlock it only saw: the error the user must see first."""
    for t in sorted(threads, key=lambda t: t.thread_id):
        exc = getattr(t, "exception", None)
        if exc and not isinstance(exc[0], DeadlockError) and not _aborted(exc[0]):
            return t, exc[0]
    return None


def blocked_waits(blk) -> str:
    """The block's threads blocked in ``cuda.syncthreads()`` and those that
    exited, for a deadlock message."""
    # the waits on barriers are described by the waits themselves (the engine
    # tracks its waiters); this lists the threads in no such wait
    sync, gone = [], []
    for t in _nbsim.block_threads(blk.mgr):
        if _nbsim.exited(t):
            gone.append(t)
        elif _nbsim.syncthreads_blocked(t):
            sync.append(t)
    parts = []
    if sync:
        parts.append(f"threads {_ids(sync)} wait in cuda.syncthreads()")
    if gone:
        parts.append(f"threads {_ids(gone)} have exited")
    return "; ".join(parts)


def deadlock(blk, message: str) -> BaseException:
    """The error for a wait of ``blk`` that can never be satisfied: when a
    thread of the block stopped on an error of its own, that error (the wait
    only failed because of it), else :class:`DeadlockError` with ``message``
    and every blocked wait of the block (so the barrier that really starved
    is in the message, whichever thread reports).

    Example::

        raise deadlock(blk, f"{SIM_PREFIX}mbarrier_wait: deadlock: ...")
    """
    hit = root_cause(_nbsim.block_threads(blk.mgr))
    if hit is not None:
        t, exc = hit
        # without the "tid=[..] ctaid=[..]: " the simulator put before it
        text = re.sub(r"^tid=\[[^\]]*\] ctaid=\[[^\]]*\]: ", "", str(exc))
        text = (f"{text} (first error of the block; {where()} stopped too: its wait can never "
                "complete after that)")
        try:
            return type(exc)(text)
        except Exception:
            return SimulatorError(text)
    # the first thread to see the deadlock lists the waits (the others then
    # stop one by one and would show as exited)
    listing = blk.__dict__.get("_ac_blocked")
    if listing is None:
        listing = blk._ac_blocked = blocked_waits(blk)
    if not listing:
        # the launch loop (sim/engine.py) tracks the waiters itself and lists
        # every blocked wait of the block or cluster after this message
        return DeadlockError(message)
    return DeadlockError(f"{message}. Blocked in the block: {listing}")
