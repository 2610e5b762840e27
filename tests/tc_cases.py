"""Tensor-core test material shared by the simulator and the GPU suites:
random 16-bit inputs paired with the float32 values the tensor core reads."""

from __future__ import annotations

import numpy as np

import numba_asynccopy as ac


def rounded_inputs(rng: np.random.Generator, shape, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(the kernel's bf16 bits or float16 array, its exact float32 values)
    of standard normal data rounded to ``dtype`` ("bf16" or "f16")."""
    x = rng.standard_normal(shape).astype(np.float32)
    if dtype == "bf16":
        h = ac.bf16_array(x)
        return h, ac.bf16_values(h)
    h = x.astype(np.float16)
    return h, h.astype(np.float32)
