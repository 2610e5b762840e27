"""The cluster bulk-copy example of TVM TIRx's documentation, in Numba.

- ``cluster_copy``: CTA 0 sends 256 bytes (64 uint32) to CTA 1 of a
  two-CTA cluster; one-thread blocks keep election and initialization
  visible.  Launch ``cluster_copy[2, 1](A, Out)``: the kernel declares its
  cluster shape.
- ``repeated_chunks``: a float16 ``(8, 128)`` window with row stride 256 in
  CTA 0 goes to a window with row stride 192 in CTA 1: eight 256-byte
  copies, ``8 * 256`` expected transaction bytes.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, types

import numba_asynccopy as ac


def cluster_copy(A, Out):
    ac.cluster_dims(2)
    rank = ac.cluster_cta_rank()
    src = cuda.shared.array(64, np.uint32, alignment=16)
    dst = cuda.shared.array(64, np.uint32, alignment=16)
    mbar = cuda.shared.array(1, np.uint64, alignment=8)
    ac.mbarrier_init(mbar, 1)
    ac.fence_mbarrier_init()
    ac.cluster_sync()
    if rank == 0:
        for i in range(64):
            src[i] = A[i]
        ac.fence_proxy_async("shared::cta")
        ac.cp_async_bulk_cluster(dst, src, 256, mbar, 1)
    else:
        ac.mbarrier_arrive_expect_tx(mbar, 256)
        ac.mbarrier_wait_parity(mbar, 0)
        for i in range(64):
            Out[i] = dst[i]
    ac.cluster_sync()  # keep CTA 1's shared memory alive until the copy landed


CLUSTER_COPY_SIG = (types.uint32[::1], types.uint32[::1])


def repeated_chunks(A, Out):
    ac.cluster_dims(2)
    rank = ac.cluster_cta_rank()
    tid = cuda.threadIdx.x
    src = cuda.shared.array((8, 256), np.float16, alignment=16)
    dst = cuda.shared.array((8, 192), np.float16, alignment=16)
    mbar = cuda.shared.array(1, np.uint64, alignment=8)
    if tid == 0:
        ac.mbarrier_init(mbar, 1)
        ac.fence_mbarrier_init()
    ac.cluster_sync()
    if rank == 0:
        for k in range(tid, 8 * 128, cuda.blockDim.x):
            src[k // 128, k % 128] = A[k // 128, k % 128]
        ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if tid == 0:
            ac.cp_async_bulk_cluster(dst[:, 32:160], src[:, :128], 256, mbar, 1)
    else:
        if tid == 0:
            ac.mbarrier_arrive_expect_tx(mbar, 8 * 256)
        ac.mbarrier_wait_parity(mbar, 0)
        for k in range(tid, 8 * 128, cuda.blockDim.x):
            Out[k // 128, k % 128] = dst[k // 128, 32 + k % 128]
    ac.cluster_sync()


REPEATED_CHUNKS_SIG = (types.float16[:, ::1], types.float16[:, ::1])
