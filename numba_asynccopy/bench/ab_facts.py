"""Time idiom ports beside their CUDA C++ originals under this process's
``NUMBA_ASYNCCOPY_FACTS`` setting: the A/B that prices each fact the package
gives NVVM (``facts.py``).  Run it once per setting, each in its own process
(the setting is read at import):

    NUMBA_ASYNCCOPY_FACTS=none python -m numba_asynccopy.bench.ab_facts --twins twins.so mbarrier slice

``twins.so`` is the library ``python -m numba_asynccopy.bench`` builds with
nvcc (``<out>/twins.so``).  Each port is timed in alternation with its
original (CUDA events, three rounds, medians) on the idioms suite's sizes and
grid; the whole output is checked against ``a*X + b`` first.  One JSON line
per port goes to stdout.

Besides the ports, two rewrites of the mbarrier port say where its gap is
(not idioms: a user's levers, timed here only to locate the cost):
``mbarrier_u32`` keeps every counter and row in ``np.uint32`` (CUDA C++'s
32-bit ``int`` arithmetic), ``mbarrier_view`` names each chunk with
``ac.chunk_view`` instead of slices (no slice clamping, one cp.async),
``mbarrier_u32_view`` both."""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
from collections.abc import Callable

import numpy as np
from numba import cuda

import numba_asynccopy as ac

from .idioms import (BLOCK, COLS, PORTS, ROWS, SIGNATURE, STAGES, TWIN_INDEX, compile_kernel, grid_for,
                     launch_args, twin_idiom_launcher)

U = np.uint32


