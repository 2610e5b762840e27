"""A progress line for long simulated launches.

A launch that has run for more than :data:`DELAY_S` seconds prints, on
stderr, how many of its blocks are done, at most once a second, on one line
rewritten in place (``\\r``) and ended when the launch ends::

    numba_asynccopy simulator: kernel gemm: 96 of 256 blocks done (6.1 s)

``NUMBA_ASYNCCOPY_SIM_PROGRESS=0`` turns it off (``1``, unset or empty: on);
any other value is a ``ValueError`` naming the variable, as the package's
other settings are.
"""

from __future__ import annotations

import sys
import time

from .._settings import env_switch

PROGRESS_ENV = "NUMBA_ASYNCCOPY_SIM_PROGRESS"

#: seconds a launch runs before its first progress line
DELAY_S = 3.0
#: seconds between two progress lines
EVERY_S = 1.0


def enabled() -> bool:
    """``NUMBA_ASYNCCOPY_SIM_PROGRESS``: unset, empty or ``1`` is on, ``0`` is off."""
    return env_switch(PROGRESS_ENV, True, "progress line")


class Progress:
    """The progress of one launch of ``name`` over ``total`` blocks."""

    def __init__(self, name: str, total: int, clock=time.monotonic, stream=None):
        self.name, self.total, self.clock = name, total, clock
        self.on = enabled()  # read at each launch: a bad value fails the launch
        self.stream = stream
        self.start = clock()
        self.done = 0
        self.shown = None  # time of the last line printed, None: none yet

    def blocks_done(self, n: int) -> None:
        """``n`` more blocks finished."""
        self.done += n
        if not self.on:
            return
        now = self.clock()
        if now - self.start < DELAY_S:
            return
        last = self.done >= self.total
        if not last and self.shown is not None and now - self.shown < EVERY_S:
            return
        self.shown = now
        out = self.stream or sys.stderr
        out.write(f"\r{_line(self.name, self.done, self.total, now - self.start)}"
                  + ("\n" if last else ""))
        out.flush()


def _line(name: str, done: int, total: int, seconds: float) -> str:
    return (f"numba_asynccopy simulator: kernel {name}: {done} of {total} blocks done "
            f"({seconds:.1f} s)")
