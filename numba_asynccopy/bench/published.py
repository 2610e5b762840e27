"""The benchmark figures the README and the docs quote, made from the JSON
the benchmark runs wrote (``benchmarks/<run>/*.json``), so that no page
quotes an older run than its results say.

Each published row is a comparison of :func:`report.comparisons` (a
subject and its peer, measured in the same run); it is taken from the
newest results file of :data:`RESULTS` that measured both sides, and the
page names that run.  Prose that quotes a figure is a template here with
``{ratio:SUBJECT/PEER}``, ``{figure:SUBJECT/PEER}`` (the subject's figure
in that row's run) and ``{peer:SUBJECT/PEER}`` fields; ``make
readme-table`` fills them in (``numba_asynccopy._readme``) and the CPU
suite fails while a page's part is stale.

Example::

    python -m numba_asynccopy._readme README.md docs/benchmarks.md
"""

from __future__ import annotations

import json
import re
from dataclasses import fields
from functools import lru_cache
from pathlib import Path

from .report import Comparison, Row, build_rows, comparisons
from .suites import Measurement

ROOT = Path(__file__).resolve().parents[2]

#: results files (repository paths), newest first: a row comes from the
#: first file that measured both its sides
RESULTS: tuple[str, ...] = (
    "benchmarks/h200-2026-12-04/final/cluster-results-2.json",
    "benchmarks/h200-2026-12-04/final/cluster-results-1.json",
    "benchmarks/h200-2026-12-03c/bench/results.json",
    "benchmarks/h200-2026-12-03/final/results.json",
    "benchmarks/h200-2026-12-02d/final2/results.json",
    "benchmarks/h200-2026-12-02d/launch/cluster-results.json",
    "benchmarks/h200-2026-12-02d/conv2d/conv2d-results.json",
    "benchmarks/h200-2026-12-02d/perf/results-2.json",
    "benchmarks/h200-2026-12-02d/final/conv2d-results.json",
    "benchmarks/h200-2026-12-02b/final/conv2d-results.json",
    "benchmarks/h200-2026-12-02b/conv2d/run2-results.json",
    "benchmarks/h200-2026-12-02b/hgemm/results.json",
    "benchmarks/h200-2026-12-02b/perf/results.json",
    "benchmarks/h200-2026-12-02/fp8/results.json",
    "benchmarks/h200-2026-12-02/hgemm/run3.json",
    "benchmarks/h200-2026-12-02/conv2d/run2-conv2d.json",
    "benchmarks/h200-2026-12-02/results.json",
    "benchmarks/h200-2026-12-01/evening/hgemm-run2.json",
    "benchmarks/h200-2026-12-01/evening/idioms.json",
    "benchmarks/h200-2026-12-01/results.json",
)
#: the idioms' run before the package's facts for NVVM (the "before" column)
IDIOMS_BEFORE = "benchmarks/h200-2026-12-01/results.json"

