"""Checked mode: run-time contract checks that trap with a message.

Off by default.  Turn it on with the environment variable
``NUMBA_ASYNCCOPY_CHECKED=1`` (read when first needed) or with :func:`set_checked`
/ the :func:`checked_mode` context manager *before* the kernels are compiled.
The mode is read when a kernel is compiled and is part of the on-disk cache
key; a kernel already compiled in this process keeps the mode it was compiled
with (a warning says so when the switch flips after such a compile).

In checked mode every intrinsic adds the run-time checks its contract
needs (address spaces, alignment, chunk counts, ``src_size`` range, cluster
ranks) and every blocking wait is bounded by :func:`wait_timeout_ns`; a
violation prints ``numba_asynccopy checked mode: <api>: <rule>`` with the
block and thread, then executes ``trap`` so the launch fails instead of
corrupting memory or hanging.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from . import _rules
from ._settings import env_positive_int, env_switch
from ._version import __version__

#: Environment variables this module reads (when first needed, not at import).
CHECKED_ENV = "NUMBA_ASYNCCOPY_CHECKED"
TIMEOUT_ENV = "NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS"
DEFAULT_TIMEOUT_NS = 2_000_000_000

# ``None``: not read yet.  The environment is read on first use, so a bad
# value is an error naming the variable where the mode is needed rather than
# an import that dies.
_state: dict[str, Any] = {
    "checked": None,
    "timeout_ns": None,  # bounded waits give up after this many nanoseconds (%globaltimer)
    "compiled": {False: 0, True: 0},
}


def _env_checked() -> bool:
    """``NUMBA_ASYNCCOPY_CHECKED``: unset, empty or ``0`` is off, ``1`` is on."""
    return env_switch(CHECKED_ENV, False, "checked mode")


def _env_timeout() -> int:
    """``NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS``: a positive integer (nanoseconds)."""
    return env_positive_int(TIMEOUT_ENV, DEFAULT_TIMEOUT_NS,
                            "is not a positive integer number of nanoseconds "
                            "(e.g. 2000000000 for 2 s)")


def _checked_now() -> bool:
    mode = _state["checked"]
    if mode is None:
        mode = _state["checked"] = _env_checked()
    return mode


def _timeout_now() -> int:
    ns = _state["timeout_ns"]
    if ns is None:
        ns = _state["timeout_ns"] = _env_timeout()
    return ns


def _check_enabled(api: str, enabled: Any) -> bool:
    # bool only: bool('no') is True, bool(0.0) is False; neither is a switch
    if not isinstance(enabled, bool):
        raise TypeError(f"{api}: `enabled` must be True or False, got {enabled!r} "
                        f"({type(enabled).__name__})")
    return enabled


def _check_timeout(api: str, timeout_ns: Any) -> int | None:
    if timeout_ns is None:
        return None
    if isinstance(timeout_ns, (bool, np.bool_)) or not isinstance(timeout_ns, (int, np.integer)):
        raise TypeError(f"{api}: `timeout_ns` must be a positive int (nanoseconds) or None, "
                        f"got {timeout_ns!r} ({type(timeout_ns).__name__})")
    if timeout_ns <= 0:
        raise ValueError(f"{api}: `timeout_ns` must be positive, got {timeout_ns}")
    return int(timeout_ns)


def is_checked() -> bool:
    """True when kernels compiled from now on get the checked-mode traps.

    Example::

        if not ac.is_checked():
            ac.set_checked(True)
    """
    return _checked_now()


def wait_timeout_ns() -> int:
    """Timeout of checked-mode blocking waits, in nanoseconds (default 2 s).

    Example::

        print(ac.wait_timeout_ns() / 1e9, "s")
    """
    return _timeout_now()


def set_checked(enabled: bool, *, timeout_ns: int | None = None) -> None:
    """Switch checked mode for kernels compiled from now on.

    ``enabled`` must be a bool and ``timeout_ns`` a positive int (or None
    to keep the current timeout); anything else is a ``TypeError`` or
    ``ValueError`` naming the argument.

    Example::

        import numba_asynccopy as ac
        ac.set_checked(True, timeout_ns=500_000_000)
    """
    api = "ac.set_checked"
    enabled = _check_enabled(api, enabled)
    timeout = _check_timeout(api, timeout_ns)
    if timeout is not None:
        _state["timeout_ns"] = timeout
    current = _state["checked"]  # None: not read yet, so nothing was compiled
    if current is not None and enabled != current and _state["compiled"][current]:
        warnings.warn(
            "numba_asynccopy: checked mode switched after kernels were compiled; "
            "those kernels keep the mode they were compiled with "
            "(define them anew to recompile)",
            stacklevel=2,
        )
    _state["checked"] = enabled


@contextlib.contextmanager
def checked_mode(enabled: bool = True, *, timeout_ns: int | None = None) -> Iterator[None]:
    """Context manager form of :func:`set_checked`; restores the old mode.

    Validates its arguments as :func:`set_checked` does, before switching.

    Example::

        with ac.checked_mode():
            kernel = cuda.jit(body)      # compiled at first launch, below
            kernel[1, 32](a, b)
    """
    api = "ac.checked_mode"
    enabled = _check_enabled(api, enabled)
    timeout = _check_timeout(api, timeout_ns)
    old = (_state["checked"], _state["timeout_ns"])
    # a scoped switch is the documented way to compile kernels in a mode: no warning
    _state["checked"] = enabled
    if timeout is not None:
        _state["timeout_ns"] = timeout
    try:
        yield
    finally:
        _state["checked"], _state["timeout_ns"] = old


def _note_compiled() -> bool:
    """Called by lowering; returns the mode to generate code for."""
    mode = _checked_now()
    _state["compiled"][mode] += 1
    return mode


def cache_key() -> tuple:
    """The part of the compile cache key that this package owns."""
    return ("numba_asynccopy", __version__, _checked_now(), _timeout_now())


# --- what checked mode checks: the registry behind the docs' table --------------


@dataclass(frozen=True)
class Check:
    """One run-time check of checked mode: ``api``'s ``argument`` against a rule."""

    api: str
    argument: str
    rule: str  # the rulebook's name for it ("" where the family words its own)
    text: str  # what the trap says, a run-time value written as "…"


