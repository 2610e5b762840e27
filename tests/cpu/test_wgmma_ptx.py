"""Warpgroup MMA on the CPU layer: the PTX of every form (every N of
m64nNk16 for bf16 and f16, A from a descriptor and from registers, tf32 and
fp8, the immediates), ptxas for sm_90a and HGMMA in the SASS of a
representative subset, the sm_90a gate, contract errors, and a GEMM-like
k-loop whose accumulators stay in registers (no LDL/STL, no C7515)."""

from __future__ import annotations

import re

import pytest
from numba import cuda, types
from numba.cuda import compiler

import numba_asynccopy as ac
from numba_asynccopy import toolchain

from .helpers import kernel_from_source

SM90A = (9, 0, "a")
ALL_N = list(range(8, 257, 8))
SIG = (types.uint16[:, ::1], types.float32[:, ::1], types.boolean)


def ptx_of(src, sig=SIG, cc=SM90A, name="k"):
    return cuda.compile_ptx(kernel_from_source(src, name=name), sig, cc=cc)[0]


def one_mma_per_n(ns, a_src="desc", dtype="bf16", extra="", acc="f32"):
    """Source of a kernel issuing one MMA of each N in ``ns`` (``acc``: the
    accumulator type)."""
    zero_kw = ', dtype="f16"' if acc == "f16" else ""
    lines = ["def k(g, c, flag):",
             "    s = cuda.shared.array((256, 64), np.uint16, alignment=1024)",
             "    ac.wgmma_fence()"]
    for n in ns:
        a = "ac.wgmma_load_a(g, 0, 0)" if a_src == "regs" else \
            "ac.wgmma_descriptor(s[0:64, 0:16], swizzle=128)"
        lines.append(f"    acc{n} = ac.wgmma_mma_async(ac.wgmma_zero({n}{zero_kw}), {a}, "
                     f"ac.wgmma_descriptor(s[0:{n}, 16:32], swizzle=128), dtype=\"{dtype}\"{extra})")
    lines += ["    ac.wgmma_commit_group()"]
    for n in ns:
        lines.append(f"    acc{n} = ac.wgmma_wait_group(0, acc{n})")
        if n in STORED_N or len(ns) <= len(STORED_N):
            lines.append(f"    ac.wgmma_store(acc{n}, c, 0, 0)")
        else:
            # one element read keeps the MMA's result alive: the store of
            # every N (N/2 registers each) made NVVM's input 5x larger and
            # its compile 4x slower, for code the stored Ns already show
            lines.append(f"    c[0, 1] = {'acc%d[0]' % n if acc == 'f32' else 'np.float32(acc%d[0])' % n}")
    return "\n".join(lines) + "\n"


#: the Ns whose fragment a many-N kernel stores whole (the others read one element)
STORED_N = (8, 136, 256)


def mma_lines(ptx):
    """Each wgmma.mma_async instruction, operands and all (one line each)."""
    return [re.sub(r"\s+", " ", m) for m in re.findall(r"wgmma\.mma_async[^;]*", ptx)]


@pytest.mark.parametrize("a_src,dtype", [("desc", "bf16"), ("regs", "bf16")])
def test_every_n_in_ptx(a_src, dtype):
    ptx = ptx_of(one_mma_per_n(ALL_N, a_src, dtype))
    assert ".target sm_90a" in ptx
    lines = mma_lines(ptx)
    for n in ALL_N:
        hits = [l for l in lines if f".m64n{n}k16.f32.{dtype}.{dtype} " in l]
        assert len(hits) == 1, (n, lines)
        regs = re.search(r"\{([^}]*)\}", hits[0]).group(1).split(",")
        assert len(regs) == n // 2 and all(r.strip().startswith("%f") for r in regs), hits[0]
        tail = hits[0].split("}", 2 if a_src == "regs" else 1)[-1]
        # scale-d predicate, then the immediates: +1 +1 (no trans-a for register A), trans-b 0
        want = ", p, 1, 1, 0" if a_src == "regs" else ", p, 1, 1, 0, 0"
        assert tail.rstrip().endswith(want), hits[0]
        if a_src == "regs":
            assert re.search(r"\}, \{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd\d+, p", hits[0]), hits[0]


