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


SCHEDULE_ENV = "NUMBA_ASYNCCOPY_SIM_SCHEDULE"


def _env_schedule() -> str:
    """``NUMBA_ASYNCCOPY_SIM_SCHEDULE``: unset or empty is ``worst``."""
    raw = os.environ.get(SCHEDULE_ENV)
    s = (raw or "").strip() or "worst"
    if s not in SCHEDULES:
        raise ValueError(f"environment variable {SCHEDULE_ENV}={raw!r} is not a schedule: "
                         "use worst or eager")
    return s


# ``None``: not read yet.  The environment is read on first use (as checked
# mode's variables are), so a bad value is an error naming the variable where
# the schedule is needed rather than an import that dies.
_settings: dict = {"schedule": None}


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
    _settings["schedule"] = _check_name("ac.sim.set_schedule", name)


def _check_name(api: str, name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"{api}: `name` must be 'worst' or 'eager' (a str), got {name!r} "
                        f"({type(name).__name__})")
    if name not in SCHEDULES:
        raise ValueError(f"{api}: `name` must be 'worst' or 'eager', got {name!r}")
    return name


def get_schedule() -> str:
    """The current completion schedule, ``"worst"`` or ``"eager"``."""
    name = _settings["schedule"]
    if name is None:
        name = _settings["schedule"] = _env_schedule()
    return name


@contextlib.contextmanager
def schedule(name: str) -> Iterator[None]:
    """Context-manager form of :func:`set_schedule`; restores the old one.

    Example::

        with ac.sim.schedule("eager"):
            kernel[1, 64](a, b)
    """
    name = _check_name("ac.sim.schedule", name)
    old = get_schedule()
    _settings["schedule"] = name
    try:
        yield
    finally:
        _settings["schedule"] = old


def eager() -> bool:
    return get_schedule() == "eager"
