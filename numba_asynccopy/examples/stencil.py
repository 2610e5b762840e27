"""2-D 5-point stencil, with cp.async halo tiles and as plain Numba.

``out[i, j] = a * u[i, j] + b * (u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1])``
on interior points; boundary points (first/last row and column) are copied
(``out = u`` there).  ``u`` and ``out`` are float32 (H, W), row-major.

- ``stencil_async``: a block of (32, 8) threads owns a 32x128 tile of ``out``.
  It copies the (32+2)x(128+8) input window (one halo row above and below,
  one 16-byte chunk of halo columns left and right, so every chunk stays
  16-byte aligned) into shared memory with cp.async, zero-filling chunks
  outside the array with ``src_size=0``; then each thread computes a 4x4
  patch (four rows, four adjacent columns) from shared memory and writes it
  with 16-byte stores.  Needs ``W % 4 == 0``; H and W need not be multiples
  of the tile.
- ``stencil_plain``: one thread per point, reading its five inputs straight
  from global memory (the caches catch the re-reads); unsigned 32-bit
  coordinates, so indexing carries no negative-index wraparound.

Example::

    from numba import cuda
    from numba_asynccopy.examples import stencil

    k = cuda.jit(stencil.SIGNATURE)(stencil.stencil_async)
    k[stencil.grid_async(H, W), stencil.BLOCK_ASYNC](u, out, 0.5, 0.125)
"""

from __future__ import annotations

import numpy as np
from numba import cuda, types

import numba_asynccopy as ac
from numba_asynccopy import load4, store4, view4

TY = 32           # tile rows
TX = 128          # tile columns
HX = 4            # halo columns each side (one 16-byte chunk)
SROWS = TY + 2
SCOLS = TX + 2 * HX
CHUNKS_PER_ROW = SCOLS // 4
ROW_PASSES = (SROWS + 7) // 8   # halo rows per warp, rounded up
BLOCK_ASYNC = (32, 8)
BLOCK_PLAIN = (32, 8)


def stencil_async(u, out, a, b):
    # the window as (row, 16-byte chunk, 4): a chunk is a whole last axis, so
    # each cp.async below is one instruction
    sh = cuda.shared.array((SROWS, CHUNKS_PER_ROW, 4), np.float32, alignment=16)
    H = u.shape[0]
    W = u.shape[1]
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    x0 = cuda.blockIdx.x * TX
    y0 = cuda.blockIdx.y * TY
    # the halo window: warp ty copies rows ty, ty + 8, ...; lane tx chunk tx
    # of each (one coalesced 512-byte run), lanes 0 and 1 also chunks 32, 33.
    # The column tests are the same in every row: done once.  Constant trip
    # counts and plain conditions give straight-line code.
    gxa = x0 - HX + 4 * tx              # chunk tx
    in_a = gxa >= 0 and gxa < W
    sxa = gxa if in_a else 0            # clamped: every source address is valid
    gxb = gxa + 128                     # chunk tx + 32 (lanes 0, 1 only)
    has_b = tx < CHUNKS_PER_ROW - 32
    in_b = has_b and gxb < W
    sxb = gxb if in_b else 0
    for p in range(ROW_PASSES):
        r = ty + 8 * p
        if r < SROWS:
            gy = y0 - 1 + r
            row_in = gy >= 0 and gy < H
            sy = gy if row_in else 0
            # view4: chunk addresses without slice clamping or wraparound
            ac.cp_async(view4(sh, (r, tx, 0)), view4(u, (sy, sxa)), 16,
                        src_size=16 if row_in and in_a else 0)
            if has_b:
                ac.cp_async(view4(sh, (r, tx + 32, 0)), view4(u, (sy, sxb)), 16,
                            src_size=16 if row_in and in_b else 0)
    ac.commit_group()
    ac.wait_group(0)
    cuda.syncthreads()
    gx = x0 + 4 * tx
    if gx < W:
        for p in range(TY // 8):
            row = ty + 8 * p
            gy = y0 + row
            if gy < H:
                sr = row + 1
                sc = tx + 1          # the chunk of columns gx..gx+3
                c0, c1, c2, c3 = load4(sh, (sr, sc, 0))
                if gy == 0 or gy == H - 1:
                    store4(out, (gy, gx), (c0, c1, c2, c3))
                else:
                    n0, n1, n2, n3 = load4(sh, (sr - 1, sc, 0))
                    s0, s1, s2, s3 = load4(sh, (sr + 1, sc, 0))
                    left = sh[sr, sc - 1, 3]
                    right = sh[sr, sc + 1, 0]
                    o0 = a * c0 + b * (n0 + s0 + left + c1)
                    o1 = a * c1 + b * (n1 + s1 + c0 + c2)
                    o2 = a * c2 + b * (n2 + s2 + c1 + c3)
                    o3 = a * c3 + b * (n3 + s3 + c2 + right)
                    if gx == 0:
                        o0 = c0
                    if gx + 3 == W - 1:
                        o3 = c3
                    store4(out, (gy, gx), (o0, o1, o2, o3))


def stencil_plain(u, out, a, b):
    # The coordinates as 32-bit unsigned, like the twin's int: cuda.grid's
    # int64 is a sign-extended product, so every u[i, j] would carry Numba's
    # negative-index wraparound (a select per index and load) and the grid
    # and index math would be 64-bit.  Unsigned, the loads share one base
    # address and i - 1, j - 1 (i, j > 0 here) are known non-negative.
    x, y = cuda.grid(2)
    j = np.uint32(x)
    i = np.uint32(y)
    H = u.shape[0]
    W = u.shape[1]
    if i < H and j < W:
        if i == 0 or j == 0 or i == H - 1 or j == W - 1:
            out[i, j] = u[i, j]
        else:
            out[i, j] = a * u[i, j] + b * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


SIGNATURE = (types.float32[:, ::1], types.float32[:, ::1], types.float32, types.float32)


def grid_async(H: int, W: int) -> tuple[int, int]:
    return ((W + TX - 1) // TX, (H + TY - 1) // TY)


def grid_plain(H: int, W: int) -> tuple[int, int]:
    return ((W + BLOCK_PLAIN[0] - 1) // BLOCK_PLAIN[0], (H + BLOCK_PLAIN[1] - 1) // BLOCK_PLAIN[1])


def check_shape(H: int, W: int) -> None:
    if H < 1 or W < 4 or W % 4:
        raise ValueError(f"stencil_async needs W a positive multiple of 4; got H={H}, W={W}")


def reference(u: np.ndarray, a: float, b: float) -> np.ndarray:
    """The stencil in float64 numpy."""
    u64 = u.astype(np.float64)
    out = u64.copy()
    out[1:-1, 1:-1] = a * u64[1:-1, 1:-1] + b * (u64[:-2, 1:-1] + u64[2:, 1:-1]
                                                 + u64[1:-1, :-2] + u64[1:-1, 2:])
    return out
