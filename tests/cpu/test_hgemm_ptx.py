"""The HGEMM example on the CPU layer: it compiles for sm_90a, its main loop
is HGMMA with the accumulators in registers (no LDL/STL in the k-loop; none
anywhere for a float32 output, at most 8 bytes in a 16-bit epilogue) and
ptxas prints no C7515 (MMAs serialized by accumulator writes), and
setmaxnreg survives into the SASS (the kernel has launch bounds)."""

from __future__ import annotations

import pytest
from numba import types

from numba_asynccopy import toolchain
from numba_asynccopy.examples import hgemm

from .helpers import compile_twin, gemm_sass, local_memory_lines


@pytest.mark.parametrize("bn,dtype,out,persistent", [
    (128, "bf16", "float32", False), (256, "f16", "float16", False), (256, "bf16", "bf16", False),
    (256, "bf16", "bf16", True), (128, "f16", "float32", True)])
def test_hgemm_sass_has_hgmma_no_local_memory_no_c7515(bn, dtype, out, persistent):
    g = hgemm.make_hgemm(bn=bn, dtype=dtype, out=out, persistent=persistent)
    elem = types.uint16 if dtype == "bf16" else types.float16
    ptx, sass, log = gemm_sass(g.kernel, hgemm.THREADS, out)
    assert f"m64n{bn}k16.f32.{dtype}.{dtype}" in ptx and elem is not None
    ops = toolchain.sass_opcodes(sass)
    assert sum(o.startswith("HGMMA") for o in ops) >= 4, sorted(set(ops))
    # the k-loop: from the first HGMMA to the wait that drains the last group
    lines, local, drained = local_memory_lines(sass)
    first = next(i for i, l in enumerate(lines) if "HGMMA" in l)
    assert first < drained
    assert not [i for i in local if i < drained], [lines[i] for i in local]
    assert "C7515" not in log, log
    if out == "float32":
        assert not local and "0 bytes spill stores" in log, log
    else:
        # 16-bit outputs at N=256: the block-index range facts cost the
        # conversion epilogue (after the last MMA) two registers at the
        # 168-register cap; the spill stays there and stays this small
        assert "0 bytes spill stores" in log or "8 bytes spill stores" in log, log
    assert "USETMAXREG.DEALLOC.CTAPOOL 0x28" in sass and "USETMAXREG.TRY_ALLOC.CTAPOOL" in sass
    if persistent:
        # the tile walk divides in 32 bits, as the twin's ints do (hgemm._tile_of)
        import re

        assert not re.search(r"\bdiv\.[su]64|\brem\.[su]64", ptx), "64-bit tile divisions"
        assert re.search(r"\bdiv\.u32", ptx) and re.search(r"\brem\.u32", ptx)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_hgemm_cluster_k_loop_is_hgmma_with_no_local_memory_no_c7515(dtype):
    import re
    from collections import Counter

    from .test_examples_ptx import sass_loops

    out = "bf16" if dtype == "bf16" else "float16"
    g = hgemm.make_hgemm(bn=256, dtype=dtype, out=out, persistent=True, cluster=2)
    ptx, sass, log = gemm_sass(g.kernel, hgemm.THREADS, out)
    assert ".reqnctapercluster 2, 1, 1" in ptx and ".multicast::cluster" in ptx
    assert "C7515" not in log, log
    loop = min((L for L in sass_loops(sass) if any(t.startswith("HGMMA") for t in L)), key=len)
    ops = Counter(t.split()[0].split(".")[0] for t in loop if not t.startswith("@"))
    assert ops["HGMMA"] == 4 and ops["LDL"] == ops["STL"] == 0, ops
    # the releases into both CTAs are CTA-scope arrives: no fence waits in the k-loop
    assert ops["SYNCS"] >= 3 and ops["MEMBAR"] == ops["ERRBAR"] == 0, ops
    assert "mbarrier.arrive.release.cta.shared::cluster.b64" in ptx
    assert "mbarrier.arrive.release.cluster" not in ptx
    # the tile walk in uint32 (hgemm._tile_of): nothing spills at the 168-register cap
    assert "0 bytes spill stores, 0 bytes spill loads" in log, log
    assert not re.search(r"\bdiv\.[su]64|\brem\.[su]64", ptx), "64-bit tile divisions"


