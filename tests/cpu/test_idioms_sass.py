"""The idioms suite's ports (bench/idioms.py): they compile as written, and
the SASS holds what the lowering fixes bought (counts from ptxas/nvdisasm)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from numba import cuda, types

import numba_asynccopy as ac
from numba_asynccopy import toolchain
from numba_asynccopy.bench import idioms as idi
from numba_asynccopy.bench import report

from ..conftest import tool_missing
from .test_examples_ptx import sass_loops


def _sass(fn, sig):
    ptx = cuda.compile_ptx(fn, sig, cc=(9, 0))[0]
    try:
        cubin, log = toolchain.assemble(ptx, verbose=True)
        return toolchain.disassemble(cubin), log
    except toolchain.ToolMissing as e:
        tool_missing(e)


@lru_cache(maxsize=None)
def idiom_sass(name):
    fn, sig = idi.PORTS[name][:2]
    return _sass(fn, sig)


def _instructions(sass):
    return [m.group(1).strip() for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+([@A-Z][^;]*);", sass)]


def slice_chunk(X, Y):
    sh = cuda.shared.array((8, 128), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    r = tid // 32
    q = tid % 32
    ac.cp_async(sh[r, 4 * q:4 * q + 4], X[r, 4 * q:4 * q + 4], 16)
    ac.commit_group()
    ac.wait_group(0)
    Y[r, 4 * q] = sh[r, 4 * q]


def test_slice_chunk_is_one_cp_async_on_its_path():
    # sh[r, 4*q:4*q+4] has a run-time length (slice clamping).  It used to
    # be only a run-time chunk loop (unrolled four times by NVVM) whose
    # back edge ran into the commit; now the one-chunk case is one LDGSTS
    # that falls through into LDGDEPBAR, outside every loop.
    sass, _ = _sass(slice_chunk, (types.float32[:, ::1], types.float32[:, ::1]))
    ins = _instructions(sass)
    commit = next(i for i, t in enumerate(ins) if t.startswith("LDGDEPBAR"))
    j = commit - 1
    while ins[j].startswith(("BSYNC", "S2UR")):
        j -= 1
    assert ins[j].startswith("LDGSTS.E.BYPASS.128"), ins[j - 3:commit + 1]


def test_slice_idiom_main_loop_takes_the_one_chunk_branch():
    # the idiom kernel's grid-stride loop holds the single LDGSTS of the
    # one-chunk branch besides the general chunk loop's
    sass, log = idiom_sass("slice")
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in log, log
    loops = sass_loops(sass)
    main = [b for b in loops if any("BAR.SYNC" in t for t in b)]
    assert main, [len(b) for b in loops]
    singles = [t for t in main[-1] if t.startswith("LDGSTS") and "+0x" not in t]
    assert singles, main[-1]


@pytest.mark.parametrize("name", list(idi.PORTS))
def test_idiom_compiles_without_spills(name):
    sass, log = idiom_sass(name)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in log, log
    ops = toolchain.sass_opcodes(sass)
    # the whole opcode, width included: a scalar LDG or an 8-byte LDGSTS
    # does not pass for the 16-byte idiom
    cg16 = {"LDGSTS.E.BYPASS.128"}  # cp.async.cg of 16 bytes
    want = {"single": cg16, "slice": cg16, "pipeline": cg16, "runtime_depth": cg16, "mbarrier": cg16,
            "vector": {"LDG.E.128", "STG.E.128"}, "bulk": {"UBLKCP.S.G"}}[idi.PORTS[name][3]]
    assert want <= set(ops), (name, sorted(set(ops)))


def test_report_rows_match_the_kernels():
    assert {k: v[2] for k, v in idi.KERNELS.items()} == report.IDIOM_LABELS
    assert {k: (v[2], v[3]) for k, v in idi.WHILE_FORMS.items()} == report.IDIOM_WHILE
    rows = {c.subject: c.peer for c in report.comparisons(False) if c.benchmark.startswith("idiom")}
    assert rows == {f"numba_idiom_{n}": f"twin_idiom_{v[3]}" for n, v in idi.PORTS.items()}
    assert set(idi.SUITE_KEYS) == ({f"{p}_idiom_{n}" for n in idi.KERNELS for p in ("numba", "twin")}
                                   | {f"numba_idiom_{n}" for n in idi.WHILE_FORMS})


def test_every_idiom_has_its_cuda_original():
    src = (Path(idi.__file__).with_name("twins_idioms.cu")).read_text()
    for name, i in idi.TWIN_INDEX.items():
        assert re.search(rf"__global__ void {name}\(", src), name
        assert re.search(rf"case {i}: {name}<<<grid, 256>>>", src), name


@pytest.mark.parametrize("name,base,most", [("vector_while", "vector", 30), ("single_while", "single", 56),
                                             ("vector_pragma", "vector", 34), ("single_pragma", "single", 60)])
def test_while_grid_stride_loop_is_not_unrolled(name, base, most):
    # the documented levers: the while form is one body (vector 18, single
    # 38; nvcc's originals 17 and 25), and so is the range() form with
    # ac.pragma_nounroll().  The plain range() form, which NVVM used to
    # unroll four times (vector: loops of 117 + 37, single: 112), is now
    # one body as well (the package's facts: vector 19, single 30)
    loops = sass_loops(idiom_sass(name)[0])
    assert len(loops) == 1 and len(loops[0]) <= most, [len(b) for b in loops]
    plain = sass_loops(idiom_sass(base)[0])
    assert len(plain) == 1 and len(plain[0]) <= most, [len(b) for b in plain]


#: the idioms' grid-stride (main) loop as written, in SASS instructions: at
#: most this many (ptxas 13.x, sm_90).  Before the package's facts (special-
#: register ranges, extents, range() increments without overflow, no
#: run-time unrolling) -> after; nvcc's original in the comment.
MAIN_LOOP_MOST = {
    "single": 34,         # 112 -> 30 (nvcc 25)
    "slice": 44,          # 152 -> 39 (nvcc 25)
    "pipeline": 66,       # 218 -> 61 (nvcc 72: two tiles a pass, 36 a tile)
    "vector": 22,         # 117 + a 37 remainder -> 19 (nvcc 17)
    "bulk": 76,           # 93 -> 72, barrier wait inside (nvcc 67)
    "slice_while": 54,    # 162 -> 49
    "bulk_while": 55,     # 84 -> 51
}


def _main_loop(name):
    loops = sass_loops(idiom_sass(name)[0])
    async_ops = ("LDGSTS", "UBLKCP", "LDG.E.128", "STG.E.128")
    main = [b for b in loops if any(t.startswith(async_ops) for t in b)]
    assert main, [len(b) for b in loops]
    return max(main, key=len)


@pytest.mark.parametrize("name", sorted(MAIN_LOOP_MOST))
def test_idiom_main_loop_holds_the_gain(name):
    body = _main_loop(name)
    assert len(body) <= MAIN_LOOP_MOST[name], (len(body), body)
    # no negative-index wraparound of a row built from the loop counter:
    # the sign fix-up is a 64-bit arithmetic shift of the index's high word
    sign = [t for t in body if t.startswith("SHF.R.S32.HI")]
    assert not sign, sign


def test_ncu_driver_needs_the_twins_library_and_covers_every_idiom(capsys):
    """The Nsight Compute driver (README's side-by-side table) launches every
    port and every original; without the library it is a usage error."""
    from numba_asynccopy.bench import ncu_idioms
    with pytest.raises(SystemExit):
        ncu_idioms.main([])
    assert "--twins" in capsys.readouterr().err
    assert set(idi.TWIN_INDEX) == set(idi.KERNELS)
    assert {base for *_, base in idi.WHILE_FORMS.values()} <= set(idi.KERNELS)


def _ring_loops(loops):
    """(producer, consumer) main-loop sizes of a two-ring kernel: the
    producer's loop copies and stores nothing, the consumer's stores and
    copies nothing (a "loop" spanning both runs from a label in one to the
    out-of-line retry of a barrier wait)."""
    def has(b, op):
        return any(t.startswith(op) for t in b)
    producer = max(len(b) for b in loops if has(b, "LDGSTS") and not has(b, "STG"))
    consumer = max(len(b) for b in loops if has(b, "STG") and not has(b, "LDGSTS"))
    return producer, consumer


def test_the_mbarrier_rewrites_locate_its_gap():
    # bench/ab_facts.py times these beside the CUDA C++ original (H200,
    # benchmarks/h200-2026-12-02/ab-facts.jsonl): the port 0.821, uint32
    # counters 0.902, chunk views 0.869, both 0.985.  The SASS says why:
    # with both, the producer and consumer loops come near nvcc's (36, 45)
    from numba_asynccopy.bench import ab_facts

    sizes = {}
    for name, (fn, _) in ab_facts.VARIANTS.items():
        sass, log = _sass(fn, idi.SIGNATURE)
        assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in log, log
        loops = sass_loops(sass)
        sizes[name] = _ring_loops(loops)
    p_port = _ring_loops(sass_loops(idiom_sass("mbarrier")[0]))[0]
    assert sizes["mbarrier_u32_view"][0] <= 52 and sizes["mbarrier_u32_view"][1] <= 66, sizes
    assert p_port > sizes["mbarrier_view"][0] > sizes["mbarrier_u32_view"][0], (p_port, sizes)
