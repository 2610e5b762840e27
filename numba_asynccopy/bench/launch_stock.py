"""Numba's own launch timed in a fresh process, with or without the package.

Run as a script (``python -P launch_stock.py [--import-package]``), never
as ``-m numba_asynccopy...`` (that would import the package): the process
that measures stock numba-cuda must never import ``numba_asynccopy``, and
this file imports nothing from it.  It times ``vadd[blocks, 128](a, b, out)``
(the launch benchmark's kernel) as the benchmark's recorder times every
row: batches of up to 64 launches between two CUDA events, one untimed
launch before each batch, and prints one JSON line: per-launch times (ms)
of every batch, the host's own time per launch in each batch (from the
first launch call to the return of the last, before the stop event: what
the launches cost the CPU, whatever the GPU does meanwhile), whether the
package was imported, whether numba-cuda's ``_Kernel.launch`` was
hooked, and the CPU it ended on (``--cpu N`` pins it there first).
Before timing, the process launches for ``--warmup-s`` seconds (at
least ``--warmup`` launches): a process that starts on an idle GPU
times its first batches at the GPU's idle clock otherwise.  The benchmark
runs the two kinds of process alternately and compares their medians.

Other fresh-process scripts load this file by its path (never as a module
of the package) for the same timing loop: :func:`warm_up` and
:func:`time_batches`.

Example::

    python -P numba_asynccopy/bench/launch_stock.py --reps 25
    python -P numba_asynccopy/bench/launch_stock.py --reps 25 --import-package
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time


def _this_cpu() -> int:
    """The CPU this thread runs on now (glibc's sched_getcpu; -1 without it)."""
    import ctypes

    try:
        return int(ctypes.CDLL(None).sched_getcpu())
    except (OSError, AttributeError):
        return -1


BATCH = 64  # launches between the two events of a timed batch


def warm_up(launch, launches: int = 50, seconds: float = 0.5) -> int:
    """Call ``launch()`` in groups of 16 (a synchronize after each) for at
    least ``seconds`` and at least ``launches`` calls; the number made.

    Example::

        warm_up(lambda: k[528, 128](a, b, out))
    """
    from numba import cuda

    t_end = time.perf_counter() + seconds
    done = 0
    while done < launches or time.perf_counter() < t_end:
        for _ in range(16):
            launch()
        done += 16
        cuda.synchronize()
    return done


def time_batches(launch, reps: int, batch: int = BATCH) -> tuple[list[float], list[float]]:
    """(event time, host time) per launch in ms of each of ``reps`` batches of
    ``batch`` calls of ``launch()`` (one untimed call before each batch; the
    host time runs from the first call to the return of the last, before the
    stop event).

    Example::

        times, host = time_batches(lambda: k[528, 128](a, b, out), reps=25)
    """
    from numba import cuda

    start, stop = cuda.event(), cuda.event()
    times, host = [], []
    for _ in range(reps):
        launch()
        start.record()
        t0 = time.perf_counter_ns()
        for _ in range(batch):
            launch()
        t1 = time.perf_counter_ns()
        stop.record()
        stop.synchronize()
        times.append(cuda.event_elapsed_time(start, stop) / batch)
        host.append((t1 - t0) / batch / 1e6)
    return times, host


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--blocks", type=int, default=528)
    p.add_argument("--reps", type=int, default=25)
    p.add_argument("--warmup", type=int, default=50, help="untimed launches first (at least)")
    p.add_argument("--warmup-s", type=float, default=0.5,
                   help="and untimed launches for at least this many seconds")
    p.add_argument("--path", default=None, help="a folder to put first on sys.path (both kinds)")
    p.add_argument("--import-package", action="store_true", help="import numba_asynccopy first")
    p.add_argument("--cpu", type=int, default=None,
                   help="run on this CPU alone (os.sched_setaffinity), before any import")
    args = p.parse_args(argv)
    if args.cpu is not None:
        # both kinds on one CPU: the scheduler's choice of core (a NUMA node
        # near the GPU or the other one) moves a launch by more than the
        # package could
        os.sched_setaffinity(0, {args.cpu})
    if args.path:
        sys.path.insert(0, args.path)
    if args.import_package:
        import numba_asynccopy  # noqa: F401  (installs its launch hook)
    import numpy as np
    from numba import cuda, types
    from numba.cuda import dispatcher

    def vadd(a, b, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] + b[i]

    n = args.blocks * 128
    k = cuda.jit((types.float32[::1],) * 3)(vadd)
    ha = np.arange(n, dtype=np.float32)
    a, b = cuda.to_device(ha), cuda.to_device(2 * ha)
    out = cuda.device_array(n, np.float32)
    blocks = args.blocks
    k[blocks, 128](a, b, out)
    if not np.array_equal(out.copy_to_host(), 3 * ha):
        print(json.dumps({"error": "vadd wrote wrong sums"}))
        return 1

    def launch():
        k[blocks, 128](a, b, out)

    done = warm_up(launch, args.warmup, args.warmup_s)
    times, host = time_batches(launch, args.reps)
    assert all(math.isfinite(t) for t in times)
    print(json.dumps({
        "times_ms": times,
        "host_ms": host,
        "warmup_launches": done,
        "imported": "numba_asynccopy" in sys.modules,
        "hooked": hasattr(dispatcher._Kernel.launch, "__wrapped__"),
        "cpu": _this_cpu(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