@pytest.mark.parametrize("dtype,k", [("tf32", 8), ("e4m3", 32), ("e5m2", 32)])
def test_tf32_and_fp8_forms(dtype, k):
    ptx = ptx_of(one_mma_per_n([8, 136, 256], dtype=dtype))
    for n in (8, 136, 256):
        hits = [l for l in mma_lines(ptx) if f".m64n{n}k{k}.f32.{dtype}.{dtype} " in l]
        assert len(hits) == 1 and hits[0].rstrip().endswith(", p, 1, 1"), hits


@pytest.mark.parametrize("a_src", ["desc", "regs"])
def test_every_n_with_f16_accumulation_in_ptx(a_src):
    """``.f16`` D: N/4 b32 registers (f16 pairs) a thread, for every N."""
    ptx = ptx_of(one_mma_per_n(ALL_N, a_src, "f16", acc="f16"))
    lines = mma_lines(ptx)
    assert len(lines) == len(ALL_N) and not [l for l in lines if ".f32." in l], lines
    for n in ALL_N:
        hits = [l for l in lines if f".m64n{n}k16.f16.f16.f16 " in l]
        assert len(hits) == 1, (n, lines)
        regs = re.search(r"\{([^}]*)\}", hits[0]).group(1).split(",")
        assert len(regs) == n // 4 and all(r.strip().startswith("%r") for r in regs), hits[0]
        want = ", p, 1, 1, 0" if a_src == "regs" else ", p, 1, 1, 0, 0"
        assert hits[0].rstrip().endswith(want), hits[0]


@pytest.mark.parametrize("dtype", ["e4m3", "e5m2"])
def test_fp8_with_f16_accumulation_in_ptx(dtype):
    ptx = ptx_of(one_mma_per_n([8, 24, 136, 256], dtype=dtype, acc="f16"))
    for n in (8, 24, 136, 256):
        hits = [l for l in mma_lines(ptx) if f".m64n{n}k32.f16.{dtype}.{dtype} " in l]
        assert len(hits) == 1 and hits[0].rstrip().endswith(", p, 1, 1"), hits
        assert len(re.search(r"\{([^}]*)\}", hits[0]).group(1).split(",")) == n // 4


def test_f16_accumulation_assembles_to_hgmma_and_qgmma():
    """ptxas for sm_90a: f16 accumulators of N = 8, 24, 136, 256 from both A
    sources and fp8 inputs; stored to float16, float32 and bf16 outputs."""
    for src, op in ((one_mma_per_n([8, 24, 136, 256], "desc", "f16", acc="f16"), "HGMMA"),
                    (one_mma_per_n([8, 136, 256], "regs", "f16", acc="f16"), "HGMMA"),
                    (one_mma_per_n([8, 256], "desc", "e4m3", acc="f16"), "QGMMA")):
        cubin, log = toolchain.assemble(ptx_of(src), verbose=True)
        ops = toolchain.sass_opcodes(toolchain.disassemble(cubin))
        assert any(o.startswith(op) for o in ops), sorted(set(ops))
        assert "C7515" not in log, log
    src = one_mma_per_n([24], "desc", "f16", acc="f16").replace(
        "ac.wgmma_store(acc24, c, 0, 0)",
        "ac.wgmma_store(acc24, c, 0, 0)\n    ac.wgmma_store(acc24, h, 0, 0)\n"
        "    ac.wgmma_store(acc24, g, 0, 0, dtype='bf16')").replace("def k(g, c, flag):",
                                                                  "def k(g, c, flag, h):")
    sig = SIG + (types.float16[:, ::1],)
    ptx = ptx_of(src, sig=sig)
    assert "cvt.f32.f16" in ptx and "cvt.rn.bf16.f32" in ptx, ptx
    toolchain.assemble(ptx)


