"""The prepared launch before and after it became one generated function
(``go``, tried first for the kernel's last launch): the host Python of a
prepared ``ac.launch`` with the driver call a no-op, then the wall time per
launch of ``ac.launch(vadd, 528, 128, (a, b, out))`` and of ``torch.add`` of
the same size, in alternating batches of 3000 ended by a synchronize.
Imports the package from the tree on ``sys.path`` (run it once with each
tree).  Needs a GPU.  Prints JSON:

    PYTHONPATH=<tree> python3 benchmarks/h200-2026-12-03b/launch_go.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.bench.launchprof import VADD_SIGNATURE, vadd
from numba_asynccopy.bench.launchprof import _batch_us as batch_us  # us per launch of a batch
from numba_asynccopy.host import _numba_internals as nb
from numba_asynccopy.host import _prepared as P


def per_call_ns(fn, n: int = 20000, rounds: int = 7) -> float:
    t = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        t.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(t)


def main() -> int:
    import torch

    blocks = 528
    n = blocks * 128
    rng = np.random.default_rng()
    ha, hb = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    a, b = cuda.to_device(ha), cuda.to_device(hb)
    out = cuda.device_array(n, np.float32)
    k = cuda.jit(VADD_SIGNATURE)(vadd)
    args = (a, b, out)
    for _ in range(3):
        ac.launch(k, blocks, 128, args)
    out.copy_to_device(np.full(n, np.nan, np.float32))
    ac.launch(k, blocks, 128, args)
    ok = bool(np.array_equal(out.copy_to_host(), ha + hb))
    res = {"tree": ac.__file__, "generated_go": hasattr(P, "LAST_ATTR"), "sums_equal": ok}
    real = nb.launch_ex
    nb.launch_ex = lambda *a: 0
    try:
        res["ac_launch_python_ns"] = per_call_ns(lambda: ac.launch(k, blocks, 128, args))
    finally:
        nb.launch_ex = real
    res["empty_lambda_ns"] = per_call_ns(lambda: None)
    ta, tb = torch.from_numpy(ha).cuda(), torch.from_numpy(hb).cuda()
    tc = torch.empty_like(ta)
    rows = {"ac_launch": lambda: ac.launch(k, blocks, 128, args),
            "torch_add": lambda: torch.add(ta, tb, out=tc)}
    for fn in rows.values():
        batch_us(fn, 500)
    got = {key: [] for key in rows}
    for _ in range(9):
        for key, fn in rows.items():
            got[key].append(batch_us(fn, 3000))
    res["batches_us"] = got
    res["median_us"] = {key: statistics.median(v) for key, v in got.items()}
    res["ratio"] = res["median_us"]["ac_launch"] / res["median_us"]["torch_add"]
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
