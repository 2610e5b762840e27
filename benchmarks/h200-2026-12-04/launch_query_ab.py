"""The prepared launch's context check, A/B in one process: the same
kernel prepared twice, once asking the driver's context through the
GIL-keeping ctypes call into the launch's block (``query``, the package's
path) and once through cuda.bindings' ``cuCtxGetCurrent`` (``bindings``,
the path before it and the one kept where ctypes cannot load libcuda);
both ``go`` functions and ``torch.add`` timed in alternating batches of
3000 launches (median of 11), and each context look-up alone.  Needs a GPU,
torch and the tried change applied (``git apply
benchmarks/h200-2026-12-04/query.diff``: it was not kept, so the package
as it landed has no ``context_query``); prints JSON:

    python3 benchmarks/h200-2026-12-04/launch_query_ab.py
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
from numba_asynccopy.bench.launchprof import _batch_us as batch_us
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


def prepared(k, blocks, args):
    P.forget(k)
    for _ in range(2):
        ac.launch(k, blocks, 128, args)
    (p,) = next(iter(k.__dict__[P.TABLE_ATTR].values()))
    return p


def main() -> int:
    import torch

    blocks = 528
    n = blocks * 128
    rng = np.random.default_rng()
    ha, hb = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    a, b, out = cuda.to_device(ha), cuda.to_device(hb), cuda.device_array(n, np.float32)
    k = cuda.jit(VADD_SIGNATURE)(vadd)
    args = (a, b, out)
    query = nb.context_query()
    res = {"query_resolved": query is not None}
    p_query = prepared(k, blocks, args)
    nb._context_query = None  # what a machine without ctypes' libcuda gets
    p_bind = prepared(k, blocks, args)
    nb._context_query = query
    res["sources_differ"] = ("_ctx_query(block.ctx_addr)" in p_query.source
                             and "_nb.driver_context_handle()" in p_bind.source)
    res["checked"] = {}
    for key, p in (("query", p_query), ("bindings", p_bind)):
        out.copy_to_device(np.full(n, np.nan, np.float32))
        assert p.go(args, 0)
        res["checked"][key] = bool(np.array_equal(out.copy_to_host(), ha + hb))
    blk = p_query.pool[0]
    res["lookup_ns"] = {
        "bindings": per_call_ns(nb.driver_context_handle),
        "query": per_call_ns(lambda: query(blk.ctx_addr) or blk.ctx.value),
        "empty_lambda": per_call_ns(lambda: None),
    }
    res["same_context"] = nb.driver_context_handle() == (query(blk.ctx_addr) or blk.ctx.value)
    ta, tb = torch.from_numpy(ha).cuda(), torch.from_numpy(hb).cuda()
    tc = torch.empty_like(ta)
    rows = {"torch_add": lambda: torch.add(ta, tb, out=tc),
            "go_query": lambda: p_query.go(args, 0), "go_bindings": lambda: p_bind.go(args, 0)}
    for fn in rows.values():
        batch_us(fn, 500)
    got = {key: [] for key in rows}
    for _ in range(11):
        for key, fn in rows.items():
            got[key].append(batch_us(fn, 3000))
    med = {key: statistics.median(v) for key, v in got.items()}
    res["median_us"] = med
    res["query_over_bindings"] = med["go_query"] / med["go_bindings"]
    res["ratio_to_torch"] = {key: v / med["torch_add"] for key, v in med.items()}
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
