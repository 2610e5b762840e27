"""Arguments of a simulated intrinsic: the numpy arrays behind simulator
arrays, and the device intrinsic's own typing run on them."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba.core import types


def unwrap(x: Any) -> Any:
    """The numpy array behind a simulator device array, or ``x`` itself."""
    buf = getattr(x, "__dict__", {}).get("_ac_sim_buffer")  # sim TensorMap -> its buffer
    if buf is not None:
        return buf
    item = getattr(x, "__dict__", {}).get("_item")  # FakeWithinKernelCUDAArray
    if item is not None:
        x = item
    ary = getattr(x, "__dict__", {}).get("_ary")  # FakeCUDAArray
    return ary if ary is not None else x


def numba_type(v: Any) -> types.Type:
    """The Numba type the GPU compiler would see for ``v``.

    Scalars become literal types: the simulator cannot tell a compile-time
    constant from a run-time value, so every value gets the compile-time
    checks (same messages as the device's typing and checked mode).

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
    try:
        return numba.typeof(v)
    except (ValueError, TypeError):
        return types.pyobject


_typing_cache: dict = {}


def validate(intrinsic: Any, *args: Any, **kwargs: Any) -> tuple[tuple, dict]:
    """Run ``intrinsic``'s own typing (validation) on these Python values.

    Raises the same ``TypingError`` (same text) the GPU compile would.
    Returns ``(args, kwargs)`` with simulator arrays unwrapped to numpy.
    """
    args = tuple(unwrap(a) for a in args)
    kwargs = {k: unwrap(v) for k, v in kwargs.items()}
    targs = tuple(numba_type(a) for a in args)
    tkw = tuple(sorted((k, numba_type(v)) for k, v in kwargs.items()))
    key = (id(intrinsic), targs, tkw)
    if key not in _typing_cache:
        intrinsic._defn(None, *targs, **dict(tkw))
        _typing_cache[key] = True
    return args, kwargs
