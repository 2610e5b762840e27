"""Tensor-core MMA (mma.sync, ldmatrix, stmatrix, the fragment helpers)
compiles without a GPU: the PTX of every form, ptxas for sm_80 (sm_90 for
stmatrix), HMMA/LDSM/STSM in the SASS, the sm gate one target lower, the
compile-time errors naming the argument, checked-mode traps, and the HGEMM
example's main loop with its accumulators in registers (no LDL/STL)."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

import pytest
from numba import cuda, types

import numba_asynccopy as ac
from numba_asynccopy import toolchain
from numba_asynccopy.examples import hgemm_sm80

from .helpers import instructions, kernel_from_source, ptx_of, sass_of
from .test_cluster_ptx import ptx_strings
from .test_examples_ptx import sass_loops

U16 = types.uint16[:, ::1]
F32 = types.float32[:, ::1]
F16 = types.float16[:, ::1]


def mma_source(dtype: str, layout: str, out: str = "C") -> str:
    elem = "np.float32" if dtype == "tf32" else "np.uint16"
    kb = 8 if dtype == "tf32" else 16
    bshape = f"({kb}, 8)" if layout == "row" else f"(8, {kb})"
    return f"""
def k(C):
    sa = cuda.shared.array((16, {kb}), {elem}, alignment=16)
    sb = cuda.shared.array({bshape}, {elem}, alignment=16)
    acc = ac.mma_zeros()
    a = ac.mma_load_a(sa, 0, 0)
    b = ac.mma_load_b(sb, 0, 0, "{layout}")
    acc = ac.mma_sync(a, b, acc, "{dtype}")
    ac.mma_store({out}, 0, 0, acc)
"""


def sass_counts(sass: str) -> Counter:
    return Counter(op.split(".")[0] for op in toolchain.sass_opcodes(sass))


MMA_CASES = [("bf16", "row"), ("bf16", "col"), ("f16", "row"), ("f16", "col"),
             ("tf32", "row"), ("tf32", "col")]


@pytest.mark.parametrize("dtype,layout", MMA_CASES)
def test_mma_sync_ptx_ptxas_and_sass(dtype, layout):
    ptx = ptx_of(kernel_from_source(mma_source(dtype, layout)), (F32,), cc=(8, 0))
    ptype = {"bf16": "bf16.bf16", "f16": "f16.f16", "tf32": "tf32.tf32"}[dtype]
    shape = "m16n8k8" if dtype == "tf32" else "m16n8k16"
    mma = re.findall(r"^\s*(mma\.sync\S*)\s+([^;]*);", ptx, re.M)
    assert [m[0] for m in mma] == [f"mma.sync.aligned.{shape}.row.col.f32.{ptype}.f32"]
    # D tied to C: the same four registers in and out
    d, a, b, c = re.findall(r"\{([^}]*)\}", mma[0][1])
    assert d == c and len(a.split(",")) == 4 and len(b.split(",")) == 2
    lds = instructions(ptx, r"ldmatrix")
    want_b = {"row": ["ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"],
              "col": ["ldmatrix.sync.aligned.m8n8.x2.shared.b16"]}[layout]
    if dtype == "tf32" and layout == "row":
        want_b = []  # ldmatrix cannot transpose 32-bit elements: two ld.shared
        assert len(instructions(ptx, r"ld\.shared\.(u32|f32|b32)")) == 2
    assert [s.split()[0] for s in lds] == ["ldmatrix.sync.aligned.m8n8.x4.shared.b16"] + want_b
    sass, _ = sass_of(ptx)
    n = sass_counts(sass)
    # tf32 m16n8k8 is one HMMA.1688; bf16/f16 m16n8k16 is one HMMA.16816
    assert n["HMMA"] == 1 and n["LDSM"] == len(lds), n
    assert n["LDL"] == 0 and n["STL"] == 0


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_every_form(num, trans):
    src = f"""
def k(out):
    sh = cuda.shared.array((32, 8), np.uint16, alignment=16)
    lane = cuda.threadIdx.x % 32
    r = ac.ldmatrix(sh, (lane, 0), {num}, trans={trans})
    for i in range({num}):
        out[cuda.threadIdx.x, i] = r[i]
"""
    ptx = ptx_of(kernel_from_source(src), (types.uint32[:, ::1],), cc=(7, 5))
    t = ".trans" if trans else ""
    lds = instructions(ptx, r"ldmatrix")
    assert [x.split()[0] for x in lds] == [f"ldmatrix.sync.aligned.m8n8.x{num}{t}.shared.b16"]
    regs = re.search(r"ldmatrix\S*\s+\{([^}]*)\}", ptx).group(1)
    assert len(regs.split(",")) == num
    # the 32-bit shared window address, no cvta
    assert "cvta.to.shared" not in ptx and "cvta.shared" not in ptx
    sass, _ = sass_of(ptx)
    assert sass_counts(sass)["LDSM"] == 1


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_every_form(num, trans):
    regs = ", ".join(f"np.uint32(lane + {i})" for i in range(num))
    src = f"""
