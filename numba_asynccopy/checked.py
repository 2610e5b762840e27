"""Checked mode: run-time contract checks that trap with a message.

Off by default.  Turn it on with the environment variable
``NUMBA_ASYNCCOPY_CHECKED=1`` (read at import) or with :func:`set_checked`
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
import os
import warnings
from typing import Iterator

_state = {
    "checked": os.environ.get("NUMBA_ASYNCCOPY_CHECKED", "0") not in ("", "0"),
    # Bounded waits give up after this many nanoseconds (%globaltimer).
    "timeout_ns": int(os.environ.get("NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS", 2_000_000_000)),
    "compiled": {False: 0, True: 0},
}


def is_checked() -> bool:
    """True when kernels compiled from now on get the checked-mode traps.

    Example::

        if not ac.is_checked():
            ac.set_checked(True)
    """
    return _state["checked"]


def wait_timeout_ns() -> int:
    """Timeout of checked-mode blocking waits, in nanoseconds (default 2 s).

    Example::

        print(ac.wait_timeout_ns() / 1e9, "s")
    """
    return _state["timeout_ns"]


def set_checked(enabled: bool, *, timeout_ns: int | None = None) -> None:
    """Switch checked mode for kernels compiled from now on.

    Example::

        import numba_asynccopy as ac
        ac.set_checked(True, timeout_ns=500_000_000)
    """
    enabled = bool(enabled)
    if timeout_ns is not None:
        if int(timeout_ns) <= 0:
            raise ValueError(f"timeout_ns must be positive, got {timeout_ns}")
        _state["timeout_ns"] = int(timeout_ns)
    if enabled != _state["checked"] and _state["compiled"][_state["checked"]]:
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

    Example::

        with ac.checked_mode():
            kernel = cuda.jit(body)      # compiled at first launch, below
            kernel[1, 32](a, b)
    """
    old = (_state["checked"], _state["timeout_ns"])
    if timeout_ns is not None and int(timeout_ns) <= 0:
        raise ValueError(f"timeout_ns must be positive, got {timeout_ns}")
    # a scoped switch is the documented way to compile kernels in a mode: no warning
    _state["checked"] = bool(enabled)
    if timeout_ns is not None:
        _state["timeout_ns"] = int(timeout_ns)
    try:
        yield
    finally:
        _state["checked"], _state["timeout_ns"] = old


def _note_compiled() -> bool:
    """Called by lowering; returns the mode to generate code for."""
    mode = _state["checked"]
    _state["compiled"][mode] += 1
    return mode


def cache_key() -> tuple:
    """The part of the compile cache key that this package owns."""
    from . import __version__

    return ("numba_asynccopy", __version__, _state["checked"], _state["timeout_ns"])