def test_f16_accumulation_k_loop_stays_in_registers():
    ptx = ptx_of(GEMM_LOOP.replace("NB", "256").replace("ac.wgmma_zero(256)",
                                                         "ac.wgmma_zero(256, dtype=\"f16\")")
                 .replace('dtype="bf16"', 'dtype="f16"').replace("np.uint16", "np.float16")
                 .replace(', dtype="float32")', ")"))
    assert ".m64n256k16.f16.f16.f16" in ptx
    cubin, log = toolchain.assemble(ptx, verbose=True)
    ops = toolchain.sass_opcodes(toolchain.disassemble(cubin))
    assert sum(o.startswith("HGMMA") for o in ops) >= 4, sorted(set(ops))
    assert not [o for o in ops if o.startswith(("LDL", "STL"))], sorted(set(ops))
    assert "C7515" not in log and "0 bytes spill stores" in log, log


def test_immediates_negate_transpose_and_scale_d():
    src = """
def k(g, c, flag):
    s = cuda.shared.array((4, 64, 64), np.uint16, alignment=1024)
    acc = ac.wgmma_fence(ac.wgmma_zero(64))
    acc = ac.wgmma_mma_async(acc, ac.wgmma_descriptor(s[:, 0:16, :], swizzle=128, major="MN"),
                             ac.wgmma_descriptor(s[:, 16:32, :], swizzle=128, major="MN"),
                             dtype="bf16", scale_a=-1, scale_b=-1, trans_a=True, trans_b=True,
                             scale_d=False)
    acc = ac.wgmma_mma_async(acc, ac.wgmma_load_a(g, 0, 0), ac.wgmma_descriptor(s[0, :, 0:16], swizzle=128),
                             dtype="f16", scale_b=-1, scale_d=flag)
    ac.wgmma_commit_group()
    acc = ac.wgmma_wait_group(1, acc)
    ac.wgmma_store(acc, c, 0, 0)
"""
    ptx = ptx_of(src)
    first, second = mma_lines(ptx)
    assert first.endswith(", p, -1, -1, 1, 1"), first
    assert second.endswith(", p, 1, -1, 0"), second
    # scale-d: the constant False and the run-time flag both become the predicate p
    assert re.findall(r"setp\.ne\.b32 p, (\S+), 0", ptx)
    assert "wgmma.wait_group.sync.aligned 1;" in ptx


def test_representative_forms_assemble_for_sm_90a_to_hgmma():
    """ptxas for sm_90a on a subset (every N is in the PTX tests): N = 8
    (8 mod 16), 24, 136, 256, both A sources, both 16-bit inputs, and the
    tf32 and fp8 forms; the SASS has HGMMA (QGMMA for fp8)."""
    for src in (one_mma_per_n([8, 24, 136, 256], "desc", "bf16"),
                one_mma_per_n([8, 136, 256], "regs", "f16"),
                one_mma_per_n([16, 256], "desc", "tf32")):
        cubin, log = toolchain.assemble(ptx_of(src), verbose=True)
        ops = toolchain.sass_opcodes(toolchain.disassemble(cubin))
        assert any(o.startswith("HGMMA") for o in ops), sorted(set(ops))
        assert "WARPGROUP.ARRIVE" in ops
        assert "C7515" not in log, log
    cubin, _ = toolchain.assemble(ptx_of(one_mma_per_n([8, 256], "desc", "e4m3")))
    assert any(o.startswith("QGMMA") for o in toolchain.sass_opcodes(toolchain.disassemble(cubin)))


