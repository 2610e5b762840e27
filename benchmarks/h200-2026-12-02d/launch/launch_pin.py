"""Is a plain Numba launch slower after ``import numba_asynccopy``, or is it
the CPU the process runs on?

Run from the repository root on a machine with a GPU:

    python3 -P benchmarks/h200-2026-12-02d/launch/launch_pin.py > launch-pin.jsonl

Fresh processes of the three kinds of ``launch_diag.py`` (``stock``,
``imported``, ``unhooked``: loaded by its path, its ``child`` does the
timing), alternately, under three placements: ``free`` (the scheduler's
choice), and pinned (``os.sched_setaffinity``) to each of two CPUs,
``--cpus`` (default: the first and the last CPU this process may use, which
on a two-socket host sit on different NUMA nodes).  Each process records the
CPU and NUMA node it ran on at the start and at the end.  One JSON line a
process, then a summary line a (placement, kind): the median of the
processes' warm medians (event and host time, us).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

DIAG = Path(__file__).resolve().parents[2] / "h200-2026-12-02b" / "perf" / "launch_diag.py"


def _this_cpu() -> int:
    """The CPU this thread runs on now (glibc's sched_getcpu; -1 without it).

    The same as ``numba_asynccopy/bench/launch_stock.py``'s, not imported
    from it: a stock process must never import the package (its launch hook)."""
    import ctypes

    try:
        return int(ctypes.CDLL(None).sched_getcpu())
    except (OSError, AttributeError):
        return -1


def _node(cpu: int) -> int:
    for p in Path(f"/sys/devices/system/cpu/cpu{cpu}").glob("node*"):
        return int(p.name[4:])
    return -1


def child(kind: str, cpu: int | None) -> dict:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    start = _this_cpu()
    spec = importlib.util.spec_from_file_location("launch_diag", DIAG)
    diag = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(diag)
    res = diag.child(kind, False)
    end = _this_cpu()
    for k in ("cold", "warm"):  # the batches stay in the medians
        res[k] = {kk: v for kk, v in res[k].items() if kk.endswith("median")}
    res.update(cpu_start=start, cpu_end=end, node_start=_node(start), node_end=_node(end),
               pinned=cpu)
    return res


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cpus", type=int, nargs=2, default=None)
    p.add_argument("--child", default=None)
    p.add_argument("--cpu", type=int, default=None)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.cpu)))
        return 0
    allowed = sorted(os.sched_getaffinity(0))
    cpus = args.cpus or [allowed[0], allowed[-1]]
    placements = [None, *cpus]
    got: dict = {}
    for r in range(args.rounds):
        for cpu in placements:
            for kind in ("stock", "imported", "unhooked"):
                cmd = [sys.executable, "-P", __file__, "--child", kind]
                if cpu is not None:
                    cmd += ["--cpu", str(cpu)]
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
                if proc.returncode or not line:
                    print(json.dumps({"kind": kind, "pinned": cpu, "error": proc.stderr[-600:]}), flush=True)
                    continue
                res = json.loads(line[-1])
                res["round"] = r
                print(json.dumps(res), flush=True)
                got.setdefault((cpu, kind), []).append(res)
                print(f"# round {r} {str(cpu):5s} {kind:9s} cpu {res['cpu_start']}->{res['cpu_end']} "
                      f"node {res['node_start']}: warm event {res['warm']['event_median']:6.2f} host "
                      f"{res['warm']['host_median']:6.2f} us", file=sys.stderr, flush=True)
    for (cpu, kind), rs in got.items():
        print(json.dumps({"summary": True, "pinned": cpu, "kind": kind, "processes": len(rs),
                          "event_us": statistics.median(x["warm"]["event_median"] for x in rs),
                          "host_us": statistics.median(x["warm"]["host_median"] for x in rs),
                          "each_event_us": [round(x["warm"]["event_median"], 2) for x in rs]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
