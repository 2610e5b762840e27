"""Arguments of a simulated intrinsic: the numpy arrays behind simulator
arrays, and the device intrinsic's own typing run on them."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .constants import (PROCEED, kernel_frame, refuse_runtime_constants, runtime_value_violation,
                        spec_type, tuple_types)
from .numba_types import numba_type
from .schedule import jitter

__all__ = ["last_types", "numba_type", "unwrap", "validate"]


# values with no instance __dict__ (so nothing to unwrap): the common arguments
_PLAIN = frozenset({np.ndarray, int, float, bool, tuple, str, type(None), np.float16, np.float32,
                    np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                    np.uint32, np.uint64, np.bool_})


def unwrap(x: Any) -> Any:
    """The numpy array behind a simulator device array, or ``x`` itself."""
    if type(x) in _PLAIN:
        return x
    d = getattr(x, "__dict__", None)
    if not d:
        return x
    buf = d.get("_ac_sim_buffer")  # sim TensorMap -> its buffer
    if buf is not None:
        return buf
    item = d.get("_item")  # FakeWithinKernelCUDAArray
    if item is not None:
        x = item
        d = getattr(x, "__dict__", None)
        if not d:
            return x
    ary = d.get("_ary")  # FakeCUDAArray
    return ary if ary is not None else x


_typing_cache: dict = {}


_types_cache: dict = {}
_passed: dict = {}  # (argument keys, id(code), lasti) -> (code, types): validated there
_last = threading.local()  # this thread's last validate(): the types it typed


def last_types() -> tuple[tuple, dict]:
    """The argument and keyword types of this thread's last :func:`validate`
    (a twin that validates options on Numba types reads a tuple's there: its
    run-time entries are not literals)."""
    return _last.types


# ndarray.flags.num bits that numba.typeof reads: C_CONTIGUOUS, F_CONTIGUOUS,
# ALIGNED, WRITEABLE
_FLAG_BITS = 0x1 | 0x2 | 0x100 | 0x400


def _shape_key(v: Any):
    """What ``numba_type(v)`` depends on, cheaply; None where unsure."""
    t = type(v)
    if t is int:  # the common cases first: every intrinsic call keys each argument
        return ("v", int, v)
    if isinstance(v, np.ndarray):
        # C and F contiguous, aligned, writeable: one flags read, not four
        return ("a", v.dtype, v.ndim, v.flags.num & _FLAG_BITS)
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
    # (list comprehensions, not generators: this runs at every intrinsic call)
    args = tuple([a if type(a) in _PLAIN else unwrap(a) for a in args])
    if kwargs:
        kwargs = {k: unwrap(v) for k, v in kwargs.items()}
    # a tuple argument is typed entry by entry as the GPU compile types it,
    # from the kernel's source at the call (constants as literals, run-time
    # entries by their types: one typing a call site, not one a coordinate)
    f = kernel_frame()
    site: dict = {}
    if f is not None and (tuple in map(type, args)
                          or (kwargs and tuple in map(type, kwargs.values()))):
        site = tuple_types(intrinsic, args, kwargs, f) or site
    # numba.typeof of an array or a tuple costs about 0.1 ms: a kernel calling
    # an intrinsic in a loop pays it once per distinct argument shape
    akeys = tuple([site[i][0] if i in site else _shape_key(a) for i, a in enumerate(args)])
    kkeys = tuple(sorted([(k, site[k][0] if k in site else _shape_key(v)) for k, v in kwargs.items()])) \
        if kwargs else ()
    fast = (id(intrinsic), akeys, kkeys)
    if None in akeys or any(v is None for _, v in kkeys):
        fast = None
    # both checks below are a function of the argument types and the call
    # site's source: a call that passed them once at a site passes again
    passed = (fast, id(f.f_code), f.f_lasti) if fast is not None and f is not None else None
    if passed is not None:
        hit = _passed.get(passed)
        if hit is not None and hit[0] is f.f_code:
            _last.types = hit[1]
            return args, kwargs
    types_of = _types_cache.get(fast) if fast is not None else None
    unsure: list = []
    if types_of is None:

        def typed(where, v):
            t = spec_type(site[where][1], v) if where in site else None
            if t is None and where in site:
                unsure.append(where)  # its key does not say its (literal) type
            return numba_type(v) if t is None else t

        types_of = (tuple(typed(i, a) for i, a in enumerate(args)),
                    tuple(sorted((k, typed(k, v)) for k, v in kwargs.items())))
        if fast is not None and not unsure:
            _types_cache[fast] = types_of
    targs, tkw = types_of
    _last.types = (targs, dict(tkw))
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
    refuse_runtime_constants(intrinsic, targs, dict(tkw), args, kwargs,
                             frozenset(w for w in site if w not in unsure), f)
    if passed is not None and key in _typing_cache and not unsure:
        _passed[passed] = (f.f_code, _last.types)
    return args, kwargs