def test_setmaxnreg_and_sync_forms_assemble():
    src = """
def k(g, c, flag):
    if cuda.threadIdx.x < 128:
        ac.setmaxnreg_dec(40)
    else:
        ac.setmaxnreg_inc(232)
    ac.wgmma_fence()
    ac.wgmma_commit_group()
    ac.wgmma_wait_group(7)
"""
    fn = kernel_from_source(src)
    # measured: without a register limit on the kernel ptxas drops setmaxnreg
    # silently; launch bounds (.maxntid + .minnctapersm) give it one
    ptx = cuda.compile_ptx(fn, SIG, cc=SM90A, launch_bounds=(384, 1))[0]
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in ptx
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
    sass = toolchain.disassemble(toolchain.assemble(ptx)[0])
    assert "USETMAXREG.DEALLOC.CTAPOOL 0x28" in sass and "USETMAXREG.TRY_ALLOC.CTAPOOL" in sass
    assert "WARPGROUP.DEPBAR.LE" in sass
    bare = toolchain.disassemble(toolchain.assemble(ptx_of(src))[0])
    assert "SETMAXREG" not in bare  # the documented pitfall, pinned


# one stage of 64 columns: at N=256 the tiles take 40 KB, under the 48 KB of
# static shared memory CUDA 12's ptxas allows (CUDA 13's takes more)
GEMM_LOOP = """
def k(g, c, flag):
    sa = cuda.shared.array((64, 64), np.uint16, alignment=1024)
    sb = cuda.shared.array((NB, 64), np.uint16, alignment=1024)
    acc = ac.wgmma_zero(NB)
    for t in range(g.shape[1] // 64):
        acc = ac.wgmma_fence(acc)
        for kk in range(4):
            acc = ac.wgmma_mma_async(acc, ac.wgmma_descriptor(sa[:, 16 * kk:16 * kk + 16], swizzle=128),
                                     ac.wgmma_descriptor(sb[:, 16 * kk:16 * kk + 16], swizzle=128),
                                     dtype="bf16", scale_d=(t > 0) or (kk > 0))
        ac.wgmma_commit_group()
        acc = ac.wgmma_wait_group(0, acc)
    ac.wgmma_store(acc, c, 0, 0, dtype="float32")
"""


@pytest.mark.parametrize("n", [128, 256])
def test_gemm_loop_accumulators_stay_in_registers(n):
    """The k-loop of a GEMM: HGMMA in the SASS, no local memory (LDL/STL)
    and no C7515 (accumulators touched between MMAs would serialize them)."""
    ptx = ptx_of(GEMM_LOOP.replace("NB", str(n)))
    cubin, log = toolchain.assemble(ptx, verbose=True)
    ops = toolchain.sass_opcodes(toolchain.disassemble(cubin))
    assert sum(o.startswith("HGMMA") for o in ops) >= 4, sorted(set(ops))
    assert not [o for o in ops if o.startswith(("LDL", "STL"))], sorted(set(ops))
    assert "C7515" not in log and "0 bytes spill stores" in log, log


# --- the sm_90a gate ----------------------------------------------------------------


@pytest.mark.parametrize("dtype,syntax", [("f16", r"m64nNk16\.f16\.f16\.f16"),
                                          ("e4m3", r"m64nNk32\.f16\.\{e4m3,e5m2\}")])
def test_f16_accumulation_one_target_lower_is_refused(dtype, syntax):
    src = one_mma_per_n([24], "desc", dtype, acc="f16").replace("ac.wgmma_fence()", "pass") \
        .replace("ac.wgmma_commit_group()", "pass").replace("acc24 = ac.wgmma_wait_group(0, acc24)", "pass")
    with pytest.raises(Exception, match=rf"wgmma_mma_async: `wgmma\.mma_async\.sync\.aligned\.{syntax}"
                       r"[^`]*` needs sm_90a \(PTX ISA 8\.0\); this kernel is compiled for sm_90\b"):
        ptx_of(src, cc=(9, 0))


