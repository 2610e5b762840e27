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
    # be a run-time chunk loop (unrolled four times by NVVM), then a
    # one-chunk test in front of that loop (two LDGSTS behind two branches);
    # now the chunk loop alone, which the special-register ranges bound by
    # one pass: one LDGSTS, predicated on the length, no branch, no loop
    sass, _ = _sass(slice_chunk, (types.float32[:, ::1], types.float32[:, ::1]))
    ins = _instructions(sass)
    commit = next(i for i, t in enumerate(ins) if t.startswith("LDGDEPBAR"))
    copies = [t for t in ins if "LDGSTS" in t]
    assert len(copies) == 1 and copies[0].startswith("@P"), copies
    assert not [t for t in ins[:commit] if t.startswith(("BRA", "BSSY", "@P0 BRA", "@!P0 BRA"))], ins[:commit]
    assert not sass_loops(sass), [len(b) for b in sass_loops(sass)]


def slice_rows(X, Y, lo, hi):
    sh = cuda.shared.array((4, 32), np.float32, alignment=16)
    t = cuda.threadIdx.x
    ac.cp_async(sh[t, lo:hi], X[t, lo:hi], 16)
    ac.commit_group()
    ac.wait_group(0)
    Y[t, 0] = sh[t, 0]


def test_a_slice_of_run_time_bounds_keeps_every_chunk():
    # sh[t, lo:hi] is 0 to 8 chunks (a row of 32 floats): the general chunk
    # loop stays, as its 8 passes with an exit after each (the one-chunk
    # test made it 9 copies: its own first)
    sass, _ = _sass(slice_rows, (types.float32[:, ::1], types.float32[:, ::1], types.int64, types.int64))
    assert sum("LDGSTS" in t for t in _instructions(sass)) == 8


def test_slice_idiom_main_loop_is_the_single_stage_loop():
    # the slice port's grid-stride loop is the whole-axis port's, the one
    # LDGSTS predicated on the slice's length (both 30 instructions; the
    # one-chunk branch made it 39, run on the H200 at 0.963 of nvcc against
    # the whole-axis port's 0.999)
    sass, log = idiom_sass("slice")
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in log, log
    main = _main_loop("slice")
    assert len(main) <= len(_main_loop("single")) + 1, (len(main), main)
    copies = [t for t in main if "LDGSTS" in t]
    assert len(copies) == 1 and copies[0].startswith("@P"), copies
    assert not [t for t in main if t.startswith(("BSSY", "BSYNC"))], main


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
#: run-time unrolling) -> after -> (slices) with a slice's chunks as the
#: chunk loop alone; nvcc's original in the comment.
MAIN_LOOP_MOST = {
    "single": 34,         # 112 -> 30 (nvcc 25)
    "slice": 32,          # 152 -> 39 -> 30: the chunk loop alone (nvcc 25)
    "pipeline": 54,       # 218 -> 61 -> 51 (nvcc 72: two tiles a pass, 36 a tile)
    "vector": 22,         # 117 + a 37 remainder -> 19 (nvcc 17)
    "bulk": 76,           # 93 -> 72, barrier wait inside (nvcc 67)
    "slice_while": 44,    # 162 -> 49 -> 40
    "bulk_while": 55,     # 84 -> 51
}


def _opcode(t):
    """The opcode of a SASS instruction, past its predicate (``@P0 LDGSTS...``)."""
    return t.split()[1] if t.startswith("@") else t.split()[0]


def _main_loop(name):
    loops = sass_loops(idiom_sass(name)[0])
    async_ops = ("LDGSTS", "UBLKCP", "LDG.E.128", "STG.E.128")
    main = [b for b in loops if any(_opcode(t).startswith(async_ops) for t in b)]
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
        return any(_opcode(t).startswith(op) for t in b)
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
    port = _ring_loops(sass_loops(idiom_sass("mbarrier")[0]))
    assert sizes["mbarrier_u32_view"][0] <= 52 and sizes["mbarrier_u32_view"][1] <= 66, sizes
    # the slices now lower as chunk_view's views do: the port's producer
    # loop is the chunk-view rewrite's (85 and 85 with CUDA 13's ptxas, 87
    # and 86 with CUDA 12's; it was 112), the uint32 one's the
    # uint32-and-view one's within 5 (52 against 47; CUDA 12's: 57 against
    # 47; it was 82); what is left is the Python int arithmetic of the
    # port's counters
    assert abs(port[0] - sizes["mbarrier_view"][0]) <= 2 and sizes["mbarrier_view"][0] <= 90, \
        (port, sizes)
    assert sizes["mbarrier_u32"][0] <= sizes["mbarrier_u32_view"][0] + 11, sizes
    assert port[0] > sizes["mbarrier_u32"][0] + 25, (port, sizes)
