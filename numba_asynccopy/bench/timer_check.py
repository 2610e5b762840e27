"""``python -m numba_asynccopy.bench.timer_check``: time one kernel with
:func:`numba_asynccopy.testing.do_bench` and with torch's CUDA events (the
loop ``triton.testing.do_bench`` runs: an L2 flush, then the call between
two events, per repetition), and print both.

The kernel is a Numba copy of ``--words`` float32 (default 2**25: 128 MiB
each way).  Exit status 1 when the medians differ by more than
``--tolerance`` (default 5 %).
"""

from __future__ import annotations

import argparse
import statistics
import sys


def torch_event_times(fn, *, reps: int, warmup: int, flush_bytes: int) -> list[float]:
    """Per-call times (ms) with torch.cuda.Event, an L2 flush before each."""
    import torch

    cache = torch.empty(flush_bytes, dtype=torch.int8, device="cuda")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, stops):
        cache.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, stops)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m numba_asynccopy.bench.timer_check", description=__doc__)
    p.add_argument("--words", type=int, default=1 << 25)
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--tolerance", type=float, default=0.05)
    args = p.parse_args(argv)

    import numpy as np
    import torch
    from numba import cuda

    from ..testing import L2Flush, Timing, do_bench, report_table
    from ..testing.bench import BenchResult

    @cuda.jit
    def copy(dst, src):
        i = cuda.grid(1)
        while i < src.shape[0]:
            dst[i] = src[i]
            i += cuda.gridsize(1)

    src = cuda.to_device(np.random.default_rng().random(args.words, dtype=np.float32))
    dst = cuda.device_array_like(src)

    def launch():
        copy[132 * 8, 256](dst, src)

    flush_bytes = L2Flush().nbytes
    ours = do_bench(launch, name="numba copy (do_bench)", reps=args.reps, batches=10,
                    work=2 * 4 * args.words, unit="TB/s")
    theirs = Timing("numba copy (torch events)",
                    torch_event_times(launch, reps=args.reps, warmup=10, flush_bytes=flush_bytes))
    both = BenchResult(ours.subject, theirs, work=ours.work, unit="TB/s")
    assert np.array_equal(dst.copy_to_host(), src.copy_to_host())
    print(f"device: {cuda.get_current_device().name.decode() if isinstance(cuda.get_current_device().name, bytes) else cuda.get_current_device().name}; "
          f"torch {torch.__version__}; {args.words} float32 words; {args.reps} reps each; "
          f"L2 flush {flush_bytes >> 20} MiB")
    print(report_table([("same kernel, two timers", both)]))
    a, b = ours.subject.median_ms, theirs.median_ms
    diff = abs(a - b) / b
    print(f"do_bench median {a * 1e3:.2f} us (IQR {ours.subject.q25_ms * 1e3:.2f}-{ours.subject.q75_ms * 1e3:.2f}), "
          f"torch events median {b * 1e3:.2f} us (IQR {theirs.q25_ms * 1e3:.2f}-{theirs.q75_ms * 1e3:.2f}); "
          f"difference {diff * 100:.2f} % (tolerance {args.tolerance * 100:g} %)")
    print("spread of the torch timing between its halves:",
          f"{abs(statistics.median(theirs.times_ms[::2]) - statistics.median(theirs.times_ms[1::2])) / b * 100:.2f} %")
    if diff > args.tolerance:
        print("MISMATCH: the two timers disagree beyond the tolerance")
        return 1
    print("agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