#: README's headline rows: (benchmark, subject key, peer key, peer as the table names it)
HEADLINE: tuple[tuple[str, str, str, str], ...] = (
    ("staged cp.async copy", "numba_staged_copy", "torch_copy", "torch device-to-device copy"),
    ("staged cp.async copy", "numba_staged_copy", "twin_staged_copy", "staged copy, CUDA C++"),
    ("bulk copy", "numba_bulk_copy", "twin_bulk_copy", "bulk copy, CUDA C++"),
    ("TMA tile copy", "numba_tma_copy", "twin_tma_copy", "TMA tile copy, CUDA C++"),
    ("TMA copy: pipeline vs hand-written", "numba_tma_copy", "numba_tma_copy_manual", "ring written by hand"),
    ("SGEMM 4096^3 pipelined", "numba_sgemm_pipe_4096", "cublas_sgemm_4096", "cuBLAS SGEMM (TF32 off)"),
    ("SGEMM 4096^3 pipelined", "numba_sgemm_pipe_4096", "twin_sgemm_pipe_4096", "SGEMM CUDA C++, 4 stages"),
    ("stencil (cp.async halo, 4x4 patch a thread)", "numba_stencil_async", "numba_stencil_plain",
     "5-point stencil, plain Numba"),
    ("cluster exchange", "numba_cluster_dsmem", "twin_cluster_dsmem", "cluster exchange via DSMEM, CUDA C++"),
    ("launch, ac.launch", "ac_launch_plain", "torch_launch_add", "torch.add, 67584 float32"),
    ("launch, Numba's own through the package's hook", "numba_launch_plain", "numba_launch_unhooked",
     "the same launch, numba-cuda's own _Kernel.launch"),
    ("bf16 GEMM 8192^3 (wgmma)", "numba_hgemm_bf16_8192", "cublas_hgemm_bf16_8192", "cuBLAS bf16 (torch.matmul)"),
    ("fp16 GEMM 8192^3 (wgmma)", "numba_hgemm_f16_8192", "cublas_hgemm_f16_8192", "cuBLAS fp16 (torch.matmul)"),
    ("bf16 GEMM 4096^3 (wgmma)", "numba_hgemm_bf16_4096", "cublas_hgemm_bf16_4096", "cuBLAS bf16 (torch.matmul)"),
    ("fp16 GEMM 4096^3 (wgmma)", "numba_hgemm_f16_4096", "cublas_hgemm_f16_4096", "cuBLAS fp16 (torch.matmul)"),
    ("bf16 GEMM 4096^3 (wgmma)", "numba_hgemm_bf16_4096", "twin_hgemm_bf16_4096", "the same GEMM, CUDA C++"),
    ("fp16 GEMM 8192^3 (wgmma)", "numba_hgemm_f16_8192", "twin_hgemm_f16_8192", "the same GEMM, CUDA C++"),
    ("conv2d bf16 56x56 C=K=64 3x3, batch 32 (wgmma)", "numba_conv_tc_bf16_56x56_c64_b32",
     "twin_conv_tc_bf16_56x56_c64_b32", "the same conv2d, CUDA C++"),
    ("conv2d bf16 56x56 C=K=64 3x3, batch 32 (wgmma)", "numba_conv_tc_bf16_56x56_c64_b32",
     "cudnn_conv_bf16_56x56_c64_b32", "cuDNN bf16 (torch conv2d, channels_last)"),
    ("conv2d bf16 28x28 C=K=128 3x3, batch 128 (wgmma)", "numba_conv_tc_bf16_28x28_c128_b128",
     "cudnn_conv_bf16_28x28_c128_b128", "cuDNN bf16 (torch conv2d, channels_last)"),
    ("fp8 e4m3 GEMM 8192^3 (wgmma, information)", "numba_fp8_gemm_8192", "cublas_fp8_gemm_8192",
     "cuBLAS fp8 (torch._scaled_mm)"),
    ("bf16 GEMM 8192^3 (mma.sync, sm_80 way)", "numba_hgemm_sm80_bf16_8192", "twin_hgemm_sm80_bf16_8192",
     "the same GEMM, CUDA C++"),
)


@lru_cache(maxsize=None)
def load(path: str) -> dict:
    """A results file: its run's date, device and software, and its
    measurements by key."""
    data = json.loads((ROOT / path).read_text())
    names = {f.name for f in fields(Measurement)}
    ms = {m["key"]: Measurement(**{k: v for k, v in m.items() if k in names}) for m in data["measurements"]}
    return {"path": path, "date": data["date"], "info": data.get("info", {}), "measurements": ms}


@lru_cache(maxsize=None)
def _comparison(subject: str, peer: str) -> Comparison:
    for c in comparisons(False):
        if c.subject == subject and c.peer == peer:
            return c
    raise KeyError(f"no benchmark row compares {subject} with {peer} (bench/report.py)")


def _measured(ms: dict, key: str) -> bool:
    m = ms.get(key)
    return m is not None and m.status == "ok"


def row(subject: str, peer: str, files: tuple[str, ...] | None = None) -> tuple[Row, dict]:
    """The row comparing ``subject`` with ``peer`` from the newest of
    ``files`` (default :data:`RESULTS`) that measured both, and that file."""
    c = _comparison(subject, peer)
    files = RESULTS if files is None else files
    for path in files:
        run = load(path)
        if _measured(run["measurements"], subject) and _measured(run["measurements"], peer):
            return build_rows(run["measurements"], [c])[0], run
    raise LookupError(f"no results file of {list(files)} measured both {subject} and {peer}")


def _run_name(run: dict) -> str:
    return run["date"]


