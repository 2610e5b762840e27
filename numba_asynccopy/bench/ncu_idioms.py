"""Run each idiom port and its CUDA C++ original twice, nothing else, so that
Nsight Compute profiles them side by side (the idioms rows that miss 0.97
are explained by these figures beside the SASS; README, benchmarks).

    ncu --metrics ... -o idioms python -m numba_asynccopy.bench.ncu_idioms --twins twins.so

``twins.so`` is the library ``python -m numba_asynccopy.bench`` builds with
nvcc (bench-results/twins.so).  The second launch of each kernel is the one
to read (the first pays for the cold L2 and instruction caches)."""

from __future__ import annotations

import argparse
import ctypes

import numpy as np
from numba import cuda

from .idioms import (BLOCK, COLS, KERNELS, ROWS, TWIN_INDEX, WHILE_FORMS, grid_for, launch_args,
                     twin_idiom_launcher)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--twins", required=True, help="twins.so built by the benchmark runner")
    args = p.parse_args(argv)
    twin = twin_idiom_launcher(ctypes.CDLL(args.twins))
    rows = ROWS["full"]
    X = cuda.to_device(np.random.default_rng(0).standard_normal((rows, COLS)).astype(np.float32))
    Y = cuda.device_array((rows, COLS), np.float32)
    ref = 1.5 * X.copy_to_host() + -0.25
    grid = grid_for(rows, cuda.get_current_device().MULTIPROCESSOR_COUNT)
    runs = [(name, cuda.jit(sig)(fn), launch_args(name, X, Y)) for name, (fn, sig, _) in KERNELS.items()]
    runs += [(name, cuda.jit(sig)(fn), launch_args(name, X, Y)) for name, (fn, sig, _, _) in WHILE_FORMS.items()]
    for name, kern, kargs in runs:
        for _ in range(2):
            kern[grid, BLOCK](*kargs)
        cuda.synchronize()
        ok = np.allclose(Y.copy_to_host(), ref, rtol=1e-6, atol=1e-6)
        print(f"numba_idiom_{name:16s} {'matches' if ok else 'DIFFERS from'} a*X+b")
        if name in TWIN_INDEX:
            for _ in range(2):
                twin(TWIN_INDEX[name], X, Y, rows, 1.5, -0.25, grid, what=name)
            cuda.synchronize()
            ok = np.allclose(Y.copy_to_host(), ref, rtol=1e-6, atol=1e-6)
            print(f"twin_idiom_{name:17s} {'matches' if ok else 'DIFFERS from'} a*X+b")


if __name__ == "__main__":
    main()
