"""The simulator's exceptions and how a message names the thread and the
kernel line that broke a rule."""

from __future__ import annotations

import os
import sys
import threading

from .. import checked as _checked
from .._lowering import TRAP_PREFIX
from ..host import _numba_sim_internals as _nbsim

SIM_PREFIX = "numba_asynccopy simulator: "
_SIM_DIR = os.path.dirname(os.path.abspath(__file__))


class SimulatorError(RuntimeError):
    """A contract violation the simulator found while running a kernel."""


class DeadlockError(SimulatorError):
    """A wait that can never be satisfied: every thread of the block blocks."""


def where(t=None) -> str:
    """``[block (x,y,z) thread (x,y,z)]`` of ``t``, default the calling thread."""
    if t is None:
        from .engine import acting_thread

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


def caller_line() -> str:
    """file:line of the kernel code that called into the simulator."""
    f = sys._getframe(1)
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == _SIM_DIR:
        f = f.f_back
    if f is None:
        return "<unknown>"
    return f"{f.f_code.co_filename}:{f.f_lineno}"
