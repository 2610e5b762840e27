"""The fp8 GEMM example on the CPU layer: it compiles for sm_90a to QGMMA
(m64nNk32 e4m3/e5m2, fp32 accumulation) with the accumulators in registers
(no LDL/STL before the last MMA group drains), no C7515, and setmaxnreg in
the SASS."""

from __future__ import annotations

import pytest
from numba import types

from numba_asynccopy import toolchain
from numba_asynccopy.examples import fp8_gemm

from .helpers import gemm_sass, local_memory_lines


@pytest.mark.parametrize("bn,dtype,out", [(128, "e4m3", "bf16"), (256, "e4m3", "float32"),
                                          (128, "e5m2", "float16")])
def test_fp8_gemm_sass_has_qgmma_no_local_memory_in_the_loop(bn, dtype, out):
    g = fp8_gemm.make_fp8_gemm(bn=bn, dtype=dtype, out=out)
    ptx, sass, log = gemm_sass(g.kernel, fp8_gemm.THREADS, out, types.float32)
    assert ptx.count(f"m64n{bn}k32.f32.{dtype}.{dtype}") == 4, ptx.count("wgmma.mma_async")
    ops = toolchain.sass_opcodes(sass)
    assert sum(o.startswith("QGMMA") for o in ops) >= 4, sorted(set(ops))
    lines, local, drained = local_memory_lines(sass)
    assert not [i for i in local if i < drained], [lines[i] for i in local]
    assert "C7515" not in log, log
    assert "USETMAXREG.DEALLOC.CTAPOOL 0x28" in sass and "USETMAXREG.TRY_ALLOC.CTAPOOL" in sass


def test_shape_and_argument_errors():
    with pytest.raises(ValueError, match="bn must be 64, 128, 192 or 256"):
        fp8_gemm.make_fp8_gemm(bn=96)
    with pytest.raises(ValueError, match="dtype must be 'e4m3' or 'e5m2'"):
        fp8_gemm.make_fp8_gemm(dtype="bf16")
    with pytest.raises(ValueError, match="K a multiple of 16"):
        fp8_gemm.check_shape(64, 64, 40, 40)
    with pytest.raises(ValueError, match=r"Bt holds B transposed, \(N, K\)"):
        fp8_gemm.check_shape(64, 64, 64, 32)