def _target(r: Row) -> str:
    return r.target + (" (missed)" if r.verdict.startswith("MISSED") else "")


def headline() -> str:
    """README's table: the headline rows, each from its newest run."""
    lines = ["| benchmark | figure | peer | peer figure | ratio | target | run |",
             "|---|---|---|---|---|---|---|"]
    for bench, subject, peer, peer_name in HEADLINE:
        r, run = row(subject, peer)
        lines.append(f"| {bench} | {r.figure} | {peer_name} | {r.peer_figure} | {r.ratio:.3f} | "
                     f"{_target(r)} | {_run_name(run)} |")
    import textwrap

    info = load(RESULTS[0])["info"]
    head = (f"One {info.get('device', 'GPU')} (numba-cuda {info.get('numba_cuda', '?')}, torch "
            f"{info.get('torch', '?').split('+')[0]}), `make bench`, each peer measured in the same run "
            f"(the run's date in the last column; results and logs under `benchmarks/`):")
    idioms = [row(c.subject, c.peer)[0] for c in comparisons(False) if c.benchmark.startswith("idiom:")]
    met = [r for r in idioms if r.verdict.startswith("met")]
    low = sorted((r for r in idioms if not r.verdict.startswith("met")), key=lambda r: r.ratio)
    tail = (f"Porting idioms (CUDA C++ kernels ported line by line, each against its nvcc original): "
            f"{len(met)} of {len(idioms)} rows at or above 0.97"
            + ((": the miss is " if len(low) == 1 else ": the misses are ")
               + ", ".join(f"{r.benchmark[len('idiom: '):]} {r.ratio:.3f}" for r in low)
               if low else "") + ".")
    return (textwrap.fill(head, 76) + "\n\n" + "\n".join(lines) + "\n\n" + textwrap.fill(tail, 76))


def full_table() -> str:
    """Every row of the benchmark that some results file measured, each from
    its newest run (the rows no run measured are left out)."""
    lines = ["| benchmark | figure | peer | peer figure | ratio | target | verdict | run |",
             "|---|---|---|---|---|---|---|---|"]
    seen = set()
    for c in comparisons(False):
        if (c.subject, c.peer) in seen:
            continue
        seen.add((c.subject, c.peer))
        if c.peer is None:
            run = next((load(p) for p in RESULTS if _measured(load(p)["measurements"], c.subject)), None)
            if run is None:
                continue
            r = build_rows(run["measurements"], [c])[0]
        else:
            try:
                r, run = row(c.subject, c.peer)
            except LookupError:
                continue
        ratio = "-" if r.ratio is None else f"{r.ratio:.3f}"
        verdict = r.verdict.replace(" over 3 rounds", " in 3 rounds")
        peer_name = r.peer.split(" {")[0]  # the best-of-sweep peers' labels carry their configuration
        lines.append(f"| {c.benchmark} | {r.figure} | {peer_name} | {r.peer_figure} | {ratio} | {r.target} | "
                     f"{verdict} | {_run_name(run)} |")
    return "\n".join(lines)


def idioms_table() -> str:
    """Each idiom row before the package's facts for NVVM and in the newest
    run that measured it."""
    lines = ["| idiom | before (run) | now (run) | target |", "|---|---|---|---|"]
    for c in comparisons(False):
        if not c.benchmark.startswith("idiom:"):
            continue
        try:
            before, brun = row(c.subject, c.peer, (IDIOMS_BEFORE,))
            b = f"{before.ratio:.3f} ({_run_name(brun)})"
        except LookupError:
            b = "-"
        now, nrun = row(c.subject, c.peer)
        spread = re.search(r"\((\d\.\d+-\d\.\d+) over", now.verdict)
        n = f"{now.ratio:.3f}" + (f", {spread.group(1)} in 3 rounds" if spread else "")
        n += " missed" if now.verdict.startswith("MISSED") else ""
        lines.append(f"| {c.benchmark[len('idiom: '):]} | {b} | {n} ({_run_name(nrun)}) | {c.target:g} |")
    return "\n".join(lines)


_FIELD = re.compile(r"\{(ratio|figure|peer|ab|ncu):([A-Za-z0-9_ +-]+)/([A-Za-z0-9_+ /.-]+?)\}")

