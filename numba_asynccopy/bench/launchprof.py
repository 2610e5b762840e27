"""Host cost of a launch: ``ac.launch(..., cluster=)`` against Numba's own.

``python -m numba_asynccopy.bench.launchprof`` (needs a GPU) times ``n``
launches of the small probe kernel of :mod:`numba_asynccopy.examples.exchange`
both ways, in alternating batches (``time.perf_counter`` around each batch,
``cuda.synchronize()`` at its end), and prints microseconds per launch
(median and best batch) and the ratio; then a cProfile of ``n``
``ac.launch`` calls (sorted by own time) showing where the rest goes.

Example::

    python -m numba_asynccopy.bench.launchprof --n 2000 --batches 5
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


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m numba_asynccopy.bench.launchprof",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=2000, help="launches per batch (default 2000)")
    p.add_argument("--batches", type=int, default=5, help="batches of each kind (default 5)")
    p.add_argument("--blocks", type=int, default=528, help="grid in blocks (default 528)")
    p.add_argument("--top", type=int, default=25, help="cProfile rows to print (default 25)")
    p.add_argument("--profile-plain", action="store_true",
                   help="also print the cProfile of Numba's own launch")
    return p.parse_args(argv)


def _batch_us(launch: Callable[[], None], n: int) -> float:
    """Microseconds per launch over one batch of ``n`` (ended by a synchronize)."""
    from numba import cuda

    cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        launch()
    cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def _profile(launch: Callable[[], None], n: int, top: int, title: str) -> str:
    from numba import cuda

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


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    from numba import cuda
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

    import numpy as np

    import numba_asynccopy as ac
    from numba_asynccopy.examples import exchange as ex

    blocks, cluster, n = args.blocks, ex.CLUSTER, args.n
    if blocks % cluster:
        print(f"launchprof: --blocks {blocks} is not a multiple of the cluster size {cluster}",
              file=sys.stderr)
        return 2
    probe = cuda.jit(ex.PROBE_SIGNATURE)(ex.launch_probe)
    out = cuda.device_array(blocks, np.int32)

    def plain() -> None:
        probe[blocks, 128](out)

    def with_cluster() -> None:
        ac.launch(probe, blocks, 128, (out,), cluster=cluster)

    # first launches: kernel load, attribute checks, caches; and both really ran as meant
    for launch, expect in ((plain, np.zeros(blocks, np.int32)),
                           (with_cluster, np.tile(np.arange(cluster, dtype=np.int32), blocks // cluster))):
        out.copy_to_device(np.full(blocks, -1, np.int32))
        launch()
        got = out.copy_to_host()
        if not np.array_equal(got, expect):
            print(f"launchprof: {launch.__name__} wrote {got[:8]}..., expected {expect[:8]}...",
                  file=sys.stderr)
            return 1
        for _ in range(50):  # warm-up
            launch()
    cuda.synchronize()

    times: dict[str, list[float]] = {"plain": [], "cluster": []}
    for _ in range(args.batches):  # alternate, so drift hits both alike
        times["plain"].append(_batch_us(plain, n))
        times["cluster"].append(_batch_us(with_cluster, n))
    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    print(f"launch host cost on {name}: {args.batches} batches of {n} launches, grid {blocks} "
          f"blocks of 128 threads (median / best batch)")
    print(f"  probe[{blocks}, 128](out)                           "
          f"{med['plain']:7.2f} / {best['plain']:7.2f} us per launch")
    print(f"  ac.launch(probe, {blocks}, 128, (out,), cluster={cluster})  "
          f"{med['cluster']:7.2f} / {best['cluster']:7.2f} us per launch")
    print(f"  ratio ac.launch / Numba: {med['cluster'] / med['plain']:.3f} (median), "
          f"{best['cluster'] / best['plain']:.3f} (best)")
    print()
    print(_profile(with_cluster, n, args.top, f"ac.launch(probe, {blocks}, 128, (out,), cluster={cluster})"))
    if args.profile_plain:
        print(_profile(plain, n, args.top, f"probe[{blocks}, 128](out)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
