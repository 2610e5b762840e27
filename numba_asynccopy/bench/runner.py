"""``python -m numba_asynccopy.bench``: build the twins, run every suite in
its own process, print one table, write JSON and a PNG.

Each suite (copy, SGEMM, stencil) runs in a child process so that a kernel
fault, which leaves the CUDA context unusable, or a hang costs only that
suite's remaining rows; the parent never touches the GPU.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import report
from .suites import SUITES, Measurement, run_suite, suite_keys


def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m numba_asynccopy.bench", description=__doc__)
    p.add_argument("--out", default="bench-results", help="directory for results.json, results.png, logs")
    p.add_argument("--quick", action="store_true", help="small sizes and few repeats (a smoke test)")
    p.add_argument("--only", default="", help="comma-separated suites: " + ",".join(SUITES))
    p.add_argument("--budget-s", type=float, default=None,
                   help="wall-clock budget for all suites (default 210 s, quick 150 s)")
    p.add_argument("--no-twins", action="store_true", help="skip building the CUDA C++ twins")
    p.add_argument("--twins-lib", default="",
                   help="a twins library already built (the same nvcc command, twins-build.log): "
                        "use it instead of building one")
    # internal: the child-process side
    p.add_argument("--suite", help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _compute_capability() -> tuple[int, int]:
    """From nvidia-smi (the parent stays off the GPU); 9.0 if it cannot tell."""
    try:
        txt = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.split()[0]
        major, minor = txt.split(".")
        return int(major), int(minor)
    except Exception:
        return (9, 0)


def _child_env() -> dict:
    env = dict(os.environ)
    env.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def main(argv=None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    if args.suite:
        return run_suite(args.suite, Path(args.child_out), args.quick, args.budget_s or 120,
                         args.twins_lib or None)

    t0 = time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    budget = args.budget_s or (150.0 if args.quick else 210.0)
    names = [s.strip() for s in args.only.split(",") if s.strip()] or list(SUITES)
    unknown = [s for s in names if s not in SUITES]
    if unknown:
        print(f"unknown suite(s): {', '.join(unknown)}; known: {', '.join(SUITES)}")
        return 2

    cc = _compute_capability()
    twins_lib, twins_note = "", "twins: skipped (--no-twins)"
    if args.twins_lib and not args.no_twins:
        twins_lib, twins_note = args.twins_lib, f"twins: {args.twins_lib} (prebuilt)"
        print(twins_note, flush=True)
    elif not args.no_twins:
        from .twins import Build, TwinError

        print(f"building the CUDA C++ twins for sm_{cc[0]}{cc[1]} ...", flush=True)
        build = Build(out, cc)
        try:
            lib = build.library(timeout=240)
            twins_lib, twins_note = str(lib.path), f"twins: {lib.path} (log {build.log_path})"
        except TwinError as e:
            twins_note = f"twins: not built: {e}"
        print(twins_note, flush=True)

    results: dict[str, Measurement] = {}
    info: dict = {}
    for name in names:
        remaining = budget - (time.monotonic() - t0)
        child_out = out / f"suite-{name}.json"
        child_out.unlink(missing_ok=True)
        status = None
        if remaining <= 5:
            status = "skipped: time budget spent"
        else:
            cmd = [sys.executable, "-m", "numba_asynccopy.bench", "--suite", name,
                   "--child-out", str(child_out), "--budget-s", f"{remaining:.0f}",
                   "--twins-lib", twins_lib] + (["--quick"] if args.quick else [])
            with open(out / f"suite-{name}.stderr", "w") as err:
                try:
                    proc = subprocess.run(cmd, stderr=err, env=_child_env(), timeout=remaining + 60)
                    if proc.returncode:
                        status = f"error: suite process exited with code {proc.returncode}"
                except subprocess.TimeoutExpired:
                    status = "error: suite process killed after the time budget"
        got = {}
        if child_out.exists():
            try:
                data = json.loads(child_out.read_text())
                info = info or data.get("info", {})
                if data.get("info", {}).get("suite_error"):
                    status = status or f"error: suite {name}: {data['info']['suite_error']}"
                got = {m["key"]: Measurement(**m) for m in data.get("measurements", [])}
            except Exception as e:
                status = status or f"error: unreadable suite output ({type(e).__name__}: {e})"
        elif status is None:
            status = "error: suite wrote no results"
        if status and status.startswith("error") and (out / f"suite-{name}.stderr").exists():
            tail = (out / f"suite-{name}.stderr").read_text().strip().splitlines()[-1:]
            if tail:
                status += f" (last stderr line: {tail[0][:160]})"
        results.update(got)
        for key in suite_keys(name, args.quick):
            if key not in results:
                results[key] = Measurement(key, key, "numba", "", status=status or "error: not measured")

    for m in report.pending_measurements():
        results.setdefault(m.key, m)

    rows = report.build_rows(results, report.comparisons(args.quick))
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    device = info.get("device", "unknown device")
    title = f"numba-asynccopy benchmarks, {device}, {when}" + (" (quick)" if args.quick else "")
    table = report.format_table(rows)
    report.write_json(out / "results.json", info, results, rows,
                      {"title": title, "date": when, "quick": args.quick, "twins": twins_note,
                       "elapsed_s": round(time.monotonic() - t0, 1)})
    png_note = report.write_png(out / "results.png", rows, title)
    print()
    print(title)
    print(table)
    print(f"\n{twins_note}\nwrote {out / 'results.json'}; {png_note}; "
          f"{time.monotonic() - t0:.0f} s in all")
    errors = [m.key for m in results.values() if m.status.startswith("error")]
    if errors:
        print(f"{len(errors)} measurement(s) failed: {', '.join(errors)} (logs in {out})")
    return 1 if errors else 0
