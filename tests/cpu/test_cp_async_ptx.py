"""cp.async code generation: exact PTX text and counts over the option space,
ptxas for sm_80 and sm_90, and LDGSTS in the machine code."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from numba import cuda, types

import numba_asynccopy as ac

from numba_asynccopy import toolchain

from ..conftest import tool_missing
from .helpers import instructions, kernel_from_source, ptx_of

DTYPES = {1: "np.uint8", 2: "np.float16", 4: "np.float32", 8: "np.float64"}


@st.composite
def cp_async_options(draw):
    chunk = draw(st.sampled_from([4, 8, 16]))
    cache = draw(st.sampled_from([None, "ca"] + (["cg"] if chunk == 16 else [])))
    prefetch = draw(st.sampled_from([None, 64, 128, 256]))
    zfill = draw(st.sampled_from(["none", "src_size", "src_size_const", "ignore_src"]))
    pred = draw(st.sampled_from(["omitted", "true", "runtime", "false"]))
    policy = draw(st.booleans())
    scope = draw(st.sampled_from(["thread", "cta"]))
    sizes = [s for s in (1, 2, 4, 8) if chunk % s == 0]
    dst_isz = draw(st.sampled_from(sizes))
    src_isz = draw(st.sampled_from(sizes))
    chunks_per_row = draw(st.integers(1, 4))
    return dict(chunk=chunk, cache=cache, prefetch=prefetch, zfill=zfill, pred=pred,
                policy=policy, scope=scope, dst_isz=dst_isz, src_isz=src_isz,
                chunks_per_row=chunks_per_row)


def build(o):
    kw = []
    if o["cache"]:
        kw.append(f"cache={o['cache']!r}")
    if o["prefetch"]:
        kw.append(f"prefetch={o['prefetch']}")
    if o["zfill"] == "src_size":
        kw.append("src_size=n")
    elif o["zfill"] == "src_size_const":
        kw.append(f"src_size={o['chunk'] // 2}")
    elif o["zfill"] == "ignore_src":
        kw.append("ignore_src=n > 3")
    kw.append({"omitted": "", "true": "pred=True", "runtime": "pred=tid < n",
               "false": "pred=False"}[o["pred"]])
    if o["policy"]:
        kw.append("cache_policy=ac.createpolicy_fractional('evict_last', fraction=0.5)")
    kw.append(f"scope={o['scope']!r}")
    kws = ", ".join(k for k in kw if k)
    row_bytes = o["chunk"] * o["chunks_per_row"]
    drow, srow = row_bytes // o["dst_isz"], row_bytes // o["src_isz"]
    if o["scope"] == "thread":
        views = "sh[tid, :], A[tid, :]"
    else:
        views = "sh, A[:32, :]"
    src = f"""
    def k(A, n):
        tid = cuda.threadIdx.x
        sh = cuda.shared.array((32, {drow}), {DTYPES[o['dst_isz']]}, alignment=16)
        ac.cp_async({views}, {o['chunk']}, {kws})
        ac.commit_group()
        ac.wait_group(0)
    """
    sig = (types.Array(getattr(types, {1: "uint8", 2: "float16", 4: "float32", 8: "float64"}[o["src_isz"]]), 2, "C"), types.int32)
    return kernel_from_source(src), sig, srow


def expected_regex(o) -> str:
    cache = o["cache"] or ("cg" if o["chunk"] == 16 else "ca")
    opcode = f"cp.async.{cache}.shared.global"
    if o["policy"]:
        opcode += ".L2::cache_hint"
    if o["prefetch"]:
        opcode += f".L2::{o['prefetch']}B"
    ops = [r"\[%r\d+\]", r"\[%rd\d+\]", str(o["chunk"])]
    if o["zfill"] in ("src_size", "src_size_const"):
        ops.append(r"(?:%r\d+|\d+)")
    if o["zfill"] == "ignore_src":
        ops.append("ign")
    if o["policy"]:
        ops.append(r"%rd\d+")
    return "^" + re.escape(opcode) + " " + ", ".join(ops) + "$"


# derandomized (CI must not flake) and no shrinking (each example compiles twice)
@settings(max_examples=40, deadline=None, derandomize=True,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow])
@given(cp_async_options())
def test_cp_async_text_count_and_ptxas(o):
    fn, sig, _ = build(o)
    for cc in ((8, 0), (9, 0)):
        ptx = ptx_of(fn, sig, cc=cc)
        found = instructions(ptx, r"cp\.async\.c[ag]\.")
        if o["pred"] == "false":
            assert found == [], "pred=False must issue no copy"
        else:
            rx = expected_regex(o)
            assert found and all(re.match(rx, f) for f in found), (rx, found)
            if o["scope"] == "thread":
                assert len(found) == o["chunks_per_row"], found
            guarded = len(re.findall(r"@p cp\.async\.c", ptx))
            assert guarded == (len(found) if o["pred"] == "runtime" else 0)
        assert len(instructions(ptx, r"cp\.async\.commit_group")) == 1
        assert instructions(ptx, r"cp\.async\.wait_group") == ["cp.async.wait_group 0"]
        cubin, _ = toolchain.assemble(ptx)
        assert cubin


def _seed_cubin(name, cc):
    from numba_asynccopy.examples.seeds import SEEDS

    fn, sig, _ = SEEDS[name]
    ptx = ptx_of(fn, sig, cc=cc)
    return ptx, toolchain.assemble(ptx)[0]


@pytest.mark.parametrize("cc", [(8, 0), (9, 0)])
def test_ptxas_and_nvdisasm_show_ldgsts(cc):
    # The (128, 32) float16 tile: four 16-byte copies per thread -> 4 LDGSTS.
    ptx, cubin = _seed_cubin("tile_rows", cc)
    assert f".target sm_{cc[0]}{cc[1]}" in ptx
    ops = toolchain.sass_opcodes(toolchain.disassemble(cubin))
    ldgsts = [op for op in ops if op.startswith("LDGSTS")]
    assert ldgsts == ["LDGSTS.E.BYPASS.128"] * 4, ldgsts
    assert "LDGDEPBAR" in ops  # commit_group
    assert any(op.startswith("DEPBAR") for op in ops)  # wait_group


def test_seed_row_shift_ptx():
    from numba_asynccopy.examples.seeds import SEEDS

    fn, sig, _ = SEEDS["shift_rows"]
    ptx = ptx_of(fn, sig, cc=(8, 0))
    assert instructions(ptx, r"cp\.async\.c[ag]\.") and len(instructions(ptx, r"cp\.async\.c[ag]\.")) == 1
    assert re.match(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16$",
                    instructions(ptx, r"cp\.async\.c[ag]\.")[0])
    # the shared address comes from symbol arithmetic, not a cvta round trip
    assert "cvta.to.shared" not in ptx and "cvta.shared" not in ptx


def test_zero_fill_forms_in_sass():
    from numba_asynccopy.examples.seeds import SEEDS

    fn, sig, _ = SEEDS["zfill_rows"]
    ptx = ptx_of(fn, sig, cc=(8, 0))
    (inst,) = instructions(ptx, r"cp\.async\.c[ag]\.")
    assert re.match(r"cp\.async\.cg\.shared\.global\.L2::128B \[%r\d+\], \[%rd\d+\], 16, %r\d+$", inst)
    ops = toolchain.sass_opcodes(toolchain.disassemble(toolchain.assemble(ptx)[0]))
    assert any(op.startswith("LDGSTS") and "LTC128B" in op for op in ops), ops


def test_cta_scope_spreads_chunks_over_the_block():
    from numba_asynccopy.examples.seeds import SEEDS

    fn, sig, _ = SEEDS["tile_cta"]
    ptx = ptx_of(fn, sig, cc=(8, 0))
    # one instruction in a loop over k = tid, tid + ntid, ...
    assert len(instructions(ptx, r"cp\.async\.cg\.")) >= 1
    assert "%ntid.x" in ptx and "%tid.x" in ptx


def test_wait_group_counts_and_wait_all():
    src = """
    def k(A):
        tid = cuda.threadIdx.x
        sh = cuda.shared.array((3, 32, 4), np.float32, alignment=16)
        for s in range(3):
            ac.cp_async(sh[s, tid, :], A[s, tid, :], 16)
            ac.commit_group()
        ac.wait_group(2)
        ac.wait_group(1)
        ac.wait_group(0)
        ac.wait_all()
    """
    ptx = ptx_of(kernel_from_source(src), (types.float32[:, :, ::1],), cc=(8, 0))
    assert instructions(ptx, r"cp\.async\.wait_group") == [
        "cp.async.wait_group 2", "cp.async.wait_group 1", "cp.async.wait_group 0"]
    assert instructions(ptx, r"cp\.async\.wait_all") == ["cp.async.wait_all"]
    assert len(instructions(ptx, r"cp\.async\.commit_group")) == 3


@pytest.mark.parametrize("primary,secondary,text", [
    ("evict_last", None, "createpolicy.fractional.L2::evict_last.b64"),
    ("evict_first", None, "createpolicy.fractional.L2::evict_first.b64"),
    ("evict_normal", "evict_unchanged", "createpolicy.fractional.L2::evict_normal.L2::evict_unchanged.b64"),
    ("evict_unchanged", "evict_first", "createpolicy.fractional.L2::evict_unchanged.L2::evict_first.b64"),
])
def test_createpolicy_forms(primary, secondary, text):
    sec = f", {secondary!r}" if secondary else ""
    src = f"""
    def k(A, out, f):
        pol = ac.createpolicy_fractional({primary!r}{sec}, fraction=f)
        out[0] = pol
    """
    ptx = ptx_of(kernel_from_source(src), (types.float32[::1], types.uint64[::1], types.float32), cc=(8, 0))
    (inst,) = instructions(ptx, r"createpolicy")
    assert re.match(re.escape(text) + r" %rd\d+, %f\d+$", inst), inst
    toolchain.assemble(ptx)


def test_bit_copy_between_dtypes():
    # uint8 rows of 16 into float32 rows of 4: the same 16 bytes, no conversion
    src = """
    def k(A):
        tid = cuda.threadIdx.x
        sh = cuda.shared.array((32, 4), np.float32, alignment=16)
        ac.cp_async(sh[tid, :], A[tid, :], 16)
    """
    ptx = ptx_of(kernel_from_source(src), (types.uint8[:, ::1],), cc=(8, 0))
    assert len(instructions(ptx, r"cp\.async\.cg\.")) == 1
    assert instructions(ptx, r"cvt\.\w*f(16|32)") == []  # no value conversion


@pytest.mark.parametrize("nty", [types.int32, types.int64, types.uint32, types.uint8])
def test_wait_group_takes_a_run_time_depth(nty):
    """A run-time depth lowers to a switch over the immediates 0..7 (one
    wait per path, no loop), compares on the full-width value, and ptxas
    assembles it; checked mode adds the negative-depth trap for signed n."""
    from numba_asynccopy import toolchain

    def k(A, n):
        tid = cuda.threadIdx.x
        sh = cuda.shared.array((32, 4), np.float32, alignment=16)
        ac.cp_async(sh[tid, :], A[tid, :], 16)
        ac.commit_group()
        ac.wait_group(n)
        A[tid, 0] = sh[tid, 1]

    sig = (types.float32[:, ::1], nty)
    ptx = ptx_of(k, sig, cc=(8, 0))
    waits = instructions(ptx, r"cp\.async\.wait_group")
    assert sorted(waits) == [f"cp.async.wait_group {i}" for i in range(8)], waits
    with ac.checked_mode(True):
        checked = ptx_of(k, sig, cc=(8, 0))
    from .test_cluster_ptx import ptx_strings

    assert ("wait_group: `n` must be >= 0, got %lld" in ptx_strings(checked)) == nty.signed
    try:
        cubin, _ = toolchain.assemble(ptx)
    except toolchain.ToolMissing as e:
        tool_missing(e)
    sass = toolchain.sass_opcodes(toolchain.disassemble(cubin))
    assert sum(op.startswith("DEPBAR") for op in sass) == 8, sass


@pytest.mark.parametrize("n,message", [
    (-1, "wait_group: `n` must be >= 0, got -1"),
    (2**31, "wait_group: `n`=2147483648 is outside 0..2**31-1"),
    (2**40, "wait_group: `n`=1099511627776 is outside 0..2**31-1"),
])
def test_wait_group_constant_out_of_range(n, message):
    def k(A):
        ac.wait_group(n)

    with pytest.raises(Exception, match=re.escape(message)):
        ptx_of(k, (types.float32[:, ::1],), cc=(8, 0))
