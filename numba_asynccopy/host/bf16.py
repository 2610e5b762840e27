"""bf16 on the host: numpy has no bfloat16, so the package holds bf16
data as ``uint16`` arrays of the bf16 bits (the upper half of a float32).

- :func:`bf16_array`: float values -> bf16 bits, rounded to nearest even
  (the same bits as the GPU's ``cvt.rn.bf16.f32``);
- :func:`bf16_values`: bf16 bits -> their float32 values (exact).

A torch ``bfloat16`` tensor passed to ``ac.launch`` or
``ac.as_device_array`` arrives in a kernel as such a uint16 view of the
same memory; in the kernel, ``ac.bf16_to_f32`` / ``ac.f32_to_bf16``
convert one element.

Example::

    import numpy as np
    import numba_asynccopy as ac

    h = ac.bf16_array(np.array([1.0, 1 / 3], np.float32))   # uint16 bits
    ac.bf16_values(h)                                       # [1.0, 0.33398438]
"""

from __future__ import annotations

from typing import Any

import numpy as np


def bf16_array(x: Any) -> np.ndarray:
    """``x`` (array-like of floats) rounded to bf16, as a uint16 array of
    the bf16 bits (round to nearest even; NaN stays NaN, infinities stay).

    Example::

        A = ac.bf16_array(np.random.rand(64, 64))
    """
    f = np.asarray(x, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return np.where(np.isnan(f), (u >> 16) | 0x40, rounded).astype(np.uint16)


def bf16_values(h: Any) -> np.ndarray:
    """The float32 values of bf16 bits ``h`` (a uint16 array-like), exact.

    Example::

        np.testing.assert_allclose(ac.bf16_values(C_bits), C_ref, rtol=1e-2)
    """
    a = np.asarray(h)
    if a.dtype != np.uint16:
        raise TypeError(f"ac.bf16_values: `h` must hold uint16 bf16 bits, got dtype {a.dtype}")
    return (a.astype(np.uint32) << 16).view(np.float32)
