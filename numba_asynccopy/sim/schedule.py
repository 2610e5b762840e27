"""When simulated asynchronous copies land: the ``"worst"`` and ``"eager"``
completion schedules, the poison a destination holds until its copy lands,
and the interleaving seed that varies the order the simulated threads run in."""

from __future__ import annotations

import contextlib
import random
import threading
import time
from typing import Iterator

from .._settings import env_choice, env_int

#: every byte of a destination that an asynchronous copy has not yet
#: landed in holds this value (float NaN, integer -1 / all ones)
POISON_BYTE = 0xFF
SCHEDULES = ("worst", "eager")


SCHEDULE_ENV = "NUMBA_ASYNCCOPY_SIM_SCHEDULE"


def _env_schedule() -> str:
    """``NUMBA_ASYNCCOPY_SIM_SCHEDULE``: unset or empty is ``worst``."""
    return env_choice(SCHEDULE_ENV, SCHEDULES, "schedule")


SEED_ENV = "NUMBA_ASYNCCOPY_SIM_SEED"


def _env_seed() -> int | None:
    """``NUMBA_ASYNCCOPY_SIM_SEED``: unset or empty is no seed."""
    return env_int(SEED_ENV, "is not an integer seed")


# ``None``/``_UNREAD``: not read yet.  The environment is read on first use (as checked
# mode's variables are), so a bad value is an error naming the variable where
# the schedule is needed rather than an import that dies.
_UNREAD = object()
_settings: dict = {"schedule": None, "seed": _UNREAD}


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


# --- the interleaving seed ------------------------------------------------------

def set_seed(seed: int | None) -> None:
    """Vary the interleaving of the simulated threads with ``seed``.

    The simulated threads of a cluster run one at a time, each until it
    blocks or exits.  With a seed, every intrinsic call is also a scheduling
    point: the calling thread gives up its turn once (let the next ready
    thread run) or several times (fall behind), as a random generator seeded
    by ``(seed, block, thread)`` decides, so each seed runs the kernel's
    threads in another order, and the same seed in the same order again (a
    thread that spins for 50 ms without calling the simulator lets the
    watchdog run every thread at once, and then the OS decides).  ``None``
    (default): no turn given up.  A correct kernel gives the same result
    under every seed; one that does not depends on timing.
    The environment variable ``NUMBA_ASYNCCOPY_SIM_SEED`` sets the initial
    value.

    Example::

        for s in range(5):
            with ac.sim.seed(s):
                kernel[1, 64](a, b)
    """
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ValueError(f"seed must be an int or None, got {seed!r}")
    _settings["seed"] = seed


def get_seed() -> int | None:
    """The interleaving seed (None: no added delays)."""
    s = _settings["seed"]
    if s is _UNREAD:
        s = _settings["seed"] = _env_seed()
    return s


@contextlib.contextmanager
def seed(value: int | None) -> Iterator[None]:
    """Context-manager form of :func:`set_seed`; restores the old seed.

    Example::

        with ac.sim.seed(3):
            kernel[1, 64](a, b)
    """
    old = get_seed()
    set_seed(value)
    try:
        yield
    finally:
        _settings["seed"] = old


def _give_up_turns(t, turns: int) -> None:
    """The simulated thread ``t`` lets others run first, ``turns`` times
    (the simulator's threads run one at a time: sim/engine.py)."""
    from .engine import cluster_of_thread

    cl = cluster_of_thread(t)
    if cl is None:
        time.sleep(0)
    else:
        cl.yield_turn(turns)


def jitter() -> None:
    """A scheduling point (every intrinsic call): under a seed, yield or
    sleep as this thread's seeded generator says."""
    s = _settings["seed"]
    if s is _UNREAD:
        s = get_seed()
    if s is None:
        return
    # the generator lives in the thread's __dict__, which the simulator wipes
    # when it reuses the OS thread for another simulated thread
    t = threading.current_thread()
    d = t.__dict__
    rng = d.get("_ac_rng")
    if rng is None or d.get("_ac_rng_seed") != s:
        who = (tuple(getattr(t, "blockIdx", ())), tuple(getattr(t, "threadIdx", ())))
        rng = d["_ac_rng"] = random.Random(f"{s}:{who}")
        d["_ac_rng_seed"] = s
    r = rng.random()
    if r < 0.25:
        _give_up_turns(t, 1)  # let another thread run
    elif r < 0.30:
        _give_up_turns(t, 2 + int(rng.random() * 8))  # fall behind
