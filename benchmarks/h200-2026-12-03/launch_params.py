"""Does the driver's launch cost depend on how the parameters are passed?
(needs a GPU).  Run from the repository root with the package importable:

    python3 benchmarks/h200-2026-12-03/launch_params.py > launch-params.json

Numba flattens an array parameter into seven 8-byte kernel parameters
(meminfo, parent, nitems, itemsize, data, shape, stride for 1-D), so the
launch benchmark's ``vadd(a, b, out)`` has 21; torch's add kernel takes one
struct.  ``cuLaunchKernelEx`` accepts the parameters either as an array of
pointers, one a parameter (``kernelParams``, what ``ac.launch`` passes), or
as one packed buffer (``extra``: ``CU_LAUNCH_PARAM_BUFFER_POINTER``).
Timed in alternation (``devutil.bench_alternating``, shuffled turns, three
rounds), each checked against ``a + b`` first:

- ``ac_launch``: ``ac.launch(k, 528, 128, (a, b, out))``;
- ``params_ctypes`` / ``extra_ctypes``: the driver call alone through
  ctypes, the prepared launcher's parameter block as 21 pointers / as one
  168-byte buffer;
- ``one_array_params`` / ``one_array_extra``: the same for a kernel of one
  array parameter (7 parameters);
- ``core_bare``: cuda.core's ``launch`` with Numba's parameters built once;
- ``torch_add``: ``torch.add(ta, tb, out=tc)`` of the same size.

Prints one JSON object: each way's median (us) and per-round medians, and
the parameter offsets the driver reports (``cuFuncGetParamInfo``).
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


def one(out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = 1.0


def _prepared_of(k, args):
    (p,) = next(iter(k.__dict__[P.TABLE_ATTR].values()))
    block = p.pool[0]
    assert block.fill(args)
    return p, block


def main() -> int:
    blocks = 528
    n = blocks * 128
    rng = np.random.default_rng()
    ha, hb = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    a, b = cuda.to_device(ha), cuda.to_device(hb)
    out = cuda.device_array(n, np.float32)
    k = cuda.jit(VADD_SIGNATURE)(vadd)
    k1 = cuda.jit("void(float32[::1])")(one)
    args, args1 = (a, b, out), (out,)
    for _ in range(2):
        ac.launch(k, blocks, 128, args)
        ac.launch(k1, blocks, 128, args1)
    p, block = _prepared_of(k, args)
    p1, block1 = _prepared_of(k1, args1)
    lib = ctypes.CDLL("libcuda.so.1")
    ptds = os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "0") not in ("", "0")
    fn = getattr(lib, "cuLaunchKernelEx_ptsz" if ptds else "cuLaunchKernelEx")
    fn.argtypes = [ctypes.c_void_p] * 4
    fn.restype = ctypes.c_int
    info = {}
    try:
        gpi = lib.cuFuncGetParamInfo
        gpi.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
                        ctypes.POINTER(ctypes.c_size_t)]
        gpi.restype = ctypes.c_int
        for name, pp in (("vadd", p), ("one", p1)):
            offs = []
            for i in range(64):
                o, s = ctypes.c_size_t(), ctypes.c_size_t()
                if gpi(int(pp.func), i, ctypes.byref(o), ctypes.byref(s)):
                    break
                offs.append((o.value, s.value))
            info[name] = offs
    except AttributeError as e:
        info["error"] = str(e)

    def ways_for(pp, blk):
        cfg_ptr, func = int(pp.config(0).getPtr()), int(pp.func)
        size = ctypes.c_size_t(8 * pp.nslots)
        extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(blk.raw), 2, ctypes.addressof(size), 0)
        extra_addr, addr = ctypes.addressof(extra), blk.addr
        keep = (size, extra)

        def params():
            rc = fn(cfg_ptr, func, addr, None)
            if rc:
                raise RuntimeError(f"cuLaunchKernelEx returned {rc}")

        def buffered():
            rc = fn(cfg_ptr, func, None, extra_addr)
            if rc:
                raise RuntimeError(f"cuLaunchKernelEx (extra) returned {rc}")
        params.keep = buffered.keep = keep
        return params, buffered

    pv, ev = ways_for(p, block)
    p1v, e1v = ways_for(p1, block1)
    ways = {"ac_launch": lambda: ac.launch(k, blocks, 128, args),
            "params_ctypes": pv, "extra_ctypes": ev,
            "one_array_params": p1v, "one_array_extra": e1v}
    errors = {}
    try:
        from cuda.core import LaunchConfig
        from cuda.core import launch as core_launch

        compiled = nb.kernel_for_args(k, args)
        params, _ = nb.marshal_args(compiled, args, 0)
        core_kernel, core_stream = nb.cufunc_of(compiled).kernel, nb.core_stream(0)
        core_config = LaunchConfig(grid=blocks, block=128)
        ways["core_bare"] = lambda: core_launch(core_stream, core_config, core_kernel, *params)
    except Exception as e:  # noqa: BLE001 - reported, the other ways still run
        errors["core_bare"] = f"{type(e).__name__}: {e}"
    want = ha + hb
    for name, launch in list(ways.items()):
        out.copy_to_device(np.full(n, np.nan, np.float32))
        try:
            launch()
            got = out.copy_to_host()
            exp = np.ones(n, np.float32) if name.startswith("one_array") else want
            if not np.array_equal(got, exp):
                raise AssertionError(f"wrote {got[:3]}..., expected {exp[:3]}...")
        except Exception as e:  # noqa: BLE001
            errors[name] = f"{type(e).__name__}: {e}"
            del ways[name]
    try:
        import torch

        ta, tb = torch.from_numpy(ha).cuda(), torch.from_numpy(hb).cuda()
        tc = torch.empty_like(ta)
        torch.add(ta, tb, out=tc)
        assert np.array_equal(tc.cpu().numpy(), want)
        ways["torch_add"] = lambda: torch.add(ta, tb, out=tc)
    except Exception as e:  # noqa: BLE001
        errors["torch_add"] = f"{type(e).__name__}: {e}"
    names = list(ways)
    per_round = devutil.bench_alternating([ways[w] for w in names], reps=25, warmup=50,
                                          rounds=3, shuffle=True)
    res = {"median_us": {}, "round_median_us": {}, "errors": errors, "param_info": info}
    for i, name in enumerate(names):
        times = [t for rnd in per_round for t in rnd[i]]
        res["median_us"][name] = statistics.median(times) * 1e3
        res["round_median_us"][name] = [statistics.median(rnd[i]) * 1e3 for rnd in per_round]
    print(json.dumps(res))
    for name in names:
        print(f"  {name:18s} {res['median_us'][name]:6.2f} us", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
