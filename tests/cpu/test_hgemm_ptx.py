"""The HGEMM example on the CPU layer: it compiles for sm_90a, its main loop
is HGMMA with the accumulators in registers (no LDL/STL, no spills) and
ptxas prints no C7515 (MMAs serialized by accumulator writes), and
setmaxnreg survives into the SASS (the kernel has launch bounds)."""

from __future__ import annotations

import pytest
from numba import cuda, types

from numba_asynccopy import toolchain
from numba_asynccopy.examples import hgemm


@pytest.mark.parametrize("bn,dtype,out", [(128, "bf16", "float32"), (256, "f16", "float16"),
                                          (256, "bf16", "bf16")])
def test_hgemm_sass_has_hgmma_no_local_memory_no_c7515(bn, dtype, out):
    g = hgemm.make_hgemm(bn=bn, dtype=dtype, out=out)
    elem = types.uint16 if dtype == "bf16" else types.float16
    cty = {"float32": types.float32, "float16": types.float16, "bf16": types.uint16}[out]
    sig = (types.uint64[::1], types.uint64[::1], cty[:, ::1], types.int64)
    ptx = cuda.compile_ptx(g.kernel.py_func, sig, cc=(9, 0, "a"),
                           launch_bounds=(hgemm.THREADS, 1))[0]
    assert f"m64n{bn}k16.f32.{dtype}.{dtype}" in ptx and elem is not None
    cubin, log = toolchain.assemble(ptx, verbose=True)
    sass = toolchain.disassemble(cubin)
    ops = toolchain.sass_opcodes(sass)
    assert sum(o.startswith("HGMMA") for o in ops) >= 4, sorted(set(ops))
    assert not [o for o in ops if o.startswith(("LDL", "STL"))]
    assert "C7515" not in log and "0 bytes spill stores" in log, log
    assert "USETMAXREG.DEALLOC.CTAPOOL 0x28" in sass and "USETMAXREG.TRY_ALLOC.CTAPOOL" in sass
