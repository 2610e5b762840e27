"""The cp.async examples of TVM TIRx's async-copy documentation, written for Numba.

- ``shift_rows``: each of 64 threads copies one 16-byte float32 row into
  shared memory, then reads its neighbour's row (the row exchange).
- ``tile_rows``: the (128, 32) float16 tile, four 16-byte copies per thread.
- ``tile_cta``: the same tile copied with ``scope="cta"``.
- ``zfill_rows``: uint8 rows of 16 with ``src_size`` zero-filling rows past
  ``valid`` and an ``.L2::128B`` prefetch hint.
- ``pred_rows``: ``pred=False`` rows keep their previous shared contents.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, types

import numba_asynccopy as ac


def shift_rows(A, B):
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((64, 4), np.float32, alignment=16)
    ac.cp_async(sh[tid, :], A[tid, :], 16)
    ac.commit_group()
    ac.wait_group(0)
    cuda.syncthreads()
    for j in range(4):
        B[tid, j] = sh[(tid + 1) % 64, j]


def tile_rows(A, B):
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((128, 32), np.float16, alignment=16)
    ac.cp_async(sh[tid, :], A[tid, :], 16, cache="cg")
    ac.commit_group()
    ac.wait_group(0)
    cuda.syncthreads()
    for j in range(32):
        B[tid, j] = sh[tid, j]


def tile_cta(A, B):
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((128, 32), np.float16, alignment=16)
    ac.cp_async(sh, A, 16, scope="cta")
    ac.commit_group()
    ac.wait_group(0)
    cuda.syncthreads()
    for j in range(32):
        B[(tid + 1) % 128, j] = sh[(tid + 1) % 128, j]


def zfill_rows(A, B, valid):
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((64, 16), np.uint8, alignment=16)
    size = 16 if tid < valid else 0
    ac.cp_async(sh[tid, :], A[tid, :], 16, prefetch=128, src_size=size)
    ac.commit_group()
    ac.wait_group(0)
    cuda.syncthreads()
    for j in range(16):
        B[tid, j] = sh[tid, j]


def pred_rows(A, B, valid):
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((64, 4), np.uint32, alignment=16)
    for j in range(4):
        sh[tid, j] = 0xDEADBEEF
    cuda.syncthreads()
    ac.cp_async(sh[tid, :], A[tid, :], 16, pred=tid < valid)
    ac.commit_group()
    ac.wait_group(0)
    cuda.syncthreads()
    for j in range(4):
        B[tid, j] = sh[tid, j]


f32_2d = types.float32[:, ::1]
f16_2d = types.float16[:, ::1]
u8_2d = types.uint8[:, ::1]
u32_2d = types.uint32[:, ::1]

#: name -> (python function, Numba signature, (grid, block))
SEEDS = {
    "shift_rows": (shift_rows, (f32_2d, f32_2d), (1, 64)),
    "tile_rows": (tile_rows, (f16_2d, f16_2d), (1, 128)),
    "tile_cta": (tile_cta, (f16_2d, f16_2d), (1, 128)),
    "zfill_rows": (zfill_rows, (u8_2d, u8_2d, types.int32), (1, 64)),
    "pred_rows": (pred_rows, (u32_2d, u32_2d, types.int32), (1, 64)),
}


def reference(name: str, rng: np.random.Generator):
    """(inputs, expected output) on fresh random data for a seed example."""
    if name == "shift_rows":
        a = rng.standard_normal((64, 4)).astype(np.float32)
        return (a,), np.roll(a, -1, axis=0)
    if name in ("tile_rows", "tile_cta"):
        a = rng.standard_normal((128, 32)).astype(np.float16)
        return (a,), a.copy()
    if name == "zfill_rows":
        a = rng.integers(1, 256, (64, 16), dtype=np.uint8)
        valid = int(rng.integers(1, 64))
        out = a.copy()
        out[valid:] = 0
        return (a, valid), out
    if name == "pred_rows":
        a = rng.integers(0, 2**32, (64, 4), dtype=np.uint32)
        valid = int(rng.integers(1, 64))
        out = a.copy()
        out[valid:] = 0xDEADBEEF
        return (a, valid), out
    raise KeyError(name)
