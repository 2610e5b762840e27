"""Ours and the CUDA C++ twin on one conv2d layer and configuration: is the
gap of the benchmark's row in the kernel or around it?

    python conv_clock.py TWINS_SO N H W C K STRIDE BN CONSUMERS STAGES CTAS MTILES PERSISTENT [--ncu]

Without ``--ncu``: three rounds of one batch of ``LAUNCHES`` back-to-back
launches of each, alternated, timed by CUDA events, the wall-clock window of
each batch printed so that the SM clock and power that ``nvidia-smi -lms``
samples meanwhile can be matched to it.  With ``--ncu``: four launches of
each, alternated (for ``ncu --clock-control none``: each kernel's duration
and SM clock, the kernels one at a time).
"""
import json
import sys
import time
from pathlib import Path

import torch
from numba import cuda

from numba_asynccopy.bench.suites_conv import _twin
from numba_asynccopy.bench.twins import Twins, ptr
from numba_asynccopy.examples import conv2d as cv

LAUNCHES = 4000
so = sys.argv[1]
n, H, W, C, K, st, bn, consumers, stages, ctas, mtiles, pers = map(int, sys.argv[2:14])
R = S = 3
stride, padding, dilation = (st, st), (1, 1), (1, 1)
P, Q = cv.out_shape(H, W, R, S, stride, padding, dilation)
x = torch.randn(n, H, W, C, device="cuda").to(torch.bfloat16)
w = (torch.randn(K, R, S, C, device="cuda") / (R * S * C) ** 0.5).to(torch.bfloat16)
y = torch.empty(n * P * Q, K, device="cuda", dtype=torch.bfloat16)
kern = cv.make_conv2d_tc(R, S, stride, dilation, padding, bn=bn, bc=64, stages=stages,
                         consumers=consumers, out="bf16", ctas=ctas, mtiles=mtiles,
                         persistent=bool(pers))
xmap, wmap = cv.maps_tc(x.view(torch.uint16), w.view(torch.uint16).reshape(K, R * S, C), kern,
                        stride, padding, dilation)
yd = cuda.as_cuda_array(y.view(torch.uint16))
blocks = cv.grid_tc(kern, n * P * Q, K)[0] if kern.tiled else None
tw = _twin(Twins(Path(so)))
ours = cv.bind_tc(kern, xmap.device, wmap.device, yd, n, P, Q, C)
xm, wm, yp = ptr(xmap), ptr(wmap), ptr(y)


def twin():
    tw(xm, wm, yp, n, P, Q, C, K, R, S, stride, dilation, padding, bn, stages, consumers, ctas,
       True, 1, mtiles, blocks)


ours()
cuda.synchronize()
want = y.float().clone()
y.fill_(0)
twin()
torch.cuda.synchronize()
err = ((y.float() - want).abs().max() / want.abs().max()).item()
print(json.dumps({"twin_vs_ours_rel_err": err}), flush=True)
assert err < 1e-2, f"ours and the twin differ: {err}"
if "--ncu" in sys.argv:
    for _ in range(4):
        ours()
        cuda.synchronize()
        twin()
        torch.cuda.synchronize()
    sys.exit(0)
start, stop = cuda.event(), cuda.event()
for rnd in range(3):
    for name, fn in (("ours", ours), ("twin", twin)):
        for _ in range(50):
            fn()
        cuda.synchronize()
        t0 = time.time()
        start.record()
        for _ in range(LAUNCHES):
            fn()
        stop.record()
        stop.synchronize()
        t1 = time.time()
        print(json.dumps({"round": rnd, "kernel": name, "us": cuda.event_elapsed_time(start, stop) * 1e3 / LAUNCHES,
                          "t0": t0, "t1": t1}), flush=True)