def _mbarrier_u32(view: bool) -> Callable:
    """The mbarrier port with every counter and row in ``np.uint32``; with
    ``view`` each chunk named by ``ac.chunk_view`` instead of slices."""
    name = "mbarrier_u32_view" if view else "mbarrier_u32"

    def kern(X, Y, a, b):
        sh = cuda.shared.array((STAGES, 8, 128), np.float32, alignment=16)
        full = cuda.shared.array(STAGES, np.uint64)
        empty = cuda.shared.array(STAGES, np.uint64)
        tid = U(cuda.threadIdx.x)
        if tid < STAGES:
            ac.mbarrier_init(full[tid:], 128)
            ac.mbarrier_init(empty[tid:], 128)
        ac.fence_mbarrier_init()
        cuda.syncthreads()
        ntiles = U(X.shape[0] // 8)
        first = U(cuda.blockIdx.x)
        step = U(cuda.gridDim.x)
        count = U(U(ntiles - first + step - U(1)) // step)
        i = U(0)
        if tid < 128:
            while i < count:
                s = U(i % U(STAGES))
                if i >= STAGES:
                    ac.mbarrier_wait_parity(empty[s:], U(U(U(i // U(STAGES)) - U(1)) % U(2)))
                for k in range(2):
                    c = U(U(k * 128) + tid)
                    r = U(c // U(32))
                    q = U(c % U(32))
                    row = U(U(U(first + U(i * step)) * U(8)) + r)
                    if view:  # ac.chunk_view: no slice clamping, one cp.async
                        ac.cp_async(ac.chunk_view(sh, (s, r, U(4) * q), 4),
                                    ac.chunk_view(X, (row, U(4) * q), 4), 16)
                    else:
                        ac.cp_async(sh[s, r, 4 * q:4 * q + 4], X[row, 4 * q:4 * q + 4], 16)
                ac.cp_async_mbarrier_arrive(full[s:], noinc=True)
                i = U(i + U(1))
        else:
            ct = U(tid - U(128))
            while i < count:
                s = U(i % U(STAGES))
                ac.mbarrier_wait_parity(full[s:], U(U(i // U(STAGES)) % U(2)))
                for k in range(2):
                    c = U(U(k * 128) + ct)
                    r = U(c // U(32))
                    q = U(c % U(32))
                    row = U(U(U(first + U(i * step)) * U(8)) + r)
                    for j in range(4):
                        Y[row, U(4) * q + U(j)] = a * sh[s, r, U(4) * q + U(j)] + b
                ac.mbarrier_arrive(empty[s:])
                i = U(i + U(1))

    kern.__name__ = kern.__qualname__ = name  # the kernel's symbol, as if written at module level
    return kern


mbarrier_u32 = _mbarrier_u32(False)
mbarrier_u32_view = _mbarrier_u32(True)


def mbarrier_view(X, Y, a, b):
    sh = cuda.shared.array((STAGES, 8, 128), np.float32, alignment=16)
    full = cuda.shared.array(STAGES, np.uint64)
    empty = cuda.shared.array(STAGES, np.uint64)
    tid = cuda.threadIdx.x
    if tid < STAGES:
        ac.mbarrier_init(full[tid:], 128)
        ac.mbarrier_init(empty[tid:], 128)
    ac.fence_mbarrier_init()
    cuda.syncthreads()
    ntiles = X.shape[0] // 8
    first = cuda.blockIdx.x
    step = cuda.gridDim.x
    count = (ntiles - first + step - 1) // step
    if tid < 128:
        for i in range(count):
            s = i % STAGES
            if i >= STAGES:
                ac.mbarrier_wait_parity(empty[s:], ((i // STAGES) - 1) % 2)
            for k in range(2):
                c = k * 128 + tid
                r = c // 32
                q = c % 32
                row = (first + i * step) * 8 + r
                ac.cp_async(ac.chunk_view(sh, (s, r, 4 * q), 4), ac.chunk_view(X, (row, 4 * q), 4), 16)
            ac.cp_async_mbarrier_arrive(full[s:], noinc=True)
    else:
        ct = tid - 128
        for i in range(count):
            s = i % STAGES
            ac.mbarrier_wait_parity(full[s:], (i // STAGES) % 2)
            for k in range(2):
                c = k * 128 + ct
                r = c // 32
                q = c % 32
                row = (first + i * step) * 8 + r
                for j in range(4):
                    Y[row, 4 * q + j] = a * sh[s, r, 4 * q + j] + b
            ac.mbarrier_arrive(empty[s:])


#: rewrites timed beside the original of the idiom they rewrite
VARIANTS = {"mbarrier_u32": (mbarrier_u32, "mbarrier"), "mbarrier_view": (mbarrier_view, "mbarrier"),
            "mbarrier_u32_view": (mbarrier_u32_view, "mbarrier")}


def main(argv: list[str] | None = None) -> None:
    from .. import facts
    from . import devutil as du

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--twins", required=True, help="twins.so built by the benchmark runner")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("names", nargs="+", choices=sorted(PORTS) + sorted(VARIANTS),
                   help="idiom ports (or the mbarrier rewrites) to time")
    args = p.parse_args(argv)
    launch_twin = twin_idiom_launcher(ctypes.CDLL(args.twins))
    rows = ROWS["full"]
    X = cuda.device_array((rows, COLS), np.float32)
    Y = cuda.device_array((rows, COLS), np.float32)
    du.fill_random(X)
    ref = (np.float64(1.5) * X.copy_to_host() - 0.25).astype(np.float32)
    grid = grid_for(rows, cuda.get_current_device().MULTIPROCESSOR_COUNT)
    nbytes = 2 * X.size * 4
    for name in args.names:
        if name in VARIANTS:
            kern, base = cuda.jit(SIGNATURE)(VARIANTS[name][0]), VARIANTS[name][1]
            kargs = (X, Y, np.float32(1.5), np.float32(-0.25))
        else:
            kern, base = compile_kernel(name), PORTS[name][3]
            kargs = launch_args(name, X, Y)
        ours = (lambda k=kern, a=kargs: k[grid, BLOCK](*a))

        def twin(i=TWIN_INDEX[base]):
            launch_twin(i, X, Y, rows, 1.5, -0.25, grid)
        for fn in (ours, twin):
            du.launch_poisoned(fn, Y)
            bad = int((np.abs(Y.copy_to_host() - ref) > 1e-6 * (1 + np.abs(ref))).sum())
            if bad:
                raise AssertionError(f"{name}: {bad} elements differ from a*X+b")
        rounds = du.bench_alternating([ours, twin], reps=args.reps, warmup=3)
        med = [[statistics.median(r[i]) for r in rounds] for i in range(2)]
        ratios = [t / o for o, t in zip(*med)]
        print(json.dumps({"facts": sorted(facts.ENABLED), "port": name, "original": base,
                          "ours_ms": statistics.median(med[0]), "twin_ms": statistics.median(med[1]),
                          "ours_tbs": nbytes / statistics.median(med[0]) / 1e9,
                          "ratio": statistics.median(ratios), "ratio_rounds": ratios}), flush=True)


if __name__ == "__main__":
    main()
