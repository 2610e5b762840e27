"""The benchmark's rows: comparisons of measurements, the table, JSON and PNG.

A row compares one measurement (the subject) with a peer measured in the
same run, against the issue's target.  Rows whose measurement does not exist
yet (features on other branches) are listed in :data:`PENDING` and show as
"not yet run", with what they need, instead of being left out.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from .suites import SIZES, Measurement

#: the idioms suite's kernels (bench/idioms.py), without importing Numba here
IDIOM_LABELS = {
    "single": "single-stage cp.async + wait_group(0)",
    "slice": "16-byte chunk as a slice sh[r, 4*q:4*q+4]",
    "pipeline": "4-stage cp.async pipeline, prefetch loop",
    "runtime_depth": "cp.async pipeline, run-time stages",
    "mbarrier": "producer/consumer on two mbarrier rings",
    "vector": "float4 load/store (ac.load4/store4)",
    "bulk": "16-byte bulk copies on an mbarrier",
}
#: the documented levers' forms (the ``while`` grid-stride loop, the loop
#: pragma): name -> (label, the idiom whose original is the peer)
IDIOM_WHILE = {
    "single_while": ("single-stage cp.async, while loop", "single"),
    "slice_while": ("slice chunk, while loop", "slice"),
    "vector_while": ("float4 load/store, while loop", "vector"),
    "bulk_while": ("16-byte bulk copies, while loop", "bulk"),
    "single_pragma": ("single-stage cp.async, range + pragma_nounroll", "single"),
    "vector_pragma": ("float4 load/store, range + pragma_nounroll", "vector"),
}


@dataclass(frozen=True)
class Comparison:
    benchmark: str
    subject: str               # measurement key
    peer: str | None           # measurement key, None for a ceiling row
    target: float | None       # None: reported, no target
    better: str = "higher"     # higher: figure ratio >= target; faster: > target;
    #                            lower: time ratio <= target


@dataclass
class Row:
    benchmark: str
    subject: str
    figure: str
    ms: str
    work: str
    peer: str
    peer_figure: str
    ratio: float | None
    target: str
    verdict: str


#: measurement key -> (what it needs in ``numba_asynccopy``, where that comes from,
#: unit, label).  Remove a key here when a suite measures it.
PENDING: dict[str, tuple[tuple[str, ...], str, str, str]] = {
}


def pending_measurements() -> list[Measurement]:
    import numba_asynccopy as ac

    out = []
    for key, (needs, where, unit, label) in PENDING.items():
        missing = [n for n in needs if not hasattr(ac, n)]
        if missing:
            status = f"not yet run: needs ac.{', ac.'.join(missing)} ({where})"
        else:
            status = "not yet run: the API exists; add its suite in numba_asynccopy/bench/suites.py"
        impl = "cuda-c++" if key.startswith("twin_") else "numba"
        out.append(Measurement(key, label, impl, unit, status=status))
    return out


def comparisons(quick: bool) -> list[Comparison]:
    sizes = SIZES["quick" if quick else "full"]["sgemm"]
    rows = [Comparison("device copy bandwidth (ceiling)", "torch_copy", None, None)]
    rows += [Comparison(f"cuBLAS SGEMM {n}^3 (ceiling)", f"cublas_sgemm_{n}", None, None) for n in sizes]
    rows += [
        Comparison("staged cp.async copy", "numba_staged_copy", "torch_copy", 0.93),
        Comparison("staged cp.async copy", "numba_staged_copy", "twin_staged_copy", 0.97),
        Comparison("bulk copy", "numba_bulk_copy", "torch_copy", 0.95),
        Comparison("bulk copy", "numba_bulk_copy", "twin_bulk_copy", 0.97),
        Comparison("TMA tile copy", "numba_tma_copy", "torch_copy", 0.93),
        Comparison("TMA tile copy", "numba_tma_copy", "twin_tma_copy", 0.97),
        # each side's fastest configuration of the same sweep
        Comparison("staged cp.async copy, best of sweep vs the twin's best", "numba_staged_copy",
                   "twin_staged_copy_best", 0.97),
        Comparison("bulk copy, best of sweep vs the twin's best", "numba_bulk_copy", "twin_bulk_copy_best",
                   0.97),
        Comparison("TMA tile copy, best of sweep vs the twin's best", "numba_tma_copy", "twin_tma_copy_best",
                   0.97),
        # ac.pipeline against the same ring written by hand (examples/*_manual),
        # same configuration, same run
        Comparison("staged copy: pipeline vs hand-written", "numba_staged_copy",
                   "numba_staged_copy_manual", 0.99),
        Comparison("bulk copy: pipeline vs hand-written", "numba_bulk_copy", "numba_bulk_copy_manual", 0.99),
        Comparison("TMA copy: pipeline vs hand-written", "numba_tma_copy", "numba_tma_copy_manual", 0.99),
    ]
    for n in sizes:
        rows += [
            Comparison(f"SGEMM {n}^3 pipelined", f"numba_sgemm_pipe_{n}", f"cublas_sgemm_{n}", 0.80),
            Comparison(f"SGEMM {n}^3 synchronous", f"numba_sgemm_sync_{n}", f"cublas_sgemm_{n}", None),
            # information, not a target: 1.3x would be above the issue limit the
            # synchronous kernel leaves (bench/NOTES.md, second session)
            Comparison(f"SGEMM {n}^3 pipelined vs synchronous (information)", f"numba_sgemm_pipe_{n}",
                       f"numba_sgemm_sync_{n}", None),
            Comparison(f"SGEMM {n}^3 pipelined", f"numba_sgemm_pipe_{n}", f"twin_sgemm_pipe_{n}", 0.97),
            Comparison(f"SGEMM {n}^3 synchronous", f"numba_sgemm_sync_{n}", f"twin_sgemm_sync_{n}", 0.97),
            Comparison(f"SGEMM {n}^3: pipeline vs hand-written", f"numba_sgemm_pipe_again_{n}",
                       f"numba_sgemm_manual_{n}", 0.99),
        ]
    from .suites_mma import DTYPES as _HG_DTYPES
    from .suites_mma import SIZES as _HG_SIZES

    for n in _HG_SIZES["quick" if quick else "full"]:
        for dt in _HG_DTYPES:
            rows += [
                Comparison(f"HGEMM sm80 {dt} {n}^3", f"numba_hgemm_sm80_{dt}_{n}",
                           f"twin_hgemm_sm80_{dt}_{n}", 0.97),
                # information: mma.sync cannot reach wgmma's rate on Hopper
                Comparison(f"HGEMM sm80 {dt} {n}^3", f"numba_hgemm_sm80_{dt}_{n}",
                           f"cublas_f32out_hgemm_{dt}_{n}", None),
            ]
    # tensor cores (suites_tc.py): the targets, 0.75 of cuBLAS at 4096^3, 0.80 at 8192^3
    from .suites_tc import DTYPES as _TC_DTYPES
    from .suites_tc import SIZES as _TC_SIZES
    from .suites_tc import other_grids as _tc_other_grids

    for n in _TC_SIZES["quick" if quick else "full"]:
        for d in _TC_DTYPES:
            rows += [
                Comparison(f"HGEMM {d} {n}^3 (wgmma)", f"numba_hgemm_{d}_{n}",
                           f"cublas_hgemm_{d}_{n}", 0.80 if n >= 8192 else 0.75),
                Comparison(f"HGEMM {d} {n}^3 (wgmma)", f"numba_hgemm_{d}_{n}",
                           f"twin_hgemm_{d}_{n}", 0.97),
                Comparison(f"HGEMM {d} {n}^3 vs cuBLAS timed alone (information)",
                           f"numba_hgemm_{d}_{n}", f"cublas_solo_hgemm_{d}_{n}", None),
                # the other grids (one block a tile, persistent, 2-CTA clusters), for the record
                *[c for g in _tc_other_grids() for c in (
                    Comparison(f"HGEMM {d} {n}^3, {g} grid (information)",
                               f"numba_hgemm_{g}_{d}_{n}", f"cublas_hgemm_{d}_{n}", None),
                    Comparison(f"HGEMM {d} {n}^3, {g} grid", f"numba_hgemm_{g}_{d}_{n}",
                               f"twin_hgemm_{g}_{d}_{n}", None))],
                # numerics: max error on sampled rows against float64, ours / cuBLAS's
                Comparison(f"HGEMM {d} {n}^3 max error vs float64", f"err_numba_hgemm_{d}_{n}",
                           f"err_cublas_hgemm_{d}_{n}", 1.5, "lower"),
            ]
    for d in _TC_DTYPES:
        rows += [Comparison(f"HGEMM {d} first call, compile and launch (information)",
                            f"compile_hgemm_first_{d}", None, None),
                 Comparison(f"HGEMM {d} compiled call, host time (information)",
                            f"compile_hgemm_cached_{d}", None, None)]
    # fp8 (suites_fp8.py): information, no target: against torch._scaled_mm, same scales
    from .suites_fp8 import SIZES as _FP8_SIZES

    for n in _FP8_SIZES["quick" if quick else "full"]:
        rows.append(Comparison(f"fp8 e4m3 GEMM {n}^3 (wgmma, information)", f"numba_fp8_gemm_{n}",
                               f"cublas_fp8_gemm_{n}", None))
    # conv2d (suites_conv.py): the tensor-core path against its twin and cuDNN;
    # the fp32 SIMT path against cuDNN fp32 (TF32 off) as information
    from .suites_conv import BATCHES as _CV_BATCHES
    from .suites_conv import LAYERS as _CV_LAYERS

    for b in _CV_BATCHES["quick" if quick else "full"]:
        for layer in _CV_LAYERS:
            tag = f"{layer}_b{b}"
            rows += [
                Comparison(f"conv2d bf16 {layer} batch {b} (wgmma)", f"numba_conv_tc_bf16_{tag}",
                           f"twin_conv_tc_bf16_{tag}", 0.97),
                Comparison(f"conv2d bf16 {layer} batch {b} (wgmma)", f"numba_conv_tc_bf16_{tag}",
                           f"cudnn_conv_bf16_{tag}", 0.70),
                Comparison(f"conv2d fp32 SIMT {layer} batch {b} (information)",
                           f"numba_conv_simt_f32_{tag}", f"cudnn_conv_f32_{tag}", None),
            ]
    rows += [
        # two changes at once: the async kernel also computes a 4x4 patch a
        # thread with float4 stores, the plain one one point a thread
        Comparison("stencil (cp.async halo + 4x4 patch a thread) vs plain (one point a thread)",
                   "numba_stencil_async", "numba_stencil_plain", 1.0, "faster"),
        Comparison("stencil (cp.async halo)", "numba_stencil_async", "torch_copy", 0.85),
        Comparison("stencil (cp.async halo)", "numba_stencil_async", "twin_stencil_async", 0.97),
        Comparison("stencil (plain)", "numba_stencil_plain", "twin_stencil_plain", 0.97),
        Comparison("stencil (plain)", "numba_stencil_plain", "twin_stencil_plain_norestrict", None),
        # a reference, not a ceiling: the exchange moves its bytes at this rate
        Comparison("DSMEM bulk copy (reference)", "dsmem_ceiling", None, None),
        # information, not a target: 2x the L2-resident global exchange would
        # need 1.5x the DSMEM rate the copies reach at all (bench/NOTES.md)
        Comparison("cluster exchange vs global memory (information)", "numba_cluster_dsmem",
                   "numba_cluster_global", None),
        Comparison("cluster exchange vs the DSMEM reference", "numba_cluster_dsmem", "dsmem_ceiling", None),
        Comparison("cluster exchange", "numba_cluster_dsmem", "twin_cluster_dsmem", 0.97),
        *[Comparison(f"idiom: {label}", f"numba_idiom_{name}", f"twin_idiom_{name}", 0.97)
          for name, label in IDIOM_LABELS.items()],
        *[Comparison(f"idiom: {label}", f"numba_idiom_{name}", f"twin_idiom_{peer}", 0.97)
          for name, (label, peer) in IDIOM_WHILE.items()],
        # launch host cost (3-argument kernel; torch.add of the same size as the reference)
        Comparison("launch, ac.launch", "ac_launch_plain", "torch_launch_add", 1.5, "lower"),
        Comparison("launch, ac.launch with a cluster shape", "numba_launch_cluster",
                   "torch_launch_add", 1.5, "lower"),
        Comparison("launch, Numba's own", "numba_launch_plain", "torch_launch_add", None, "lower"),
        Comparison("launch with a cluster shape", "numba_launch_cluster", "numba_launch_plain", 1.2,
                   "lower"),
        Comparison("launch, ac.launch vs the bare launcher", "ac_launch_plain", "core_launch_bare",
                   None, "lower"),
        Comparison("launch, torch.add vs the bare launcher", "torch_launch_add", "core_launch_bare",
                   None, "lower"),
        # what the package's hook costs a plain Numba launch: in one process,
        # alternated with the same launch that bypasses it (the target), and
        # in fresh processes with and without the import (information: one
        # process's launches differ from the next one's by more than 3%)
        Comparison("launch, Numba's own through the package's hook vs without it",
                   "numba_launch_plain", "numba_launch_unhooked", 1.03, "lower"),
        Comparison("launch, Numba's own after import numba_asynccopy (information)",
                   "numba_launch_imported", "numba_launch_stock", None, "lower"),
    ]
    return rows


def _fig(m: Measurement | None) -> str:
    if m is None or m.status != "ok":
        return "-"
    if m.unit == "ms":
        return f"{m.ms * 1e3:.1f} us"
    if m.unit == "rel. error":
        return f"{m.figure:.2e}"
    if m.unit in ("s", "us"):
        return f"{m.figure:.3g} {m.unit}"
    return f"{m.figure:.3f} {m.unit}"


def _work(m: Measurement | None) -> str:
    if m is None or m.status != "ok" or not m.work:
        return "-"
    if m.unit == "TB/s":
        return f"{m.work / 1e9:.2f} GB"
    if m.unit == "TFLOP/s":
        return f"{m.work / 1e9:.0f} GFLOP"
    return "-"


def _target(c: Comparison) -> str:
    if c.target is None:
        return "-"
    return {"higher": ">= ", "faster": "> ", "lower": "<= "}[c.better] + f"{c.target:g}"


def _round_spread(s: Measurement, p: Measurement, better: str) -> tuple[float, float, int] | None:
    """(lowest, highest, rounds) of the ratio per round, for two rows timed
    in alternation (``Recorder.measure_pair``: ``config["round_ms"]``)."""
    a, b = s.config.get("round_ms"), p.config.get("round_ms")
    if not a or not b or len(a) != len(b):
        return None
    ratios = [x / y if better == "lower" else y / x for x, y in zip(a, b)]
    return min(ratios), max(ratios), len(ratios)


def build_rows(results: dict[str, Measurement], comps: list[Comparison]) -> list[Row]:
    rows = []
    for c in comps:
        s = results.get(c.subject)
        p = results.get(c.peer) if c.peer else None
        ratio = None
        if s is None:
            verdict = "not yet run"
        elif s.status != "ok":
            verdict = s.status
        elif c.peer is None:
            verdict = ("reference" if c.benchmark.endswith("(reference)") else
                       "info" if c.benchmark.endswith("(information)") else "ceiling")
        elif p is None or p.status != "ok":
            verdict = "peer " + (p.status if p else "not yet run")
        else:
            if c.better == "lower":
                ratio = s.ms / p.ms
                met = c.target is None or ratio <= c.target
            else:
                ratio = s.figure / p.figure
                met = c.target is None or (ratio > c.target if c.better == "faster" else ratio >= c.target)
            verdict = "info" if c.target is None else ("met" if met else "MISSED")
            spread = _round_spread(s, p, c.better)
            if spread:
                verdict += f" ({spread[0]:.3f}-{spread[1]:.3f} over {spread[2]} rounds)"
        rows.append(Row(
            benchmark=c.benchmark, subject=s.label if s else c.subject, figure=_fig(s),
            ms=f"{s.ms:.4f}" if s is not None and s.ms is not None else "-", work=_work(s),
            peer=(p.label if p else (c.peer or "-")), peer_figure=_fig(p), ratio=ratio,
            target=_target(c), verdict=verdict))
    return rows


def format_table(rows: list[Row]) -> str:
    from ..testing.bench import format_rows

    head = ["benchmark", "figure", "ms", "work", "peer", "peer figure", "ratio", "target", "verdict"]
    body = [[r.benchmark, r.figure, r.ms, r.work, r.peer, r.peer_figure,
             "-" if r.ratio is None else f"{r.ratio:.3f}", r.target, r.verdict] for r in rows]
    return format_rows(head, body, max_widths={len(head) - 1: 90, 4: 44})


def write_json(path: Path, info: dict, results: dict[str, Measurement], rows: list[Row],
               extra: dict) -> None:
    data = {**extra, "info": info,
            "rows": [asdict(r) for r in rows],
            "measurements": [asdict(m) for m in results.values()]}
    path.write_text(json.dumps(data, indent=1))


def write_png(path: Path, rows: list[Row], title: str) -> str:
    """Bar chart of each row's ratio against its target; returns a note."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:
        return f"no PNG: matplotlib unavailable ({type(e).__name__}: {e})"
    rows = [r for r in rows if r.peer_figure != "-" or r.verdict not in ("ceiling",)]
    rows = [r for r in rows if r.verdict != "ceiling"]
    fig, ax = plt.subplots(figsize=(11, 0.38 * len(rows) + 1.6))
    labels, ys = [], []
    for i, r in enumerate(rows):
        y = len(rows) - 1 - i
        ys.append(y)
        labels.append(f"{r.benchmark} vs {r.peer}"[:70])
        if r.ratio is None:
            ax.text(0.02, y, r.verdict[:80], va="center", fontsize=7, color="0.4")
            continue
        color = {"met": "tab:green", "MISSED": "tab:red"}.get(r.verdict, "tab:gray")
        ax.barh(y, r.ratio, color=color, height=0.6)
        ax.text(r.ratio + 0.02, y, f"{r.ratio:.2f}", va="center", fontsize=7)
        if r.target != "-":
            t = float(r.target.split()[-1])
            ax.plot([t, t], [y - 0.4, y + 0.4], color="black", lw=1.5)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel("ratio to peer (black tick: target; time ratio for the launch row)")
    ax.set_title(title, fontsize=9)
    ax.set_xlim(0, max([2.2] + [r.ratio * 1.15 for r in rows if r.ratio]))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"wrote {path}"
