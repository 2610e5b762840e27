"""Where a plain Numba launch's time goes, with and without the package.

Run from the repository root on a machine with a GPU:

    python3 -P benchmarks/h200-2026-12-02b/perf/launch_diag.py --rounds 3 > launch-diag.jsonl

It runs fresh processes of three kinds, alternately, ``--rounds`` times:
``stock`` (never imports numba_asynccopy), ``imported`` (imports it first:
numba-cuda's ``_Kernel.launch`` hooked) and ``unhooked`` (imports it, then
puts numba-cuda's own ``_Kernel.launch`` back).  Each process times
``vadd[528, 128](a, b, out)`` (the launch benchmark's kernel) twice with
``launch_stock.py``'s own loop (``time_batches``: batches of 64 launches
between two CUDA events, and the host's own time per launch in each batch;
``launch_stock.py`` is loaded by its path, so the stock process never
imports the package):

- ``cold``: after ``warm_up(launch, 50, 0)`` (the first run's 50 untimed
  launches, in ``warm_up``'s groups of 16: 64);
- ``warm``: after ``warm_up(launch, 0, 0.5)``, 0.5 s more;

then a cProfile of 2000 launches (first round only), top rows by own time.
One JSON line per process; the GPU's SM clock sampled every 50 ms by
``nvidia-smi`` goes to ``--clocks`` (with the processes' start and end
times on the same clock, ``time.time()``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


STOCK = Path(__file__).resolve().parents[3] / "numba_asynccopy" / "bench" / "launch_stock.py"


def _launch_stock():
    """``launch_stock.py`` as a module, loaded by its path (importing it as
    ``numba_asynccopy.bench.launch_stock`` would import the package)."""
    spec = importlib.util.spec_from_file_location("launch_stock", STOCK)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def child(kind: str, profile: bool) -> dict:
    if kind != "stock":
        import numba_asynccopy  # noqa: F401
    import numpy as np
    from numba import cuda, types
    from numba.cuda import dispatcher

    stock = _launch_stock()
    if kind == "unhooked":
        dispatcher._Kernel.launch = dispatcher._Kernel.launch.__wrapped__

    def vadd(a, b, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] + b[i]

    blocks = 528
    n = blocks * 128
    k = cuda.jit((types.float32[::1],) * 3)(vadd)
    ha = np.arange(n, dtype=np.float32)
    a, b = cuda.to_device(ha), cuda.to_device(2 * ha)
    out = cuda.device_array(n, np.float32)
    k[blocks, 128](a, b, out)
    assert np.array_equal(out.copy_to_host(), 3 * ha)

    def launch():
        k[blocks, 128](a, b, out)

    def timed(reps=25):
        ev, host = stock.time_batches(launch, reps)
        ev = [t * 1e3 for t in ev]
        host = [t * 1e3 for t in host]
        return {"event_us": ev, "host_us": host,
                "event_median": statistics.median(ev), "host_median": statistics.median(host)}

    res = {"kind": kind, "t_start": time.time(),
           "hooked": hasattr(dispatcher._Kernel.launch, "__wrapped__")}
    stock.warm_up(launch, 50, 0.0)
    res["cold"] = timed()
    stock.warm_up(launch, 0, 0.5)
    res["warm"] = timed()
    if profile:
        import cProfile
        import io
        import pstats

        prof = cProfile.Profile()
        cuda.synchronize()
        prof.enable()
        for _ in range(2000):
            k[blocks, 128](a, b, out)
        prof.disable()
        cuda.synchronize()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(18)
        res["profile"] = s.getvalue()
    res["t_end"] = time.time()
    return res


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--clocks", default="launch-clocks.csv")
    p.add_argument("--child", default=None)
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.profile)))
        return 0
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw",
                            "--format=csv,noheader", "-lms", "50"],
                           stdout=open(args.clocks, "w"), stderr=subprocess.DEVNULL)
    try:
        for r in range(args.rounds):
            for kind in ("stock", "imported", "unhooked"):
                cmd = [sys.executable, "-P", __file__, "--child", kind] + (["--profile"] if r == 0 else [])
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                                      env={**os.environ})
                line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
                if proc.returncode or not line:
                    print(json.dumps({"kind": kind, "error": proc.stderr[-600:]}), flush=True)
                    continue
                res = json.loads(line[-1])
                res["round"] = r
                print(json.dumps(res), flush=True)
                print(f"# {kind:9s} round {r}: cold event {res['cold']['event_median']:6.2f} host "
                      f"{res['cold']['host_median']:6.2f} | warm event {res['warm']['event_median']:6.2f} "
                      f"host {res['warm']['host_median']:6.2f} us", file=sys.stderr, flush=True)
    finally:
        smi.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
