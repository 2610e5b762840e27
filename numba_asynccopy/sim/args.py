"""Arguments of a simulated intrinsic: the numpy arrays behind simulator
arrays, and the device intrinsic's own typing run on them."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba.core import types

from .constants import PROCEED, refuse_runtime_constants, runtime_value_violation
from .schedule import jitter


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

    Scalars become literal types, and so do a tuple's Python int entries (as
    Numba types a tuple of constants; NumPy scalars in a tuple, such as an
    MMA fragment's registers, keep their run-time types): the simulator cannot tell a
    compile-time constant from a run-time value, so every value gets the
    compile-time checks (same messages as the device's typing and checked
    mode); :mod:`.constants` retypes the run-time ones from the kernel's
    source.

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


_typing_cache: dict = {}


_types_cache: dict = {}


def _shape_key(v: Any):
    """What ``numba_type(v)`` depends on, cheaply; None where unsure."""
    if isinstance(v, np.ndarray):
        f = v.flags
        return ("a", v.dtype, v.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    if v is None or isinstance(v, (bool, np.bool_, int, np.integer, str)):
        return ("v", type(v), v)  # literal types carry the value
    if type(v) is tuple:
        # a Python int entry's literal type carries its value; a NumPy scalar's does not
        inner = tuple(_shape_key(e) if type(e) in (int, bool, tuple, str) else
                      ("s", type(e)) if isinstance(e, (float, np.generic)) else _shape_key(e)
                      for e in v)
        return None if None in inner else ("t", inner)
    if isinstance(v, (float, np.floating)):
        return ("s", type(v))
    return None


def validate(intrinsic: Any, *args: Any, **kwargs: Any) -> tuple[tuple, dict]:
    """Run ``intrinsic``'s own typing (validation) on these Python values.

    Raises the same ``TypingError`` (same text) the GPU compile would.
    Returns ``(args, kwargs)`` with simulator arrays unwrapped to numpy.
    """
    jitter()  # every intrinsic call is a scheduling point under a seed
    args = tuple(unwrap(a) for a in args)
    kwargs = {k: unwrap(v) for k, v in kwargs.items()}
    # numba.typeof of an array or a tuple costs about 0.1 ms: a kernel calling
    # an intrinsic in a loop pays it once per distinct argument shape
    fast = (id(intrinsic), tuple(_shape_key(a) for a in args),
            tuple(sorted((k, _shape_key(v)) for k, v in kwargs.items())))
    if None in fast[1] or any(v is None for _, v in fast[2]):
        fast = None
    types_of = _types_cache.get(fast) if fast is not None else None
    if types_of is None:
        types_of = (tuple(numba_type(a) for a in args),
                    tuple(sorted((k, numba_type(v)) for k, v in kwargs.items())))
        if fast is not None:
            _types_cache[fast] = types_of
    targs, tkw = types_of
    key = (id(intrinsic), targs, tkw)
    if key not in _typing_cache:
        try:
            intrinsic._defn(None, *targs, **dict(tkw))
        except Exception as e:
            # a run-time value out of range: checked mode's trap on the GPU, not a compile error
            v = runtime_value_violation(intrinsic, targs, dict(tkw), args, kwargs, e)
            if v is not PROCEED:
                raise v or e
        else:
            _typing_cache[key] = True
    # a run-time value where the GPU needs a constant: the GPU compile's error
    refuse_runtime_constants(intrinsic, targs, dict(tkw), args, kwargs)
    return args, kwargs