#: the facts A/B of the newest run (``python -m numba_asynccopy.bench.ab_facts``,
#: one JSON line per port and setting)
AB_FACTS = "benchmarks/h200-2026-12-02/ab-facts.jsonl"


#: Nsight Compute figures of the newest run's idiom kernels (metric, unit, one column a kernel)
NCU = "benchmarks/h200-2026-12-02/ncu-idioms.csv"


@lru_cache(maxsize=None)
def ncu() -> dict[tuple[str, str], str]:
    """(kernel column, metric) -> the value as Nsight Compute printed it."""
    import csv

    rows = list(csv.reader((ROOT / NCU).read_text().splitlines()))
    head = rows[0]
    return {(k, r[0]): r[i] for r in rows[1:] for i, k in enumerate(head) if i >= 2}


@lru_cache(maxsize=None)
def ab_facts() -> dict[tuple[str, str], dict]:
    """(port, facts joined by ``+`` or ``none``) -> that A/B line."""
    out = {}
    for line in (ROOT / AB_FACTS).read_text().splitlines():
        if line.strip():
            d = json.loads(line)
            out[(d["port"], "+".join(d["facts"]) or "none")] = d
    return out


def fill(template: str) -> str:
    """``template`` with each ``{ratio|figure|peer:SUBJECT/PEER}`` replaced by
    that row's ratio (3 decimals) or figures, from its newest run, and each
    ``{ab:PORT/FACTS}`` by the ratio the facts A/B measured and each
    ``{ncu:KERNEL/METRIC}`` by a Nsight Compute figure (``_`` for spaces in
    the kernel's column name)."""
    def one(m: re.Match) -> str:
        if m.group(1) == "ab":
            return f"{ab_facts()[(m.group(2), m.group(3))]['ratio']:.3f}"
        if m.group(1) == "ncu":
            return ncu()[(m.group(2).replace("_", " "), m.group(3))]
        r, _ = row(m.group(2), m.group(3))
        return {"ratio": f"{r.ratio:.3f}", "figure": r.figure, "peer": r.peer_figure}[m.group(1)]
    out = _FIELD.sub(one, template)
    left = re.search(r"\{(ratio|figure|peer|ab|ncu):[^}]*\}", out)
    if left:
        raise ValueError(f"field {left.group(0)} names no row, A/B line or Nsight Compute figure")
    return out


