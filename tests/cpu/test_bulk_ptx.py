"""Bulk copies: exact PTX text and counts, ptxas for sm_90/sm_90a, the
bulk-copy instructions in the machine code, and the reduction type table."""

from __future__ import annotations

import re

import pytest
from numba import types

from numba_asynccopy import bulk, toolchain

from ..conftest import tool_missing
from .helpers import instructions, kernel_from_source, ptx_of

F32_2D = types.float32[:, ::1]
SIG = (F32_2D, F32_2D, types.uint16, types.uint64)
SH = r"%r\d+"
G = r"%rd\d+"


def compile_body(body, sig=SIG, cc=(9, 0), shared="sh = cuda.shared.array(256, np.float32, alignment=16)"):
    src = f"""
    def k(A, B, m, pol):
        {shared}
        bar = cuda.shared.array(2, np.uint64)
        {body}
    """
    return ptx_of(kernel_from_source(src), sig, cc=cc)


def test_nvvm_ptx_isa_is_read_from_nvvm():
    isa = bulk.nvvm_ptx_isa()
    ptx = compile_body("ac.bulk_commit_group()")
    assert f".version {isa[0]}.{isa[1]}" in ptx


@pytest.mark.parametrize("cc", [(9, 0), (9, 0, "a")])
def test_g2s_whole_view_one_copy(cc):
    ptx = compile_body("ac.cp_async_bulk_g2s(sh, A[0], bar)", cc=cc)
    dst_space = "shared::cta" if bulk.nvvm_ptx_isa() >= (8, 6) else "shared::cluster"
    found = instructions(ptx, r"cp\.async\.bulk\.")
    assert len(found) == 1, found
    assert re.match(rf"cp\.async\.bulk\.{dst_space}\.global\.mbarrier::complete_tx::bytes "
                    rf"\[{SH}\], \[{G}\], {SH}, \[{SH}\]$", found[0]), found
    cubin, _ = toolchain.assemble(ptx)
    ops = toolchain.sass_opcodes(toolchain.disassemble(cubin))
    assert ops.count("UBLKCP.S.G") == 1, ops


@pytest.mark.parametrize("cc", [(9, 0), (9, 0, "a")])
def test_g2s_multicast_and_cache_hint(cc):
    ptx = compile_body("""
        ac.cp_async_bulk_g2s(sh, A[0], bar, multicast_mask=m)
        ac.cp_async_bulk_g2s(sh, A[1], bar[1:], multicast_mask=m, cache_policy=pol)
        ac.cp_async_bulk_g2s(sh, A[2], bar, cache_policy=pol)
        ac.cp_async_bulk_g2s(sh, A[3], bar, multicast_mask=0b101)
    """, cc=cc)
    found = instructions(ptx, r"cp\.async\.bulk\.")
    mc = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
    assert re.match(rf"{re.escape(mc)} \[{SH}\], \[{G}\], {SH}, \[{SH}\], %rs\d+$", found[0]), found
    assert re.match(rf"{re.escape(mc)}\.L2::cache_hint \[{SH}\], \[{G}\], {SH}, \[{SH}\], %rs\d+, {G}$",
                    found[1]), found
    assert re.match(rf"cp\.async\.bulk\.shared::(cta|cluster)\.global\.mbarrier::complete_tx::bytes"
                    rf"\.L2::cache_hint \[{SH}\], \[{G}\], {SH}, \[{SH}\], {G}$", found[2]), found
    assert found[3].startswith(mc + " "), found
    assert len(found) == 4
    cubin, log = toolchain.assemble(ptx, verbose=True)
    if len(cc) == 2:  # ptxas advises sm_90a for multicast on plain sm_90
        assert "sm_90a" in log and "multicast" in log
    ops = toolchain.sass_opcodes(toolchain.disassemble(cubin))
    assert ops.count("UBLKCP.S.G.MULTICAST") == 3 and ops.count("UBLKCP.S.G") == 1, ops


def test_rows_of_a_strided_view_are_separate_copies():
    # A[2:10, 0:64] has layout "A": eight 256-byte rows, one copy each
    ptx = compile_body("ac.cp_async_bulk_g2s(sh, A[2:10, 0:64], bar)",
                       shared="sh = cuda.shared.array((8, 64), np.float32, alignment=16)")
    found = instructions(ptx, r"cp\.async\.bulk\.")
    assert len(found) == 8, found
    ops = toolchain.sass_opcodes(toolchain.disassemble(toolchain.assemble(ptx)[0]))
    assert ops.count("UBLKCP.S.G") == 8


def test_s2g_prefetch_and_groups():
    ptx = compile_body("""
        ac.cp_async_bulk_s2g(B[0], sh)
        ac.cp_async_bulk_s2g(B[1], sh, cache_policy=pol)
        ac.cp_async_bulk_prefetch_l2(A[3])
        ac.cp_async_bulk_prefetch_l2(A[4], cache_policy=pol)
        ac.bulk_commit_group()
        ac.bulk_wait_group(0, read=True)
        ac.bulk_wait_group(2)
    """)
    assert [re.sub(r"%r\w*\d+", "R", i) for i in instructions(ptx, r"cp\.async\.bulk\.")] == [
        "cp.async.bulk.global.shared::cta.bulk_group [R], [R], R",
        "cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [R], [R], R, R",
        "cp.async.bulk.prefetch.L2.global [R], R",
        "cp.async.bulk.prefetch.L2.global.L2::cache_hint [R], R, R",
        "cp.async.bulk.commit_group",
        "cp.async.bulk.wait_group.read 0",
        "cp.async.bulk.wait_group 2",
    ]
    ops = toolchain.sass_opcodes(toolchain.disassemble(toolchain.assemble(ptx)[0]))
    assert ops.count("UBLKCP.G.S") == 2 and ops.count("UBLKPF.L2") == 2, ops