@pytest.mark.parametrize("cc", [(9, 0), (8, 0)])
def test_plain_sm_90_and_older_are_refused_naming_the_form_and_sm_90a(cc):
    with pytest.raises(Exception, match=r"wgmma_mma_async: `wgmma\.mma_async\.sync\.aligned\.m64nNk16"
                       rf"[^`]*` needs sm_90a \(PTX ISA 8\.0\); this kernel is compiled for sm_{cc[0]}{cc[1]}\b"):
        ptx_of(one_mma_per_n([24], "desc", "f16").replace("ac.wgmma_fence()", "pass")
               .replace("ac.wgmma_commit_group()", "pass").replace(
                   "acc24 = ac.wgmma_wait_group(0, acc24)", "pass"), cc=cc)


def test_a_launch_compile_on_compute_capability_9_0_builds_for_sm_90a():
    """The dispatcher types a launched kernel with the device's (9, 0) and
    builds it for sm_90a: the gate lets the wgmma forms through there."""
    fn = kernel_from_source("def k(g, c, flag):\n    ac.wgmma_fence()\n    ac.setmaxnreg_dec(40)\n")
    compiler.compile_cuda(fn, types.void, SIG, cc=(9, 0))  # no error


def test_inspect_compiles_for_sm_90a_when_a_form_needs_it():
    fn = kernel_from_source("def k(g, c, flag):\n    ac.wgmma_fence()\n    ac.wgmma_commit_group()\n")
    report = ac.inspect(fn, *SIG)
    assert report.target == "sm_90a" and ".target sm_90a" in report.ptx
    assert report.min_target == "sm_90a" and "needs:          sm_90a, PTX ISA 8.0" in str(report)
    assert {i.target for i in report.instructions} == {"sm_90a"}
    with pytest.raises(Exception, match="needs sm_90a"):
        ac.inspect(fn, *SIG, cc=(9, 0))
    assert ac.inspect(fn, *SIG, cc=(9, 0, "a")).target == "sm_90a"


# --- contract errors ----------------------------------------------------------------------

BAD = [
    ("ac.wgmma_mma_async((np.float32(0), np.float32(0), np.float32(0)), d, d, dtype='bf16')", "`acc` must be an f32 accumulator fragment"),
    ("ac.wgmma_mma_async(ac.wgmma_zero(8), d, d)", "`dtype` is required"),
    ("ac.wgmma_mma_async(ac.wgmma_zero(8), d, d, dtype='f32')", "`dtype`='f32' is not supported"),
    ("ac.wgmma_mma_async(ac.wgmma_zero(8), d, d, dtype='tf32', trans_b=True)",
     "dtype='tf32' operands are K-major only"),
    ("ac.wgmma_mma_async(ac.wgmma_zero(8), ac.wgmma_load_a(g, 0, 0), d, dtype='bf16', trans_a=True)",
     "`trans_a`=True needs A from a descriptor"),
    ("ac.wgmma_mma_async(ac.wgmma_zero(8), d, d, dtype='bf16', scale_a=2)", "`scale_a`=2 must be 1 or -1"),
    ("ac.wgmma_mma_async(ac.wgmma_zero(8), d, d, dtype='bf16', trans_b=1)", "`trans_b` must be a bool constant"),
    ("ac.wgmma_mma_async(ac.wgmma_zero(8), 3.0, d, dtype='bf16')", "`a` must be a matrix descriptor"),
    ("ac.wgmma_mma_async(ac.wgmma_zero(8, dtype='f16'), d, d, dtype='bf16')",
     "dtype='bf16' inputs accumulate in f32 only, but `acc` is an f16 fragment"),
    ("ac.wgmma_mma_async(ac.wgmma_zero(8, dtype='f16'), d, d, dtype='tf32')",
     "dtype='tf32' inputs accumulate in f32 only"),
    ("ac.wgmma_mma_async((np.uint32(0), np.uint32(0), np.uint32(0)), d, d, dtype='f16')",
     "or an f16 accumulator fragment, a tuple of N/4 uint32"),
    ("ac.wgmma_zero(8, dtype='f64')", "`dtype`='f64' is not supported; allowed: 'f32', 'f16'"),
    ("ac.wgmma_zero(8, dtype=flag)", "`dtype` must be a compile-time constant"),
    ("ac.wgmma_wait_group(8)", "`n`=8 is outside 0..7"),
    ("ac.wgmma_wait_group(flag)", "`n` must be a compile-time constant"),
    ("ac.wgmma_zero(12)", "`n`=12 is not an N of m64nNk16"),
    ("ac.setmaxnreg_inc(20)", "`r`=20 must be a multiple of 8 in 24..256"),
    ("ac.setmaxnreg_dec(100)", "`r`=100 must be a multiple of 8 in 24..256"),
    ("ac.setmaxnreg_inc(264)", "`r`=264 must be a multiple of 8 in 24..256"),
    ("ac.wgmma_descriptor(s, swizzle=16)", "`swizzle`=16 is not supported"),
    ("ac.wgmma_descriptor(s, major='M')", "`major`='M' is not supported"),
    ("ac.wgmma_descriptor(s, swizzle=None)", "`tile` is 2-D; a major='K' descriptor with swizzle=None"),
    ("ac.wgmma_descriptor(s3, swizzle=128)", "`tile` is 3-D; a major='K' descriptor with swizzle=128"),
    ("ac.wgmma_store(ac.wgmma_zero(8), c, 0, 0, dtype='bf16')", "`out` of float32 cannot hold dtype='bf16'"),
    ("ac.wgmma_load_a(c, 0, 0)", "`a` must be a 2-D array of 16-bit elements"),
]