#: docs/benchmarks.md, "Rows that miss their target": the figures of the
#: newest runs (fields), what limits them and what was tried (earlier runs'
#: figures are history and say so)
MISSES = """\
- SGEMM pipelined vs synchronous ({ratio:numba_sgemm_pipe_4096/numba_sgemm_sync_4096}x at 4096^3,
  information, not a target): a 1.3x target cannot be met with this
  synchronous peer.  The synchronous kernel runs two blocks an SM that hide
  each other's loads and already issues 0.70 warp-instructions per
  scheduler and cycle; the pipelined one issues 0.83, close to the issue
  limit.  1.3x would be above cuBLAS's own rate
  ({peer:numba_sgemm_pipe_4096/cublas_sgemm_4096}).  Against cuBLAS the pipelined kernel meets its
  target ({ratio:numba_sgemm_pipe_4096/cublas_sgemm_4096} at 4096^3).
- Plain stencil vs its twin ({ratio:numba_stencil_plain/twin_stencil_plain} against 0.97): issue-bound on
  Numba's negative-index wraparound at first (0.65 in the first run).
  Unsigned 32-bit coordinates took it from 143 to 66 instructions (twin:
  53).  The rest is Numba's int64 shapes and a second row multiply for
  `out`; 32-bit shapes, one store, row views and unsigned range tests were
  tried and all compiled to more instructions (65-81).  The twin built
  without `__restrict__` runs at the same speed
  ({ratio:numba_stencil_plain/twin_stencil_plain_norestrict} of it), so the read-only cache, which a Numba
  kernel cannot request, is not the cause.
- Cluster exchange, DSMEM vs global memory ({ratio:numba_cluster_dsmem/numba_cluster_global}x,
  information): the global exchange stays in L2 (99 % hit rate).  The
  DSMEM exchange already moves bytes as fast as the same bulk copies do
  with no round-to-round dependency (the reference row,
  {peer:numba_cluster_dsmem/dsmem_ceiling}; the exchange {ratio:numba_cluster_dsmem/dsmem_ceiling} of it).  2x
  would need about 1.5x the DSMEM rate those copies reach.
- conv2d bf16 56x56, C=K=64, batch 32 against its twin
  ({ratio:numba_conv_tc_bf16_56x56_c64_b32/twin_conv_tc_bf16_56x56_c64_b32} against 0.97; the same kernel configuration at batch
  128 {ratio:numba_conv_tc_bf16_56x56_c64_b128/twin_conv_tc_bf16_56x56_c64_b128}; against cuDNN {ratio:numba_conv_tc_bf16_56x56_c64_b32/cudnn_conv_bf16_56x56_c64_b32}).  Under Nsight Compute
  with the clocks locked at base (1.32 GHz) the two kernels take the same
  cycles (38,337 against 38,235 and 38,157), ours issuing 8 % fewer
  instructions (5.79 M against 6.28 M); at the card's own clock (1.77-1.79
  GHz, no cache flush) ours takes 5 % more (44.2-47.9 k against 42.3-43.0 k
  cycles).  In alternated batches of 4000 launches the SM clock read 1980
  MHz throughout (24.5-24.6 us against 23.4-23.5 us a launch, 0.955), so
  neither power nor the host explains it: a latency that does not shrink
  with the SM clock, on the layer where each block walks only three tiles
  of nine k-steps.  The stall samples point at the consumers' waits on
  the full barrier (505 samples against the twin's 391) and at a load of
  the output's extents from the constant bank at each tile's start
  (`LDC.64`, 118 samples; the twin's are in uniform registers).  nvcc
  also unrolls the twin's consumer k-loop by two; ours is not unrolled
  (`benchmarks/h200-2026-12-02d/conv2d/`).
- A plain Numba launch after `import numba_asynccopy`, timed in its own
  process beside stock numba-cuda in another
  ({ratio:numba_launch_imported/numba_launch_stock}x, information): fresh processes differ from one
  another by more than 3% whatever they import; the hook's own price is the
  in-process row ({ratio:numba_launch_plain/numba_launch_unhooked}x against 1.03).  See "Launch" below.
"""


def misses() -> str:
    return fill(MISSES).rstrip("\n")


#: docs/benchmarks.md, the 2026-12-02 run: the two idiom rows that miss
NOTES_2026_12_02 = """\
In the run of 2026-12-02 08:00 UTC the slice row (0.963) and the
two-mbarrier-ring row (0.821) were the idiom rows under 0.97.  (Since the
slice lowering of the third session, a thread-scope `cp_async` of a view
walking its chunks with the chunk loop alone, the slice row reads
{ratio:numba_idiom_slice/twin_idiom_slice}; the mbarrier rings {ratio:numba_idiom_mbarrier/twin_idiom_mbarrier}.)  The facts A/B
(`python -m numba_asynccopy.bench.ab_facts`, each port beside its original,
`NUMBA_ASYNCCOPY_FACTS` set per process, `ab-facts.jsonl`) says which fact
moved them:

| port | every fact | none | all but `range` |
|---|---|---|---|
| slice | {ab:slice/assume+range+sreg+unroll} | {ab:slice/none} | {ab:slice/assume+sreg+unroll} |
| two mbarrier rings | {ab:mbarrier/assume+range+sreg+unroll} | {ab:mbarrier/none} | {ab:mbarrier/assume+sreg+unroll} |

The facts took the slice port from {ab:slice/none} to {ab:slice/assume+range+sreg+unroll}, but without the
`range()` increments it runs at {ab:slice/assume+sreg+unroll}; the mbarrier port fell from
{ab:mbarrier/none} to {ab:mbarrier/assume+range+sreg+unroll}, {ab:mbarrier/assume+sreg+unroll} without them.  With the
`range()` increments (`nsw`, unconditional) NVVM strength-reduces the store
address of `Y[row, 4*q + j]` into a pointer that walks the rows, and the
loop shrinks (slice 65 -> 39 SASS instructions; nvcc 25), yet Nsight
Compute shows the L2 taking more write sectors: {ncu:port_slice/L2 Compression Input Sectors}
against {ncu:C++_slice/L2 Compression Input Sectors} for nvcc's kernel and {ncu:port_slice-while/L2 Compression Input Sectors} for the
`while` form of the same port, L2 throughput {ncu:port_slice/L2 Cache Throughput} % against
{ncu:C++_slice/L2 Cache Throughput} %, DRAM {ncu:port_slice/DRAM Throughput} % against {ncu:C++_slice/DRAM Throughput} % (mbarrier:
{ncu:port_mbarrier/L2 Compression Input Sectors} against {ncu:C++_mbarrier/L2 Compression Input Sectors} sectors, DRAM
{ncu:port_mbarrier/DRAM Throughput} % against {ncu:C++_mbarrier/DRAM Throughput} %).  The four 4-byte stores of a thread's
chunk are the same addresses in the same order in all three kernels (the
SASS differs in the store's base register and offsets, -8..+4 instead of
0..+12, and in the mbarrier port's order); why the L2 then merges fewer of
the partial-sector writes is not established.  The single-stage, pipeline
and run-time-depth ports get the same store pattern and meet 0.97, so the
`range()` fact stays on by default; the A/B for every port is in the next
section.

Where the rest of the mbarrier port's gap is (rewrites timed beside the
original, not idioms: `ab_facts.VARIANTS`): uint32 counters alone
{ab:mbarrier_u32/assume+range+sreg+unroll}, chunks as `ac.chunk_view` alone {ab:mbarrier_view/assume+range+sreg+unroll}, both
{ab:mbarrier_u32_view/assume+range+sreg+unroll}: the 64-bit index arithmetic of Python `int` and the slices'
clamping around the same copies, barriers and stores (its producer loop is
112 SASS instructions against nvcc's 36, the consumer's 82 against 45;
both rewrites: 47 and 62).  Issue slots busy {ncu:port_mbarrier/Issue Slots Busy} % against
{ncu:C++_mbarrier/Issue Slots Busy} %, {ncu:port_mbarrier/Executed Instructions} instructions against
{ncu:C++_mbarrier/Executed Instructions}, the same achieved occupancy ({ncu:port_mbarrier/Achieved Occupancy} %).
"""


