"""Where the package's host time of ``ac.launch`` goes (needs a GPU): the
prepared path's Python timed with the driver call replaced by a no-op,
piece by piece, and the driver call made three ways (``cuLaunchKernelEx``
on the default stream, on a created stream, ``cuLaunchKernel``).  Run
from the repository root:

    python3 benchmarks/h200-2026-12-03/launch_python.py > launch-python.json

It measured the host path before the change of this session
(``launch-python-{1,2}.json``), whose ``launch_ex`` took three arguments;
``launch_after.py`` measures the path after it.  Run at a revision before
the change (git log of ``numba_asynccopy/host/_numba_internals.py``).
"""

from __future__ import annotations

import ctypes
import json
import os
import statistics
import sys
import time

import numpy as np
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.bench import devutil
from numba_asynccopy.bench.launchprof import VADD_SIGNATURE, vadd
from numba_asynccopy.host import _numba_internals as nb
from numba_asynccopy.host import _prepared as P


def per_call_ns(fn, n: int = 20000, rounds: int = 5) -> float:
    best = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        best.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(best)


def main() -> int:
    blocks = 528
    n = blocks * 128
    a = cuda.to_device(np.ones(n, np.float32))
    b = cuda.to_device(np.ones(n, np.float32))
    out = cuda.device_array(n, np.float32)
    k = cuda.jit(VADD_SIGNATURE)(vadd)
    args = (a, b, out)
    for _ in range(3):
        ac.launch(k, blocks, 128, args)
    cuda.synchronize()
    bucket = next(iter(k.__dict__[P.TABLE_ATTR].values()))
    (p,) = bucket
    block = p.pool[0]
    real = nb.launch_ex
    res = {}
    nb.launch_ex = lambda cfg, func, params: None
    try:
        res["ac_launch_python_ns"] = per_call_ns(lambda: ac.launch(k, blocks, 128, args))
        res["run_python_ns"] = per_call_ns(lambda: P.run(bucket, args, 0))
    finally:
        nb.launch_ex = real
    res["fill_ns"] = per_call_ns(lambda: block.fill(args))
    res["empty_lambda_ns"] = per_call_ns(lambda: None)
    res["attached_context"] = repr(getattr(nb._tls, "attached_context", None))
    res["current_context_handle_ns"] = per_call_ns(nb.current_context_handle)
    res["bucket_get_ns"] = per_call_ns(lambda: k.__dict__[P.TABLE_ATTR].get((None, *map(type, args))))
    cfg = p.config(0)
    res["bindings_call_only_ns"] = per_call_ns(lambda: nb._cuLaunchKernelEx(cfg, p.func, block.addr, 0),
                                               n=2000)
    cuda.synchronize()
    # driver calls, timed on the GPU's clock in alternation
    lib = ctypes.CDLL("libcuda.so.1")
    ex = lib.cuLaunchKernelEx
    ex.argtypes = [ctypes.c_void_p] * 4
    ex.restype = ctypes.c_int
    lk = lib.cuLaunchKernel
    lk.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    lk.restype = ctypes.c_int
    s = cuda.stream()
    sh = int(s.handle.value) if hasattr(s.handle, "value") else int(s.handle)
    cfg_s = p.config(sh)
    func, addr = int(p.func), block.addr
    c0, cs = int(cfg.getPtr()), int(cfg_s.getPtr())

    def check(rc):
        if rc:
            raise RuntimeError(f"driver returned {rc}")
    ways = {
        "ac_launch": lambda: ac.launch(k, blocks, 128, args),
        "ex_default": lambda: check(ex(c0, func, addr, None)),
        "ex_stream": lambda: check(ex(cs, func, addr, None)),
        "launch_default": lambda: check(lk(func, blocks, 1, 1, 128, 1, 1, 0, None, addr, None)),
        "launch_stream": lambda: check(lk(func, blocks, 1, 1, 128, 1, 1, 0, sh, addr, None)),
        "ac_launch_stream": lambda: ac.launch(k, blocks, 128, args, stream=s),
    }
    try:
        import torch

        ta, tb = torch.ones(n, device="cuda"), torch.ones(n, device="cuda")
        tc = torch.empty_like(ta)
        ways["torch_add"] = lambda: torch.add(ta, tb, out=tc)
    except Exception as e:  # noqa: BLE001
        res["torch_error"] = str(e)
    for name, fn in ways.items():
        out.copy_to_device(np.zeros(n, np.float32))
        fn()
        cuda.synchronize()
        if name != "torch_add" and not np.array_equal(out.copy_to_host(), np.full(n, 2, np.float32)):
            res[f"{name}_wrong"] = True
    names = list(ways)
    per_round = devutil.bench_alternating([ways[w] for w in names], reps=25, warmup=50, rounds=3,
                                          shuffle=True)
    res["median_us"] = {}
    for i, name in enumerate(names):
        res["median_us"][name] = statistics.median(t for rnd in per_round for t in rnd[i]) * 1e3
    print(json.dumps(res))
    for kk, v in res.items():
        print(kk, v, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
