"""Device-side helpers of the benchmark: random fills, poison, checks, timing.

Inputs are drawn on the device (a counter-based hash seeded from the OS at
every run), so gigabyte buffers get fresh random data in milliseconds.
"""

from __future__ import annotations

import math
import os
from typing import Callable

import numpy as np
from numba import cuda

_GRID = 132 * 8
_BLOCK = 256


@cuda.jit(device=True, inline="always")
def _mix(x):
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@cuda.jit
def _fill_random_u32(a, seed):
    i = cuda.grid(1)
    while i < a.shape[0]:
        a[i] = np.uint32(_mix(np.uint64(i) * np.uint64(0x9E3779B97F4A7C15) + seed) >> np.uint64(32))
        i += cuda.gridsize(1)


@cuda.jit
def _fill_random_f32(a, seed):
    i = cuda.grid(1)
    while i < a.shape[0]:
        h = _mix(np.uint64(i) * np.uint64(0x9E3779B97F4A7C15) + seed) >> np.uint64(40)
        a[i] = np.float32(np.float64(h) * (2.0 / 16777216.0) - 1.0)  # uniform in [-1, 1)
        i += cuda.gridsize(1)


@cuda.jit
def _fill_u32(a, v):
    i = cuda.grid(1)
    while i < a.shape[0]:
        a[i] = v
        i += cuda.gridsize(1)


@cuda.jit
def _count_mismatch(a, b, count):
    i = cuda.grid(1)
    while i < a.shape[0]:
        if a[i] != b[i]:
            cuda.atomic.add(count, 0, np.uint64(1))
        i += cuda.gridsize(1)


@cuda.jit
def _count_nan(a, count):
    i = cuda.grid(1)
    while i < a.shape[0]:
        if a[i] != a[i]:
            cuda.atomic.add(count, 0, np.uint64(1))
        i += cuda.gridsize(1)


def flat(a):
    """1-D view of a C-contiguous device array."""
    return a.reshape(a.size)


def fresh_seed() -> int:
    return int.from_bytes(os.urandom(8), "little")


def fill_random(a) -> None:
    """Fresh random data: uint32 bits, or float32 uniform in [-1, 1)."""
    f = flat(a)
    if a.dtype == np.uint32:
        _fill_random_u32[_GRID, _BLOCK](f, np.uint64(fresh_seed()))
    elif a.dtype == np.float32:
        _fill_random_f32[_GRID, _BLOCK](f, np.uint64(fresh_seed()))
    else:
        raise TypeError(a.dtype)


def poison(a) -> None:
    """0xFFC00000 words (a float32 NaN) everywhere: unwritten outputs show."""
    _fill_u32[_GRID, _BLOCK](flat(a).view(np.uint32), np.uint32(0xFFC00000))


def mismatches(a, b) -> int:
    count = cuda.to_device(np.zeros(1, np.uint64))
    _count_mismatch[_GRID, _BLOCK](flat(a).view(np.uint32), flat(b).view(np.uint32), count)
    return int(count.copy_to_host()[0])


def launch_poisoned(launch: Callable[[], None], out, unwritten: str | None = None) -> None:
    """Poison ``out``, run ``launch`` to completion; with ``unwritten`` (what
    ``out`` holds, say "elements of C"), raise if any of it is still poison."""
    poison(out)
    launch()
    cuda.synchronize()
    if unwritten is not None:
        left = nans(out)
        if left:
            raise AssertionError(f"{left} {unwritten} were not written")


def exact_check(launch: Callable[[], None], out, want, words: str, ok: str) -> Callable[[], str]:
    """A benchmark row's output check: poison ``out``, run ``launch``, and
    raise unless every word of ``out`` equals ``want`` (the error says how
    many of ``words`` differ); returns ``ok``."""
    def check() -> str:
        launch_poisoned(launch, out)
        bad = mismatches(want, out)
        if bad:
            raise AssertionError(f"{bad} of {words} differ")
        return ok
    return check


def nans(a) -> int:
    count = cuda.to_device(np.zeros(1, np.uint64))
    _count_nan[_GRID, _BLOCK](flat(a), count)
    return int(count.copy_to_host()[0])


def bench(fn, *, reps: int, warmup: int, min_batch_ms: float = 2.0) -> list[float]:
    """Per-call times (ms) of ``fn`` over ``reps`` timed batches, CUDA events
    (:func:`numba_asynccopy.testing.event_times`, the package's one timing
    loop: a batch of about ``min_batch_ms`` after one untimed call)."""
    from ..testing.bench import event_times

    return event_times(fn, reps=reps, warmup=warmup, min_batch_ms=min_batch_ms)


def bench_alternating(fns, *, reps: int, warmup: int, rounds: int = 3,
                      min_batch_ms: float = 2.0, shuffle: bool = False) -> list[list[list[float]]]:
    """Per-call times (ms) of each of ``fns`` timed in alternation: in each
    of ``rounds`` rounds, ``reps`` batches of each function, one batch of
    each in turn (so drift of clock or temperature hits all alike).
    ``out[round][i]`` holds function ``i``'s batches of that round.  Batches
    are sized and timed as :func:`bench` sizes and times them.

    ``shuffle``: each turn takes the functions in a new order (a seeded
    permutation, the same in every run), so no function always runs right
    after the same other one: a power-limited GPU runs a kernel slower
    after a hotter one, and in a fixed order the function that follows the
    hottest pays for it in every batch."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    cuda.synchronize()
    start, stop = cuda.event(), cuda.event()
    sizes = []
    for fn in fns:
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        est = cuda.event_elapsed_time(start, stop)
        sizes.append(max(1, min(64, math.ceil(min_batch_ms / max(est, 1e-3)))))
    out = []
    order = np.random.default_rng(0)
    for _ in range(rounds):
        times: list[list[float]] = [[] for _ in fns]
        for _ in range(reps):
            for i in (order.permutation(len(fns)) if shuffle else range(len(fns))):
                fn = fns[i]
                fn()
                start.record()
                for _ in range(sizes[i]):
                    fn()
                stop.record()
                stop.synchronize()
                times[i].append(cuda.event_elapsed_time(start, stop) / sizes[i])
        out.append(times)
    return out
