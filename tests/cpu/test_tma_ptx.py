"""TMA tensor copies: PTX for every rank, multicast and cache-hint variants,
the tensormap fence, ptxas for sm_90/sm_90a and UTMA* in the machine code."""

from __future__ import annotations

import re

import pytest

from numba_asynccopy import toolchain

from .helpers import instructions, tma_kernel_ptx, whole_instructions

R = r"%r\d+"
RD = r"%rd\d+"


def compile_kernel(body, cc=(9, 0), checked=False):
    return tma_kernel_ptx(body, (2, 4, 8, 16), cc=cc, checked=checked)


insts = whole_instructions


def coords_src(rank):
    return "(" + ", ".join(f"c[{i}]" for i in range(rank)) + ",)"


def coord_regs(inst):
    return re.search(r"\{([^}]*)\}", inst).group(1).split(", ")


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_load_store_reduce_every_rank(rank):
    cs = coords_src(rank)
    ptx = compile_kernel(f"""
        ac.cp_async_bulk_tensor_load(sh, tm, {cs}, bar)
        ac.cp_async_bulk_tensor_store(tm, {cs}, sh)
        ac.cp_reduce_async_bulk_tensor(tm, {cs}, sh, "add")
        ac.bulk_commit_group()
        ac.bulk_wait_group(0)
    """)
    coords = ", ".join([R] * rank)
    (ld,) = insts(ptx, r"cp\.async\.bulk\.tensor\.\dd\.shared")
    assert re.match(rf"cp\.async\.bulk\.tensor\.{rank}d\.shared::cluster\.global\.tile"
                    rf"\.mbarrier::complete_tx::bytes \[{R}\], \[{RD}, \{{{coords}\}}\], \[{R}\]$", ld), ld
    (st,) = insts(ptx, r"cp\.async\.bulk\.tensor\.\dd\.global")
    assert re.match(rf"cp\.async\.bulk\.tensor\.{rank}d\.global\.shared::cta\.tile\.bulk_group "
                    rf"\[{RD}, \{{{coords}\}}\], \[{R}\]$", st), st
    (red,) = insts(ptx, r"cp\.reduce\.async\.bulk\.tensor")
    assert re.match(rf"cp\.reduce\.async\.bulk\.tensor\.{rank}d\.global\.shared::cta\.add\.tile"
                    rf"\.bulk_group \[{RD}, \{{{coords}\}}\], \[{R}\]$", red), red
    # one tensormap fence before each copy, on the map's address
    fences = instructions(ptx, r"fence\.proxy\.tensormap")
    assert len(fences) == 3 and all(
        re.match(rf"fence\.proxy\.tensormap::generic\.acquire\.sys \[{RD}\], 128$", f) for f in fences)
    # coordinates go innermost first: the last tuple entry is the first operand
    head = ptx[:ptx.index("cp.async.bulk.tensor")]  # the loads of c[...] feeding the first copy
    loads = re.findall(rf"ld\.global\.u32\s+({R}), \[{RD}(?:\+(\d+))?\];", head)
    by_offset = {int(off or 0) // 4: reg for reg, off in loads}
    assert coord_regs(ld) == [by_offset[i] for i in reversed(range(rank))]
    cubin, _ = toolchain.assemble(ptx)
    ops = toolchain.sass_opcodes(toolchain.disassemble(cubin))
    assert f"UTMALDG.{rank}D" in ops and f"UTMASTG.{rank}D" in ops and f"UTMAREDG.{rank}D.ADD" in ops, ops
    assert ops.count("UTMACCTL.IV") == 3


@pytest.mark.parametrize("cc", [(9, 0), (9, 0, "a")])
def test_load_multicast_cache_hint_and_no_fence(cc):
    ptx = compile_kernel("""
        ac.cp_async_bulk_tensor_load(sh, tm, (c[0], c[1]), bar, multicast_mask=m)
        ac.cp_async_bulk_tensor_load(sh, tm, (c[0], c[1], c[2]), bar[1:], multicast_mask=m,
                                     cache_policy=pol, fence=False)
        ac.cp_async_bulk_tensor_load(sh[0], tm, (c[0],), bar, cache_policy=pol, fence=False)
        ac.cp_async_bulk_tensor_store(tm, (c[0], c[1]), sh, cache_policy=pol, fence=False)
        ac.cp_reduce_async_bulk_tensor(tm, (c[0],), sh, "add", cache_policy=pol, fence=False)
        ac.prefetch_tensormap(tm, fence=False)
        ac.fence_proxy_tensormap(tm, "cluster")
        ac.prefetch_tensormap(tm)
    """, cc=cc)
    found = insts(ptx, r"cp\.async\.bulk\.tensor|cp\.reduce\.async\.bulk\.tensor")
    mc = r"\.mbarrier::complete_tx::bytes\.multicast::cluster"
    assert re.match(rf"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile{mc} "
                    rf"\[{R}\], \[{RD}, \{{{R}, {R}\}}\], \[{R}\], %rs\d+$", found[0]), found
    assert re.match(rf"cp\.async\.bulk\.tensor\.3d\.shared::cluster\.global\.tile{mc}\.L2::cache_hint "
                    rf"\[{R}\], \[{RD}, \{{{R}, {R}, {R}\}}\], \[{R}\], %rs\d+, {RD}$", found[1]), found
    assert re.match(rf"cp\.async\.bulk\.tensor\.1d\.shared::cluster\.global\.tile\.mbarrier::"
                    rf"complete_tx::bytes\.L2::cache_hint \[{R}\], \[{RD}, \{{{R}\}}\], \[{R}\], {RD}$",
                    found[2]), found
    assert re.match(rf"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.tile\.bulk_group\.L2::cache_hint "
                    rf"\[{RD}, \{{{R}, {R}\}}\], \[{R}\], {RD}$", found[3]), found
    assert re.match(rf"cp\.reduce\.async\.bulk\.tensor\.1d\.global\.shared::cta\.add\.tile\.bulk_group"
                    rf"\.L2::cache_hint \[{RD}, \{{{R}\}}\], \[{R}\], {RD}$", found[4]), found
    assert len(found) == 5
    fences = [f.split(" ")[0] for f in instructions(ptx, r"fence\.proxy\.tensormap")]
    # only the fence of the first load, the explicit one and the second prefetch's
    assert fences == ["fence.proxy.tensormap::generic.acquire.sys",
                      "fence.proxy.tensormap::generic.acquire.cluster",
                      "fence.proxy.tensormap::generic.acquire.sys"], fences
    assert len(instructions(ptx, r"prefetch\.tensormap")) == 2
    cubin, log = toolchain.assemble(ptx, verbose=True)
    if len(cc) == 2:
        assert "sm_90a" in log
    ops = toolchain.sass_opcodes(toolchain.disassemble(cubin))
    assert ops.count("UTMALDG.2D.MULTICAST") == 1 and ops.count("UTMALDG.3D.MULTICAST") == 1, ops
    assert ops.count("UTMACCTL.PF") == 2


def test_checked_mode_reads_the_map_metadata():
    ptx = compile_kernel("""
        ac.cp_async_bulk_tensor_load(sh[0], tm, (c[0], c[1], c[2]), bar, multicast_mask=m)
        ac.cp_reduce_async_bulk_tensor(tm, (c[0], c[1]), sh[1, 0], "add")
    """, checked=True)
    assert len(instructions(ptx, r"trap")) >= 12
    # the metadata words: magic at word 16 (byte 128) ... dtype code at word 21 (byte 168)
    for byte in (128, 136, 144, 152, 160, 168):
        assert re.search(rf"ld\.global\.u64\s+%rd\d+, \[%rd\d+\+{byte}\];", ptx) or \
            re.search(rf"ld\.u64\s+%rd\d+, \[%rd\d+\+{byte}\];", ptx), byte
    toolchain.assemble(ptx)
