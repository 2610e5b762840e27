"""What the two tensor-map fuzzers (tests/gpu/test_tensor_map_fuzz_gpu.py,
tiled maps; tests/gpu/test_im2col_fuzz_gpu.py, im2col maps) share: the
dtypes they draw, the seeded description list, the device address they
describe, the driver's enum arguments and the agreement check."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pytest

from numba_asynccopy.host import tensor_map as tm

DTYPES = ["uint8", "int8", "uint16", "int16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "bfloat16"]


def itemsize_of(dtype: str) -> int:
    return 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize


def typestr(dtype: str) -> str:
    """The array interface's typestr (bfloat16 travels as uint16)."""
    return np.dtype("uint16" if dtype == "bfloat16" else dtype).str


def seeded_specs(seed: int, n: int, random_spec: Callable, broken: Callable,
                 named: Sequence = ()) -> list:
    """``named`` then ``n`` random descriptions (seeded), about half with one
    rule broken (``broken(spec, rng)``)."""
    rng = np.random.default_rng(seed)
    out = list(named)
    for _ in range(n):
        spec = random_spec(rng)
        out.append(broken(spec, rng) if rng.random() < 0.5 else spec)
    return out


def device_base():
    """(a 1024-byte aligned address inside a live device buffer, the buffer):
    what the descriptions describe.  Skips below sm_90."""
    from numba import cuda

    dev = cuda.get_current_device()
    if dev.compute_capability < (9, 0):
        pytest.skip("tensor maps need sm_90")
    buf = cuda.device_array(1 << 16, np.uint8)  # a real device address to describe
    return -(-buf.device_ctypes_pointer.value // 1024) * 1024, buf


def driver_enums(driver, spec, interleave=None) -> tuple:
    """The driver's interleave, swizzle, L2 promotion and OOB fill arguments."""
    return (driver.CUtensorMapInterleave(tm.INTERLEAVE_CODES[interleave]),
            driver.CUtensorMapSwizzle(tm.SWIZZLE_CODES[spec.swizzle]),
            driver.CUtensorMapL2promotion(tm.L2_CODES[spec.l2_promotion]),
            driver.CUtensorMapFloatOOBfill(tm.OOB_CODES[spec.oob_fill]))


def assert_agree(specs: list, verdicts: list, least: int) -> None:
    """Validator and driver agree on accept/reject (None: accepted) for every
    description, and at least ``least`` are accepted and ``least`` refused."""
    disagreements = [f"{spec}\n    validator: {v or 'accepts'}\n    driver: {d or 'encodes it'}"
                     for spec, (v, d) in zip(specs, verdicts) if (v is None) != (d is None)]
    accepted = sum(v is None for v, _ in verdicts)
    assert not disagreements, (f"{len(disagreements)} of {len(specs)} descriptions disagree:\n"
                               + "\n".join(disagreements[:40]))
    assert accepted >= least and len(verdicts) - accepted >= least, (accepted, len(verdicts))
