"""Host cost of a launch: ``ac.launch`` against Numba's own launch and torch.

``python -m numba_asynccopy.bench.launchprof`` (needs a GPU, sm_90 for the
cluster row) times ``n`` launches of a 3-argument kernel (``out = a + b``
over ``blocks * 128`` float32 elements) four ways, in alternating batches
(``time.perf_counter`` around each batch, ``cuda.synchronize()`` at its
end), and prints microseconds per launch (median and best batch):

- Numba's own launch, ``vadd[blocks, 128](a, b, out)``;
- ``ac.launch(vadd, blocks, 128, (a, b, out))``;
- ``ac.launch(..., cluster=2)``;
- ``torch.add(ta, tb, out=tc)`` of the same size (the reference);
- cuda.core's ``launch`` of the same compiled kernel with its parameters
  built once (the bare launcher: the floor of any Python launch path).

Then Numba's own launch in fresh processes (``launch_stock.py``), one that
never imports the package and one that imports it first, alternately,
three of each: what importing the package costs a plain launch.

Each ``ac.launch`` row's target is at most 1.5x the torch row.  Then a
cProfile of ``n`` ``ac.launch`` calls (sorted by own time) shows where the
rest goes.  Every row's output is checked before it is timed.

Example::

    python -m numba_asynccopy.bench.launchprof --n 3000 --batches 5
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from typing import Callable

from numba import cuda, types

#: the launch rows' target: host cost per launch against torch.add's
TARGET_VS_TORCH = 1.5
CLUSTER = 2


def vadd(a, b, out):
    """out = a + b (the kernel whose launches are timed)."""
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


VADD_SIGNATURE = (types.float32[::1], types.float32[::1], types.float32[::1])


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m numba_asynccopy.bench.launchprof",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=3000, help="launches per batch (default 3000)")
    p.add_argument("--batches", type=int, default=5, help="batches of each kind (default 5)")
    p.add_argument("--blocks", type=int, default=528, help="grid in blocks (default 528)")
    p.add_argument("--top", type=int, default=25, help="cProfile rows to print (default 25)")
    p.add_argument("--profile-plain", action="store_true",
                   help="also print the cProfile of Numba's own launch")
    return p.parse_args(argv)


def _batch_us(launch: Callable[[], None], n: int) -> float:
    """Microseconds per launch over one batch of ``n`` (ended by a synchronize)."""
    cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        launch()
    cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def _profile(launch: Callable[[], None], n: int, top: int, title: str) -> str:
    cuda.synchronize()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        launch()
    prof.disable()
    cuda.synchronize()
    out = io.StringIO()
    out.write(f"--- cProfile: {n} x {title}, sorted by own time (tottime) ---\n")
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def launch_rows(blocks: int) -> tuple[dict[str, tuple[str, Callable[[], None]]], Callable[[str], str]]:
    """The timed launches (key -> (label, launch)) and a checker
    ``check(key) -> description`` that runs one launch on poisoned output
    and compares it with ``a + b`` (raises AssertionError).  The torch row
    is left out where torch (with CUDA) is not installed."""
    import types as types_

    import numpy as np

    import numba_asynccopy as ac

    n = blocks * 128
    rng = np.random.default_rng()
    ha = rng.standard_normal(n).astype(np.float32)
    hb = rng.standard_normal(n).astype(np.float32)
    a, b = cuda.to_device(ha), cuda.to_device(hb)
    out = cuda.device_array(n, np.float32)
    want = ha + hb
    k = cuda.jit(VADD_SIGNATURE)(vadd)
    args = (a, b, out)
    rows: dict[str, tuple[str, Callable[[], None]]] = {
        "numba_launch_plain": (f"Numba's own launch, vadd[{blocks}, 128](a, b, out)",
                               lambda: k[blocks, 128](a, b, out)),
        "ac_launch_plain": (f"ac.launch(vadd, {blocks}, 128, (a, b, out))",
                            lambda: ac.launch(k, blocks, 128, args)),
        "numba_launch_cluster": (f"ac.launch(vadd, ..., cluster={CLUSTER})",
                                 lambda: ac.launch(k, blocks, 128, args, cluster=CLUSTER)),
    }
    # the same launch without the package's hook, in this process: a second
    # compile of vadd whose kernel object launches with numba-cuda's own
    # _Kernel.launch (an instance attribute, found before the class's hook);
    # timed in alternation with numba_launch_plain, it prices the hook alone,
    # free of the process-to-process spread of the fresh-process rows
    try:
        from ..host import _numba_internals as nb_

        k_own = cuda.jit(VADD_SIGNATURE)(vadd)
        own = nb_.kernel_for_args(k_own, args)
        own.launch = types_.MethodType(nb_.original_launch(), own)
        rows["numba_launch_unhooked"] = (
            f"Numba's own launch, vadd[{blocks}, 128](a, b, out), numba-cuda's _Kernel.launch "
            "(the package's hook bypassed)", lambda: k_own[blocks, 128](a, b, out))
    except Exception as e:  # reported by the caller as the row's error
        rows["numba_launch_unhooked"] = (f"unhooked launch: {type(e).__name__}: {e}", None)
    # the bare launcher: cuda.core's launch of the same compiled kernel with
    # Numba's parameters marshalled once (no dispatch, no marshalling, no
    # LaunchConfig per launch): the floor for any Python launch path
    try:
        from cuda.core import LaunchConfig
        from cuda.core import launch as core_launch

        from ..host import _numba_internals as nb

        compiled = nb.kernel_for_args(k, args)
        core_kernel = nb.cufunc_of(compiled).kernel
        params, _ = nb.marshal_args(compiled, args, 0)
        core_stream = nb.core_stream(0)
        core_config = LaunchConfig(grid=blocks, block=128)
        rows["core_launch_bare"] = (
            "cuda.core launch(stream, config, kernel, *params), parameters built once",
            lambda: core_launch(core_stream, core_config, core_kernel, *params))
    except Exception as e:  # reported by the caller as the row's error
        rows["core_launch_bare"] = (f"cuda.core launch: {type(e).__name__}: {e}", None)
    torch_out = {}
    try:
        import torch

        if torch.cuda.is_available():
            ta = torch.from_numpy(ha).cuda()
            tb = torch.from_numpy(hb).cuda()
            tc = torch.empty_like(ta)
            torch_out["t"] = tc
            rows["torch_launch_add"] = (f"torch.add(a, b, out=c), {n} float32",
                                        lambda: torch.add(ta, tb, out=tc))
    except ImportError:
        pass

    def check(key: str) -> str:
        if key == "torch_launch_add":
            torch_out["t"].fill_(float("nan"))
            rows[key][1]()
            got = torch_out["t"].cpu().numpy()
        else:
            out.copy_to_device(np.full(n, np.nan, np.float32))
            rows[key][1]()
            got = out.copy_to_host()
        if not np.array_equal(got, want):
            raise AssertionError(f"{rows[key][0]} wrote {got[:4]}..., expected {want[:4]}...")
        return f"{n} sums equal a + b"

    return rows, check


#: the fresh-process rows: key -> (label, import the package first)
PROCESS_ROWS = {
    "numba_launch_stock": ("Numba's own launch, vadd[blocks, 128], process that never imports "
                           "numba_asynccopy", False),
    "numba_launch_imported": ("Numba's own launch, vadd[blocks, 128], process after "
                              "import numba_asynccopy", True),
}


def launch_cpu() -> int | None:
    """The CPU the fresh-process rows run on: the last CPU near the current
    GPU (its PCI device's ``local_cpulist`` in sysfs) that this process may
    use, else the last one it may use; None where the platform cannot pin.

    Example::

        cpu = launch_cpu()   # e.g. 15 where the GPU's local CPUs are 0-15
    """
    import os
    from pathlib import Path

    if not hasattr(os, "sched_getaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    try:
        dev = cuda.get_current_device()
        bus = f"{dev.PCI_DOMAIN_ID:04x}:{dev.PCI_BUS_ID:02x}:{dev.PCI_DEVICE_ID:02x}.0"
        near = _cpulist(Path(f"/sys/bus/pci/devices/{bus}/local_cpulist").read_text())
        mine = [c for c in near if c in allowed]
        if mine:
            return mine[-1]  # the last: CPU 0 takes the host's housekeeping
    except Exception:  # no sysfs entry (a VM, another OS): any one CPU, the same for both kinds
        pass
    return allowed[-1]


def _cpulist(text: str) -> list[int]:
    """``"0-3,8,10-11"`` (a sysfs CPU list) -> ``[0, 1, 2, 3, 8, 10, 11]``."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            cpus += range(int(lo), int(hi or lo) + 1)
    return cpus


def stock_vs_imported(blocks: int, reps: int, rounds: int = 4,
                      processes: list[dict] | None = None,
                      cpu: int | None = -1) -> dict[str, list[float]]:
    """Per-launch times (ms) of ``vadd[blocks, 128]`` in fresh processes
    (``launch_stock.py``), one that never imports the package and one that
    imports it first, run alternately ``rounds`` times each: key of
    :data:`PROCESS_ROWS` -> every batch's time.  ``processes``, when given,
    gets one summary per process in the order they ran (``key``, median and
    best batch, median host time per launch, all in ms, and its CPU).
    Every process runs on the one CPU ``cpu`` (default -1:
    :func:`launch_cpu`; None: wherever the scheduler puts it): a process's
    launch time depends on its core by more than the package's hook costs.
    Raises RuntimeError when a process fails or was not what it claims
    (imported, hooked)."""
    import json
    import subprocess
    from pathlib import Path

    script = Path(__file__).with_name("launch_stock.py")
    root = str(Path(__file__).resolve().parents[2])
    out: dict[str, list[float]] = {k: [] for k in PROCESS_ROWS}
    if cpu == -1:
        cpu = launch_cpu()
    pin = [] if cpu is None else ["--cpu", str(cpu)]
    for _ in range(rounds):
        for key, (_, imported) in PROCESS_ROWS.items():
            cmd = [sys.executable, "-P", str(script), "--blocks", str(blocks), "--reps", str(reps),
                   "--path", root, *pin] + (["--import-package"] if imported else [])
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if proc.returncode or not lines:
                raise RuntimeError(f"{script.name}: rc {proc.returncode}: {proc.stderr[-400:]}")
            res = json.loads(lines[-1])
            if "error" in res:
                raise RuntimeError(f"{script.name}: {res['error']}")
            if res["imported"] != imported or res["hooked"] != imported:
                raise RuntimeError(f"{script.name}: expected imported={imported}, got {res}")
            out[key] += res["times_ms"]
            if processes is not None:
                processes.append({"key": key, "median_ms": statistics.median(res["times_ms"]),
                                  "best_ms": min(res["times_ms"]),
                                  "host_median_ms": statistics.median(res["host_ms"]),
                                  "cpu": res.get("cpu")})
    return out


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    from numba.cuda.core import config

    if config.ENABLE_CUDASIM or not cuda.is_available():
        why = "NUMBA_ENABLE_CUDASIM=1 is set" if config.ENABLE_CUDASIM else "no CUDA GPU is available"
        print(f"launchprof: {why}; it times real kernel launches: run it on a machine with a "
              "GPU (sm_90 or newer).", file=sys.stderr)
        return 2
    cc = cuda.get_current_device().compute_capability
    if cc < (9, 0):
        print(f"launchprof: thread-block clusters need sm_90 or newer; this GPU is sm_{cc[0]}{cc[1]}.",
              file=sys.stderr)
        return 2
    blocks, n = args.blocks, args.n
    if blocks % CLUSTER:
        print(f"launchprof: --blocks {blocks} is not a multiple of the cluster size {CLUSTER}",
              file=sys.stderr)
        return 2

    rows, check = launch_rows(blocks)
    for key in [k for k, (_, launch) in rows.items() if launch is None]:
        print(f"launchprof: no {key} row: {rows.pop(key)[0]}", file=sys.stderr)
    for key in rows:  # first launches (compile, checks, caches); then check each really ran
        try:
            check(key)
        except AssertionError as e:
            print(f"launchprof: {e}", file=sys.stderr)
            return 1
        for _ in range(50):  # warm-up
            rows[key][1]()
    cuda.synchronize()

    times: dict[str, list[float]] = {k: [] for k in rows}
    for _ in range(args.batches):  # alternate, so drift hits all alike
        for key, (_, launch) in rows.items():
            times[key].append(_batch_us(launch, n))
    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    print(f"launch host cost on {name}: {args.batches} batches of {n} launches, grid {blocks} "
          f"blocks of 128 threads, {blocks * 128} float32 (median / best batch)")
    width = max(len(label) for label, _ in rows.values())
    for key, (label, _) in rows.items():
        print(f"  {label:{width}s}  {med[key]:7.2f} / {best[key]:7.2f} us per launch")
    ref = "torch_launch_add" if "torch_launch_add" in rows else None
    for key in ("ac_launch_plain", "numba_launch_cluster", "numba_launch_plain"):
        line = f"  {rows[key][0]:{width}s}"
        if ref:
            r = med[key] / med[ref]
            target = (f"target <= {TARGET_VS_TORCH:g}: {'met' if r <= TARGET_VS_TORCH else 'MISSED'}"
                      if key != "numba_launch_plain" else "info")
            line += f"  {r:5.2f}x torch.add ({target})"
        if key != "numba_launch_plain":
            line += f"  {med[key] / med['numba_launch_plain']:5.2f}x Numba's launch"
        print(line)
    if ref is None:
        print("  (torch with CUDA is not installed: no torch.add reference)")
    each: list[dict] = []
    procs = stock_vs_imported(blocks, args.batches * 5, processes=each)
    pmed = {k: statistics.median(v) * 1e3 for k, v in procs.items()}
    print("Numba's own launch in fresh processes, 3 of each kind alternately (CUDA events, "
          "batches of 64; median / best batch):")
    for key, (label, _) in PROCESS_ROWS.items():
        print(f"  {label}  {pmed[key]:7.2f} / {min(procs[key]) * 1e3:7.2f} us per launch")
    for p in each:
        print(f"    {p['key']:22s} process: {p['median_ms'] * 1e3:7.2f} us median, host "
              f"{p['host_median_ms'] * 1e3:7.2f} us per launch")
    print(f"  after import / stock: {pmed['numba_launch_imported'] / pmed['numba_launch_stock']:.3f}")
    print()
    print(_profile(rows["ac_launch_plain"][1], n, args.top, rows["ac_launch_plain"][0]))
    print(_profile(rows["numba_launch_cluster"][1], n, args.top, rows["numba_launch_cluster"][0]))
    if args.profile_plain:
        print(_profile(rows["numba_launch_plain"][1], n, args.top, rows["numba_launch_plain"][0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