@pytest.mark.parametrize("stmt,message", BAD, ids=[m for _, m in BAD])
def test_contract_errors_name_the_rule(stmt, message):
    src = ("def k(g, c, flag):\n"
           "    s = cuda.shared.array((64, 64), np.uint16, alignment=1024)\n"
           "    s3 = cuda.shared.array((2, 64, 8), np.uint16, alignment=1024)\n"
           "    d = ac.wgmma_descriptor(s[:, 0:16], swizzle=128)\n"
           f"    x = {stmt}\n")
    with pytest.raises(Exception, match=re.escape(message)):
        ptx_of(src)


def test_checked_mode_traps_on_descriptor_views():
    """Checked mode embeds the descriptor rules (shared memory, strides of
    the layout, the swizzle atom's alignment) as traps with their texts."""
    from .test_vector_ptx import trap_messages

    src = ("def k(g, c, flag):\n"
           "    s = cuda.shared.array((64, 64), np.uint16, alignment=1024)\n"
           "    v, w = g.shape[0], g.shape[1]\n"  # run-time step and start: the checks stay
           "    c[0, 0] = ac.wgmma_descriptor(s[0:64:w, v:v + 16], swizzle=128)\n")
    with ac.checked_mode():
        ptx = ptx_of(src)
    msgs = "\n".join(trap_messages(ptx))
    for text in ("wgmma_descriptor: `tile` is not in shared memory",
                 "wgmma_descriptor: axis 0 of `tile` has stride %lld bytes where the major='K', "
                 "swizzle=128 layout needs 128",
                 "does not start in row 0 of a 1024-byte aligned atom as swizzle=128 needs"):
        assert text in msgs, (text, msgs)
    assert "trap;" not in ptx_of(src)
    # a static view's strides and alignment are constants: those checks fold away
    static = src.replace("s[0:64:w, v:v + 16]", "s[:, 0:16]")
    with ac.checked_mode():
        folded = "\n".join(trap_messages(ptx_of(static)))
    assert "stride" not in folded and "aligned atom" not in folded and "shared memory" in folded