def notes_2026_12_02() -> str:
    return fill(NOTES_2026_12_02).rstrip("\n")


#: the facts A/B of every idiom port (2026-12-02, second run): all facts but
#: ``range()``, and none, one process each; every fact is the idioms suite of
#: the same run (:data:`FACTS_AB_RUN`)
FACTS_AB = "benchmarks/h200-2026-12-02b/perf/ab-facts.jsonl"
FACTS_AB_RUN = "benchmarks/h200-2026-12-02b/perf/results.json"
_NO_RANGE = "assume+sreg+unroll"


@lru_cache(maxsize=None)
def facts_ab_lines() -> dict[tuple[str, str], dict]:
    """(port, facts joined by ``+`` or ``none``) -> that line of :data:`FACTS_AB`."""
    out = {}
    for line in (ROOT / FACTS_AB).read_text().splitlines():
        if line.strip():
            d = json.loads(line)
            out[(d["port"], "+".join(d["facts"]) or "none")] = d
    return out


def facts_ab_table() -> str:
    """Every idiom port against its CUDA C++ original with every fact (the
    benchmark's idioms suite), without the ``range()`` fact and with none,
    all from one run; then which rows the ``range()`` fact moves."""
    from .idioms import PORTS

    ab = facts_ab_lines()
    run = load(FACTS_AB_RUN)
    lines = ["| port | every fact | all but `range` | none |", "|---|---|---|---|"]
    gains, losses = [], []
    for c in comparisons(False):
        if not c.benchmark.startswith("idiom:"):
            continue
        port = c.subject[len("numba_idiom_"):]
        if port not in PORTS:
            continue
        r, _ = row(c.subject, c.peer, (FACTS_AB_RUN,))
        cells = [f"{ab[(port, f)]['ratio']:.3f}" if (port, f) in ab else "-" for f in (_NO_RANGE, "none")]
        lines.append(f"| {c.benchmark[len('idiom: '):]} | {r.ratio:.3f} | {cells[0]} | {cells[1]} |")
        if (port, _NO_RANGE) in ab:
            d = r.ratio - ab[(port, _NO_RANGE)]["ratio"]
            if abs(d) >= 0.005:
                (gains if d > 0 else losses).append(f"{port} {d:+.3f}")
    return ("\n".join(lines) + f"\n\nRun {run['date']}; each ratio the median of three alternated rounds "
            f"against the original.  What the `range()` fact moves (every fact minus all but `range`, "
            f"0.005 or more): {', '.join(gains) or 'nothing'} up; {', '.join(losses) or 'nothing'} down.")


