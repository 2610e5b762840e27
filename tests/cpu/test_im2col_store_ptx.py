"""im2col stores and reductions (``.im2col_no_offs``): PTX for every rank
and operation, the cache hint, ptxas for sm_90 and UTMASTG/UTMAREDG
.*.IM2COL in the machine code, and the compile-time errors."""

from __future__ import annotations

import re

import pytest
from numba import types

import numba_asynccopy as ac

from .helpers import instructions, kernel_from_source, ptx_of
from .test_im2col_ptx import RD, R, insts, sass, tup

SIG = (types.uint64[::1], types.uint64, types.int32[::1])


def compile_kernel(body, dtype="np.float32", cc=(9, 0), checked=False):
    src = f"""
    def k(tm, pol, c):
        sh = cuda.shared.array((32, 16), {dtype}, alignment=1024)
        {body}
    """
    with ac.checked_mode(checked):
        return ptx_of(kernel_from_source(src), SIG, cc=cc)


@pytest.mark.parametrize("rank", [3, 4, 5])
def test_store_and_reduce_every_rank(rank):
    cs = tup([f"c[{i}]" for i in range(rank)])
    ptx = compile_kernel(f"""
        ac.cp_async_bulk_tensor_store_im2col(tm, {cs}, sh)
        ac.cp_reduce_async_bulk_tensor_im2col(tm, {cs}, sh, "add")
    """)
    coords = ", ".join([R] * rank)
    (st,) = insts(ptx, r"cp\.async\.bulk\.tensor")
    assert re.match(rf"cp\.async\.bulk\.tensor\.{rank}d\.global\.shared::cta\.im2col_no_offs"
                    rf"\.bulk_group \[{RD}, \{{{coords}\}}\], \[{R}\]$", st), st
    (rd,) = insts(ptx, r"cp\.reduce\.async\.bulk\.tensor")
    assert re.match(rf"cp\.reduce\.async\.bulk\.tensor\.{rank}d\.global\.shared::cta\.add"
                    rf"\.im2col_no_offs\.bulk_group \[{RD}, \{{{coords}\}}\], \[{R}\]$", rd), rd
    assert len(instructions(ptx, r"fence\.proxy\.tensormap")) == 2
    ops = sass(ptx)
    assert f"UTMASTG.{rank}D.IM2COL" in ops and f"UTMAREDG.{rank}D.IM2COL.ADD" in ops, ops


@pytest.mark.parametrize("op, dtype", [("min", "np.int32"), ("max", "np.uint64"),
                                       ("and", "np.uint32"), ("inc", "np.uint32"),
                                       ("add", "np.float16")])
def test_reduce_ops_cache_hint_no_fence(op, dtype):
    ptx = compile_kernel(f"""
        ac.cp_reduce_async_bulk_tensor_im2col(tm, (c[0], c[1], c[2], c[3]), sh, "{op}",
                                              cache_policy=pol, fence=False)
    """, dtype=dtype)
    (rd,) = insts(ptx, r"cp\.reduce\.async\.bulk\.tensor")
    assert f".{op}" in rd and rd.startswith("cp.reduce.async.bulk.tensor.4d.global.shared::cta.")
    assert ".im2col_no_offs.bulk_group.L2::cache_hint" in rd, rd
    assert not instructions(ptx, r"fence\.proxy\.tensormap")
    assert any(o.startswith("UTMAREDG.4D.IM2COL") for o in sass(ptx))


def test_checked_mode_checks_the_map_mode_and_the_first_pixel():
    ptx = compile_kernel("ac.cp_async_bulk_tensor_store_im2col(tm, (c[0], c[1], c[2], c[3]), sh)",
                         checked=True)
    # word 27 (byte 216): the load mode; words 28, 29 (bytes 224, 232): the
    # bounding box of h and w, for the first pixel (as the loads check them);
    # word 31 (byte 248): a nonzero pixel-box corner, which stores refuse
    for byte in (216, 224, 232, 248):
        assert re.search(rf"ld(?:\.global)?\.u64\s+{RD}, \[{RD}\+{byte}\];", ptx), byte
    sass(ptx)


@pytest.mark.parametrize("body, text", [
    ("ac.cp_async_bulk_tensor_store_im2col(tm, (c[0], c[1]), sh)",
     "`coords` has 2 entries; an im2col map is 3-D to 5-D"),
    ('ac.cp_reduce_async_bulk_tensor_im2col(tm, (c[0], c[1], c[2]), sh, "mul")', "`op`"),
    ('ac.cp_reduce_async_bulk_tensor_im2col(tm, (c[0], c[1], c[2]), sh64, "add")',
     "op='add' on int64 elements is refused"),
    ("ac.cp_async_bulk_tensor_store_im2col(tm, (c[0], c[1], c[2]), c[0])", "`src`"),
])
def test_compile_time_errors(body, text):
    with pytest.raises(Exception) as e:
        compile_kernel("sh64 = cuda.shared.array((8, 8), np.int64, alignment=128)\n        " + body)
    assert text in str(e.value), str(e.value)


def test_needs_sm_90():
    with pytest.raises(Exception, match=r"needs sm_90 \(PTX ISA 8\.0\); this kernel is compiled "
                                        r"for sm_80"):
        compile_kernel("ac.cp_async_bulk_tensor_store_im2col(tm, (c[0], c[1], c[2]), sh)",
                       cc=(8, 0))
