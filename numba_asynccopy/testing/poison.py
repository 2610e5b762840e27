"""Poisoned arrays: outputs a kernel must overwrite, filled with a value no
correct kernel leaves behind (NaN for floats, a byte pattern for integers).

The pattern is the simulator's own (:data:`numba_asynccopy.sim.POISON_BYTE`,
``0xFF``): in the worst-case schedule a destination whose copy has not
landed reads the same bytes, so "still poison" means the same thing on a GPU
and in the simulator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# the default fill byte, the simulator's: every float of all-ones bytes is a
# NaN, every integer is -1 (signed) or its maximum (unsigned)
from ..sim.schedule import POISON_BYTE


def _check_byte(byte: Any) -> int:
    if isinstance(byte, (bool, np.bool_)) or not isinstance(byte, (int, np.integer)):
        raise TypeError(f"`byte` must be an int in 0..255, got {byte!r} ({type(byte).__name__})")
    if not 0 <= int(byte) <= 255:
        raise ValueError(f"`byte` must be in 0..255, got {byte}")
    return int(byte)


def _check_dtype(dtype: Any) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"`dtype` must be a NumPy dtype, got {dtype!r}: {e}") from None
    if dt.kind not in "fiuc" and not dt.names:
        raise TypeError(f"`dtype` must be a float, integer or complex dtype, got {dt}")
    return dt


def _check_shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (int(shape),)
    if not isinstance(shape, tuple) or not all(
            isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)) for s in shape):
        raise TypeError(f"`shape` must be an int or a tuple of ints, got {shape!r}")
    if any(s < 0 for s in shape):
        raise ValueError(f"`shape` must not hold negative sizes, got {shape}")
    return tuple(int(s) for s in shape)


def poison_host(shape: int | tuple[int, ...], dtype: Any = np.float32, *,
                byte: int = POISON_BYTE) -> np.ndarray:
    """A host array of ``shape`` whose every byte is ``byte``.

    Example::

        >>> from numba_asynccopy.testing import poison_host
        >>> poison_host(3, "float32")
        array([nan, nan, nan], dtype=float32)
    """
    shape, dt, b = _check_shape(shape), _check_dtype(dtype), _check_byte(byte)
    a = np.empty(shape, dt)
    a.view(np.uint8).reshape(-1)[:] = b
    return a


def poisoned(shape: int | tuple[int, ...], dtype: Any = np.float32, *, byte: int = POISON_BYTE,
             stream: Any = 0):
    """A device array (a simulator array under ``NUMBA_ENABLE_CUDASIM=1``)
    of ``shape`` and ``dtype`` filled with poison: NaN for floats, ``byte``
    repeated for integers.  Pass it as a kernel's output and check it with
    :func:`assert_written` or :func:`assert_close` (which name NaN as poison).

    Example::

        import numpy as np
        from numba import cuda
        from numba_asynccopy.testing import poisoned, assert_written

        @cuda.jit
        def fill(out):
            out[cuda.grid(1)] = 1.0

        out = poisoned(64, np.float32)
        fill[2, 32](out)
        assert_written(out, "out")
    """
    from numba import cuda

    return cuda.to_device(poison_host(shape, dtype, byte=byte), stream=stream)


def poisoned_like(a: Any, *, byte: int = POISON_BYTE):
    """A poisoned device array with the shape and dtype of ``a`` (a host or
    device array).

    Example::

        import numpy as np
        from numba_asynccopy.testing import poisoned_like
        out = poisoned_like(np.zeros((4, 4), np.int32))   # every element -1
    """
    if not hasattr(a, "shape") or not hasattr(a, "dtype"):
        raise TypeError(f"`a` must be an array with shape and dtype, got {type(a).__name__}")
    return poisoned(tuple(a.shape), a.dtype, byte=byte)


def repoison(a: Any, *, byte: int = POISON_BYTE) -> None:
    """Fill an existing device array with poison again (before each launch
    of a kernel that must overwrite it).

    Example::

        import numpy as np
        from numba_asynccopy.testing import poisoned, repoison
        out = poisoned(16)
        repoison(out)
    """
    if not hasattr(a, "copy_to_device"):
        raise TypeError(f"`a` must be a device array, got {type(a).__name__}")
    a.copy_to_device(poison_host(tuple(a.shape), a.dtype, byte=byte))


def _host(a: Any) -> np.ndarray:
    if hasattr(a, "copy_to_host"):
        return a.copy_to_host()
    if type(a).__module__.startswith("torch"):
        return a.detach().cpu().numpy()
    return np.asarray(a)


def poison_mask(a: Any, *, byte: int = POISON_BYTE) -> np.ndarray:
    """Boolean mask of the elements of ``a`` that still hold poison: NaN for
    float dtypes (any NaN: a kernel that computed from poison spreads it),
    every byte equal to ``byte`` otherwise.

    Example::

        >>> import numpy as np
        >>> from numba_asynccopy.testing import poison_host, poison_mask
        >>> a = poison_host(4, np.int32); a[1] = 7
        >>> poison_mask(a).tolist()
        [True, False, True, True]
    """
    h = _host(a)
    b = _check_byte(byte)
    if h.dtype.kind in "fc":
        return np.isnan(h)
    if h.size == 0:
        return np.zeros(h.shape, bool)
    raw = np.ascontiguousarray(h).view(np.uint8).reshape(h.shape + (h.dtype.itemsize,))
    return np.all(raw == b, axis=-1)


def assert_written(a: Any, name: str = "the output", *, byte: int = POISON_BYTE) -> None:
    """Raise ``AssertionError`` if any element of ``a`` still holds poison,
    saying how many and where the first one is.

    Example::

        >>> from numba_asynccopy.testing import poison_host, assert_written
        >>> assert_written(poison_host(2, "float32"), "C")
        Traceback (most recent call last):
        ...
        AssertionError: 2 of 2 elements of C still hold poison (NaN); the first at index (0,): unwritten, or read before its copy landed (a missing wait)
    """
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a str, got {type(name).__name__}")
    mask = poison_mask(a, byte=byte)
    n = int(mask.sum())
    if n:
        first = tuple(int(i) for i in np.argwhere(mask)[0])
        what = "NaN" if _host(a).dtype.kind in "fc" else f"bytes 0x{byte:02X}"
        raise AssertionError(f"{n} of {mask.size} elements of {name} still hold poison ({what}); "
                             f"the first at index {first}: unwritten, or read before its copy "
                             "landed (a missing wait)")
