"""ours and the CUDA C++ twin on one conv2d layer and configuration, each
launched twice, for ncu (``ncu -k regex:conv --launch-skip 1 --launch-count
3``: ours' second launch, the twin's two).

    python ncu_pair.py TWINS_SO N H W C K STRIDE BN CONSUMERS STAGES CTAS MTILES PERSISTENT
"""
import ctypes
import sys

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
blocks = cv.grid_tc(kern, n * P * Q, K)[0] if kern.tiled else None
tw = _twin(Twins(__import__("pathlib").Path(so)))
go = cv.bind_tc(kern, xmap.device, wmap.device, yd, n, P, Q, C)
for _ in range(2):
    go()
cuda.synchronize()
for _ in range(2):
    tw(ptr(xmap), ptr(wmap), ptr(y), n, P, Q, C, K, R, S, stride, dilation, padding, bn, stages,
       consumers, ctas, True, 1, mtiles, blocks)
torch.cuda.synchronize()
print("grid", cv.grid_tc(kern, n * P * Q, K), "smem", kern.smem, "threads", kern.threads)
