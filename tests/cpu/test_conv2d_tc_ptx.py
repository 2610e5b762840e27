"""The tensor-core conv2d example on the CPU layer: it compiles for sm_90a
to one im2col TMA load and one tiled (3-D) TMA load a k-step, HGMMA on
K-major descriptors of both operands, the accumulators in registers (no
local memory) and no C7515 (MMAs serialized) from ptxas."""

from __future__ import annotations

import re

import pytest
from numba import cuda, types

from numba_asynccopy import toolchain
from numba_asynccopy.examples import conv2d as cv

from .helpers import compile_twin


@pytest.mark.parametrize("bn,bc,consumers,dtype,out,ctas,mtiles,persistent", [
    (64, 64, 2, "bf16", "float32", 1, 1, False), (128, 64, 2, "f16", "float16", 1, 1, False),
    (256, 64, 1, "bf16", "bf16", 1, 1, False), (128, 16, 2, "bf16", "float32", 1, 1, False),
    (64, 64, 2, "bf16", "bf16", 2, 1, False), (64, 64, 1, "bf16", "bf16", 2, 1, False),
    (128, 64, 1, "bf16", "bf16", 2, 1, False),
    # the tile walk: persistent, two MMA tiles a consumer
    (64, 64, 2, "bf16", "bf16", 2, 1, True), (128, 64, 2, "bf16", "bf16", 1, 2, True),
    (64, 64, 2, "bf16", "bf16", 1, 2, True), (64, 64, 1, "bf16", "bf16", 2, 2, True),
    (128, 64, 2, "f16", "float32", 1, 2, False)])