def k(out):
    sh = cuda.shared.array((32, 8), np.uint16, alignment=16)
    lane = cuda.threadIdx.x % 32
    ac.stmatrix(sh, (lane, 0), ({regs},), trans={trans})
    cuda.syncthreads()
    out[lane, 0] = sh[lane, 1]
"""
    ptx = ptx_of(kernel_from_source(src), (types.uint16[:, ::1],), cc=(9, 0))
    t = ".trans" if trans else ""
    st = instructions(ptx, r"stmatrix")
    assert [x.split()[0] for x in st] == [f"stmatrix.sync.aligned.m8n8.x{num}{t}.shared.b16"]
    sass, _ = sass_of(ptx)
    assert sass_counts(sass)["STSM"] == 1


@pytest.mark.parametrize("out,ty,cvt", [("float32", F32, None), ("float16", F16, "cvt.rn.f16.f32"),
                                         ("bf16", U16, "cvt.rn.bf16.f32")])
def test_mma_store_converts_and_masks(out, ty, cvt):
    ptx = ptx_of(kernel_from_source(mma_source("bf16", "row")), (ty,), cc=(8, 0))
    st = instructions(ptx, r"st\.global")
    assert len(st) == 4  # one per accumulator element, each behind its edge test
    assert len(instructions(ptx, r"setp\.(lt|gt|ge|le)\.u64")) >= 4
    if cvt:
        assert len(instructions(ptx, re.escape(cvt))) == 4
    sass_of(ptx)


def test_bf16_conversions():
    src = """
def k(X, Y):
    i = cuda.grid(1)
    Y[i] = ac.f32_to_bf16(2.0 * ac.bf16_to_f32(X[i]))
"""
    ptx = ptx_of(kernel_from_source(src), (types.uint16[::1], types.uint16[::1]), cc=(8, 0))
    assert len(instructions(ptx, r"cvt\.rn\.bf16\.f32")) == 1
    assert len(instructions(ptx, r"shl\.b32")) == 1  # bf16 -> f32 is a shift, exact
    sass_of(ptx)


# --- the sm gate one target lower -------------------------------------------------------


@pytest.mark.parametrize("src,cc,rule", [
    (mma_source("bf16", "row"), (7, 5), r"mma_sync: `mma\.sync\.aligned\.m16n8k16[^`]*` needs sm_80"),
    (mma_source("tf32", "col"), (7, 5), r"mma_sync: `mma\.sync\.aligned\.m16n8k8[^`]*` needs sm_80"),
    ("""
def k(C):
    sh = cuda.shared.array((32, 8), np.uint16, alignment=16)
    ac.stmatrix(sh, (cuda.threadIdx.x, 0), (np.uint32(1),))
""", (8, 9), r"stmatrix: `stmatrix\.sync\.aligned[^`]*` needs sm_90 \(PTX ISA 7\.8\); this kernel is "
     r"compiled for sm_89"),
    ("""
def k(C):
    C[0, 0] = ac.f32_to_bf16(1.5)
