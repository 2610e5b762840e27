"""64-bit tensor reductions: the forms the H200 ran correctly compile to
the reduction PTX and UTMAREDG; the ones it refused are compile-time errors
that say what it did (the GPU suite runs the enabled ones against numpy)."""

from __future__ import annotations

import pytest
from numba import types


from .helpers import instructions, kernel_from_source, ptx_of, sass_opcodes_of

SIG = (types.uint64[::1], types.int32[::1])


def compile_reduce(op, dtype):
    src = f"""
    def k(tm, c):
        tile = cuda.shared.array((8, 16), np.{dtype}, alignment=128)
        if cuda.threadIdx.x == 0:
            ac.cp_reduce_async_bulk_tensor(tm, (c[0], c[1]), tile, {op!r})
            ac.bulk_commit_group()
    """
    return ptx_of(kernel_from_source(src), SIG, cc=(9, 0))


ENABLED = [("add", "uint64"), ("min", "uint64"), ("max", "uint64"), ("min", "int64"),
           ("max", "int64"), ("and", "uint64"), ("or", "uint64"), ("xor", "uint64")]


@pytest.mark.parametrize("op,dtype", ENABLED)
def test_enabled_64bit_forms_assemble_to_utmaredg(op, dtype):
    ptx = compile_reduce(op, dtype)
    (inst,) = instructions(ptx, r"cp\.reduce\.async\.bulk\.tensor")
    assert inst.startswith(f"cp.reduce.async.bulk.tensor.2d.global.shared::cta.{op}.tile"
                           ".bulk_group"), inst
    assert f"UTMAREDG.2D.{op.upper()}" in sass_opcodes_of(ptx)


REFUSED = [
    ("add", "int64", "through an INT64 tensor map failed the launch with CUDA_ERROR_ILLEGAL_INSTRUCTION"),
    ("and", "int64", "reduce a uint64 tile"),
    ("xor", "int64", "ac.TensorMap(x.view(np.uint64), box)"),
    ("inc", "uint64", "PTX lists inc/dec tensor reductions for .u32 only"),
    ("dec", "int64", "failed the launch with CUDA_ERROR_ILLEGAL_INSTRUCTION through UINT64 and INT64"),
    ("add", "float64", "PTX lists no .f64 tensor reduction"),
    ("max", "float64", "cp_reduce_async_bulk_s2g documents add.f64"),
]


@pytest.mark.parametrize("op,dtype,text", REFUSED)
def test_refused_64bit_forms_say_what_was_observed(op, dtype, text):
    with pytest.raises(Exception) as e:
        compile_reduce(op, dtype)
    msg = str(e.value)
    assert f"cp_reduce_async_bulk_tensor: op={op!r} on {dtype} elements is refused: " in msg, msg
    assert text in msg, msg