def test_conv2d_tc_sass_has_im2col_hgmma_no_local_memory_no_c7515(bn, bc, consumers, dtype, out,
                                                                  ctas, mtiles, persistent):
    k = cv.make_conv2d_tc(3, 3, (1, 1), (1, 1), (1, 1), bn=bn, bc=bc, consumers=consumers,
                          dtype=dtype, out=out, ctas=ctas, stages=3 if ctas == 2 else 4,
                          mtiles=mtiles, persistent=persistent)
    cty = {"float32": types.float32, "float16": types.float16, "bf16": types.uint16}[out]
    sig = (types.uint64[::1], types.uint64[::1], cty[:, ::1]) + (types.int64,) * 4
    ptx = cuda.compile_ptx(k.kernel.py_func, sig, cc=(9, 0, "a"),
                           launch_bounds=(k.threads, ctas))[0]
    # one im2col load and one filter load a k-step (the tap loops may be unrolled)
    im2col = len(re.findall(r"cp\.async\.bulk\.tensor\.4d\.shared::cluster\.global\.im2col", ptx))
    tiled = len(re.findall(r"cp\.async\.bulk\.tensor\.3d\.shared::cluster\.global\.tile", ptx))
    assert im2col == tiled >= 1, (im2col, tiled)
    # (one copy of the k-loop a consumer warpgroup, its MMA tiles' index a constant)
    assert (ptx.count(f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.{dtype}.{dtype}")
            == consumers * mtiles * bc // 16)
    # the tile walk: one loop over the tiles, gridDim.x apart
    assert ("%nctaid.x" in ptx) == (mtiles == 2 or persistent)
    cubin, log = toolchain.assemble(ptx, verbose=True)
    sass = toolchain.disassemble(cubin)
    ops = toolchain.sass_opcodes(sass)
    assert "UTMALDG.4D.IM2COL" in ops and "UTMALDG.3D" in ops, sorted(set(ops))
    assert sum(o.startswith("HGMMA") for o in ops) >= mtiles * bc // 16, sorted(set(ops))
    assert "C7515" not in log, log
    lines = sass.splitlines()
    first = next(i for i, l in enumerate(lines) if "HGMMA" in l)
    drained = next(i for i, l in enumerate(lines) if "WARPGROUP.DEPBAR.LE gsb0, 0x0" in l)
    local = [i for i, l in enumerate(lines) if "LDL" in l or "STL" in l]
    assert first < drained and not [i for i in local if i < drained], [lines[i] for i in local]
    if out == "float32":
        assert not local, [lines[i] for i in local]
    # the register split: the producer gives back, the consumers take no more than that frees
    prod, cons = cv.nreg_split(consumers, ctas)
    assert f"USETMAXREG.DEALLOC.CTAPOOL {prod:#x}" in sass, sass.count("USETMAXREG")
    assert re.search(rf"USETMAXREG.TRY_ALLOC.CTAPOOL (UP\d, )?{cons:#x}\b", sass)
    m = re.search(r"Used (\d+) registers", log)
    threads = 128 * (1 + consumers)
    assert m and int(m.group(1)) * threads >= prod * 128 + cons * 128 * consumers, log


def test_bench_registers_the_conv2d_suite():
    from numba_asynccopy.bench import report, suites, suites_conv

    assert suites.SUITES["conv2d"] is suites_conv.suite_conv2d
    keys = suites.suite_keys("conv2d", quick=False)
    assert len(keys) == 2 * 3 * 5 and "twin_conv_tc_bf16_14x14_c256_s2_b128" in keys
    compared = {(c.subject, c.peer, c.target) for c in report.comparisons(quick=False)}
    for layer in suites_conv.LAYERS:
        for b in (32, 128):
            tag = f"{layer}_b{b}"
            assert (f"numba_conv_tc_bf16_{tag}", f"twin_conv_tc_bf16_{tag}", 0.97) in compared
            assert (f"numba_conv_tc_bf16_{tag}", f"cudnn_conv_bf16_{tag}", 0.70) in compared
            assert (f"numba_conv_simt_f32_{tag}", f"cudnn_conv_f32_{tag}", None) in compared
    # every candidate configuration is a valid kernel configuration
    for layer, cands in suites_conv.CANDIDATES.items():
        for bn, consumers, stages, ctas, mtiles, persistent in cands:
            cv.make_conv2d_tc(3, 3, bn=bn, consumers=consumers, stages=stages, ctas=ctas,
                              out="bf16", mtiles=mtiles, persistent=persistent)
    assert suites_conv.tag_of((64, 2, 5, 1, 2, True)) == "bn64_c2_s5_x1_m2_p"
    assert suites_conv.tag_of((64, 2, 4, 2, 1, True), 2) == "bn64_c2_s4_x2_p_u2"
    # the unrolled ones: candidates the twin has, each a valid kernel with unroll=2
    for layer, cands in suites_conv.UNROLLED.items():
        assert set(cands) <= set(suites_conv.CANDIDATES[layer])
        for bn, consumers, stages, ctas, mtiles, persistent in cands:
            cv.make_conv2d_tc(3, 3, bn=bn, consumers=consumers, stages=stages, ctas=ctas,
                              out="bf16", mtiles=mtiles, persistent=persistent, unroll=2)
    assert [u for _, u in suites_conv.sweep_of("56x56_c64")] == [1] * 4 + [2] * 2
    assert suites_conv.tag_of((128, 2, 4, 1, 1, False)) == "bn128_c2_s4_x1"


def test_twin_instantiates_every_candidate_with_the_same_register_split():
    from numba_asynccopy.bench import suites_conv

    proc, cubin = compile_twin("twins_conv.cu")
    assert proc.returncode == 0, proc.stderr
    sass = toolchain.disassemble(cubin)
    assert "spill" not in proc.stderr.replace("0 bytes spill", ""), proc.stderr
    assert "C7515" not in proc.stderr
    funcs = re.split(r"\n\s*\.text\.", sass)
    for cands in suites_conv.CANDIDATES.values():
        for bn, consumers, stages, ctas, mtiles, persistent in cands:
            # the bf16-in, bf16-out instance the benchmark times
            if mtiles == 2 or persistent:
                name = f"13conv_tc_tilesILi{bn}ELi{stages}ELi{consumers}ELi{ctas}ELi{mtiles}ELb1ELi1E"
            else:
                name = f"7conv_tcILi{bn}ELi{stages}ELi{consumers}ELi{ctas}ELb1ELi1E"
            body = [f for f in funcs if f.startswith("_ZN9conv_twin" + name)]
            assert body, name
            prod, cons = cv.nreg_split(consumers, ctas)
            assert f"USETMAXREG.DEALLOC.CTAPOOL {prod:#x}" in body[0], name
            assert re.search(rf"USETMAXREG.TRY_ALLOC.CTAPOOL (UP\d, )?{cons:#x}\b", body[0]), name
            assert body[0].count("HGMMA.64x") >= 4 * mtiles, name
            assert "LDL" not in body[0] and "STL" not in body[0], name


def _consumer_k_loops(sass: str) -> list[list[str]]:
    """The innermost loops of a SASS function that issue HGMMA (the
    consumers' k-loops, one a warpgroup copy): each loop's instructions
    (NOPs left out), from its head label to its backward branch."""
    labels, ins = {}, []
    for line in sass.splitlines():
        m = re.match(r"\s*(\.L_x_\d+):", line)
        if m:
            labels[m.group(1)] = len(ins)
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?);", line)
        if m and not m.group(1).startswith("NOP"):
            ins.append(m.group(1).strip())
    spans = []
    for i, s in enumerate(ins):
        m = re.search(r"BRA .*`\((\.L_x_\d+)\)", s)
        # a loop's own back edge: predicated, not the retry of an mbarrier
        # wait (ptxas moves those out of line, branching back into the loop)
        if (m and labels.get(m.group(1), i + 1) <= i and s.startswith("@")
                and "TRYWAIT" not in ins[i - 1]):
            h = labels[m.group(1)]
            if any("HGMMA" in x for x in ins[h:i + 1]):
                spans.append((h, i))
    # innermost: no other HGMMA loop lies inside
    inner = [(h, e) for h, e in spans
             if not any((h2, e2) != (h, e) and h <= h2 and e2 <= e for h2, e2 in spans)]
    return [ins[h:e + 1] for h, e in inner]


#: the non-NOP SASS instructions of one k-step of the consumers' k-loop
#: (ptxas of CUDA 13.0) for each configuration the benchmark sweeps, before
#: the loop counters, the tile arithmetic and the A descriptors' MMA-tile
#: index were made 32-bit / constant (2026-12-02: 94, 136, 132, 91, 91, 93,
#: 157, 91, 91, 93, 93) and now, plus a little slack for other ptxas
#: releases.  The CUDA C++ twin's (same configurations, nvcc 13.0): 84, 114,
#: 108, 84, 83, 83, 110, 68.5, 66, 69.5, 68.5.
K_STEP_LIMITS = {
    (64, 2, 4, 2, 1, True): 80, (64, 2, 5, 1, 2, True): 136, (64, 1, 4, 2, 2, True): 104,
    (64, 2, 4, 2, 1, False): 91, (128, 2, 4, 1, 1, False): 90, (128, 2, 4, 1, 1, True): 78,
    (128, 2, 4, 1, 2, True): 136, (128, 1, 3, 2, 1, False): 70, (64, 1, 4, 2, 1, False): 69,
    (128, 1, 3, 2, 1, True): 74, (64, 1, 4, 2, 1, True): 73,
}


@pytest.mark.parametrize("cand", sorted(K_STEP_LIMITS))
def test_conv2d_tc_k_loop_is_32_bit_and_as_short_as_pinned(cand):
    """The consumers' k-loop of every benchmarked configuration, in SASS:
    one copy a consumer warpgroup; no 64-bit arithmetic (carry adds, 64-bit
    compares: the loop counter and the descriptors' addresses are 32-bit);
    at most :data:`K_STEP_LIMITS` instructions a k-step."""
    from numba_asynccopy.bench import suites_conv

    assert cand in {c for cs in suites_conv.CANDIDATES.values() for c in cs}
    bn, consumers, stages, ctas, mtiles, persistent = cand
    k = cv.make_conv2d_tc(3, 3, (1, 1), (1, 1), (1, 1), bn=bn, bc=64, consumers=consumers,
                          stages=stages, out="bf16", ctas=ctas, mtiles=mtiles,
                          persistent=persistent)
    sig = (types.uint64[::1], types.uint64[::1], types.uint16[:, ::1]) + (types.int64,) * 4
    ptx = cuda.compile_ptx(k.kernel.py_func, sig, cc=(9, 0, "a"),
                           launch_bounds=(k.threads, ctas))[0]
    sass = toolchain.disassemble(toolchain.assemble(ptx)[0])
    loops = _consumer_k_loops(sass)
    assert len(loops) == consumers, [len(b) for b in loops]
    for body in loops:
        hgmma = sum("HGMMA" in x for x in body)
        assert hgmma == mtiles * 4, hgmma  # one k-step a trip: 64 channels, 4 k16 MMAs a tile
        wide = [x for x in body if re.search(r"\.X\b|\.EX\b", x)]
        assert not wide, wide
        assert len(body) <= K_STEP_LIMITS[cand], (len(body), K_STEP_LIMITS[cand])


#: :data:`K_STEP_LIMITS` of the configurations also swept with the k-loop
#: unrolled by two (``unroll=2``), a k-step being half a trip: 88 and 87
#: (the two consumers' copies) and 98 with ptxas of CUDA 13.0, plus slack.
#: The two-consumer one is longer a step than its plain loop's (76): ptxas
#: then keeps the descriptors' arithmetic in vector registers, as the twin's.
UNROLLED_K_STEP_LIMITS = {(64, 2, 4, 2, 1, True): 90, (64, 1, 4, 2, 2, True): 100}


@pytest.mark.parametrize("cand", sorted(UNROLLED_K_STEP_LIMITS))
def test_conv2d_tc_unrolled_k_loop_runs_two_steps_a_trip(cand):
    """``unroll=2``: three copies of a k-step's MMAs in the PTX (the pair and
    the odd last step); in SASS one loop a consumer warpgroup with two
    k-steps' HGMMAs a trip, no 64-bit arithmetic, at most the pinned count
    a k-step.  A bad ``unroll`` is refused with the rule."""
    from numba_asynccopy.bench import suites_conv

    assert cand in {c for cs in suites_conv.UNROLLED.values() for c in cs}
    bn, consumers, stages, ctas, mtiles, persistent = cand
    k = cv.make_conv2d_tc(3, 3, (1, 1), (1, 1), (1, 1), bn=bn, bc=64, consumers=consumers,
                          stages=stages, out="bf16", ctas=ctas, mtiles=mtiles,
                          persistent=persistent, unroll=2)
    sig = (types.uint64[::1], types.uint64[::1], types.uint16[:, ::1]) + (types.int64,) * 4
    ptx = cuda.compile_ptx(k.kernel.py_func, sig, cc=(9, 0, "a"),
                           launch_bounds=(k.threads, ctas))[0]
    assert (ptx.count(f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.bf16.bf16")
            == 3 * consumers * mtiles * 64 // 16)
    sass = toolchain.disassemble(toolchain.assemble(ptx)[0])
    loops = _consumer_k_loops(sass)
    assert len(loops) == consumers, [len(b) for b in loops]
    for body in loops:
        assert sum("HGMMA" in x for x in body) == 2 * mtiles * 4
        assert not [x for x in body if re.search(r"\.X\b|\.EX\b", x)]
        assert len(body) / 2 <= UNROLLED_K_STEP_LIMITS[cand], (len(body) / 2, UNROLLED_K_STEP_LIMITS[cand])
    for bad in (0, 3, 2.0, "2", True):
        with pytest.raises(ValueError, match=r"^unroll must be 1 or 2 \(k-steps a trip of the k-loop\), got "):
            cv.make_conv2d_tc(3, 3, bn=bn, consumers=consumers, unroll=bad)
