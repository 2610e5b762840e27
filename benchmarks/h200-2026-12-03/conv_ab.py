"""A/B of the tensor-core conv2d example against its CUDA C++ twin on the
layer whose twin row missed: ResNet 56x56, C = K = 64, 3x3, pad 1, stride
1, batch 32, bf16 in and out (fp32 accumulation), the row's configuration
(bn=64, consumers=2, stages=4, ctas=2, mtiles=1, persistent: 264 blocks).
Needs a GPU (sm_90a); run from the repository root:

    python benchmarks/h200-2026-12-03/conv_ab.py --out DIR [--twins-lib SO] [--variant FILE ...]
        [--batch N] [--set KEY=VALUE ...]

The twin library is built into ``DIR`` by ``bench/twins.py``'s ``Build``
(nvcc -O3, sm_90a; about a minute) unless ``--twins-lib`` names a built
``twins.so``.  ``--variant FILE`` (repeatable) adds another copy of
``examples/conv2d.py`` (e.g. an older revision, ``git show
REV:numba_asynccopy/examples/conv2d.py > old.py``), loaded as a module of
``numba_asynccopy.examples`` and timed in the same alternation.
``--batch`` changes the batch (default 32) and ``--set`` one entry of the
configuration (``--set consumers=1 --set mtiles=2``: the configuration the
batch-128 sweep picked in one run).

Each kernel's output is checked against the twin's first (relative max
error below 1e-2).  Then ``--rounds`` rounds (default 5); in each, every
kernel runs one batch of ``--launches`` back-to-back launches (default
2000) timed by CUDA events, the kernels in a new order each round.
Prints one JSON line a batch and a summary: each kernel's median us a
launch and ``ratio`` = twin median / kernel median (1.0: as fast as the
twin; the row's target is 0.97).  The summary is also written to
``DIR/conv_ab.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from pathlib import Path

import numpy as np
import torch
from numba import cuda

import numba_asynccopy.examples as examples
from numba_asynccopy.bench.suites_conv import _twin
from numba_asynccopy.bench.twins import Build, Twins, ptr
from numba_asynccopy.examples import conv2d as cv

N, H, W, C, K, R, S = 32, 56, 56, 64, 64, 3, 3
STRIDE, PADDING, DILATION = (1, 1), (1, 1), (1, 1)
CFG = dict(bn=64, consumers=2, stages=4, ctas=2, mtiles=1, persistent=True)


def load_variant(path: Path, i: int):
    """A copy of conv2d.py as ``numba_asynccopy.examples._ab_variant{i}`` (its
    relative imports resolve in the package)."""
    name = f"{examples.__name__}._ab_variant{i}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--twins-lib", type=Path, default=None)
    ap.add_argument("--variant", type=Path, action="append", default=[])
    ap.add_argument("--launches", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=N)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args()
    cfg = dict(CFG)
    for kv in a.set:
        key, _, value = kv.partition("=")
        if key not in cfg:
            ap.error(f"--set: no configuration entry {key!r} (entries: {', '.join(cfg)})")
        cfg[key] = value.lower() in ("1", "true") if key == "persistent" else int(value)
    n = a.batch
    a.out.mkdir(parents=True, exist_ok=True)
    cc = cuda.get_current_device().compute_capability
    build = None if a.twins_lib else Build(a.out, cc)  # nvcc overlaps Numba's compiles

    P, Q = cv.out_shape(H, W, R, S, STRIDE, PADDING, DILATION)
    M = n * P * Q
    x = torch.randn(n, H, W, C, device="cuda").to(torch.bfloat16)
    w = (torch.randn(K, R, S, C, device="cuda") / (R * S * C) ** 0.5).to(torch.bfloat16)
    y = torch.empty(M, K, device="cuda", dtype=torch.bfloat16)
    yd = cuda.as_cuda_array(y.view(torch.uint16))

    mods = [("ours", cv)] + [(f"ours:{p.name}", load_variant(p, i)) for i, p in enumerate(a.variant)]
    kernels, keep = {}, []
    for name, mod in mods:
        kern = mod.make_conv2d_tc(R, S, STRIDE, DILATION, PADDING, bc=64, out="bf16", **cfg)
        xmap, wmap = mod.maps_tc(x.view(torch.uint16), w.view(torch.uint16).reshape(K, R * S, C),
                                 kern, STRIDE, PADDING, DILATION)
        keep.append((xmap, wmap))
        kernels[name] = mod.bind_tc(kern, xmap.device, wmap.device, yd, n, P, Q, C)
        kernels[name]()  # compile
    cuda.synchronize()
    blocks = cv.grid_tc(kern, M, K)[0]
    twins = Twins(a.twins_lib) if a.twins_lib else build.library()
    tw = _twin(twins)
    xm, wm, yp = ptr(keep[0][0]), ptr(keep[0][1]), ptr(y)

    def twin() -> None:
        tw(xm, wm, yp, n, P, Q, C, K, R, S, STRIDE, DILATION, PADDING, cfg["bn"], cfg["stages"],
           cfg["consumers"], cfg["ctas"], cfg["persistent"], 1, cfg["mtiles"], blocks)

    kernels["twin"] = twin
    # every kernel against the twin's output
    y.fill_(0)
    twin()
    torch.cuda.synchronize()
    want = y.float().clone()
    errs = {}
    for name, fn in kernels.items():
        y.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        errs[name] = ((y.float() - want).abs().max() / want.abs().max()).item()
        assert errs[name] < 1e-2, f"{name} differs from the twin: {errs[name]}"
    print(json.dumps({"rel_err_vs_twin": errs, "grid": blocks, "M": M, **cfg}), flush=True)

    names = list(kernels)
    times = {n: [] for n in names}
    start, stop = cuda.event(), cuda.event()
    rng = np.random.default_rng(0)
    for fn in kernels.values():
        for _ in range(50):
            fn()
    cuda.synchronize()
    for rnd in range(a.rounds):
        for i in rng.permutation(len(names)):
            name, fn = names[i], kernels[names[i]]
            for _ in range(20):
                fn()
            start.record()
            for _ in range(a.launches):
                fn()
            stop.record()
            stop.synchronize()
            us = cuda.event_elapsed_time(start, stop) * 1e3 / a.launches
            times[name].append(us)
            print(json.dumps({"round": rnd, "kernel": name, "us": round(us, 3)}), flush=True)
    med = {n: statistics.median(t) for n, t in times.items()}
    summary = {"median_us": {n: round(v, 3) for n, v in med.items()},
               "ratio_vs_twin": {n: round(med["twin"] / v, 4) for n, v in med.items() if n != "twin"},
               "rounds": {n: [round(v, 3) for v in t] for n, t in times.items()},
               "launches": a.launches, "layer": dict(N=n, H=H, W=W, C=C, K=K, R=R, S=S), **cfg}
    print(json.dumps(summary), flush=True)
    (a.out / f"conv_ab-b{n}-{'-'.join(f'{k}{v}' for k, v in cfg.items())}.json").write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