#: the launch diagnosis (``benchmarks/h200-2026-12-02d/launch/launch_pin.py``,
#: which runs ``benchmarks/h200-2026-12-02b/perf/launch_diag.py``'s processes
#: where the scheduler puts them and pinned to one CPU): one JSON line per
#: fresh process, then one summary line per (placement, kind)
LAUNCH_DIAG = "benchmarks/h200-2026-12-02d/launch/launch-pin.jsonl"

#: docs/benchmarks.md, "Launch": the launch rows of the newest run, then the
#: diagnosis (:func:`launch_diag_table`)
LAUNCH = """\
`ac.launch` stays under its 1.5x of `torch.add`
({ratio:ac_launch_plain/torch_launch_add}x; {figure:ac_launch_plain/torch_launch_add} against
{peer:ac_launch_plain/torch_launch_add}); the bare cuda.core launcher
({peer:ac_launch_plain/core_launch_bare}) is the floor both sit above.

What the package's launch hook costs a plain Numba launch is measured in
one process: `vadd[528, 128](a, b, out)` through the hook, alternated
batch by batch (a new order each turn, three rounds) with the same launch
of a second compile of `vadd` whose kernel object calls numba-cuda's own
`_Kernel.launch` (an instance attribute, found before the class's hook):
{figure:numba_launch_plain/numba_launch_unhooked} against {peer:numba_launch_plain/numba_launch_unhooked}, {ratio:numba_launch_plain/numba_launch_unhooked}x against 1.03.  The hook is one
Python call a launch: a plain kernel launched without dynamic shared
memory reads one attribute and goes on to numba-cuda's launch.

The row "Numba's own after import numba_asynccopy" times the same launch
in fresh processes (`bench/launch_stock.py`, four of each kind,
alternated, all pinned to one CPU near the GPU, each launching for 0.5 s
before it times): {figure:numba_launch_imported/numba_launch_stock} after the import against
{peer:numba_launch_imported/numba_launch_stock} stock, {ratio:numba_launch_imported/numba_launch_stock}x.  It is information, not a target:
fresh processes cannot resolve 3%.  A process's launches run at one of two
speeds, about 24-28 us or 31-82 us, whatever it imported, and pinning it
to one CPU does not remove the slow speed.  In the diagnosis below (three
rounds of a stock process, one after the import, and one after the import
with numba-cuda's own `_Kernel.launch` put back, each where the scheduler
put it, pinned to CPU 0, and pinned to CPU 15) four of nine stock
processes and two of nine unhooked ones ran at the slow speed, no imported
one did.  Among the processes of a round and placement that ran fast, the
imported one was 0.5 us slower than the unhooked one (median of seven
pairs, -1.1 to +3.6 us): the hook's one call, which the in-process row
measures without the processes' spread.
"""


def launch_diag_table() -> str:
    """The launch diagnosis: each fresh process's median time per launch
    (events and host), cold (after 50 launches) and warm (after 0.5 s more),
    in the order the processes ran, with the CPU it ran on; after
    :data:`LAUNCH` filled in."""
    lines = ["| process | round | CPU | cold: events / host (us) | warm: events / host (us) | hooked |",
             "|---|---|---|---|---|---|"]
    for line in (ROOT / LAUNCH_DIAG).read_text().splitlines():
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        if d.get("summary"):
            continue
        where = "free" if d.get("pinned") is None else f"pinned to {d['pinned']}"
        if "error" in d:
            lines.append(f"| {d['kind']} | - | {where} | error | error | - |")
            continue
        c, w = d["cold"], d["warm"]
        lines.append(f"| {d['kind']} | {d['round']} | {where} (ran on {d['cpu_start']}) | "
                     f"{c['event_median']:.1f} / {c['host_median']:.1f} | "
                     f"{w['event_median']:.1f} / {w['host_median']:.1f} | {d['hooked']} |")
    return fill(LAUNCH) + "\n" + "\n".join(lines)
