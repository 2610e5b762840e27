"""Interleaved tensor maps: the innermost box extent spans a multiple of 16
bytes, as for every map (measured on the H200: cuTensorMapEncodeTiled
refuses an interleaved map whose inner box spans 8 or 12 bytes with
CUDA_ERROR_INVALID_VALUE, and encodes 16 or 32 bytes; the GPU fuzz test
keeps the validator in step with the driver)."""

from __future__ import annotations

import numpy as np
import pytest

from numba_asynccopy.host import tensor_map as tm
from tests.cpu.test_tensor_map import cai


@pytest.mark.parametrize("interleave", [16, 32])
@pytest.mark.parametrize("dtype, inner", [(np.uint8, 8), (np.uint8, 12), (np.float16, 4),
                                          (np.float32, 2), (np.float32, 3), (np.float64, 1)])
def test_interleaved_inner_box_under_16_bytes_is_refused(interleave, dtype, inner):
    isz = np.dtype(dtype).itemsize
    with pytest.raises(ValueError, match=rf"`box`\[-1\]={inner} spans {inner * isz} bytes; the "
                                         r"innermost box extent must span a multiple of 16 bytes"):
        tm.describe(cai((4, 8, 64), dtype), (1, 1, inner), interleave=interleave)


@pytest.mark.parametrize("interleave", [16, 32])
@pytest.mark.parametrize("dtype, inner", [(np.uint8, 16), (np.uint8, 32), (np.float16, 8),
                                          (np.float16, 16), (np.float32, 4), (np.float32, 8)])
def test_interleaved_inner_box_of_16_or_32_bytes(interleave, dtype, inner):
    spec = tm.describe(cai((4, 8, 64), dtype), (1, 1, inner), interleave=interleave)
    assert spec.box_dim[0] == inner
