"""im2col TMA loads and prefetches: PTX for every rank (offsets as 16-bit
operands, innermost first), multicast and cache-hint variants, ptxas for
sm_90, UTMALDG.*.IM2COL in the machine code, and the compile-time errors."""

from __future__ import annotations

import re

import pytest
from numba import cuda, types


from .helpers import instructions, sass_opcodes_of, tma_kernel_ptx, whole_instructions

R, RD, RS = r"%r\d+", r"%rd\d+", r"%rs\d+"


def compile_kernel(body, cc=(9, 0), checked=False):
    return tma_kernel_ptx(body, (32, 16), cc=cc, checked=checked)


insts = whole_instructions


def tup(regs):
    return "(" + ", ".join(regs) + ",)"


def sass(ptx):
    return sass_opcodes_of(ptx)


@pytest.mark.parametrize("rank", [3, 4, 5])
def test_load_and_prefetch_every_rank(rank):
    cs = tup([f"c[{i}]" for i in range(rank)])
    offs = tup([f"c[{10 + i}]" for i in range(rank - 2)])
    ptx = compile_kernel(f"""
        ac.cp_async_bulk_tensor_load_im2col(sh, tm, {cs}, {offs}, bar)
        ac.cp_async_bulk_prefetch_tensor_im2col(tm, {cs}, {offs})
    """)
    coords = ", ".join([R] * rank)
    off = ", ".join([RS] * (rank - 2))
    (ld,) = insts(ptx, r"cp\.async\.bulk\.tensor")
    assert re.match(rf"cp\.async\.bulk\.tensor\.{rank}d\.shared::cluster\.global\.im2col"
                    rf"\.mbarrier::complete_tx::bytes \[{R}\], \[{RD}, \{{{coords}\}}\], \[{R}\], "
                    rf"\{{{off}\}}$", ld), ld
    (pf,) = insts(ptx, r"cp\.async\.bulk\.prefetch\.tensor")
    assert re.match(rf"cp\.async\.bulk\.prefetch\.tensor\.{rank}d\.L2\.global\.im2col "
                    rf"\[{RD}, \{{{coords}\}}\], \{{{off}\}}$", pf), pf
    assert len(instructions(ptx, r"fence\.proxy\.tensormap")) == 2
    # offsets go innermost first too: the last tuple entry is the first operand
    offs_regs = re.search(r"\], \{([^}]*)\}$", ld).group(1).split(", ")
    cvt = dict(re.findall(rf"cvt\.u16\.u32\s+({RS}), ({R});", ptx))
    loads = dict((int(o or 0) // 4, r) for r, o in
                 re.findall(rf"ld\.global\.u32\s+({R}), \[{RD}(?:\+(\d+))?\];", ptx))
    if cvt:  # NVVM may fold the truncation into a 16-bit load instead
        assert [cvt.get(r) for r in offs_regs] == [loads[10 + i] for i in reversed(range(rank - 2))]
    ops = sass(ptx)
    assert f"UTMALDG.{rank}D.IM2COL" in ops and f"UTMAPF.L2.{rank}D.IM2COL" in ops, ops


def test_multicast_cache_hint_and_no_fence():
    ptx = compile_kernel("""
        ac.cp_async_bulk_tensor_load_im2col(sh, tm, (c[0], c[1], c[2], c[3]), (1, 2), bar,
                                            multicast_mask=m, cache_policy=pol)
        ac.cp_async_bulk_tensor_load_im2col(sh, tm, (c[0], c[1], c[2]), (c[4],), bar[1:],
                                            cache_policy=pol, fence=False)
        ac.cp_async_bulk_prefetch_tensor_im2col(tm, (c[0], c[1], c[2], c[3], c[4]), (0, 1, 2),
                                                cache_policy=pol, fence=False)
    """, cc=(9, 0, "a"))
    found = insts(ptx, r"cp\.async\.bulk\.tensor|cp\.async\.bulk\.prefetch\.tensor")
    assert re.match(rf"cp\.async\.bulk\.tensor\.4d\.shared::cluster\.global\.im2col\.mbarrier::"
                    rf"complete_tx::bytes\.multicast::cluster\.L2::cache_hint \[{R}\], "
                    rf"\[{RD}, \{{{R}, {R}, {R}, {R}\}}\], \[{R}\], \{{{RS}, {RS}\}}, {RS}, {RD}$",
                    found[0]), found
    assert re.match(rf"cp\.async\.bulk\.tensor\.3d\.shared::cluster\.global\.im2col\.mbarrier::"
                    rf"complete_tx::bytes\.L2::cache_hint \[{R}\], \[{RD}, \{{{R}, {R}, {R}\}}\], "
                    rf"\[{R}\], \{{{RS}\}}, {RD}$", found[1]), found
    assert re.match(rf"cp\.async\.bulk\.prefetch\.tensor\.5d\.L2\.global\.im2col\.L2::cache_hint "
                    rf"\[{RD}, \{{{R}, {R}, {R}, {R}, {R}\}}\], \{{{RS}, {RS}, {RS}\}}, {RD}$",
                    found[2]), found
    assert len(instructions(ptx, r"fence\.proxy\.tensormap")) == 1
    ops = sass(ptx)
    assert ops.count("UTMALDG.4D.IM2COL.MULTICAST") == 1 and "UTMALDG.3D.IM2COL" in ops, ops
    assert "UTMAPF.L2.5D.IM2COL" in ops, ops


def test_checked_mode_reads_the_mode_word_and_assembles():
    ptx = compile_kernel("""
        ac.cp_async_bulk_tensor_load_im2col(sh, tm, (c[0], c[1], c[2], c[3]), (c[4], c[5]), bar)
        ac.cp_async_bulk_tensor_load(sh, tm, (c[0], c[1]), bar)
    """, checked=True)
    # word 27 (byte 216): the load mode, read by both loads
    assert len(re.findall(rf"ld(?:\.global)?\.u64\s+{RD}, \[{RD}\+216\];", ptx)) >= 2
    # words 28, 29 (bytes 224, 232): the bounding box of h and w, for the first pixel
    for byte in (224, 232):
        assert re.search(rf"ld(?:\.global)?\.u64\s+{RD}, \[{RD}\+{byte}\];", ptx), byte
    sass(ptx)


ERRORS = [
    ("ac.cp_async_bulk_tensor_load_im2col(sh, tm, (c[0], c[1]), (), bar)",
     "`coords` has 2 entries; an im2col load is 3-D to 5-D"),
    ("ac.cp_async_bulk_tensor_load_im2col(sh, tm, (c[0], c[1], c[2], c[3]), (1,), bar)",
     "`offsets` has 1 entries; a 4-D im2col load takes 2 (one per spatial axis)"),
    ("ac.cp_async_bulk_tensor_load_im2col(sh, tm, (c[0], c[1], c[2], c[3]), (1, -1), bar)",
     "`offsets`[1]=-1 is outside 0..65535 (im2col offsets are unsigned 16-bit)"),
    ("ac.cp_async_bulk_prefetch_tensor_im2col(tm, (c[0], c[1], c[2], c[3]), (65536, 0))",
     "`offsets`[0]=65536 is outside 0..65535"),
    ("ac.cp_async_bulk_tensor_load_im2col(sh, tm, (c[0], c[1], c[2], c[3]), 3, bar)",
     "`offsets` must be a tuple of 2 integers"),
    ("ac.cp_async_bulk_tensor_load_im2col(sh, tm, (c[0], c[1], c[2], c[3]), (1.0, 2), bar)",
     "`offsets`[0] must be an integer, got float64"),
    ("ac.cp_async_bulk_tensor_load_im2col(sh, tm, (c[0], c[1], c[2]), (1,), bar, multicast_mask=0)",
     "multicast_mask=0 is outside 1..0xFFFF"),
    ("ac.cp_async_bulk_tensor_load_im2col(sh, c, (c[0], c[1], c[2]), (1,), bar)",
     "`tensor_map` must be an ac.TensorMap"),
]


@pytest.mark.parametrize("body, text", ERRORS)
def test_compile_time_errors(body, text):
    with pytest.raises(Exception) as e:
        compile_kernel(body)
    assert text in str(e.value), str(e.value)


def test_needs_sm_90():
    with pytest.raises(Exception, match=r"needs sm_90 \(PTX ISA 8\.0\); this kernel is compiled "
                                        r"for sm_80"):
        compile_kernel("ac.cp_async_bulk_tensor_load_im2col(sh, tm, (c[0], c[1], c[2]), (1,), bar)",
                       cc=(8, 0))


def test_conv2d_example_compiles_to_im2col_and_tiled_loads():
    from numba_asynccopy.examples import conv2d as cv

    kern = cv.make_conv2d(3, 3, (1, 1), (1, 1), (1, 1))
    sig = (types.uint64[::1], types.uint64[::1], types.float32[:, ::1]) + (types.int64,) * 5
    ptx = cuda.compile_ptx(kern.py_func, sig, cc=(9, 0))[0]
    assert len(insts(ptx, r"cp\.async\.bulk\.tensor\.4d\.shared::cluster\.global\.im2col")) == 1
    assert len(insts(ptx, r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile")) == 1
    ops = sass(ptx)
    assert "UTMALDG.4D.IM2COL" in ops and "UTMALDG.2D" in ops, ops