def test_twin_compiles_for_sm90a_to_the_same_main_loop():
    """The CUDA C++ twin (bench/twins_hgemm.cu) assembles for sm_90a with no
    spills and no C7515, and its persistent bf16 k-loop holds the Numba
    kernel's tensor-core and barrier instructions."""
    import re
    from collections import Counter

    from .test_examples_ptx import sass_loops

    proc, cubin = compile_twin("twins_hgemm.cu", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "C7515" not in proc.stderr and "C7508" not in proc.stderr, proc.stderr
    # 2 dtypes x 3 grids (a block a tile, persistent, 2-CTA clusters)
    assert proc.stderr.count("0 bytes spill stores, 0 bytes spill loads") == 6, proc.stderr
    sass = toolchain.disassemble(cubin)
    fn = re.split(r"\.text\._ZN3hgw5hgemmILb1ELi4ELb1EEEvPKvS2_Ptiii:", sass)[1].split("//----")[0]

    def k_loop(text):
        # the innermost loop holding the MMAs (the tile loop around it holds them too)
        loop = min((L for L in sass_loops(text) if any(t.startswith("HGMMA") for t in L)), key=len)
        return Counter(t.split()[0].split(".")[0] for t in loop if not t.startswith("@"))

    twin = k_loop(fn)
    g = hgemm.make_hgemm(bn=256, dtype="bf16", out="bf16", persistent=True)
    ours = k_loop(gemm_sass(g.kernel, hgemm.THREADS, "bf16")[1])
    assert twin["HGMMA"] == ours["HGMMA"] == 4, (twin, ours)
    for op in ("WARPGROUP", "SYNCS", "LDL", "STL"):
        assert twin[op] == ours[op], (op, twin, ours)
    assert "USETMAXREG.DEALLOC.CTAPOOL 0x28" in fn and "USETMAXREG.TRY_ALLOC.CTAPOOL" in fn
    # the cluster variant's k-loop: the same CTA-scope releases as the Numba kernel's (no fence)
    cl = re.split(r"\.text\._ZN3hgw13hgemm_clusterILb1ELi4EEEvPKvS2_Ptiii:", sass)[1].split("//----")[0]
    twin_cl = k_loop(cl)
    g2 = hgemm.make_hgemm(bn=256, dtype="bf16", out="bf16", persistent=True, cluster=2)
    ours_cl = k_loop(gemm_sass(g2.kernel, hgemm.THREADS, "bf16")[1])
    for op in ("HGMMA", "WARPGROUP", "SYNCS", "MEMBAR", "LDL", "STL"):
        assert twin_cl[op] == ours_cl[op], (op, twin_cl, ours_cl)
    assert twin_cl["MEMBAR"] == 0, twin_cl


def test_bench_registers_the_wgmma_gemm_rows_and_their_targets():
    from numba_asynccopy.bench import report, suites

    keys = suites.suite_keys("hgemm", quick=True)
    for k in ("cublas_hgemm_bf16_1000", "cublas_solo_hgemm_f16_1000", "numba_hgemm_bf16_1000",
              "twin_hgemm_f16_1000", "numba_hgemm_tile_bf16_1000", "twin_hgemm_cluster_f16_1000",
              "err_numba_hgemm_f16_1000",
              "err_cublas_hgemm_bf16_1000", "compile_hgemm_first_bf16", "compile_hgemm_cached_f16"):
        assert k in keys, k
    comps = {(c.subject, c.peer): c for c in report.comparisons(quick=False)}
    for d in ("bf16", "f16"):
        for n, target in ((4096, 0.75), (8192, 0.80)):
            assert comps[(f"numba_hgemm_{d}_{n}", f"cublas_hgemm_{d}_{n}")].target == target
            assert comps[(f"numba_hgemm_{d}_{n}", f"twin_hgemm_{d}_{n}")].target == 0.97
            err = comps[(f"err_numba_hgemm_{d}_{n}", f"err_cublas_hgemm_{d}_{n}")]
            assert (err.target, err.better) == (1.5, "lower")
        assert (f"compile_hgemm_first_{d}", None) in comps


def test_bench_error_and_time_rows_divide_their_values(tmp_path):
    from numba_asynccopy.bench import report
    from numba_asynccopy.bench.suites import Recorder

    r = Recorder(tmp_path / "r.json", True, float("inf"), None)
    r.record_value("err_numba_hgemm_bf16_1000", "ours", "numba", "rel. error", 3.2e-4)
    r.record_value("err_cublas_hgemm_bf16_1000", "cublas", "cublas", "rel. error", 2e-4)
    r.record_value("compile_hgemm_first_bf16", "first", "numba", "s", 2.5)
    rows = {x.benchmark: x for x in report.build_rows(r.results, report.comparisons(quick=True))}
    row = rows["HGEMM bf16 1000^3 max error vs float64"]
    assert row.ratio == pytest.approx(1.6) and row.verdict == "MISSED"
    assert (row.figure, row.peer_figure) == ("3.20e-04", "2.00e-04")
    first = rows["HGEMM bf16 first call, compile and launch (information)"]
    assert (first.figure, first.verdict) == ("2.5 s", "info")


def test_bench_group_times_every_row_in_alternation_and_leaves_out_a_failed_check(tmp_path,
                                                                                 monkeypatch):
    from numba_asynccopy.bench import devutil
    from numba_asynccopy.bench.suites import Recorder

    seen = []

    def fake(fns, *, reps, warmup, rounds, shuffle=False):
        seen.append(len(fns))
        return [[[1.0 + i] * reps for i in range(len(fns))] for _ in range(rounds)]

    monkeypatch.setattr(devutil, "bench_alternating", fake)
    r = Recorder(tmp_path / "r.json", True, float("inf"), None)

    def bad():
        raise AssertionError("wrong")

    ok = lambda: "ok"  # noqa: E731
    ms = r.measure_group([("a", "a", "numba", "TFLOP/s", 1e9, lambda: None, ok, {}),
                          ("b", "b", "numba", "TFLOP/s", 1e9, lambda: None, bad, {}),
                          ("c", "c", "numba", "TFLOP/s", 1e9, lambda: None, ok, {})], rounds=3)
    assert seen == [2]
    assert [m.status for m in ms] == ["ok", "error: AssertionError: wrong", "ok"]
    assert (ms[0].ms, ms[2].ms) == (1.0, 2.0) and ms[2].config["round_ms"] == [2.0, 2.0, 2.0]
