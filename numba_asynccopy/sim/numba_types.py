"""The Numba type the GPU compiler would see for a simulated argument's
Python value (below :mod:`.args` and :mod:`.constants`, which both read it)."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba.core import types


def numba_type(v: Any) -> types.Type:
    """The Numba type the GPU compiler would see for ``v``.

    Scalars become literal types, and so do a tuple's Python int entries (as
    Numba types a tuple of constants; NumPy scalars in a tuple, such as an
    MMA fragment's registers, keep their run-time types): the simulator cannot tell a
    compile-time constant from a run-time value, so every value gets the
    compile-time checks (same messages as the device's typing and checked
    mode); :mod:`.constants` retypes the run-time ones from the kernel's
    source (a tuple argument's entries before the typing runs:
    :func:`.constants.tuple_types`).

    Example::

        >>> numba_type(3)
        Literal[int](3)
    """
    if v is None:
        return types.none
    if isinstance(v, (bool, np.bool_)):
        return types.BooleanLiteral(bool(v))
    if isinstance(v, (int, np.integer)):
        return types.literal(int(v))
    if isinstance(v, str):
        return types.literal(v)
    if type(v) is tuple and v:
        # Numba types a tuple entry by entry: ``(0, -1)`` or ``(tid, -1)`` has a
        # literal -1, which the compile-time checks see (a run-time entry is
        # retyped from the kernel's source: .constants)
        elems = [_entry_type(e) for e in v]
        if types.pyobject not in elems:
            return types.BaseTuple.from_types(elems)
    try:
        return numba.typeof(v)
    except (ValueError, TypeError):
        return types.pyobject


def _entry_type(e: Any) -> types.Type:
    """A tuple entry's type: a Python int or bool (what a constant is) as a
    literal, a NumPy scalar (a value read from an array or computed, an MMA
    fragment's register) as its own run-time type."""
    if type(e) in (int, bool, tuple, str):
        return numba_type(e)
    try:
        return numba.typeof(e)
    except (ValueError, TypeError):
        return types.pyobject
