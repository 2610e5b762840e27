"""Where ``ac.launch``'s host time goes, by subtraction (needs a GPU).

Run from the repository root with the package importable:

    python3 benchmarks/h200-2026-12-02c/perf/launch_split.py > launch-split.json

Times, in alternation (``devutil.bench_alternating``, shuffled turns, three
rounds of 25 batches of up to 64 launches between CUDA events), launches of
the launch benchmark's kernel (``vadd[528, 128]`` over float32, the same
parameters each time) five ways:

- ``ac_launch``: ``ac.launch(k, 528, 128, (a, b, out))``, the prepared path;
- ``bindings``: only its driver call, ``_numba_internals.launch_ex`` (the
  cuda.bindings ``cuLaunchKernelEx`` wrapper) on the prepared launcher's
  configuration and parameter block, filled once;
- ``ctypes``: the same driver call through ``ctypes`` on the driver
  library's own ``cuLaunchKernelEx`` (``_ptsz`` when cuda.bindings uses the
  per-thread default stream), with the configuration's C struct
  (``CUlaunchConfig.getPtr()``): no wrapper, no ``CUresult`` enum;
- ``core_bare``: cuda.core's ``launch`` with Numba's parameters built once;
- ``torch_add``: ``torch.add(ta, tb, out=tc)`` of the same size.

So ``ac_launch - bindings`` is the package's Python, ``bindings - ctypes``
the wrapper's.  Each way's output is checked against ``a + b`` first.
Prints one JSON object: the median (us) of each, the per-round medians.
"""

from __future__ import annotations

import ctypes
import json
import os
import statistics
import sys

import numpy as np
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.bench import devutil
from numba_asynccopy.bench.launchprof import VADD_SIGNATURE, vadd
from numba_asynccopy.host import _numba_internals as nb
from numba_asynccopy.host import _prepared as P


def main() -> int:
    blocks = 528
    n = blocks * 128
    rng = np.random.default_rng()
    ha, hb = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    a, b = cuda.to_device(ha), cuda.to_device(hb)
    out = cuda.device_array(n, np.float32)
    k = cuda.jit(VADD_SIGNATURE)(vadd)
    args = (a, b, out)
    ac.launch(k, blocks, 128, args)
    ac.launch(k, blocks, 128, args)
    (p,) = next(iter(k.__dict__[P.TABLE_ATTR].values()))
    block = p.pool[0]
    assert block.fill(args)
    cfg = p.config(0)
    ways = {
        "ac_launch": lambda: ac.launch(k, blocks, 128, args),
        "bindings": lambda: nb.launch_ex(cfg, p.func, block.addr),
    }
    errors = {}
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        ptds = os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "0") not in ("", "0")
        fn = getattr(lib, "cuLaunchKernelEx_ptsz" if ptds else "cuLaunchKernelEx")
        fn.argtypes = [ctypes.c_void_p] * 4
        fn.restype = ctypes.c_int
        cfg_ptr, func, addr = int(cfg.getPtr()), int(p.func), block.addr

        def raw():
            rc = fn(cfg_ptr, func, addr, None)
            if rc:
                raise RuntimeError(f"cuLaunchKernelEx returned {rc}")
        ways["ctypes"] = raw
    except Exception as e:  # reported, the other ways still run
        errors["ctypes"] = f"{type(e).__name__}: {e}"
    try:
        from cuda.core import LaunchConfig
        from cuda.core import launch as core_launch

        compiled = nb.kernel_for_args(k, args)
        params, _ = nb.marshal_args(compiled, args, 0)
        core_kernel, core_stream = nb.cufunc_of(compiled).kernel, nb.core_stream(0)
        core_config = LaunchConfig(grid=blocks, block=128)
        ways["core_bare"] = lambda: core_launch(core_stream, core_config, core_kernel, *params)
    except Exception as e:
        errors["core_bare"] = f"{type(e).__name__}: {e}"
    want = ha + hb
    for name, launch in list(ways.items()):
        out.copy_to_device(np.full(n, np.nan, np.float32))
        try:
            launch()
            got = out.copy_to_host()
            if not np.array_equal(got, want):
                raise AssertionError(f"wrote {got[:3]}..., expected {want[:3]}...")
        except Exception as e:
            errors[name] = f"{type(e).__name__}: {e}"
            del ways[name]
    try:
        import torch

        ta, tb = torch.from_numpy(ha).cuda(), torch.from_numpy(hb).cuda()
        tc = torch.empty_like(ta)
        torch.add(ta, tb, out=tc)
        assert np.array_equal(tc.cpu().numpy(), want)
        ways["torch_add"] = lambda: torch.add(ta, tb, out=tc)
    except Exception as e:
        errors["torch_add"] = f"{type(e).__name__}: {e}"
    names = list(ways)
    per_round = devutil.bench_alternating([ways[k] for k in names], reps=25, warmup=50,
                                          rounds=3, shuffle=True)
    res = {"median_us": {}, "round_median_us": {}, "errors": errors}
    for i, name in enumerate(names):
        times = [t for rnd in per_round for t in rnd[i]]
        res["median_us"][name] = statistics.median(times) * 1e3
        res["round_median_us"][name] = [statistics.median(rnd[i]) * 1e3 for rnd in per_round]
    m = res["median_us"]
    if "bindings" in m:
        res["package_python_us"] = m["ac_launch"] - m["bindings"]
    if "bindings" in m and "ctypes" in m:
        res["wrapper_us"] = m["bindings"] - m["ctypes"]
    print(json.dumps(res))
    for name in names:
        print(f"  {name:10s} {m[name]:6.2f} us", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
