"""64-bit tensor reductions, form by form: each (op, 64-bit element type)
pair the package enables is run against numpy on the GPU; each one it
refuses is a compile-time error whose message says what was observed on
the H200 (the probe that observed it: benchmarks/h200-2026-12-01/reduce64/)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.bulk import TENSOR_REDUCE_TYPES
from numba_asynccopy.tensor import TENSOR_REDUCE_OBSERVED

from .test_tma_gpu import reduce_tile_kernel

pytestmark = pytest.mark.gpu

rng = np.random.default_rng(20261201)
PAIRS = [(op, dt) for op in ("add", "min", "max", "inc", "dec", "and", "or", "xor")
         for dt in (np.uint64, np.int64)]


def ptx_type(op, dt):
    t = {np.uint64: "u64", np.int64: "s64"}[dt]
    return "b64" if op in ("and", "or", "xor") else t


def enabled(op, dt):
    return ((op, np.dtype(dt).name) not in TENSOR_REDUCE_OBSERVED
            and ptx_type(op, dt) in TENSOR_REDUCE_TYPES[op])


@pytest.mark.parametrize("op,dtype", PAIRS)
def test_tensor_reduction_64bit(op, dtype):
    kern = reduce_tile_kernel(op, dtype)
    d_dst = cuda.to_device(np.zeros((20, 40), dtype))
    omap = ac.TensorMap(d_dst, (8, 32))
    if not enabled(op, dtype):
        with pytest.raises(Exception) as e:
            kern[1, 64](omap, cuda.to_device(np.zeros((8, 32), dtype)), np.array([0, 0], np.int32))
        assert f"op={op!r} on {np.dtype(dtype).name} elements is refused: " in str(e.value)
        assert "CUDA_ERROR_ILLEGAL_INSTRUCTION" in str(e.value)
        return
    lo = -(1 << 62) if np.dtype(dtype).kind == "i" else 0
    if op in ("inc", "dec"):
        dst = rng.integers(0, 40, (20, 40)).astype(dtype)
        src = rng.integers(0, 40, (8, 32)).astype(dtype)
    else:
        dst = rng.integers(lo, 1 << 62, (20, 40), dtype=np.int64).astype(dtype)
        src = rng.integers(lo, 1 << 62, (8, 32), dtype=np.int64).astype(dtype)
    d_dst = cuda.to_device(dst)
    omap = ac.TensorMap(d_dst, (8, 32))
    kern[1, 64](omap, cuda.to_device(src), np.array([15, 20], np.int32))  # partly out of bounds
    expected = dst.copy()
    with np.errstate(over="ignore"):
        fn = {"add": lambda x, y: x + y, "min": np.minimum, "max": np.maximum,
              "inc": lambda x, y: np.where(x >= y, 0, x + 1).astype(x.dtype),
              "dec": lambda x, y: np.where((x == 0) | (x > y), y, x - 1).astype(x.dtype),
              "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
        expected[15:20, 20:40] = fn(expected[15:20, 20:40], src[:5, :20])
    np.testing.assert_array_equal(d_dst.copy_to_host(), expected)
