"""im2col test material shared by the simulator and the GPU suites: a kernel
that performs a table of im2col loads (one per block) and copies each tile
out, random convolution geometries, and numpy references (the
convolution's own im2col matrix, and the swizzle)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.host import im2col as ic


def make_loader(rank: int, ppc: int, cpp: int, dtype, align: int = 128, multicast: bool = False):
    """Kernel ``k(tmap, coords, offs, out)``: block ``j`` loads the column
    block at ``coords[j]`` with ``offsets = offs[j]`` and writes the raw
    ``(ppc, cpp)`` tile to ``out[j]``.  ``multicast``: launched as a
    2-CTA cluster per load, CTA 0 multicasts to both and each writes its
    copy to ``out[2 * j + rank_in_cluster]``."""
    nbytes = ppc * cpp * np.dtype(dtype).itemsize

    def issue(tile, tmap, coords, offs, bar, j):
        if rank == 3:
            ac.cp_async_bulk_tensor_load_im2col(
                tile, tmap, (coords[j, 0], coords[j, 1], coords[j, 2]), (offs[j, 0],), bar)
        elif rank == 4:
            ac.cp_async_bulk_tensor_load_im2col(
                tile, tmap, (coords[j, 0], coords[j, 1], coords[j, 2], coords[j, 3]),
                (offs[j, 0], offs[j, 1]), bar)
        else:
            ac.cp_async_bulk_tensor_load_im2col(
                tile, tmap, (coords[j, 0], coords[j, 1], coords[j, 2], coords[j, 3], coords[j, 4]),
                (offs[j, 0], offs[j, 1], offs[j, 2]), bar)

    issue = cuda.jit(device=True)(issue) if not ac.sim.ENABLED else issue

    if multicast:
        def issue_mc(tile, tmap, coords, offs, bar, j):
            if rank == 4:
                ac.cp_async_bulk_tensor_load_im2col(
                    tile, tmap, (coords[j, 0], coords[j, 1], coords[j, 2], coords[j, 3]),
                    (offs[j, 0], offs[j, 1]), bar, multicast_mask=3)

        issue_mc = cuda.jit(device=True)(issue_mc) if not ac.sim.ENABLED else issue_mc

        @cuda.jit
        def kmc(tmap, coords, offs, out):
            tile = cuda.shared.array((ppc, cpp), dtype, alignment=align)
            bar = cuda.shared.array(1, np.uint64)
            tid = cuda.threadIdx.x
            me = ac.cluster_cta_rank()
            j = cuda.blockIdx.x // 2
            if tid == 0:
                ac.mbarrier_init(bar, 1)
                ac.fence_mbarrier_init()
            ac.cluster_sync()
            if tid == 0:
                ac.mbarrier_arrive_expect_tx(bar, nbytes)
                if me == 0:
                    issue_mc(tile, tmap, coords, offs, bar, j)
            ac.mbarrier_wait_parity(bar, 0)
            for i in range(tid, ppc * cpp, cuda.blockDim.x):
                out[2 * j + me, i // cpp, i % cpp] = tile[i // cpp, i % cpp]
            ac.cluster_sync()

        return kmc

    @cuda.jit
    def k(tmap, coords, offs, out):
        tile = cuda.shared.array((ppc, cpp), dtype, alignment=align)
        bar = cuda.shared.array(1, np.uint64)
        tid = cuda.threadIdx.x
        j = cuda.blockIdx.x
        if tid == 0:
            ac.mbarrier_init(bar, 1)
            ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if tid == 0:
            ac.mbarrier_arrive_expect_tx(bar, nbytes)
            issue(tile, tmap, coords, offs, bar, j)
        ac.mbarrier_wait_parity(bar, 0)
        for i in range(tid, ppc * cpp, cuda.blockDim.x):
            out[j, i // cpp, i % cpp] = tile[i // cpp, i % cpp]

    return k


def make_store_block(ppc: int, cpp: int):
    """Kernel ``k(tmap, tile_in, coords, reduce)``: thread 0 of one CTA
    stores (``reduce`` false) or add-reduces (``reduce`` true) the
    ``(ppc, cpp)`` float32 ``tile_in``, staged in shared memory, as the
    im2col column block at the 4-D ``coords`` and waits for the bulk group."""

    @cuda.jit
    def k(tmap, tile_in, coords, reduce):
        tile = cuda.shared.array((ppc, cpp), np.float32, alignment=128)
        for i in range(cuda.threadIdx.x, ppc * cpp, cuda.blockDim.x):
            tile[i // cpp, i % cpp] = tile_in[i // cpp, i % cpp]
        ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            c = (coords[0], coords[1], coords[2], coords[3])
            if reduce:
                ac.cp_reduce_async_bulk_tensor_im2col(tmap, c, tile, "add")
            else:
                ac.cp_async_bulk_tensor_store_im2col(tmap, c, tile)
            ac.bulk_commit_group()
            ac.bulk_wait_group(0)

    return k


def unswizzle(tile: np.ndarray, swizzle: int | None) -> np.ndarray:
    """The dense tile behind a swizzled shared-memory image (16-byte unit at
    byte offset ``o`` stored at ``o ^ (((o >> 7) & (swizzle // 16 - 1)) << 4)``)."""
    if swizzle is None:
        return tile
    raw = np.ascontiguousarray(tile).view(np.uint8).reshape(-1)
    o = np.arange(0, raw.size, 16)
    where = o ^ (((o >> 7) & (swizzle // 16 - 1)) << 4)
    return raw.reshape(-1, 16)[where // 16].reshape(-1).view(tile.dtype).reshape(tile.shape)


@dataclass
class Conv:
    """A convolution geometry over an ``(N, *spatial, C)`` input."""

    spatial: tuple[int, ...]
    n: int
    c: int
    kernel: tuple[int, ...]
    pad: tuple[int, ...]
    stride: tuple[int, ...]
    dil: tuple[int, ...]

    @property
    def out(self) -> tuple[int, ...]:
        return tuple((x + 2 * p - d * (k - 1) - 1) // s + 1 for x, p, d, k, s in
                     zip(self.spatial, self.pad, self.dil, self.kernel, self.stride))

    def corners(self):
        return ac.conv_corners(self.kernel, self.pad, self.dil)


def random_conv(rng: np.random.Generator, nsp: int) -> Conv:
    while True:
        spatial = tuple(int(v) for v in rng.integers(2, 9 if nsp < 3 else 5, nsp))
        kernel = tuple(int(v) for v in rng.integers(1, 4, nsp))
        pad = tuple(int(v) for v in rng.integers(0, 3, nsp))
        stride = tuple(int(v) for v in rng.integers(1, 3, nsp))
        dil = tuple(int(v) for v in rng.integers(1, 3, nsp))
        if nsp == 3:  # rank-5 corners are -16..15
            pad = tuple(min(p, 2) for p in pad)
        conv = Conv(spatial, int(rng.integers(1, 3)), int(rng.choice([4, 8, 12])), kernel, pad,
                    stride, dil)
        if all(o >= 1 for o in conv.out):
            return conv


def conv_im2col(x: np.ndarray, conv: Conv) -> np.ndarray:
    """The implicit-GEMM A matrix: ``(N * prod(out), *kernel, C)``, built
    from the padded input by plain slicing (independent of the gather)."""
    nsp = len(conv.spatial)
    padded = np.zeros((x.shape[0],) + tuple(s + 2 * p + 64 for s, p in zip(conv.spatial, conv.pad))
                      + (x.shape[-1],), x.dtype)
    padded[(slice(None),) + tuple(slice(p, p + s) for p, s in zip(conv.pad, conv.spatial))] = x
    out = conv.out
    a = np.zeros((x.shape[0],) + out + conv.kernel + (x.shape[-1],), x.dtype)
    for tap in np.ndindex(*conv.kernel):
        sl = tuple(slice(t * d, t * d + s * o, s) for t, d, s, o in
                   zip(tap, conv.dil, conv.stride, out))
        a[(slice(None),) + (slice(None),) * nsp + tap] = padded[(slice(None),) + sl]
    return a.reshape((-1,) + conv.kernel + (x.shape[-1],))


def conv_loads(conv: Conv, ppc: int, cpp: int, itemsize: int):
    """(coords, offsets, expected-rows) for every column block: each block of
    ``ppc`` output pixels, every filter tap, every channel chunk (the last
    one past C: out-of-bounds channels)."""
    lo, _ = conv.corners()
    out = conv.out
    per_image = int(np.prod(out))
    m_total = conv.n * per_image
    coords, offs, where = [], [], []
    chunks = range(0, conv.c, cpp)
    for m0 in range(0, m_total, ppc):
        n, rem = divmod(m0, per_image)
        pos = np.unravel_index(rem, out)
        start = [int(p) * s + l for p, s, l in zip(pos, conv.stride, lo)]
        for tap in np.ndindex(*conv.kernel):
            for c0 in chunks:
                coords.append([n, *start, c0])
                offs.append([t * d for t, d in zip(tap, conv.dil)])
                where.append((m0, tap, c0))
    return (np.array(coords, np.int32), np.array(offs, np.int32), where, m_total)


def expected_tiles(x: np.ndarray, conv: Conv, ppc: int, cpp: int, where, m_total: int):
    a = conv_im2col(x, conv)
    tiles = np.zeros((len(where), ppc, cpp), x.dtype)
    for j, (m0, tap, c0) in enumerate(where):
        rows = min(ppc, m_total - m0)
        c1 = min(conv.c, c0 + cpp)
        tiles[j, :rows, :c1 - c0] = a[(slice(m0, m0 + rows),) + tap + (slice(c0, c1),)]
    return tiles


def reference_tiles(x: np.ndarray, spec: ic.Im2colSpec, coords, offs) -> np.ndarray:
    return np.stack([ic.numpy_im2col(x, c, o, spec) for c, o in zip(coords, offs)])