""", (7, 5), r"f32_to_bf16: `cvt\.rn\.bf16\.f32[^`]*` needs sm_80"),
])
def test_gate_one_target_lower(src, cc, rule):
    ty = U16 if "f32_to_bf16" in src or "stmatrix" in src else F32
    with pytest.raises(Exception, match=rule):
        ptx_of(kernel_from_source(src), (ty,), cc=cc)


def test_mma_store_to_bf16_needs_sm80():
    with pytest.raises(Exception, match=r"mma_store: `cvt\.rn\.bf16\.f32 d, a;` needs sm_80"):
        ptx_of(kernel_from_source("def k(C):\n    ac.mma_store(C, 0, 0, ac.mma_zeros())\n"),
               (U16,), cc=(7, 5))


# --- compile-time contract errors -----------------------------------------------------------

BAD = [
    ("acc = ac.mma_sync(a, b, (0.0, 0.0, 0.0, 0.0), 'bf16')",
     "mma_sync: `c` must be the accumulator fragment: a tuple of 4 float32"),
    ("acc = ac.mma_sync(b, b, acc, 'bf16')", "mma_sync: `a` must be the A fragment: a tuple of 4 uint32"),
    ("acc = ac.mma_sync(a, a, acc, 'bf16')", "mma_sync: `b` must be the B fragment: a tuple of 2 uint32"),
    ("acc = ac.mma_sync(a, b, acc, 'fp8')", "mma_sync: `dtype`='fp8' is not supported; allowed: 'bf16', 'f16', 'tf32'"),
    ("acc = ac.mma_sync(a, b, acc, 'tf32', shape='m16n8k16')",
     "mma_sync: `shape`='m16n8k16' is not a shape of dtype='tf32' inputs with f32 accumulation; it is 'm16n8k8'"),
    ("acc = ac.mma_sync(a, b, acc, C[0, 0])", "mma_sync: `dtype` must be a compile-time constant"),
    ("r = ac.ldmatrix(sh, (0, 0), 3)", "ldmatrix: `num`=3 is not supported; allowed: 1, 2, 4"),
    ("r = ac.ldmatrix(sf, (0, 0), 4, trans=True)",
     "ldmatrix: trans=True transposes 16-bit elements; `tile` has 4-byte elements (float32)"),
    ("r = ac.ldmatrix(sd, (0, 0), 4)", "ldmatrix: `tile` must be a shared-memory array of 2-byte or 4-byte"),
    ("r = ac.ldmatrix(sh, (0,), 4)", "ldmatrix: `idx` must be 2 integer index(es) of `tile`"),
    ("r = ac.ldmatrix(sh, (0, 0), 4, trans=1)", "ldmatrix: `trans` must be a bool constant, got 1"),
    ("ac.stmatrix(sh, (0, 0), (1, 2, 3))", "stmatrix: `values` must be a tuple of 1, 2 or 4 uint32"),
    ("r = ac.mma_load_a(sh[0], 0, 0)", "mma_load_a: `tile` must be a 2-D tile view, got 1-D"),
    ("r = ac.mma_load_b(sh, 0, 0, 'k-major')", "mma_load_b: `layout`='k-major' is not supported; allowed: 'row', 'col'"),
    ("r = ac.mma_load_a(sh, 0.5, 0)", "mma_load_a: `row` must be an integer (the fragment's origin)"),
    ("ac.mma_store(I, 0, 0, acc)", "mma_store: `out` must be a 2-D array of float32, float16, uint16 (bf16 bits)"),
    ("ac.mma_store(C, 0, 0, a)", "mma_store: `acc` must be the accumulator fragment"),
    ("x = ac.bf16_to_f32(C[0, 0])", "bf16_to_f32: `h` must be a uint16 (the bits of a bf16 element)"),
]


@pytest.mark.parametrize("stmt,msg", BAD, ids=[m.split(":")[0] + str(i) for i, (_, m) in enumerate(BAD)])
def test_compile_time_errors_name_the_argument(stmt, msg):
    src = f"""
def k(C, I):
    sh = cuda.shared.array((16, 16), np.uint16, alignment=16)
    sf = cuda.shared.array((16, 8), np.float32, alignment=16)
    sd = cuda.shared.array((16, 8), np.float64, alignment=16)
    a = ac.mma_load_a(sh, 0, 0)
    b = ac.mma_load_b(sh, 0, 0)
    acc = ac.mma_zeros()
    {stmt}
