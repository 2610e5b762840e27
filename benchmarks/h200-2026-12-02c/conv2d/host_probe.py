"""Host time a launch of ours (cv.bind_tc's launcher, and cv.run_tc) and of
the CUDA C++ twin (its ctypes launcher) against the GPU time a launch, for
one conv2d layer and configuration: 200 back-to-back launches each, the
host clock read before the first and after the last launch call, then after
the stream drains.  A launcher whose host time a call reaches the kernel's
time keeps the GPU waiting (its benchmark row measures the host).

    python host_probe.py TWINS_SO N H W C K STRIDE BN CONSUMERS STAGES CTAS MTILES PERSISTENT
"""
import sys
import time
from pathlib import Path

import torch
from numba import cuda

from numba_asynccopy.bench.suites_conv import _twin
from numba_asynccopy.bench.twins import Twins, ptr
from numba_asynccopy.examples import conv2d as cv

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
xd, wd = xmap.device, wmap.device
blocks = cv.grid_tc(kern, n * P * Q, K)[0] if kern.tiled else None
tw = _twin(Twins(Path(so)))
xm, wm, yp = ptr(xmap), ptr(wmap), ptr(y)
runs = {
    "ours, cv.bind_tc": cv.bind_tc(kern, xd, wd, yd, n, P, Q, C),
    "ours, cv.run_tc": lambda: cv.run_tc(kern, xd, wd, yd, n, P, Q, C),
    "twin, ctypes": lambda: tw(xm, wm, yp, n, P, Q, C, K, R, S, stride, dilation, padding, bn,
                               stages, consumers, ctas, True, 1, mtiles, blocks),
}
print(f"layer {H}x{W} C={C} K={K} stride {st} batch {n}; config bn {bn} consumers {consumers} "
      f"stages {stages} ctas {ctas} mtiles {mtiles} persistent {pers}")
for rnd in range(2):
    for name, fn in runs.items():
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        print(f"round {rnd}  {name:18s} host {1e6 * (t1 - t0) / 200:6.2f} us a call, "
              f"drained {1e6 * (t2 - t0) / 200:6.2f} us a call", flush=True)
