"""Where the prepared launch's last host cost goes: the generated ``go`` of
``ac.launch(vadd, 528, 128, (a, b, out))`` rebuilt in variants of its
context check, each timed beside ``torch.add`` of the same size in
alternating batches of 3000 launches (median of 9, one process), then what
the driver does with a launch made while another context, or none, is
current.  Needs a GPU and torch; prints JSON:

    python3 benchmarks/h200-2026-12-04/launch_variants.py

- ``now``: the package's ``go``;
- ``inline``: the driver's context query inlined (no Python frame);
- ``none``: no context check at all (the bound of what checking costs).
"""

from __future__ import annotations

import json
import statistics
import sys

import numpy as np
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.bench.launchprof import VADD_SIGNATURE, vadd
from numba_asynccopy.bench.launchprof import _batch_us as batch_us
from numba_asynccopy.host import _numba_internals as nb
from numba_asynccopy.host import _prepared as P

CHECK = "if (int(ctx.handle) if ctx is not None else _nb.driver_context_handle()) != _CTX:"
INLINE = ("if ctx is not None:\n            cur = int(ctx.handle)\n        else:\n"
          "            _r, _c = _cuCtxGetCurrent()\n            cur = 0 if _r or _c is None else int(_c)\n"
          "        if cur != _CTX:")
NONE = "if False:"


def rebuild(p, old: str, new: str):
    src = p.source
    assert old in src, src
    g = p.go.__globals__
    g["_cuCtxGetCurrent"] = nb._cuCtxGetCurrent
    exec(compile(src.replace(old, new), "<variant>", "exec"), g)
    cells = dict(zip(p.go.__code__.co_freevars, (c.cell_contents for c in p.go.__closure__)))
    names = g["_factory"].__code__.co_varnames[:g["_factory"].__code__.co_argcount]
    return g["_factory"](*(cells.get(n) for n in names))


def main() -> int:
    import torch
    from cuda.bindings import driver as drv

    blocks = 528
    n = blocks * 128
    rng = np.random.default_rng()
    ha, hb = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    a, b, out = cuda.to_device(ha), cuda.to_device(hb), cuda.device_array(n, np.float32)
    k = cuda.jit(VADD_SIGNATURE)(vadd)
    args = (a, b, out)
    for _ in range(3):
        ac.launch(k, blocks, 128, args)
    (p,) = next(iter(k.__dict__[P.TABLE_ATTR].values()))
    gos = {"now": p.go, "inline": rebuild(p, CHECK, INLINE), "none": rebuild(p, CHECK, NONE)}
    res = {"checked": {}}
    for key, go in gos.items():
        out.copy_to_device(np.full(n, np.nan, np.float32))
        assert go(args, 0)
        res["checked"][key] = bool(np.array_equal(out.copy_to_host(), ha + hb))
    ta, tb = torch.from_numpy(ha).cuda(), torch.from_numpy(hb).cuda()
    tc = torch.empty_like(ta)
    rows = {"torch_add": lambda: torch.add(ta, tb, out=tc), "ac_launch": lambda: ac.launch(k, blocks, 128, args)}
    for key, go in gos.items():
        rows["go_" + key] = (lambda go=go: go(args, 0))
    for fn in rows.values():
        batch_us(fn, 500)
    got = {key: [] for key in rows}
    for _ in range(9):
        for key, fn in rows.items():
            got[key].append(batch_us(fn, 3000))
    med = {key: statistics.median(v) for key, v in got.items()}
    res["median_us"] = med
    res["ratio_to_torch"] = {key: v / med["torch_add"] for key, v in med.items()}
    cuda.synchronize()

    # the driver's answer to a launch in another context, and with none
    def launch_rc() -> int:
        blk = p.pool[0]  # filled by the last go: a, b, out
        cfg = p.configs.get(0) or p.config(0)
        return int(nb.launch_ex(cfg[0], p.func, blk.addr, None))

    dev = drv.cuDeviceGet(0)[1]
    other = {}
    try:
        rc, ctx2 = drv.cuCtxCreate(None, 0, dev)
    except TypeError:
        rc, ctx2 = drv.cuCtxCreate(0, dev)
    other["cuCtxCreate"] = int(rc)
    if not rc:
        other["launch_in_new_context_same_device"] = launch_rc()
        other["sync_after"] = int(drv.cuCtxSynchronize()[0])
        drv.cuCtxPopCurrent()
        drv.cuCtxDestroy(ctx2)
    prim = drv.cuCtxGetCurrent()[1]
    drv.cuCtxSetCurrent(drv.CUcontext(0))
    other["launch_with_no_context"] = launch_rc()
    drv.cuCtxSetCurrent(prim)
    other["launch_back_in_primary"] = launch_rc()
    cuda.synchronize()
    res["other_contexts"] = other
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