def test_whole_copy_size_is_the_views_bytes():
    # a 1-D shared view of constant extent: NVVM folds the size to 1024
    ptx = compile_body("ac.cp_async_bulk_s2g(B[0, :256], sh)")
    (inst,) = instructions(ptx, r"cp\.async\.bulk\.global")
    size = inst.split(", ")[-1]
    assert size == "1024" or re.search(rf"mov\.u32\s+{re.escape(size)},\s*1024;", ptx), (inst, size)


DT = {"float16": types.float16, "float32": types.float32, "float64": types.float64,
      "int32": types.int32, "uint32": types.uint32, "int64": types.int64,
      "uint64": types.uint64, "uint16": types.uint16}
PTX_T = {"float16": "f16", "float32": "f32", "float64": "f64", "int32": "s32", "uint32": "u32",
         "int64": "s64", "uint64": "u64"}


def expected_pairs(dtype, bf16=False):
    """(op, PTX suffix) pairs the table allows for dtype, and those it refuses."""
    ok, bad = [], []
    for op in bulk.REDUCE_OPS:
        t = "bf16" if bf16 else PTX_T[dtype]
        if op in ("and", "or", "xor") and t[0] in "su":
            t = "b" + t[1:]
        if op == "add" and t == "s64":
            t = "u64"
        suffix = f"{op}{'.noftz' if op == 'add' and t in ('f16', 'bf16') else ''}.{t}"
        (ok if t in bulk.BULK_REDUCE_TYPES[op] else bad).append((op, suffix))
    return ok, bad


@pytest.mark.parametrize("dtype,bf16", [(d, False) for d in PTX_T] + [("uint16", True)])
def test_reduce_every_allowed_pair(dtype, bf16):
    ok, bad = expected_pairs(dtype, bf16)
    np_dt = "np.uint16" if bf16 else f"np.{dtype}"
    body = "\n        ".join(
        f"ac.cp_reduce_async_bulk_s2g(B[{i}], sh, {op!r}{', bf16=True' if bf16 else ''})"
        for i, (op, _) in enumerate(ok))
    src = f"""
    def k(B):
        sh = cuda.shared.array(64, {np_dt}, alignment=16)
        {body}
        ac.bulk_commit_group()
        ac.bulk_wait_group(0)
    """
    ptx = ptx_of(kernel_from_source(src), (DT[dtype if not bf16 else "uint16"][:, ::1],))
    found = instructions(ptx, r"cp\.reduce\.async\.bulk\.")
    assert [f.split(" ")[0] for f in found] == [
        f"cp.reduce.async.bulk.global.shared::cta.bulk_group.{s}" for _, s in ok]
    ops = toolchain.sass_opcodes(toolchain.disassemble(toolchain.assemble(ptx)[0]))
    assert sum(op.startswith("UBLKRED.G.S") for op in ops) == len(ok), ops
    for op, suffix in bad:  # every other op is refused at compile time
        src_bad = f"""
        def k(B):
            sh = cuda.shared.array(64, {np_dt}, alignment=16)
            ac.cp_reduce_async_bulk_s2g(B[0], sh, {op!r}{', bf16=True' if bf16 else ''})
        """
        with pytest.raises(Exception) as info:
            ptx_of(kernel_from_source(src_bad), (DT[dtype if not bf16 else "uint16"][:, ::1],))
        assert f"op={op!r} is not supported for" in str(info.value)


def test_reduce_table_matches_ptxas():
    """Each (op, type) of the table assembles; the refused ones do not."""
    if toolchain.find_tool("ptxas") is None:
        tool_missing(toolchain.ToolMissing(toolchain.missing_reason("ptxas")))
    types_all = ("f16", "bf16", "b32", "u32", "s32", "b64", "u64", "s64", "f32", "f64")
    lines = []
    for op in bulk.REDUCE_OPS:
        for t in types_all:
            nf = ".noftz" if op == "add" and t in ("f16", "bf16") else ""
            lines.append((t in bulk.BULK_REDUCE_TYPES[op],
                          f"cp.reduce.async.bulk.global.shared::cta.bulk_group.{op}{nf}.{t} [rd1], [r1], 16;"))

    def assembles(line):
        src = (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n"
               " .reg .b32 r<2>; .reg .b64 rd<2>;\n ld.param.u64 rd1, [p]; mov.u32 r1, 0;\n"
               f" {line}\n ret;\n}}\n")
        try:
            toolchain.assemble(src, "sm_90")
        except toolchain.ToolMissing:
            raise
        except RuntimeError:  # ptxas refused it
            return False
        return True

    for allowed, line in lines:
        assert assembles(line) == allowed, line


@pytest.mark.parametrize("checked", [False, True])
def test_checked_mode_assembles_and_adds_traps(checked):
    import numba_asynccopy as ac

    body = """
        ac.cp_async_bulk_g2s(sh, A[2:10, 0:64], bar, multicast_mask=m)
        ac.cp_async_bulk_s2g(B[0, :64], sh[0])
        ac.cp_reduce_async_bulk_s2g(B[1:9, 0:64], sh, "add")
        ac.cp_async_bulk_prefetch_l2(A[2:4, 0:64])
    """
    with ac.checked_mode(checked):
        ptx = compile_body(body, shared="sh = cuda.shared.array((8, 64), np.float32, alignment=16)")
    traps = len(instructions(ptx, r"trap"))
    assert (traps > 10) if checked else traps == 0
    if checked:
        assert "%cluster_nctarank" in ptx
    toolchain.assemble(ptx)