"""
    with pytest.raises(Exception) as e:
        ptx_of(kernel_from_source(src), (F32, types.int32[:, ::1]), cc=(9, 0))
    assert msg in str(e.value), str(e.value)[:600]


# --- checked mode --------------------------------------------------------------------------


def test_checked_mode_traps_on_a_partial_warp_and_the_tile_rules():
    fn = kernel_from_source(mma_source("bf16", "row"))
    with ac.checked_mode(True):
        ptx = ptx_of(fn, (F32,), cc=(8, 0))
    assert instructions(ptx, r"activemask\.b32")
    text = ptx_strings(ptx)
    assert ("mma_sync: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 is warp-collective "
            "(.sync.aligned): all 32 lanes of the warp must execute it together, at the same place; "
            "the active mask is 0x%08x") in text
    assert "mma_load_a: `tile` is not in shared memory" in text
    assert "mma_load_b: `tile` is not 16-byte aligned" in text
    plain = ptx_of(kernel_from_source(mma_source("bf16", "row")), (F32,), cc=(8, 0))
    assert not instructions(plain, r"activemask") and "trap" not in plain


# --- the HGEMM example: accumulators stay in registers ----------------------------------------


@lru_cache(maxsize=None)
def hgemm_sass(dtype: str, stages: int, out: str = "float32"):
    ptx = cuda.compile_ptx(hgemm_sm80.make_hgemm(dtype, stages), hgemm_sm80.signature(dtype, out),
                           cc=(8, 0))[0]
    return sass_of(ptx)


@pytest.mark.parametrize("dtype", hgemm_sm80.DTYPES)
def test_hgemm_main_loop_is_hmma_and_ldsm_with_no_local_memory(dtype):
    sass, log = hgemm_sass(dtype, 4)
    assert re.search(r"0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", log), log
    n = sass_counts(sass)
    assert n["LDL"] == 0 and n["STL"] == 0, n
    loops = [L for L in sass_loops(sass) if any(t.startswith("HMMA") for t in L)]
    assert len(loops) == 1, [len(L) for L in sass_loops(sass)]
    main = Counter(t.split()[0].split(".")[0] for t in loops[0] if not t.startswith("@"))
    # a k16 step of a 64 x 64 warp tile: 4 x 8 HMMA.16816, 4 ldmatrix.x4 (A) + 8 .x2.trans (B)
    hmma = [t for t in loops[0] if t.startswith("HMMA")]
    assert len(hmma) == hgemm_sm80.MT * hgemm_sm80.NT and all(".16816.F32" in t for t in hmma)
    assert main["LDSM"] == hgemm_sm80.MT + hgemm_sm80.NT
    assert main["LDGSTS"] == 4  # the next k-tile: 2 chunks of A and 2 of B per thread


@pytest.mark.parametrize("out", ["float16", "bf16"])
def test_hgemm_converting_epilogue_compiles_without_spills(out):
    sass, log = hgemm_sass("bf16", 3, out)
    assert "0 bytes spill stores" in log
    assert sass_counts(sass)["STL"] == 0


# --- the CUDA C++ twin and the benchmark rows -------------------------------------------------


def test_twin_compiles_to_the_same_main_loop_without_spills(tmp_path):
    import subprocess

    from numba_asynccopy.bench.twins import SOURCE, find_nvcc

    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found")
    cubin = tmp_path / "t.cubin"
    proc = subprocess.run([nvcc, "-O3", "-std=c++17", "-cubin", "-Xptxas", "-v",
                           "-gencode=arch=compute_80,code=sm_80", "-o", str(cubin),
                           str(SOURCE.with_name("twins_mma.cu"))],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("0 bytes spill stores, 0 bytes spill loads") == 6  # 2 dtypes x 3 stages
    sass = toolchain.disassemble(cubin.read_bytes())
    # the bf16 4-stage kernel's k-loop holds what the Numba example's does
    fn = sass.split(".text._ZN2hg5hgemmILb1ELi4EEEvPKtS2_Pfiii:")[1].split("//----")[0]
    loops = [L for L in sass_loops(fn) if any(t.startswith("HMMA") for t in L)]
    assert len(loops) == 1
    twin = Counter(t.split()[0].split(".")[0] for t in loops[0] if not t.startswith("@"))
    numba_loop = [L for L in sass_loops(hgemm_sass("bf16", 4)[0]) if any(t.startswith("HMMA") for t in L)][0]
    ours = Counter(t.split()[0].split(".")[0] for t in numba_loop if not t.startswith("@"))
    for op in ("HMMA", "LDSM", "LDGSTS", "BAR"):
        assert twin[op] == ours[op], (op, twin[op], ours[op])


def test_bench_registers_the_hgemm_suite_and_its_rows():
    from numba_asynccopy.bench import report, suites

    assert suites.SUITES["hgemm_sm80"].__name__ == "suite_hgemm_sm80"
    keys = suites.suite_keys("hgemm_sm80", quick=True)
    assert keys == [f"{p}_{dt}_1000" for dt in ("bf16", "f16")
                    for p in ("numba_hgemm_sm80", "twin_hgemm_sm80", "cublas_f32out_hgemm")]
    comps = {(c.subject, c.peer): c for c in report.comparisons(quick=False)}
    for dt in ("bf16", "f16"):
        for n in (4096, 8192):
            assert comps[(f"numba_hgemm_sm80_{dt}_{n}", f"twin_hgemm_sm80_{dt}_{n}")].target == 0.97
            assert comps[(f"numba_hgemm_sm80_{dt}_{n}", f"cublas_f32out_hgemm_{dt}_{n}")].target is None


def test_mma_store_to_shared_memory_is_st_shared():
    src = """
def k(C):
    sc = cuda.shared.array((16, 8), np.float32, alignment=16)
    ac.mma_store(sc, 0, 0, ac.mma_zeros())
    cuda.syncthreads()
    C[cuda.threadIdx.x % 16, 0] = sc[cuda.threadIdx.x % 16, 0]
"""
    ptx = ptx_of(kernel_from_source(src), (F32,), cc=(8, 0))
    st = instructions(ptx, r"st\.shared")
    # four elements: NVVM may pair each lane's two adjacent columns into one .v2 store
    assert sum(2 if ".v2." in x else 1 for x in st) == 4, st
    assert not instructions(ptx, r"st\.f32")  # no generic store