#: every declared check, in declaration order (family modules declare theirs
#: next to the code that emits them)
CHECKS: list[Check] = []


def declare(apis: str | tuple[str, ...], argument: str, rule: Any, **fields: Any) -> None:
    """Record that checked mode checks ``argument`` of each of ``apis``.

    ``rule`` is a rulebook ``Rule`` rendered with ``fields`` (a run-time
    value as "…"), or a plain text where a family words the rule itself.
    The docs' checked-mode table is made from these records
    (``make readme-table``; a CPU test fails when it is stale).

    Example::

        declare("mbarrier_init", "count", _rules.outside_range,
                name="count", value="…", lo=1, hi=_rules.MAX_COUNT)
    """
    if isinstance(rule, _rules.Rule):
        name, text = rule.name, rule(**fields)
    else:
        name, text = "", str(rule)
    for api in (apis,) if isinstance(apis, str) else apis:
        c = Check(api, argument, name, text)
        if c not in CHECKS:
            CHECKS.append(c)


def checks_table() -> str:
    """The docs' checked-mode table: one row per function and argument
    (every family has declared its checks: importing this module imports
    the package, and with it every family)."""
    rows: dict[tuple[str, str], list[str]] = {}
    for c in CHECKS:
        rows.setdefault((c.api, c.argument), []).append(c.text.replace("|", "\\|"))
    lines = ["| function | argument | traps when (the trap's words; … is the run-time value) |",
             "|---|---|---|"]
    for (api, arg), texts in sorted(rows.items()):
        shown = f"`{arg}`" if arg.replace(", ", "").replace("_", "").isalnum() else arg
        lines.append(f"| `{api}` | {shown} | " + "<br>".join(texts) + " |")
    return "\n".join(lines)
