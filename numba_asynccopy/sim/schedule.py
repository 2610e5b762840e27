"""When simulated asynchronous copies land: the ``"worst"`` and ``"eager"``
completion schedules, and the poison a destination holds until its copy lands."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

#: every byte of a destination that an asynchronous copy has not yet
#: landed in holds this value (float NaN, integer -1 / all ones)
POISON_BYTE = 0xFF
SCHEDULES = ("worst", "eager")


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
